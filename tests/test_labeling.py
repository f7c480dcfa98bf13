"""The labeling stream's rules (calibration/labeling.py): which item comes next, what a label may
say, undo, agreement between labelers and a lead's ruling, and the gold set calibration reads."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from memory_review.assessments.policy import DEFAULTS
from memory_review.calibration import evidence, labeling
from memory_review.calibration.agreement import fleiss_kappa
from memory_review.calibration.labeling import CANDIDATE, VERDICT, ItemRef, LabelError
from memory_review.calibration.models import Label
from memory_review.tenancy.models import Role
from tests.factories import judged, make_memory, make_user

pytestmark = pytest.mark.django_db


def verdict(tenant, policy, still_true: float, **votes):
    return judged(make_memory(tenant), policy, still_true=still_true, **votes)


def ref(item) -> ItemRef:
    return ItemRef(VERDICT, item.pk)


def test_near_an_edge_first_taking_turns_with_the_emptiest_bin(acme, policy, labeler):
    far_low = verdict(acme, policy, 0.02)
    near_confirm = verdict(acme, policy, 0.66)  # 0.01 from confirm_at (0.65)
    nearer_kill = verdict(acme, policy, 0.355)  # 0.005 from contradict_at (0.35)
    far_high = verdict(acme, policy, 0.97)

    def next_one():
        found = labeling.next_item(acme, labeler, VERDICT, policy=DEFAULTS)
        labeling.record(acme, labeler, found, outcome="confirmed")
        return found.pk

    # Near an edge first, taking turns with the emptiest bin: 0.0-0.1 and 0.9-1.0 both have
    # nothing labeled, and the lower bin goes first.
    assert [next_one(), next_one(), next_one(), next_one()] == [
        nearer_kill.pk, far_low.pk, near_confirm.pk, far_high.pk
    ]  # fmt: skip
    assert labeling.next_item(acme, labeler, VERDICT, policy=DEFAULTS) is None


def test_an_item_another_labeler_labeled_comes_before_a_new_one_until_it_has_two(acme, policy, labeler, lead):
    first, second = verdict(acme, policy, 0.64), verdict(acme, policy, 0.9)
    labeling.record(acme, labeler, ref(second), outcome="confirmed")
    assert labeling.next_item(acme, lead, VERDICT, policy=DEFAULTS) == ref(second)
    labeling.record(acme, lead, ref(second), outcome="confirmed")
    third_person = make_user("third", acme, Role.LABELER)
    # `second` has its two labels: a third labeler starts on what nobody has labeled.
    assert labeling.next_item(acme, third_person, VERDICT, policy=DEFAULTS) == ref(first)


def test_skipped_items_and_items_without_votes_or_with_erased_evidence_are_not_offered(acme, policy, labeler):
    skipped = verdict(acme, policy, 0.64)
    no_votes = verdict(acme, policy, 0.5)
    type(no_votes).objects.filter(pk=no_votes.pk).update(bears=None, still_true=None)
    erased = verdict(acme, policy, 0.64)
    type(erased.event).objects.filter(pk=erased.event_id).update(erased_at="2026-01-01T00:00Z")
    assert labeling.next_item(acme, labeler, VERDICT, skipped=[skipped.pk], policy=DEFAULTS) is None
    with pytest.raises(LabelError, match="not labelable"):
        labeling.record(acme, labeler, ref(erased), outcome="confirmed")


def test_a_bad_label_names_the_problem_and_writes_nothing(acme, policy, labeler):
    item = ref(verdict(acme, policy, 0.5))
    with pytest.raises(LabelError, match="outcome 'promote' is not one of confirmed"):
        labeling.record(acme, labeler, item, outcome="promote")
    with pytest.raises(LabelError, match="alternative"):
        labeling.record(acme, labeler, item, outcome="confirmed", alternatives=["maybe"])
    with pytest.raises(LabelError, match="the limit is 500"):
        labeling.record(acme, labeler, item, outcome="confirmed", note="x" * 501)
    with pytest.raises(LabelError, match="no such item"):
        ItemRef.parse("x12")
    assert not Label.objects.exists()
    labeling.record(acme, labeler, item, outcome="superseded", alternatives=["contradicted", "superseded"])
    with pytest.raises(LabelError, match="already labeled"):
        labeling.record(acme, labeler, item, outcome="confirmed")
    (label,) = Label.objects.all()
    assert (label.outcome, label.alternatives) == ("superseded", ["contradicted"])


def test_another_tenants_item_cannot_be_labeled(acme, globex, policy, labeler):
    from memory_review.assessments.services import policy_ensure_default

    theirs = verdict(globex, policy_ensure_default(tenant=globex, created_by="test"), 0.5)
    with pytest.raises(LabelError, match="not labelable"):
        labeling.record(acme, labeler, ref(theirs), outcome="confirmed")
    assert not Label.objects.exists()


def test_undo_withdraws_the_latest_label_and_keeps_it(acme, policy, labeler):
    a, b = ref(verdict(acme, policy, 0.5)), ref(verdict(acme, policy, 0.6))
    labeling.record(acme, labeler, a, outcome="confirmed")
    labeling.record(acme, labeler, b, outcome="uncertain")
    undone = labeling.undo(acme, labeler)
    assert labeling.ref_of(undone) == b and undone.withdrawn_at is not None
    assert labeling.labels_of(acme, b) == []
    labeling.record(acme, labeler, b, outcome="contradicted")  # labeled again
    assert Label.objects.filter(verdict_id=b.pk).count() == 2  # both kept
    assert [label.outcome for label in labeling.labels_of(acme, b)] == ["contradicted"]


def test_disagreement_waits_for_a_ruling_which_wins_and_keeps_both_answers(acme, policy, labeler, lead):
    item = ref(verdict(acme, policy, 0.3, replaces=0.7))
    labeling.record(acme, labeler, item, outcome="superseded")
    labeling.record(acme, lead, item, outcome="contradicted", alternatives=["superseded"])
    (disputed,) = labeling.disputes(acme, VERDICT)
    assert labeling.dispute_count(acme, VERDICT) == 1
    assert disputed.gold is None
    cases, counts = evidence.verdict_cases(acme)
    assert cases == [] and counts.awaiting_ruling == 1

    labeling.adjudicate(acme, lead, item, outcome="superseded", alternatives=["contradicted"], note="re-read")
    assert labeling.disputes(acme, VERDICT) == [] and labeling.dispute_count(acme, VERDICT) == 0
    (case,), counts = evidence.verdict_cases(acme)
    assert (case.id, case.expected, case.lenient, counts.gold) == (
        f"v{item.pk}",
        "superseded",
        ("contradicted",),
        1,
    )
    assert Label.objects.filter(verdict_id=item.pk, adjudicated=False).count() == 2


def test_a_ruling_needs_labels_to_rule_between(acme, policy, lead):
    with pytest.raises(LabelError, match="no labels"):
        labeling.adjudicate(acme, lead, ref(verdict(acme, policy, 0.5)), outcome="confirmed")


def test_agreement_between_labelers_with_cohen_per_pair_and_fleiss_over_all(
    acme, policy, labeler, lead, reviewer
):
    items = [ref(verdict(acme, policy, 0.1 * i + 0.05)) for i in range(4)]
    answers = {  # item -> (labeler, lead, reviewer)
        0: ("confirmed", "confirmed", "confirmed"),
        1: ("contradicted", "contradicted", "superseded"),
        2: ("uncertain", "confirmed", None),
        3: ("superseded", "superseded", None),
    }
    for i, said in answers.items():
        for person, outcome in zip((labeler, lead, reviewer), said, strict=True):
            if outcome:
                labeling.record(acme, person, items[i], outcome=outcome)
    found = labeling.labeler_agreement(acme, VERDICT, names={labeler.pk: "L", lead.pk: "M", reviewer.pk: "R"})
    assert (found.items, found.unanimous, found.rate) == (4, 2, 0.5)
    expected = fleiss_kappa(Counter(filter(None, said)) for said in answers.values())
    # By hand: P_i = 1, 1/3, 0, 1 (mean 7/12); shares 4, 2, 3, 1 of 10 ratings: P_e = 0.30.
    assert found.fleiss == pytest.approx(expected) == pytest.approx((7 / 12 - 0.30) / 0.70)
    pairs = {(a, b): pair for a, b, pair in found.pairs}
    assert (pairs[("L", "M")].n, pairs[("L", "M")].agreed) == (4, 3)
    assert (pairs[("L", "R")].n, pairs[("M", "R")].agreed) == (2, 1)


def test_fleiss_kappa_matches_the_worked_example():
    # Fleiss (1971) as worked on Wikipedia: 10 subjects, 14 raters, 5 categories -> 0.210.
    table = [
        (0, 0, 0, 0, 14), (0, 2, 6, 4, 2), (0, 0, 3, 5, 6), (0, 3, 9, 2, 0), (2, 2, 8, 1, 1),
        (7, 7, 0, 0, 0), (3, 2, 6, 3, 0), (2, 5, 3, 2, 2), (6, 5, 2, 1, 0), (0, 2, 2, 3, 7),
    ]  # fmt: skip
    items = [Counter({category: n for category, n in enumerate(row) if n}) for row in table]
    assert fleiss_kappa(items) == pytest.approx(0.210, abs=0.001)
    assert fleiss_kappa([Counter({"a": 3}), Counter({"a": 2})]) is None  # every rating the same
    assert fleiss_kappa([Counter({"a": 1})]) is None  # no item with two ratings


def test_progress_per_labeler_and_per_bin(acme, policy, labeler, lead):
    low, mid, high = (ref(verdict(acme, policy, v)) for v in (0.05, 0.55, 1.0))
    labeling.record(acme, labeler, low, outcome="contradicted")
    labeling.record(acme, lead, high, outcome="confirmed")
    progress = labeling.progress(acme, labeler, VERDICT)
    by_bin = {row.index: (row.items, row.labeled, row.mine) for row in progress.bins}
    assert by_bin[0] == (1, 1, 1) and by_bin[5] == (1, 0, 0) and by_bin[9] == (1, 1, 0)  # 1.0 is in the last
    assert (progress.items, progress.labeled, progress.mine, progress.last_hour) == (3, 2, 1, 1)
    assert {person.username: n for person, n in progress.by_labeler} == {"acme-labeler": 1, "acme-lead": 1}

    # A label of the labeler's from yesterday counts as theirs, not in their last hour.
    labeling.record(acme, labeler, mid, outcome="confirmed")
    yesterday = timezone.now() - timedelta(days=1)
    Label.objects.filter(labeler=labeler, verdict_id=mid.pk).update(created_at=yesterday)
    later = labeling.progress(acme, labeler, VERDICT)
    assert (later.mine, later.last_hour) == (2, 1)


def test_candidates_are_labeled_with_what_should_have_been_done(acme, policy, labeler):
    from tests.review.test_promotions import candidate

    made = candidate(acme, policy, votes=(0.91, 0.5, 0.02))
    item = labeling.next_item(acme, labeler, CANDIDATE, policy=DEFAULTS)
    assert item == ItemRef(CANDIDATE, made.pk)
    with pytest.raises(LabelError, match="not one of promote"):
        labeling.record(acme, labeler, item, outcome="confirmed")
    labeling.record(acme, labeler, item, outcome="out_of_scope")
    ((case, label),), counts = evidence.candidate_cases(acme)
    assert (case.expected, label, counts.gold) == ("reject", "out_of_scope", 1)


@pytest.mark.parametrize("batch", [200, 5])  # the waiting items in one look-up, or in five
def test_an_item_labeled_once_behind_twenty_that_can_no_longer_be_labeled_still_gets_its_second_label(
    acme, policy, labeler, lead, batch, monkeypatch
):
    monkeypatch.setattr(labeling, "WAITING_BATCH", batch)
    dead = [verdict(acme, policy, 0.5) for _ in range(21)]
    for item in dead:
        labeling.record(acme, labeler, ref(item), outcome="uncertain")
    events = type(dead[0].event).objects.filter(pk__in=[v.event_id for v in dead])
    events.update(erased_at="2026-01-01T00:00Z")  # their evidence erased since: not labelable
    waiting = verdict(acme, policy, 0.9)
    labeling.record(acme, labeler, ref(waiting), outcome="confirmed")

    assert labeling.next_item(acme, lead, VERDICT, policy=DEFAULTS) == ref(waiting)


@pytest.mark.parametrize("still_true", [0.30, 0.40, 0.60, 0.70])
def test_a_vote_exactly_the_nearness_away_from_an_edge_is_near_whatever_the_float_rounding(
    acme, policy, labeler, still_true
):
    """Edges at 0.35 and 0.65 (DEFAULTS): 0.30, 0.40, 0.60 and 0.70 all lie 0.05 from one, in the
    votes' own precision, though 0.35 + 0.05 is 0.39999999999999997 in binary floating point."""
    near = verdict(acme, policy, still_true)
    verdict(acme, policy, 0.5)  # 0.15 from both edges: never near
    fresh = labeling.items(acme, VERDICT)

    assert labeling._near(fresh, VERDICT, DEFAULTS) == near.pk
    assert labeling._near(fresh.exclude(pk=near.pk), VERDICT, DEFAULTS) is None


