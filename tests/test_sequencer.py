"""Sequencing (issue 30, docs/audit.md "Sequencing"): writers add audit rows with no position and
their own keyed digest, and lock nothing tenant-wide; the sequencer gives committed rows their
positions. Here the deferred way, as production runs: the rows wait until `sequence()` (the
task's work) links them. The concurrency tests at the end need PostgreSQL."""

import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest
import time_machine
from django.db import connection, connections, transaction
from django.test import Client
from django.utils import timezone

from memory_review.agents import feed
from memory_review.audit import checks, sequencer, verification
from memory_review.audit.models import AuditChain, Seal, Transition
from memory_review.audit.tasks import sequence_waiting
from memory_review.integrity import heads
from memory_review.integrity.keys import keyring
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory, MemoryChange
from tests.factories import make_memory, without_append_only_trigger


@pytest.fixture
def deferred(settings):
    settings.AUDIT_SEQUENCER = heads.DEFERRED
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a nudge on commit runs the sequencer in-process


def sql(statement: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)


def flag(memory: Memory, who: str = "3") -> Transition:
    memory.refresh_from_db()
    return transition(
        obj=memory, action="flag", actor=Actor("user", who), reason="check", seen_version=memory.row_version
    )


def test_a_write_waits_for_its_position_sealed_by_its_own_digest_and_takes_no_head_lock(acme, deferred):
    before = AuditChain.objects.filter(tenant=acme).values_list("seq", "seal_seq").first()
    memory = make_memory(acme)
    move = flag(memory)

    assert move.seq is None and move.hash is None and len(move.leaf) == 64
    assert (
        AuditChain.objects.filter(tenant=acme).values_list("seq", "seal_seq").first() == before
    )  # untouched
    assert Seal.objects.filter(tenant=acme, seq__isnull=True).count() == 4  # event, memory, two changes
    assert MemoryChange.objects.filter(tenant=acme, seq__isnull=True).count() == 2  # created, moved
    assert feed.read(acme, 0).changes == []  # the feed serves positions only
    assert verification.problem_in(acme) is None  # waiting, within the bound, each as it was written

    done = sequencer.sequence(acme.pk)

    assert (done.fed, done.linked) == (2, 1)
    move.refresh_from_db()
    assert move.seq == 1 and move.prev_hash == heads.GENESIS
    assert [c.seq for c in feed.read(acme, 0).changes] == [1, 2]
    assert not sequencer.waiting(acme.pk)
    head = AuditChain.objects.get(tenant=acme)
    assert (head.seq, head.head_hash, head.seal_seq) == (
        1,
        move.hash,
        Seal.objects.filter(tenant=acme).count(),
    )
    assert Seal.objects.filter(tenant=acme, kind="change").count() == 4  # each change, then its position
    assert verification.problem_in(acme) is None


def test_deferred_and_inline_links_are_one_chain_that_verifies_across_the_change(acme, settings):
    """Rows linked in the writer's transaction (as every row was before sequencing was deferred)
    and rows linked later form one chain: the format is the same, so it verifies across it."""
    settings.AUDIT_SEQUENCER = heads.INLINE
    before = [make_memory(acme) for _ in range(3)]
    for memory in before:
        flag(memory)
    settings.AUDIT_SEQUENCER = heads.DEFERRED
    for memory in before:
        memory.refresh_from_db()
        transition(
            obj=memory,
            action="approve",
            actor=Actor("user", "3"),
            reason="ok",
            seen_version=memory.row_version,
        )
    sequencer.sequence(acme.pk)
    settings.AUDIT_SEQUENCER = heads.INLINE
    flag(make_memory(acme))

    assert list(Transition.objects.filter(tenant=acme).order_by("seq").values_list("seq", flat=True)) == [
        1, 2, 3, 4, 5, 6, 7,
    ]  # fmt: skip
    assert verification.problem_in(acme) is None


