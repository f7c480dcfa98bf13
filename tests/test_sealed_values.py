"""Rows written as plain values (SealedQuerySet.insert_values: the verdicts of every event) are
sealed from the values given, and those must be exactly what the database keeps: verification
reads every row back and compares it with its seal. On PostgreSQL the rows travel as one JSON
parameter (seals.json_rows), so the awkward values are here: floats that are not short in
decimal, NULL votes, microseconds, booleans, text with quotes and backslashes. So are sealed
updates, whose rows come back from the UPDATE itself where the backend can return them."""

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F

from memory_review.assessments.invalidation import VERDICT_COLUMNS, VerdictRow
from memory_review.assessments.models import Assessment, PolicyVersion, Verdict
from memory_review.audit import sequencer, verification
from memory_review.audit.models import Seal
from memory_review.integrity import seals
from memory_review.memories.models import Memory
from memory_review.memories.services import event_record
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def rows(tenant, policy, memories) -> list[VerdictRow]:
    event = event_record(tenant=tenant, source="chat", text="It said \"moved\" \\ and 'left'.")
    assessment = Assessment.objects.create(
        tenant=tenant, purpose="invalidation", event=event, policy=policy, question_set_version="test",
        state="done", model_name="jev-1.13.0",
    )  # fmt: skip
    at = datetime(2026, 12, 5, 8, 30, 1, 123456, tzinfo=UTC)
    awkward = (1 / 3, 0.1 + 0.2, 5e-324, 0.9999999999999999, 0.0, None)
    out = []
    for n, memory in enumerate(memories):
        votes = (None,) * 6 if n == 2 else tuple(awkward[(n + k) % len(awkward)] for k in range(6))
        out.append(
            VerdictRow(
                tenant.pk, assessment.pk, memory.pk, event.pk, memory.row_version,
                "contradicted" if n == 0 else "unrelated", "contradicted" if n == 0 else None,
                None, None, n == 1, at, *votes,
            )
        )  # fmt: skip
    return out


@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_values_written_plainly_are_kept_exactly_as_sealed(acme, policy, settings, mode):
    settings.AUDIT_SEQUENCER = mode
    memories = [make_memory(acme) for _ in range(4)]
    given = rows(acme, policy, memories)

    pks = Verdict.objects.insert_values(VERDICT_COLUMNS, given)

    assert [Verdict.objects.get(pk=pk).memory_id for pk in pks] == [m.pk for m in memories]
    kept = Verdict.objects.get(pk=pks[0])
    assert (kept.bears, kept.still_true, kept.created_at) == (
        given[0].bears,
        given[0].still_true,
        given[0].created_at,
    )
    assert Verdict.objects.get(pk=pks[2]).bears is None
    assert Verdict.objects.get(pk=pks[1]).applied is True
    # One ledger row seals the four, naming each with its own digest (seals.grouped).
    (group,) = Seal.objects.filter(kind="verdict", action="create")
    assert group.object_id == min(pks) and [pk for pk, _ in seals.members_of(group.members)] == sorted(pks)
    assert all(seals.unchanged(Verdict, pk) for pk in pks)
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None


def test_a_value_changed_after_its_plain_write_is_caught(acme, policy, settings):
    """The seals were computed from the values given, not read back: a row that differs from
    them is found, so the check above could fail."""
    settings.AUDIT_SEQUENCER = "inline"
    (pk,) = Verdict.objects.insert_values(VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme)]))
    Verdict._base_manager.filter(pk=pk).update(still_true=0.3333)  # around the seals

    problem = verification.problem_in(acme)

    assert problem is not None and f"verdict {pk}" in problem.problem


def test_nothing_is_written_when_a_row_cannot_be_stored(acme, policy, settings):
    settings.AUDIT_SEQUENCER = "inline"
    good, bad = rows(acme, policy, [make_memory(acme), make_memory(acme)])
    before = Seal.objects.count()

    with pytest.raises(IntegrityError), transaction.atomic():
        Verdict.objects.insert_values(VERDICT_COLUMNS, [good, bad._replace(disposition=None)])

    assert not Verdict.objects.exists() and Seal.objects.count() == before


# A sealed UPDATE on PostgreSQL and SQLite is one UPDATE ... RETURNING (seals.RETURNS_FROM_UPDATE);
# elsewhere (Oracle) a locked read of the ids, the UPDATE and a read back. Both must seal the same
# digest for the same row, or verification, which reads rows back, would call the first tampered.


def latest_digest(model, pk: int) -> str:
    row = model._base_manager.get(pk=pk)
    return seals.latest_seal(row.tenant_id, model.seal_kind, pk, grouped=model.seal_grouped)[1]


