"""Who each sealed write is by (integrity/context.py): the signed-in person, the agent's token or the
job, as the seals' ledger records it; and the request ids that land in the audit trail."""

import pytest
from django.test import Client

from memory_review.assessments.invalidation import observe_event
from memory_review.assessments.models import Verdict
from memory_review.assessments.tasks import run_assessment
from memory_review.audit.models import Seal, Transition
from memory_review.calibration.models import Label
from memory_review.memories.models import SourceEvent
from memory_review.memories.services import event_record
from memory_review.tenancy.models import Role
from memory_review.tenancy.tokens import token_create
from tests.factories import judged, make_memory, make_user

pytestmark = pytest.mark.django_db


def sealed_by(obj) -> list[str]:
    return list(
        Seal.objects.filter(kind=type(obj).seal_kind, object_id=obj.pk)
        .order_by("seq")
        .values_list("actor", flat=True)
    )


def test_a_label_recorded_in_the_browser_is_sealed_by_the_labeler(acme, policy):
    labeler = make_user("acme-labeler", acme, Role.LABELER)
    verdict = judged(make_memory(acme), policy, still_true=0.5)
    client = Client()
    client.force_login(labeler)

    client.post("/t/acme/labels/record/", {"item": f"v{verdict.pk}", "outcome": "uncertain"})

    assert sealed_by(Label.objects.get()) == [f"user:{labeler.pk}"]


def test_an_event_an_agent_posts_is_sealed_by_its_token(acme, policy, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    token, secret = token_create(tenant=acme, name="support-bot")

    response = Client().post(
        "/api/v1/t/acme/events",
        {"text": "We moved to Lyon.", "source": "chat"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )

    assert response.status_code in (201, 202)
    assert sealed_by(SourceEvent.objects.get()) == [f"token:{token.prefix}"]


def test_votes_a_worker_writes_are_sealed_by_its_task(acme, policy, standin, settings):
    settings.JEV_STANDIN_URL = standin.url
    make_memory(acme, subject="office", content="Deliveries go to the Paris office.")
    event = event_record(tenant=acme, source="chat", text="Deliveries go to the Lyon office from now on.")
    assessment = observe_event(event=event, enqueue=lambda a: None)

    run_assessment.apply(args=(acme.pk, assessment.pk)).get()

    assert set(sealed_by(Verdict.objects.get())) == {"system:run_assessment"}  # written, then applied


def test_a_command_or_a_shell_writes_as_system(acme):
    assert sealed_by(make_memory(acme)) == ["system"]


@pytest.mark.parametrize("offered", ["req-7f3a", "0b9c.edge:12", "a" * 64])
def test_a_proxys_request_id_is_kept_when_it_is_a_short_token_of_safe_characters(client, offered):
    assert client.get("/accounts/login/", HTTP_X_REQUEST_ID=offered)["X-Request-ID"] == offered


@pytest.mark.parametrize(
    "offered",
    ['=HYPERLINK("http://evil.example","click")', "-2+3", "@SUM(A1)", "a" * 65, "<script>", "two words"],
)
def test_any_other_request_id_is_replaced_with_ours_before_it_reaches_the_trail(
    client, acme, lead, policy, offered
):
    memory = make_memory(acme)
    client.force_login(lead)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {"action": "freeze", "seen_version": memory.row_version},
        HTTP_X_REQUEST_ID=offered,
    )

    recorded = Transition.objects.get(memory=memory).request_id
    assert response["X-Request-ID"] == recorded != offered
    assert len(recorded) == 32 and recorded.isalnum()
