"""The labeling stream (issue 9): one item at a time, keyboard first (1-8 an outcome, shift+digit
an acceptable alternative, s skip, u undo, n note), blind to the policy and to other labelers
until the label is in; then labelers' agreement, and a lead's ruling where they disagree."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory_review import params
from memory_review.calibration import figures, labeling
from memory_review.calibration.labeling import ItemRef, LabelError
from memory_review.quality import stream
from memory_review.quality.models import AuditItem
from memory_review.quality.stream import AUDIT, AuditLabelError

from .. import agreement_page, blind
from ..access import require_labeler, require_lead
from .base import page, partial_or_page, tenant_view

# The stream's tabs: verdicts, with the sampled audits' items among them at the plan's share;
# promotion candidates; and the audit items alone.
KIND_NAMES = {**agreement_page.KIND_NAMES, AUDIT: "Sampled audit"}
KIND_NAMES[labeling.VERDICT] = "Verdicts and audit items"


def _kind(request: HttpRequest) -> str:
    kind = request.GET.get("kind") or request.POST.get("kind")
    return kind if kind in KIND_NAMES else labeling.VERDICT


def _audit_pk(key: str | None) -> int | None:
    """An audit item's id from its stream key ("a<id>"), or None for any other key (params reads
    the id: "a²" is no id, and not a 500)."""
    if key and key[0] == "a" and not params.id_problem(key[1:], params.column_max(AuditItem)):
        return int(key[1:])
    return None


def _skips_key(membership, kind: str) -> str:
    return f"label-skips:{membership.tenant_id}:{kind}"


def _audit_skips(request: HttpRequest, membership) -> list[int]:
    return request.session.get(_skips_key(membership, AUDIT), [])


def _last_key(membership) -> str:
    return f"label-last:{membership.tenant_id}"


def _panel(request: HttpRequest, membership, kind: str, *, show: str | None = None, status: int = 200):
    tenant, me = membership.tenant, request.user
    if (
        _audit_pk(show) is not None
        or kind == AUDIT
        or (
            kind == labeling.VERDICT
            and not show
            and stream.audit_turn(
                tenant, me, threshold_items_left=True, skipped=_audit_skips(request, membership)
            )
        )
    ):
        return _audit_panel(request, membership, kind, show=_audit_pk(show), status=status)
    ref = item = None
    if show:
        try:
            ref = ItemRef.parse(show)
            item, kind = labeling.get_item(tenant, ref), ref.kind
        except LabelError:
            ref = None
    if item is None or any(label.labeler_id == me.pk for label in labeling.labels_of(tenant, ref)):
        skipped = request.session.get(_skips_key(membership, kind), [])
        _, policy = labeling.active_policy(tenant)
        ref = labeling.next_item(tenant, me, kind, skipped=skipped, policy=policy)
        item = labeling.get_item(tenant, ref) if ref else None
        if (
            ref is None
            and kind == labeling.VERDICT
            and stream.audit_turn(
                tenant, me, threshold_items_left=False, skipped=_audit_skips(request, membership)
            )
        ):
            return _audit_panel(request, membership, kind, status=status)
    return page(
        request,
        membership,
        partial_or_page(request, "review/labels.html", "panel"),
        status=status,
        kind=kind,
        kinds=KIND_NAMES,
        item=item,
        ref=ref,
        outcomes=labeling.OUTCOMES[kind],
        reveal=_reveal(request, membership),
        progress=labeling.progress(tenant, me, kind),
        disputes=labeling.dispute_count(tenant, kind) if membership.can_lead else None,
    )


def _audit_panel(request: HttpRequest, membership, tab: str, *, show: int | None = None, status: int = 200):
    """An audit item: the memory and its evidence, never the policy's decision before the answer."""
    tenant, me = membership.tenant, request.user
    item = None
    if show is not None:
        try:
            item = stream.get_item(tenant, show)
        except AuditLabelError:
            item = None
        if item is not None and item.labels.filter(labeler=me, withdrawn_at__isnull=True).exists():
            item = None
    if item is None:
        item = stream.next_item(tenant, me, _audit_skips(request, membership))
    return page(
        request,
        membership,
        partial_or_page(request, "review/labels.html", "panel"),
        status=status,
        kind=tab,
        kinds=KIND_NAMES,
        audit=stream.shown(item) if item else None,
        item=item,
        ref=None,
        key=f"a{item.pk}" if item else "",
        question=stream.QUESTION,
        outcomes=stream.OUTCOMES,
        reveal=_reveal(request, membership),
        audit_progress=stream.progress(tenant, me),
        disputes=None,
    )


def _reveal(request: HttpRequest, membership):
    """The item this labeler labeled last, now that their answer is in: what the policy said,
    the votes, and the other labelers' answers."""
    key = request.session.get(_last_key(membership))
    if not key:
        return None
    if _audit_pk(key) is not None:
        return stream.reveal(membership.tenant, request.user, _audit_pk(key))
    try:
        ref = ItemRef.parse(key)
        item = labeling.get_item(membership.tenant, ref)
    except LabelError:
        return None
    return blind.reveal(membership.tenant, request.user, ref, item)


