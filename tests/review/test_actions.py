"""A reviewer's actions on a memory: each an audited transition with the row version the page
showed; a stale version is a conflict that says what changed, with nothing written; people who
only read get a 403 with nothing written."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryLink
from memory_review.memories.services import ERASED
from memory_review.workflow.claims import claim_take
from tests.factories import flagged, judged, make_memory, make_user, memory_in

pytestmark = pytest.mark.django_db


def act(client, memory, action, *, reason="", version=None, htmx=True, view="page"):
    data = {"action": action, "reason": reason, "seen_version": version or memory.row_version, "view": view}
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/t/acme/memories/{memory.pk}/act/", data, headers=headers)


@pytest.mark.parametrize(
    ("start", "action", "reason", "end"),
    [
        ("needs_review", "approve", "", "active"),
        ("needs_review", "freeze", "", "frozen"),
        ("frozen", "unfreeze", "", "active"),
        ("contradicted", "restore", "a false kill: the outage was one day", "active"),
        ("superseded", "restore", "the successor was wrong", "active"),
        ("expired", "restore", "the TTL was set by mistake", "active"),
        ("needs_review", "contradict", "", "contradicted"),
        ("needs_review", "supersede", "", "superseded"),
        ("active", "flag", "", "needs_review"),
        ("active", "forget", "customer asked us to forget it", "deleted"),
    ],
)
def test_each_action_moves_the_memory_and_writes_its_audit_row(
    client, acme, lead, start, action, reason, end
):
    memory = memory_in(acme, start)
    client.force_login(lead)

    response = act(client, memory, action, reason=reason)

    assert response.status_code == 200, response.content
    memory.refresh_from_db()
    assert memory.status == end
    last = Transition.objects.filter(memory=memory).latest("seq")
    assert (last.action, last.actor, last.to_status) == (action, f"user:{lead.pk}", end)
    assert last.reason == (reason or f"{last.reason}")  # a reason given is kept verbatim
    assert last.request_id  # the request is traceable
    assert verification.problem_in(acme) is None
    page = response.content.decode()
    assert "✓" in page and 'id="status-history" hx-swap-oob="true"' in page


def test_an_action_without_a_reason_records_that_none_was_given(client, acme, lead, policy):
    memory = flagged(acme, policy)
    client.force_login(lead)
    act(client, memory, "approve")
    assert (
        Transition.objects.filter(memory=memory).latest("seq").reason
        == "approved in review (no reason given)"
    )


@pytest.mark.parametrize("action", ["restore", "forget"])
def test_restore_and_forget_need_a_reason_and_write_nothing_without_one(client, acme, lead, action):
    memory = memory_in(acme, "contradicted")
    client.force_login(lead)

    response = act(client, memory, action, reason="   ")

    assert response.status_code == 400
    assert "needs a reason" in response.content.decode()
    memory.refresh_from_db()
    assert memory.status == "contradicted"


def test_forgetting_erases_the_content_but_keeps_the_row_and_its_trail(client, acme, lead):
    memory = make_memory(acme, content="Customer's phone is +44 7700 900418.")
    client.force_login(lead)

    act(client, memory, "forget", reason="personal data stored tenant-wide")

    memory.refresh_from_db()
    assert (memory.status, memory.content) == ("deleted", ERASED)
    assert "+44 7700 900418" not in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()


def test_a_stale_version_is_a_conflict_that_says_who_changed_what_and_writes_nothing(
    client, acme, lead, reviewer, policy
):
    memory = flagged(acme, policy, subject="warehouse hours")
    seen = memory.row_version
    reviewer.first_name = "Tomás"
    reviewer.save()
    transition(
        obj=memory, action="freeze", actor=Actor.user(reviewer), reason="legal hold", seen_version=seen
    )
    before = Transition.objects.count()
    client.force_login(lead)

    response = act(client, memory, "approve", version=seen)

    assert response.status_code == 409
    page = response.content.decode()
    assert "This memory changed since you loaded it" in page
    assert "Tomás moved it from needs review to frozen" in page and "legal hold" in page
    # In the words the page uses: its status, and the change the reviewer did not see (the
    # memory's content version is "version"; the edit counter has no name on screen).
    assert "it is now frozen, after 1 change you did not see" in page and "version 2" not in page
    assert Transition.objects.count() == before
    memory.refresh_from_db()
    assert memory.status == "frozen"


def test_without_javascript_an_action_posts_and_comes_back_with_the_message(client, acme, lead, policy):
    memory = flagged(acme, policy, subject="loyalty tier")
    client.force_login(lead)

    response = act(client, memory, "approve", htmx=False)

    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "loyalty tier: approved." in page


def test_without_javascript_a_conflict_comes_back_as_an_error(client, acme, lead, policy):
    memory = flagged(acme, policy)
    transition(
        obj=memory, action="approve", actor=Actor.user(lead), reason="x", seen_version=memory.row_version
    )
    client.force_login(lead)

    response = act(client, memory, "freeze", version=2, htmx=False)

    assert "changed since you loaded it" in client.get(response["Location"]).content.decode()


def test_from_the_queue_the_row_becomes_what_happened_and_the_count_drops(client, acme, lead, policy):
    memory, other = flagged(acme, policy, subject="done now"), flagged(acme, policy)
    client.force_login(lead)

    response = act(client, memory, "approve", view="row")

    page = response.content.decode()
    assert page.startswith(f'<tr id="memory-{memory.pk}" class="done"')
    assert "done now: approved." in page and "It left the queue." in page
    assert '<strong id="list-total" hx-swap-oob="true">1</strong>' in page
    assert 'id="flash"' in page
    assert [m.pk for m in client.get("/t/acme/review/").context["listing"].rows] == [other.pk]


@pytest.mark.parametrize("role_user", ["auditor", "labeler"])
def test_people_who_only_read_see_no_buttons_and_their_posts_are_refused(
    client, acme, policy, role_user, request
):
    user = request.getfixturevalue(role_user)
    memory = flagged(acme, policy)
    client.force_login(user)

    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
    refused = [
        act(client, memory, "approve"),
        client.post(
            f"/t/acme/memories/{memory.pk}/rewrite/", {"content": "x", "reason": "y", "seen_version": 2}
        ),
        client.post(f"/t/acme/memories/{memory.pk}/claim/"),
    ]

    assert 'id="decide"' not in page and "Approve" not in page and "Rewrite" not in page
    assert "does not change memories" in page
    assert [r.status_code for r in refused] == [403, 403, 403]
    memory.refresh_from_db()
    assert memory.status == "needs_review"
    assert Transition.objects.filter(memory=memory).count() == 1


def test_another_tenants_memory_is_a_404_and_nothing_is_written(client, acme, globex_lead, policy):
    memory = flagged(acme, policy)
    client.force_login(globex_lead)
    assert client.get(f"/t/acme/memories/{memory.pk}/").status_code == 404
    assert client.get(f"/t/globex/memories/{memory.pk}/").status_code == 404
    assert (
        client.post(
            f"/t/globex/memories/{memory.pk}/act/", {"action": "approve", "seen_version": 2}
        ).status_code
        == 404
    )
    memory.refresh_from_db()
    assert memory.status == "needs_review"


def test_a_reviewer_cannot_act_on_an_item_a_colleague_holds_but_a_lead_can(
    client, acme, lead, reviewer, policy
):
    memory = flagged(acme, policy)
    claim_take(memory=memory, user=make_user("colleague", acme, "reviewer"))

    client.force_login(reviewer)
    refused = act(client, memory, "approve")
    client.force_login(lead)
    allowed = act(client, memory, "approve")

    assert refused.status_code == 409 and "holds this item" in refused.content.decode()
    assert allowed.status_code == 200
    memory.refresh_from_db()
    assert memory.status == "active"


def test_a_bad_action_is_a_400_that_names_it(client, acme, lead, policy):
    memory = flagged(acme, policy)
    client.force_login(lead)
    response = client.post(f"/t/acme/memories/{memory.pk}/act/", {"action": "resurrect", "seen_version": "x"})
    assert response.status_code == 302  # no JavaScript: back to the page with the message
    page = client.get(response["Location"]).content.decode()
    assert "action: Select a valid choice" in page and "seen_version: Enter a whole number" in page


def test_a_memory_in_review_past_its_hard_ttl_is_expired_by_code_never_approved(client, acme, lead, policy):
    memory = flagged(acme, policy)
    Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() + timedelta(hours=1))
    client.force_login(lead)

    with time_machine.travel(timezone.now() + timedelta(hours=2)):
        response = act(client, memory, "approve")

    memory.refresh_from_db()
    assert memory.status == "expired"
    last = Transition.objects.filter(memory=memory).latest("seq")
    assert (last.action, last.actor) == ("expire", "system:ttl-check")
    assert "code expired it instead" in response.content.decode()


def test_the_policy_never_confirms_a_memory_past_its_ttl_back_to_active(acme, policy):
    from memory_review.assessments.invalidation import apply_verdicts

    memory = flagged(acme, policy)
    Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() - timedelta(minutes=1))
    verdict = judged(memory, policy, disposition="confirmed", still_true=0.95)

    apply_verdicts(verdict.assessment)

    memory.refresh_from_db()
    assert memory.status == "needs_review"


def test_code_checks_expire_a_memory_in_review_past_its_ttl(acme, policy):
    from memory_review.assessments.invalidation import code_checks

    memory = flagged(acme, policy)
    memory.valid_until = timezone.now() - timedelta(minutes=1)
    settled, rest = code_checks([memory], timezone.now())
    assert settled == {memory.pk: "expired"} and rest == []


def test_restoring_a_memory_past_its_ttl_needs_a_new_one_and_records_it(client, acme, lead):
    memory = memory_in(acme, "expired")
    Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() - timedelta(days=1))
    client.force_login(lead)
    page = client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
    assert "restoring it needs a new one" in page

    refused = act(client, memory, "restore", reason="we need it back")
    past = client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {
            "action": "restore",
            "reason": "x",
            "seen_version": memory.row_version,
            "valid_until": "2020-01-01T10:00",
        },
        headers={"HX-Request": "true"},
    )
    later = (timezone.now() + timedelta(days=30)).replace(second=0, microsecond=0)
    restored = client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {
            "action": "restore",
            "reason": "the expiry was set a month short",
            "seen_version": memory.row_version,
            "valid_until": timezone.localtime(later).strftime("%Y-%m-%dT%H:%M"),
        },
        headers={"HX-Request": "true"},
    )

    assert refused.status_code == 400 and "give it a new one (or none)" in refused.content.decode()
    assert past.status_code == 400 and "must be in the future" in past.content.decode()
    assert restored.status_code == 200
    memory.refresh_from_db()
    assert (memory.status, memory.valid_until) == ("active", later)
    reason = Transition.objects.filter(memory=memory).latest("seq").reason
    assert reason.startswith("the expiry was set a month short (hard TTL") and "→" in reason


def test_a_memory_restored_with_no_ttl_keeps_none(client, acme, lead):
    memory = memory_in(acme, "expired")
    Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() - timedelta(days=1))
    client.force_login(lead)
    client.post(
        f"/t/acme/memories/{memory.pk}/act/",
        {
            "action": "restore",
            "reason": "no expiry after all",
            "seen_version": memory.row_version,
            "no_ttl": "1",
        },
    )
    memory.refresh_from_db()
    assert (memory.status, memory.valid_until) == ("active", None)


@pytest.mark.parametrize(("start", "action"), [("needs_review", "freeze"), ("frozen", "unfreeze")])
def test_freezing_or_unfreezing_a_memory_past_its_ttl_expires_it(client, acme, lead, start, action):
    memory = memory_in(acme, start)
    Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() - timedelta(minutes=5))
    client.force_login(lead)

    response = act(client, memory, action)

    memory.refresh_from_db()
    assert memory.status == "expired"
    assert Transition.objects.filter(memory=memory).latest("seq").actor == "system:ttl-check"
    assert "code expired it instead" in response.content.decode()


class TestRewrite:
    def rewrite(self, client, memory, content, reason="the evidence changed the day"):
        return client.post(
            f"/t/acme/memories/{memory.pk}/rewrite/",
            {"content": content, "reason": reason, "seen_version": memory.row_version, "view": "page"},
            headers={"HX-Request": "true"},
        )

    def test_a_partial_memory_is_rewritten_as_the_next_version_linked_by_the_reviewer(
        self, client, acme, lead, policy
    ):
        memory = flagged(acme, policy, subject="weekly sync", disposition="partial", still_true=0.2)
        evidence = memory.verdicts.get().event
        client.force_login(lead)
        assert (
            'id="rewrite" class="rewrite" open'
            in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
        )

        response = self.rewrite(client, memory, "Weekly sync is on Wednesdays at 09:30.")

        assert response.status_code == 200, response.content
        memory.refresh_from_db()
        successor = memory.superseded_by
        assert memory.status == "superseded"
        assert (successor.version, successor.status, successor.content) == (
            2,
            "active",
            "Weekly sync is on Wednesdays at 09:30.",
        )
        assert successor.source_event == evidence
        assert successor.written_by == f"user:{lead.pk}"
        link = MemoryLink.objects.get(src=successor, dst=memory)
        assert (link.kind, link.origin) == ("supersedes", "reviewer")
        move = Transition.objects.filter(memory=memory).latest("seq")
        assert move.reason == "rewritten in review: the evidence changed the day"
        assert "rewritten as version 2" in response.content.decode()

    def test_a_memory_past_its_ttl_is_rewritten_only_with_a_new_one(self, client, acme, lead, policy):
        memory = flagged(acme, policy, disposition="partial")
        Memory.objects.filter(pk=memory.pk).update(valid_until=timezone.now() - timedelta(hours=1))
        memory.refresh_from_db()
        client.force_login(lead)

        refused = self.rewrite(client, memory, "Corrected.")
        allowed = client.post(
            f"/t/acme/memories/{memory.pk}/rewrite/",
            {"content": "Corrected.", "reason": "changed", "seen_version": memory.row_version, "no_ttl": "1"},
        )

        assert refused.status_code == 400 and "give it a new one" in refused.content.decode()
        assert allowed.status_code == 302
        memory.refresh_from_db()
        successor = memory.superseded_by
        assert (successor.status, successor.valid_until) == ("active", None)
        assert not successor.is_expired()

    def test_a_rewrite_needs_text_and_a_reason(self, client, acme, lead, policy):
        memory = flagged(acme, policy)
        client.force_login(lead)
        response = self.rewrite(client, memory, "", reason="")
        assert response.status_code == 400
        memory.refresh_from_db()
        assert memory.status == "needs_review" and memory.superseded_by is None
