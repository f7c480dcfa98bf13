"""The calibration page (issue 9): how well each question is calibrated on the labelled set, what
the active policy gets right and wrong, and what moving its thresholds would do; and replay
sets (DESIGN §5) out of and into the app."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory_review import params, textlimits
from memory_review.calibration import figures, labeling
from memory_review.calibration.models import ReplaySet
from memory_review.calibration.replay import ReplayError, load_cases

from .. import blind, downloads
from ..access import require_auditor, require_labeler
from .base import bad_request, page, tenant_view
from .blind import refused_when_blind
from .exports import deliver

IMPORT_MAX_BYTES = 20 * 1024 * 1024


@require_GET
@tenant_view
def calibration(request: HttpRequest, membership) -> HttpResponse:
    tenant = membership.tenant
    version, policy = labeling.active_policy(tenant)
    counted_for = blind.counted_for(membership, request.user)
    sets = blind.replay_sets(membership, request.user).order_by("-created_at")
    wanted = params.object_id(request.GET, "set", ReplaySet)
    chosen = sets.filter(pk=wanted).first() if wanted else None
    asked = {
        "replay_set": chosen.pk if chosen else None,
        "labeled_by": counted_for.pk if counted_for else None,
    }
    shown = figures.read("calibration", tenant, **{name: v for name, v in asked.items() if v is not None})
    return page(
        request,
        membership,
        "review/calibration.html",
        version=version,
        policy=policy,
        replay_sets=sets[:20],
        replay_set=chosen,
        shown=shown,
        **(shown.value or {}),
    )


@require_http_methods(["GET", "POST"])
@tenant_view
@refused_when_blind("the replay set holds every gold label, other labelers' answers among them")
def replay_set_export(request: HttpRequest, membership) -> HttpResponse:
    """The gold verdicts as replay-set JSONL, for `manage.py calibrate` or another deployment.
    Leads, admins and auditors: it holds every labeler's answers, which a labeler sees only for
    what they labeled themselves. Streamed; a large set asked for from the page is written by a
    worker (views/exports.py)."""
    require_auditor(membership)
    return deliver(request, membership, downloads.REPLAY_SET, {"at": timezone.now().strftime("%Y%m%d-%H%M")})


@require_POST
@tenant_view
def replay_set_import(request: HttpRequest, membership) -> HttpResponse:
    """A replay set from elsewhere, kept only if every line validates (all or nothing); else a
    400 naming each problem and its line."""
    require_labeler(membership)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise ReplayError(["choose a replay-set file (JSONL)"])
        if upload.size > IMPORT_MAX_BYTES:
            raise ReplayError([f"{upload.name} is over {IMPORT_MAX_BYTES // 2**20} MB"])
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise ReplayError([f"{upload.name} is not UTF-8 text (byte {error.start})"]) from error
        cases = load_cases(text.splitlines(), filename=upload.name)
    except ReplayError as error:
        heading = f"Nothing was imported from {upload.name}:" if upload else "Nothing was imported:"
        back = reverse("calibration", args=[membership.tenant.slug])
        return bad_request(request, membership, [heading, *str(error).splitlines()], back=back)
    kept = ReplaySet.objects.create(
        tenant=membership.tenant,
        name=textlimits.fit(upload.name, 200),
        content=text,
        cases=len(cases),
        imported_by=request.user,
    )
    messages.success(request, f"Imported {len(cases)} cases from {upload.name}; shown below.")
    return redirect(reverse("calibration", args=[membership.tenant.slug]) + f"?set={kept.pk}")