@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_an_update_returning_its_rows_seals_what_a_read_back_would(acme, policy, settings, monkeypatch, mode):
    settings.AUDIT_SEQUENCER = mode
    pks = Verdict.objects.insert_values(
        VERDICT_COLUMNS, rows(acme, policy, [make_memory(acme) for _ in range(3)])
    )
    thresholds = {**policy.thresholds, "note": 'a "quoted" \\ value', "odd": 1 / 3, "tiny": 5e-324}
    moment = datetime(2026, 12, 5, 9, 15, 2, 654321, tzinfo=UTC)
    updates = [
        # a JSON column with awkward floats and text, as the driver hands it back
        (PolicyVersion.objects.filter(pk=policy.pk), {"thresholds": thresholds, "note": 'it\'s "v1"'}),
        # an expression the database computes, a boolean, a time with microseconds, a NULL
        (Verdict.objects.filter(pk__in=pks), {"row_version": F("row_version") + 1, "applied": True}),
        (Verdict.objects.filter(pk=pks[0]), {"created_at": moment, "still_true": None}),
        # a filter across a join: the UPDATE's WHERE becomes a subquery
        (Verdict.objects.filter(memory__tenant=acme, pk=pks[1]), {"still_true": 0.1 + 0.2}),
    ]
    for queryset, values in updates:
        kind = queryset.model.seal_kind
        ids = sorted(queryset.values_list("pk", flat=True))

        assert queryset.update(**values) == len(ids)  # one UPDATE ... RETURNING
        # unchanged(): the row read back now, digested, is its latest seal
        assert all(seals.unchanged(queryset.model, pk) for pk in ids), f"{kind}: {values}"
        returned = [latest_digest(queryset.model, pk) for pk in ids]
        with monkeypatch.context() as m:
            m.setattr(seals, "RETURNS_FROM_UPDATE", set())  # the read-back path, as on Oracle
            queryset.model.objects.filter(pk__in=ids).update(**values)
        if not any(hasattr(value, "resolve_expression") for value in values.values()):
            assert [latest_digest(queryset.model, pk) for pk in ids] == returned, f"{kind}: {values}"
        assert all(seals.unchanged(queryset.model, pk) for pk in ids), f"{kind}: {values}"
    assert PolicyVersion.objects.get(pk=policy.pk).thresholds == thresholds
    assert Verdict.objects.get(pk=pks[0]).created_at == moment
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None


def test_an_update_that_matches_nothing_seals_nothing(acme, policy):
    before = Seal.objects.count()

    assert Verdict.objects.filter(pk__in=[]).update(applied=True) == 0
    assert PolicyVersion.objects.filter(pk=-1).update(note="none") == 0
    assert Seal.objects.count() == before


def test_a_sliced_update_is_refused_as_django_refuses_it(acme, policy):
    before = Seal.objects.count()

    with pytest.raises(TypeError, match="slice"):
        PolicyVersion.objects.all()[:1].update(note="sliced")

    assert Seal.objects.count() == before and PolicyVersion.objects.get(pk=policy.pk).note != "sliced"


def test_plain_values_update_the_columns_no_seal_covers(acme, settings):
    """The memories' checks of every event (invalidation._record_checks): one UPDATE of the rows
    given as values on PostgreSQL, bulk_update elsewhere; the same rows written either way."""
    settings.AUDIT_SEQUENCER = "inline"
    memories = [make_memory(acme) for _ in range(3)]
    moment = datetime(2026, 12, 7, 8, 0, 0, 123456, tzinfo=UTC)
    rows = [(memories[0].pk, 1 / 3, 0.1 + 0.2, moment), (memories[2].pk, None, -0.25, None)]

    assert Memory.objects.update_values(["p_true", "threshold_gap", "last_checked_at"], rows) == 2

    written = {m.pk: m for m in Memory.objects.filter(pk__in=[m.pk for m in memories])}
    assert (written[memories[0].pk].p_true, written[memories[0].pk].threshold_gap) == (1 / 3, 0.1 + 0.2)
    assert written[memories[0].pk].last_checked_at == moment
    assert (written[memories[2].pk].p_true, written[memories[2].pk].threshold_gap) == (None, -0.25)
    assert written[memories[1].pk].p_true == memories[1].p_true  # not named: not written
    assert Memory.objects.update_values(["p_true"], []) == 0
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None  # no sealed column was touched


def test_plain_values_never_write_a_sealed_column(acme):
    memory = make_memory(acme)
    before = Seal.objects.count()

    with pytest.raises(ValueError, match="no sealed column; p_true, content"):
        Memory.objects.update_values(["p_true", "content"], [(memory.pk, 0.5, "rewritten")])

    assert Memory.objects.get(pk=memory.pk).content == memory.content and Seal.objects.count() == before
    with pytest.raises(TypeError, match="call it on the manager"):
        Memory.objects.filter(tenant=acme).update_values(["p_true"], [(memory.pk, 0.5)])
    assert Memory.objects.get(pk=memory.pk).p_true == memory.p_true
