"""The counts by status that the tenant's home shows are kept by the writers, and always equal
what counting the memories would say."""

import pytest

from memory_review.lifecycle import Actor, IllegalTransition, transition
from memory_review.memories import tallies
from memory_review.memories.models import Memory, MemoryTally
from memory_review.memories.services import memory_forget
from memory_review.workflow.decisions import memory_rewrite
from tests.factories import flagged, make_memory, memory_in

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("upsert", [True, False], ids=["one upsert", "update or create (Oracle)"])
def test_writing_and_moving_memories_keeps_the_counts_true(acme, globex, lead, policy, monkeypatch, upsert):
    if not upsert:
        monkeypatch.setattr(tallies, "UPSERTS", set())
    for status in ("active", "needs_review", "frozen", "contradicted", "superseded", "expired", "deleted"):
        memory_in(acme, status)
    make_memory(globex)
    moved = flagged(acme, policy)
    transition(
        obj=moved, action="approve", actor=Actor.user(lead), reason="ok", seen_version=moved.row_version
    )
    memory_forget(memory=moved, actor=Actor.user(lead), reason="asked", seen_version=moved.row_version)
    memory_rewrite(
        memory=flagged(acme, policy), user=lead, content="New text.", reason="changed", seen_version=2
    )
    with pytest.raises(IllegalTransition):  # a refused move changes no count
        transition(
            obj=moved, action="approve", actor=Actor.user(lead), reason="x", seen_version=moved.row_version
        )

    for tenant in (acme, globex):
        kept = {status: n for status, n in tallies.counts(tenant).items() if n}
        assert kept == tallies.counted(tenant)
    assert tallies.counts(acme)["deleted"] == 2 and tallies.counts(acme)["superseded"] == 2


def test_the_home_page_reads_the_counts_without_counting_memories(client, acme, lead):
    for status in ("active", "active", "needs_review"):
        memory_in(acme, status)
    client.force_login(lead)

    counts = {status: n for status, _, n in client.get("/t/acme/").context["counts"]}

    assert counts["active"] == 2 and counts["needs_review"] == 1 and counts["frozen"] == 0


def test_recount_rebuilds_counts_after_a_bulk_load(acme):
    event = make_memory(acme).source_event
    Memory.objects.bulk_create(  # a bulk load that bypasses the writers
        [
            Memory(tenant=acme, source_event=event, kind="fact", subject=f"bulk {i}", content="x",
                   content_hash="h", written_by="import")
            for i in range(5)
        ]
    )  # fmt: skip
    assert tallies.counts(acme)["active"] == 1

    tallies.recount(acme)

    assert tallies.counts(acme)["active"] == 6
    assert MemoryTally.objects.for_tenant(acme).filter(stripe=0).count() == 7  # every status, zeros included
    assert MemoryTally.objects.for_tenant(acme).filter(stripe__gt=0).exclude(n=0).count() == 0
