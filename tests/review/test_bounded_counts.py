"""Counts a page shows beside a bounded list are counted up to a bound and said as "more than"
past it (issue 17: one import's event wrote 200,000 memories, and lineage counted them all)."""

import pytest

from memory_review.memories.services import event_record, memory_write
from memory_review.review import lineage

pytestmark = pytest.mark.django_db


def test_lineage_says_more_than_when_its_event_wrote_more_than_are_counted(
    client, acme, auditor, monkeypatch
):
    monkeypatch.setattr(lineage, "COUNTED_UP_TO", 3)
    monkeypatch.setattr(lineage, "SAME_EVENT_SHOWN", 2)
    event = event_record(tenant=acme, source="email", text="An import of customer notes.")
    written = [
        memory_write(
            event=event, kind="fact", subject=f"note {i}", content=f"Note {i}.", written_by="agent:x"
        )
        for i in range(6)
    ]
    client.force_login(auditor)

    page = client.get(f"/t/acme/audit/memories/{written[0].pk}/").content.decode()

    assert "note 1" in page and "note 2" in page and "note 3" not in page  # the first two of the others
    assert "and more than 1 more." in page  # five others: counted up to three, two of them shown


def test_lineage_counts_exactly_below_the_bound(client, acme, auditor):
    event = event_record(tenant=acme, source="email", text="Two notes.")
    first, _ = (
        memory_write(
            event=event, kind="fact", subject=f"note {i}", content=f"Note {i}.", written_by="agent:x"
        )
        for i in range(2)
    )
    client.force_login(auditor)

    lineage = client.get(f"/t/acme/audit/memories/{first.pk}/").context["lineage"]

    assert (lineage.from_same_event_count, lineage.more_than, lineage.more_from_same_event) == (1, False, 0)
