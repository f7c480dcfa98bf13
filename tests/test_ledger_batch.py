"""Seals held for one ledger INSERT at a block's end (integrity/seals.py, `ledger_batch`): the
worker's recording of an event's votes and a POST of events write their seals' ledger rows in one
statement, where each sealed write had its own. The deferred way, as production runs: inline, each
seal takes its place under the head as it is written, and the block changes nothing."""

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from memory_review.assessments.invalidation import observe_event, run_invalidation
from memory_review.assessments.models import Assessment, Verdict
from memory_review.audit import sequencer, verification
from memory_review.audit.models import Seal
from memory_review.integrity import heads, seals
from memory_review.memories.models import Memory, SourceEvent
from memory_review.memories.services import event_record
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

LEDGER_INSERT = 'INSERT INTO "audit_seal"'


@pytest.fixture
def deferred(settings):
    settings.AUDIT_SEQUENCER = heads.DEFERRED


def ledger_inserts(run: CaptureQueriesContext) -> int:
    return sum(q["sql"].startswith(LEDGER_INSERT) for q in run.captured_queries)


def three_writes(tenant) -> list:
    """Three sealed writes of one tenant: two events (a save each) and a sealed UPDATE."""
    first = event_record(tenant=tenant, source="chat", text="We moved to Lyon.")
    second = event_record(tenant=tenant, source="email", text="Invoices go to accounts@ now.")
    SourceEvent.objects.filter(pk=first.pk).update(text="We moved to Lyon in May.")
    return [first, second]


def test_a_blocks_seals_are_one_ledger_insert_that_verifies_once_linked(acme, deferred):
    with CaptureQueriesContext(connection) as apart:
        three_writes(acme)
    with CaptureQueriesContext(connection) as together, transaction.atomic(), seals.ledger_batch():
        events = three_writes(acme)

    assert (ledger_inserts(apart), ledger_inserts(together)) == (3, 1)
    for event in events:
        assert seals.unchanged(SourceEvent, event.pk)  # each row's own digest, as written
    assert verification.problem_in(acme) is None  # waiting, within the bound
    sequencer.sequence(acme.pk)
    assert not sequencer.waiting(acme.pk)
    assert verification.problem_in(acme) is None
    sealed = Seal.objects.filter(tenant=acme, kind="event", object_id=events[0].pk).order_by("seq")
    assert list(sealed.values_list("action", flat=True)) == ["create", "change"]  # the later, later


def test_where_a_backend_may_number_a_multi_row_insert_out_of_order_each_group_has_its_own(
    acme, deferred, monkeypatch
):
    """Oracle (not here): a row sealed twice in a block keeps its later seal later."""
    monkeypatch.setattr(seals, "KEEPS_ROW_ORDER", set())
    with CaptureQueriesContext(connection) as run, transaction.atomic(), seals.ledger_batch():
        (first, _) = three_writes(acme)

    assert ledger_inserts(run) == 3
    sealed = Seal.objects.filter(kind="event", object_id=first.pk).order_by("pk")
    assert list(sealed.values_list("action", flat=True)) == ["create", "change"]
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None


def test_each_tenant_of_a_block_has_its_own_insert(acme, globex, deferred):
    with CaptureQueriesContext(connection) as run, transaction.atomic(), seals.ledger_batch():
        three_writes(acme)
        three_writes(globex)

    assert ledger_inserts(run) == 2
    for tenant in (acme, globex):
        sequencer.sequence(tenant.pk)
        assert verification.problem_in(tenant) is None


def test_a_block_left_by_an_exception_writes_no_seal(acme, deferred):
    before = Seal.objects.count()
    with CaptureQueriesContext(connection) as run, pytest.raises(RuntimeError):
        with transaction.atomic(), seals.ledger_batch():
            three_writes(acme)
            raise RuntimeError("refused")

    assert ledger_inserts(run) == 0  # not written, then rolled back: never written
    assert Seal.objects.count() == before and not SourceEvent.objects.exists()