def test_rows_from_before_positions_were_deferred_have_no_leaf_and_still_verify(acme, settings):
    settings.AUDIT_SEQUENCER = heads.INLINE
    flag(make_memory(acme))
    # What migration audit.0017 leaves on the rows it finds: no leaf of their own.
    for table in ("audit_transition", "audit_seal"):
        without_append_only_trigger(f"UPDATE {table} SET leaf = NULL", [])
    settings.AUDIT_SEQUENCER = heads.DEFERRED
    flag(make_memory(acme))
    sequencer.sequence(acme.pk)

    assert Transition.objects.filter(tenant=acme, leaf__isnull=True).count() == 1
    assert verification.problem_in(acme) is None


@pytest.mark.parametrize(
    "table, column, value, named",
    [
        (
            "audit_transition",
            "reason",
            "nothing to see",
            "unsequenced transition id {t}: its reason was edited",
        ),
        ("audit_transition", "to_status", "active", "unsequenced transition id {t} was edited or forged"),
        ("audit_transition", "leaf", "0" * 64, "unsequenced transition id {t} was edited or forged"),
        ("audit_seal", "digest", "0" * 64, "unsequenced seal id {s} (memory {m}) was edited or forged"),
        ("audit_seal", "actor", "user:99", "unsequenced seal id {s} (memory {m}) was edited or forged"),
    ],
)
def test_a_waiting_row_changed_is_named_and_never_linked(acme, deferred, table, column, value, named):
    memory = make_memory(acme)
    move = flag(memory)
    seal = Seal.objects.filter(tenant=acme, kind="memory", object_id=memory.pk).order_by("-pk").first()
    pk = move.pk if table == "audit_transition" else seal.pk
    # The append-only triggers refuse this; whoever changes a waiting row goes around them.
    without_append_only_trigger(f"UPDATE {table} SET {column} = %s WHERE id = %s", [value, pk])

    found = verification.problem_in(acme)

    assert named.format(t=move.pk, s=seal.pk, m=memory.pk) in str(found)
    with (
        pytest.raises(heads.ChainBroken, match="changed while it waited for a position"),
        transaction.atomic(),
    ):
        sequencer.sequence(acme.pk)
    assert Transition.objects.filter(tenant=acme, seq__isnull=False).count() == 0  # nothing was linked


def test_a_waiting_row_removed_leaves_what_it_recorded_unexplained(acme, deferred):
    memory = make_memory(acme)
    move = flag(memory)
    MemoryChange.objects.filter(transition=move).delete()  # sealed, so the delete is sealed too
    without_append_only_trigger("DELETE FROM audit_transition WHERE id = %s", [move.pk])

    assert "its status was changed without a transition" in str(verification.problem_in(acme))


def test_a_row_waiting_past_the_bound_is_reported(acme, deferred, settings):
    move = flag(make_memory(acme))
    settings.AUDIT_SEQUENCE_BOUND_SECONDS = 60

    later = timezone.now() + timedelta(seconds=61)
    found = checks.waiting(acme, keyring(), now=later)

    assert f"unsequenced transition id {move.pk} has waited since" in found.problem
    assert "the bound is 60 s" in found.problem
    assert checks.waiting(acme, keyring(), now=timezone.now() + timedelta(seconds=59)) is None
    sequencer.sequence(acme.pk)
    assert checks.waiting(acme, keyring(), now=later) is None


def test_metrics_say_how_long_the_oldest_row_has_waited_for_its_position(acme, globex, deferred):
    with time_machine.travel(timezone.now() - timedelta(minutes=3)):
        make_memory(acme)  # its event's and its own seals, and its feed change, wait

    def waited(slug: str) -> float:
        text = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
        name = f'memory_review_audit_oldest_waiting_seconds{{tenant="{slug}"}}'
        return float(next(line for line in text.splitlines() if line.startswith(name)).split()[-1])

    assert 175 < waited("acme") < 200 and waited("globex") == 0.0
    flag(Memory.objects.get(tenant=acme))  # a newer row waits too: the oldest still counts
    assert 175 < waited("acme") < 200
    sequencer.sequence(acme.pk)
    assert waited("acme") == 0.0


