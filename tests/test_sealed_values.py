"""Rows written as plain values (SealedQuerySet.insert_values: the verdicts of every event) are
sealed from the values given, and those must be exactly what the database keeps: verification
reads every row back and compares it with its seal. On PostgreSQL the rows travel as one JSON
parameter (seals.json_rows), so the awkward values are here: floats that are not short in
decimal, NULL votes, microseconds, booleans, text with quotes and backslashes."""

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, transaction

from memory_review.assessments.invalidation import VERDICT_COLUMNS, VerdictRow
from memory_review.assessments.models import Assessment, Verdict
from memory_review.audit import sequencer, verification
from memory_review.audit.models import Seal
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
    sealed = Seal.objects.filter(kind="verdict", object_id__in=pks, action="create")
    assert sorted(sealed.values_list("object_id", flat=True)) == sorted(pks)
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