def test_inline_each_seal_is_linked_as_it_is_written(acme):
    with CaptureQueriesContext(connection) as run, transaction.atomic(), seals.ledger_batch():
        three_writes(acme)

    assert ledger_inserts(run) == 3
    assert verification.problem_in(acme) is None


def test_an_exception_caught_outside_the_block_still_rolls_its_writes_back(acme, deferred):
    """No write made in a block can commit without its seal: the block is an atomic block of its
    own, so leaving it by an exception marks the transaction for rollback."""
    with CaptureQueriesContext(connection) as run, transaction.atomic():
        try:
            with seals.ledger_batch():
                three_writes(acme)
                raise RuntimeError("refused")
        except RuntimeError:
            pass
        assert transaction.get_rollback()

    assert ledger_inserts(run) == 0
    assert not SourceEvent.objects.exists()


def test_a_failed_write_of_the_seals_rolls_their_rows_back_even_when_caught(acme, deferred, monkeypatch):
    def refused(*args, **kwargs):
        raise DatabaseError("the ledger is full")

    with transaction.atomic():
        try:
            with seals.ledger_batch():
                three_writes(acme)
                monkeypatch.setattr(seals, "_insert", refused)  # the block's own INSERT fails
        except DatabaseError:
            pass
        assert transaction.get_rollback()

    assert not SourceEvent.objects.exists()


def test_the_seals_of_rows_a_savepoint_took_back_are_dropped_with_them(acme, deferred):
    with CaptureQueriesContext(connection) as run, transaction.atomic(), seals.ledger_batch():
        kept = event_record(tenant=acme, source="chat", text="We moved to Lyon.")
        try:
            with transaction.atomic():  # a savepoint
                gone = event_record(tenant=acme, source="chat", text="Invoices go to accounts@ now.")
                raise RuntimeError("refused")
        except RuntimeError:
            pass

    assert ledger_inserts(run) == 1
    assert list(SourceEvent.objects.values_list("pk", flat=True)) == [kept.pk]
    assert Seal.objects.filter(kind="event", object_id=gone.pk).count() == 0
    assert seals.unchanged(SourceEvent, kept.pk)
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", [heads.DEFERRED, heads.INLINE])
def test_a_block_outside_a_transaction_is_refused_either_way(settings, how):
    settings.AUDIT_SEQUENCER = how
    with pytest.raises(transaction.TransactionManagementError, match="transaction's end"):
        with seals.ledger_batch():
            pass


def test_a_workers_recording_seals_figures_votes_and_checks_in_one_insert(acme, policy, jev, deferred):
    make_memory(acme, subject="office", content="Deliveries go to the Paris office.")
    event = event_record(tenant=acme, source="chat", text="Deliveries go to the Lyon office from now on.")
    assessment = observe_event(event=event, enqueue=lambda a: None)

    with CaptureQueriesContext(connection) as run:
        done = run_invalidation(assessment.pk, tenant_id=acme.pk, jev=jev)

    assert done.state == Assessment.State.DONE, done.error
    statements = [q["sql"] for q in run.captured_queries]
    start = next(
        i
        for i, sql in enumerate(statements)
        if sql.startswith('UPDATE "assessments_assessment" SET "requests"')
    )
    end = next(i for i in range(start, len(statements)) if statements[i].startswith("RELEASE SAVEPOINT"))
    recording = statements[start:end]
    assert sum(sql.startswith('INSERT INTO "assessments_verdict"') for sql in recording) == 1
    assert sum(sql.startswith('UPDATE "memories_memory"') for sql in recording) == 1  # its p_true
    (ledger,) = [i for i, sql in enumerate(recording) if sql.startswith(LEDGER_INSERT)]
    assert all(not sql.startswith(("INSERT", "UPDATE")) for sql in recording[ledger + 1 :])  # the block's end
    for model, pk in ((Verdict, Verdict.objects.get().pk), (Memory, Memory.objects.get(subject="office").pk)):
        assert seals.unchanged(model, pk)
    sequencer.sequence(acme.pk)
    assert verification.problem_in(acme) is None