def test_the_application_refuses_the_sequencer_nothing_else(acme, deferred):
    """The triggers let a waiting row take its position once, and nothing more."""
    move = flag(make_memory(acme))
    sequencer.sequence(acme.pk)
    move.refresh_from_db()
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        sql("UPDATE audit_transition SET seq = %s WHERE id = %s", [move.seq + 10, move.pk])
    seal = Seal.objects.filter(tenant=acme).order_by("pk").first()
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        sql("UPDATE audit_seal SET seq = %s WHERE id = %s", [seal.seq + 100, seal.pk])
    waiting = flag(make_memory(acme))
    with pytest.raises(Exception, match="append-only"), transaction.atomic():
        sql(
            "UPDATE audit_transition SET seq = 99, prev_hash = 'x', hash = 'y', actor = 'user:9' "
            "WHERE id = %s",
            [waiting.pk],
        )


def test_a_row_written_beyond_the_head_stops_the_sequencer_and_is_named(acme, deferred):
    move = flag(make_memory(acme))
    sequencer.sequence(acme.pk)
    move.refresh_from_db()
    stray = Transition.objects.create(
        tenant_id=acme.pk, seq=2, memory_id=move.memory_id, from_status="active", to_status="frozen",
        action="freeze", actor="user:3", reason="stray", row_version=9, created_at=move.created_at,
        prev_hash=move.hash, hash="0" * 64, key_id=move.key_id,
    )  # fmt: skip
    flag(make_memory(acme))

    with (
        pytest.raises(
            heads.ChainBroken, match=rf"row #2 \(transition id {stray.pk}\) beyond its head \(#1\)"
        ),
        transaction.atomic(),
    ):
        sequencer.sequence(acme.pk)
    assert "row lies beyond the chain's head (#1)" in str(verification.problem_in(acme))


def test_beats_sweep_links_what_a_lost_nudge_left(acme, globex, deferred):
    flag(make_memory(acme))
    flag(make_memory(globex))

    assert sequence_waiting() > 0

    assert not sequencer.waiting(acme.pk) and not sequencer.waiting(globex.pk)
    assert verification.problem_in(acme) is None and verification.problem_in(globex) is None


# -- concurrent writers (PostgreSQL) ---------------------------------------------------------------

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite has one writer at a time (make test runs the PostgreSQL pass)",
)


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_writer_does_not_wait_for_another_tenant_writers_commit_and_the_feed_keeps_commit_order(
    acme, deferred, monkeypatch
):
    """Two writers of one tenant: the first holds its transaction open. Before issue 30 the second
    waited on the chain head until the first committed; now it commits at once, its change is
    positioned first, and the first's comes after it when it commits: a reader that has seen a
    position has seen every one before it. (Each adds to a count stripe of its own: two writers
    that draw the same stripe of a status's 16, 1 time in 16, do wait for each other.)"""
    from memory_review.memories import tallies

    monkeypatch.setattr(
        tallies.random, "randrange", lambda n: 1 if threading.current_thread().name == "slow" else 2
    )
    first, second = make_memory(acme), make_memory(acme)
    cursor = feed.head(acme)
    holding, release = threading.Event(), threading.Event()
    quick_done = threading.Event()

    def slow_writer():
        try:
            with transaction.atomic():
                flag(first, "1")
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    def quick_writer():
        try:
            flag(second, "2")
            quick_done.set()
        finally:
            connections.close_all()

    slow = threading.Thread(target=slow_writer, name="slow")
    slow.start()
    assert holding.wait(10)
    quick = threading.Thread(target=quick_writer)
    quick.start()
    # The slow one commits only when released: finishing first means it never waited for it.
    assert quick_done.wait(20), "the second writer waited for the first one's open transaction"
    quick.join(10)
    while_open = feed.read(acme, cursor)
    release.set()
    slow.join(10)
    after = feed.read(acme, while_open.cursor)

    assert [(c.memory_id, c.seq) for c in while_open.changes] == [(second.pk, cursor + 1)]
    assert [(c.memory_id, c.seq) for c in after.changes] == [(first.pk, cursor + 2)]
    assert verification.problem_in(acme) is None


