"""What a sampled audit's labels say (issue 31, item 2): rulings by the documented rule, and the
estimates by stratum and overall, weighted by each stratum's population."""

import pytest

from memory_review.audit import verification
from memory_review.quality import results, sampling
from memory_review.quality.estimates import Stratum, stratified_estimate
from memory_review.quality.models import AuditItem
from tests.factories import make_memory, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample(acme):
    for _ in range(12):
        make_memory(acme, source="chat", kind="fact")
    for _ in range(30):
        make_memory(acme, source="email", kind="preference")
    return sampling.draw(tenant=acme, population="unreviewed", by="user:3", precision=0.2, seed="ab" * 32)


@pytest.fixture
def people(acme):
    return [make_user(f"labeler{n}", acme, "labeler") for n in range(2)] + [make_user("lead2", acme, "lead")]


def items(sample, stratum: int) -> list[AuditItem]:
    return list(AuditItem.objects.filter(sample=sample, stratum=stratum).order_by("rank"))


def test_rulings_follow_the_documented_rule_and_the_estimate_weights_strata_by_population(sample, people):
    first, second, lead = people
    chat = next(n for n, s in enumerate(sample.strata) if s["key"]["channel"] == "chat")
    email = 1 - chat
    chat_items, email_items = items(sample, chat), items(sample, email)
    for n, item in enumerate(chat_items):  # 2 wrong of the chat items, both labelers agreeing
        for person in (first, second):
            results.label_record(item=item, labeler=person, outcome="false" if n < 2 else "true")
    disputed, ruled, withdrawn = email_items[0], email_items[1], email_items[2]
    results.label_record(item=disputed, labeler=first, outcome="false")
    results.label_record(item=disputed, labeler=second, outcome="true")  # waits for a ruling
    results.label_record(item=ruled, labeler=first, outcome="true")
    results.label_record(item=ruled, labeler=second, outcome="false")
    results.label_record(item=ruled, labeler=lead, outcome="false", ruling=True)  # the lead decides
    undone = results.label_record(item=withdrawn, labeler=first, outcome="false")
    undone.withdrawn_at = undone.created_at
    undone.save()
    for item in email_items[3:6]:
        results.label_record(item=item, labeler=first, outcome="true")

    found = results.results(sample)

    by_channel = {r.key["channel"]: r for r in found.strata}
    assert (by_channel["chat"].estimate.sampled, by_channel["chat"].estimate.wrong) == (len(chat_items), 2)
    assert by_channel["chat"].unlabeled == 0
    email_result = by_channel["email"]
    assert (email_result.estimate.sampled, email_result.estimate.wrong, email_result.disputed) == (4, 1, 1)
    assert email_result.unlabeled == len(email_items) - 5  # the withdrawn one is unlabeled again
    expected = stratified_estimate(
        [Stratum(("c",), 12, len(chat_items), 2), Stratum(("e",), 30, 4, 1)], sample.confidence
    )
    assert (found.overall.rate, found.overall.low, found.overall.high) == (
        pytest.approx(expected.rate), pytest.approx(expected.low), pytest.approx(expected.high),
    )  # fmt: skip
    assert found.overall.rate == pytest.approx(12 / 42 * 2 / len(chat_items) + 30 / 42 * 1 / 4)
    assert verification.problem_in(sample.tenant) is None  # labels are sealed


def test_a_label_is_true_or_false_once_a_person_and_refused_by_name_otherwise(sample, people):
    item = items(sample, 0)[0]
    results.label_record(item=item, labeler=people[0], outcome="true")

    with pytest.raises(results.LabelError, match="an audit label is one of true, false, got 'maybe'"):
        results.label_record(item=item, labeler=people[1], outcome="maybe")
    with pytest.raises(
        results.LabelError, match=f"you have already labeled item {item.pk}: undo that label first"
    ):
        results.label_record(item=item, labeler=people[0], outcome="false")
    assert item.labels.count() == 1


@pytest.mark.parametrize(
    ("decision", "answer", "is_wrong"),
    [
        ("in force", "false", True), ("in force", "true", False), ("kept", "false", True),
        ("kept", "true", False), ("contradicted", "true", True), ("contradicted", "false", False),
        ("superseded", "true", True), ("superseded", "false", False),
    ],
)  # fmt: skip
def test_an_item_is_wrong_when_a_false_memory_was_kept_or_a_true_one_killed(decision, answer, is_wrong):
    assert results.wrong(decision, answer) is is_wrong


def test_nothing_labeled_yet_is_no_estimate(sample):
    found = results.results(sample)

    assert found.overall.rate is None and all(r.estimate.rate is None for r in found.strata)
    assert sum(r.unlabeled for r in found.strata) == sample.items


def test_an_item_whose_memory_was_forgotten_since_no_longer_waits_for_a_label(sample, people):
    from memory_review.lifecycle import Actor
    from memory_review.memories.services import memory_forget

    item = items(sample, 0)[0]
    memory_forget(
        memory=item.memory, actor=Actor("user", "3"), reason="asked", seen_version=item.memory.row_version
    )

    found = results.results(sample)

    row = found.strata[0]
    assert row.gone == 1 and row.unlabeled == row.drawn - 1