def test_a_large_tenants_votes_per_bin_are_kept_and_the_votes_since_added_on_read(
    acme, policy, labeler, settings, monkeypatch
):
    """The bins' sizes over millions of votes come from the figures' job (calibration/figures.py),
    counted up to a vote; a read adds the votes since, so they are never stale."""
    from memory_review.calibration import figures

    settings.FIGURES_INLINE_BELOW = 0  # every tenant counts as large
    queued = []
    monkeypatch.setattr(figures, "_queue", lambda name, tenant_id, params: queued.append(name))
    verdict(acme, policy, 0.05)

    assert labeling.vote_totals(acme, VERDICT) == {} and queued == ["vote_bins"]  # the first count runs
    figures.refresh("vote_bins", acme.pk, {})
    verdict(acme, policy, 0.07)
    verdict(acme, policy, 0.95)

    totals = labeling.vote_totals(acme, VERDICT)
    assert totals[0] == 2 and totals[9] == 1 and sum(totals.values()) == 3
    assert figures.read("vote_bins", acme).value["counts"]["0"] == 1  # kept as counted, not recounted


def test_a_verdicts_label_keeps_the_bin_of_its_vote_and_bulk_written_ones_are_filled(
    acme, policy, labeler, lead
):
    low, top = verdict(acme, policy, 0.05), verdict(acme, policy, 1.0)
    labeling.record(acme, labeler, ref(low), outcome="contradicted")
    bulk = Label.objects.bulk_create([Label(tenant=acme, verdict=top, labeler=lead, outcome="confirmed")])

    assert Label.objects.get(verdict=low).vote_bin == 0
    assert Label.objects.get(pk=bulk[0].pk).vote_bin is None  # written around Label.save()
    assert labeling.fill_vote_bins(Label.objects.for_tenant(acme)) == 0
    assert Label.objects.get(pk=bulk[0].pk).vote_bin == 9  # 1.0 is in the last bin