@pytest.fixture
def queued(monkeypatch):
    """The runs nudges queue, kept here rather than run: the test runs them."""
    runs = []
    monkeypatch.setattr(
        heads.current_app,
        "signature",
        lambda name, args: SimpleNamespace(apply_async=lambda countdown: runs.append((args, countdown))),
    )
    return runs


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_run_that_finds_the_head_held_leaves_its_flag_set_and_comes_back_a_delay_later(
    acme, deferred, settings, queued
):
    """No worker process waits on the head: a run that finds it held queues itself again and
    goes, its flag still set; back after the holder, it links what came meanwhile."""
    from django.core.cache import cache

    settings.AUDIT_SEQUENCE_DELAY_MS, settings.AUDIT_SEQUENCE_SWEEP_SECONDS = 250, 5.0
    memory = make_memory(acme)
    sequencer.run(acme.pk)
    queued.clear()
    holding, release = threading.Event(), threading.Event()

    def holder():
        try:
            with transaction.atomic():
                heads.lock_head(acme.pk)
                holding.set()
                release.wait(20)
        finally:
            connections.close_all()

    held = threading.Thread(target=holder)
    held.start()
    assert holding.wait(10)
    flag(memory)  # committed: its nudge sets the flag and queues a run
    assert cache.get(heads.flag(acme.pk)) is not None and queued == [((acme.pk,), 0.25)]

    assert sequencer.run(acme.pk, queued=True).rows == 0  # returned at once: the head is held
    assert queued[1:] == [((acme.pk, 1), 0.25)]  # and queued again, a delay on
    assert sequencer.waiting(acme.pk) and cache.get(heads.flag(acme.pk)) is not None
    # Beat's sweep finds the head held too: a run is coming (the flag), so it queues none.
    assert sequencer.run(acme.pk).rows == 0 and len(queued) == 2
    # However long the holder takes, one run is coming: each return sets the flag anew (above, a
    # flag already set still queued the run again), so one that lapsed meanwhile does not let the
    # next commit start a second.
    cache.delete(heads.flag(acme.pk))
    assert sequencer.run(acme.pk, queued=True, held=1).rows == 0 and len(queued) == 3
    make_memory(acme)
    assert len(queued) == 3 and cache.get(heads.flag(acme.pk)) is not None
    # From its third try in a row, each run that finds it held comes back twice as late, up to
    # the sweep's period.
    assert queued[2] == ((acme.pk, 2), 0.25)
    for held_before in range(2, 7):
        assert sequencer.run(acme.pk, queued=True, held=held_before).rows == 0
    assert queued[3:] == [
        ((acme.pk, n), c) for n, c in zip(range(3, 8), [0.5, 1.0, 2.0, 4.0, 5.0], strict=True)
    ]
    release.set()
    held.join(10)
    assert sequencer.run(acme.pk, queued=True, held=7).linked >= 1  # the run queued again, after the holder
    assert not sequencer.waiting(acme.pk) and cache.get(heads.flag(acme.pk)) is None
    assert len(queued) == 8
    make_memory(acme)  # the holder gone, the next commit's run comes at the usual delay
    assert queued[8:] == [((acme.pk,), 0.25)]
    assert verification.problem_in(acme) is None