@require_GET
@tenant_view
def label_stream(request: HttpRequest, membership) -> HttpResponse:
    require_labeler(membership)
    return _panel(request, membership, _kind(request), show=request.GET.get("item"))


@require_POST
@tenant_view
def label_record(request: HttpRequest, membership) -> HttpResponse:
    require_labeler(membership)
    audit_pk = _audit_pk(request.POST.get("item"))
    if audit_pk is not None:
        return _audit_record(request, membership, audit_pk)
    try:
        ref, answer = _answer(request)
        labeling.record(membership.tenant, request.user, ref, **answer)
    except LabelError as error:
        messages.error(request, f"Nothing was recorded: {error}")
        return _after(request, membership, _kind(request), show=request.POST.get("item"), status=400)
    request.session[_last_key(membership)] = ref.key
    return _after(request, membership, ref.kind)


def _audit_record(request: HttpRequest, membership, pk: int) -> HttpResponse:
    try:
        stream.record(
            membership.tenant, request.user, pk, outcome=request.POST.get("outcome", ""),
            note=request.POST.get("note", ""),
        )  # fmt: skip
    except AuditLabelError as error:
        messages.error(request, f"Nothing was recorded: {error}")
        return _after(request, membership, _kind(request), show=f"a{pk}", status=400)
    request.session[_last_key(membership)] = f"a{pk}"
    return _after(request, membership, _kind(request))


def _answer(request: HttpRequest) -> tuple[ItemRef, dict]:
    """The item a labeling form names and the answer it gives; LabelError for no such item."""
    ref = ItemRef.parse(request.POST.get("item", ""))
    return ref, {
        "outcome": request.POST.get("outcome", ""),
        "alternatives": request.POST.getlist("alternatives"),
        "note": request.POST.get("note", ""),
    }


@require_POST
@tenant_view
def label_skip(request: HttpRequest, membership) -> HttpResponse:
    require_labeler(membership)
    kind = _kind(request)
    audit_pk = _audit_pk(request.POST.get("item"))
    if audit_pk is not None:
        key = _skips_key(membership, AUDIT)
        request.session[key] = [*request.session.get(key, []), audit_pk][-labeling.SKIPS_KEPT :]
        return _after(request, membership, kind)
    try:
        ref = ItemRef.parse(request.POST.get("item", ""))
    except LabelError as error:
        messages.error(request, str(error))
        return _after(request, membership, kind, status=400)
    key = _skips_key(membership, ref.kind)
    request.session[key] = [*request.session.get(key, []), ref.pk][-labeling.SKIPS_KEPT :]
    return _after(request, membership, ref.kind)


@require_POST
@tenant_view
def label_undo(request: HttpRequest, membership) -> HttpResponse:
    require_labeler(membership)
    if stream.newest_is_audit(membership.tenant, request.user):
        withdrawn = stream.undo(membership.tenant, request.user)
        request.session.pop(_last_key(membership), None)
        messages.info(
            request,
            f"Your label “{withdrawn.get_outcome_display()}” on audit item a{withdrawn.item_id} is "
            "withdrawn (kept in its history): label it again.",
        )
        return _after(request, membership, _kind(request), show=f"a{withdrawn.item_id}")
    label = labeling.undo(membership.tenant, request.user)
    if label is None:
        messages.info(request, "You have no label to undo.")
        return _after(request, membership, _kind(request))
    ref = labeling.ref_of(label)
    request.session.pop(_last_key(membership), None)
    messages.info(
        request,
        f"Your label “{label.outcome}” on {ref.key} is withdrawn (kept in its history): label it again.",
    )
    return _after(request, membership, ref.kind, show=ref.key)


def _after(request: HttpRequest, membership, kind: str, *, show: str | None = None, status: int = 200):
    """htmx swaps the panel in place; a plain form goes back to the stream (post/redirect/get)."""
    if request.htmx:
        return _panel(request, membership, kind, show=show, status=status)
    url = reverse("labels", args=[membership.tenant.slug]) + f"?kind={kind}"
    return redirect(url + (f"&item={show}" if show else ""))


@require_GET
@tenant_view
def label_agreement(request: HttpRequest, membership) -> HttpResponse:
    if not membership.can_audit:  # auditors read it; labelers, reviewers, leads and admins too
        require_labeler(membership)
    tenant = membership.tenant
    counted_for = blind.counted_for(membership, request.user)
    shown = figures.read("agreement", tenant, **({"labeled_by": counted_for.pk} if counted_for else {}))
    parts = shown.ready and agreement_page.sections(tenant, shown.value, show_answers=membership.can_audit)
    return page(request, membership, "review/label_agreement.html", sections=parts or [], shown=shown)


@require_POST
@tenant_view
def label_adjudicate(request: HttpRequest, membership) -> HttpResponse:
    require_lead(membership)
    try:
        ref, answer = _answer(request)
        labeling.adjudicate(membership.tenant, request.user, ref, **answer)
    except LabelError as error:
        messages.error(request, f"Nothing was recorded: {error}")
    else:
        messages.success(
            request,
            f"Ruled on {ref.key}: “{request.POST['outcome']}” is its gold label; "
            "the labelers' answers are kept.",
        )
    return redirect("label-agreement", membership.tenant.slug)