def test_runs_that_find_the_head_held_back_off_to_the_sweeps_period_and_half_the_flags_life(settings):
    settings.AUDIT_SEQUENCE_DELAY_MS, settings.AUDIT_SEQUENCE_SWEEP_SECONDS = 200, 5.0
    settings.AUDIT_SEQUENCE_FLAG_SECONDS = 30

    assert [heads.backoff(held) for held in range(9)] == [0.2, 0.2, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]
    assert heads.backoff(10**6) == 5.0  # however long the holder takes
    settings.AUDIT_SEQUENCE_FLAG_SECONDS = 4
    assert heads.backoff(9) == 2.0  # the flag outlives the wait, or a commit could start a second chain
    settings.AUDIT_SEQUENCE_DELAY_MS = 8000
    assert heads.backoff(0) == heads.backoff(9) == 8.0  # never sooner than the delay


def test_the_task_passes_on_how_many_runs_found_the_head_held(acme, monkeypatch):
    from memory_review.audit import tasks

    asked = []
    monkeypatch.setattr(
        sequencer, "run", lambda tenant_id, **kwargs: asked.append((tenant_id, kwargs)) or sequencer.Run()
    )

    tasks.sequence.apply(args=(acme.pk, 3))
    tasks.sequence.apply(args=(acme.pk,))  # a message from before the count was carried

    assert [kwargs["held"] for _, kwargs in asked] == [3, 0]
    assert all(kwargs["queued"] for _, kwargs in asked)


def test_a_run_the_broker_refuses_leaves_no_flag_to_swallow_the_next_commits(acme, monkeypatch):
    """A flag says a run is coming: when the broker refused it (a nudge's, or a run queueing
    itself again), the flag goes, so the next commit's nudge asks again rather than wait for the
    flag to lapse, or for the sweep."""
    from django.core.cache import cache

    asked = []

    def broker(name, args):
        def apply_async(countdown):
            asked.append(args)
            if len(asked) < 3:
                raise ConnectionError("the broker is down")

        return SimpleNamespace(apply_async=apply_async)

    monkeypatch.setattr(heads.current_app, "signature", broker)
    cache.delete(heads.flag(acme.pk))
    heads.nudge(acme.pk)
    assert cache.get(heads.flag(acme.pk)) is None
    cache.set(heads.flag(acme.pk), 1)
    heads.nudge_again(acme.pk)
    assert cache.get(heads.flag(acme.pk)) is None
    heads.nudge(acme.pk)  # the broker is back: the next commit's nudge queues the run
    assert asked == [(acme.pk,), (acme.pk, 1), (acme.pk,)] and cache.get(heads.flag(acme.pk)) is not None


@postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_run_links_once_and_what_commits_while_it_runs_waits_for_the_next_run(
    acme, deferred, queued, monkeypatch
):
    """A tenant's runs come at most one a delay: rows committed while a run works queue one more
    run (AUDIT_SEQUENCE_DELAY_MS on), which links them all; the run does not go round again."""
    from django.core.cache import cache

    first = make_memory(acme)
    sequencer.run(acme.pk)
    queued.clear()
    flag(first)
    assert len(queued) == 1
    link_seals, written = sequencer._link_seals, []

    def meanwhile(*args, **kwargs):  # once the run has read all it links: two writes commit
        linked = link_seals(*args, **kwargs)
        if written:
            return linked

        def write():
            try:
                written.extend(make_memory(acme) for _ in range(2))
            finally:
                connections.close_all()

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(20)
        return linked

    monkeypatch.setattr(sequencer, "_link_seals", meanwhile)
    done = sequencer.run(acme.pk)

    assert done.linked == 1 and len(written) == 2  # the flag's transition, not the two written since
    assert sequencer.waiting(acme.pk) and cache.get(heads.flag(acme.pk)) is not None
    assert len(queued) == 2  # the two commits queued one run between them
    monkeypatch.setattr(sequencer, "_link_seals", link_seals)
    assert sequencer.run(acme.pk).rows > 0
    assert not sequencer.waiting(acme.pk) and cache.get(heads.flag(acme.pk)) is None
    assert verification.problem_in(acme) is None
