"""Keyset paging walks every row exactly once, either way, whatever ties and precision."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memory_review.memories.models import Memory
from memory_review.review.paging import BadCursor, keyset_page
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


def walk(queryset, ordering, size):
    pages, cursor = [], None
    while True:
        page = keyset_page(queryset, ordering, size=size, after=cursor)
        pages.append(page)
        if not page.next_cursor:
            return pages
        cursor = page.next_cursor


@pytest.mark.parametrize("ordering", [("threshold_gap", "flagged_at", "id"), ("-updated_at", "-id")])
def test_every_row_appears_once_in_order_and_backwards_gives_the_same_pages(acme, ordering):
    base = timezone.now()
    for i in range(23):
        memory = make_memory(acme)
        # Ties in the leading column, and times a microsecond apart.
        Memory.objects.filter(pk=memory.pk).update(
            threshold_gap=[0.1, 0.2][i % 2],
            flagged_at=base + timedelta(microseconds=i // 3),
            updated_at=base + timedelta(microseconds=i // 4),
        )
    memories = Memory.objects.for_tenant(acme)

    pages = walk(memories, ordering, size=5)

    expected = list(memories.order_by(*ordering).values_list("pk", flat=True))
    assert [m.pk for page in pages for m in page.rows] == expected
    assert [len(page.rows) for page in pages] == [5, 5, 5, 5, 3]
    for earlier, later in zip(pages, pages[1:], strict=False):
        back = keyset_page(memories, ordering, size=5, before=later.prev_cursor)
        assert [m.pk for m in back.rows] == [m.pk for m in earlier.rows]


@pytest.mark.parametrize("cursor", ["%%%", "WzFd", "WyJub3QtYS1mbG9hdCIsIDEsIDJd", "bnVsbA"])
def test_a_damaged_cursor_is_refused_by_name(acme, cursor):
    make_memory(acme)
    with pytest.raises(BadCursor, match="page link"):
        keyset_page(Memory.objects.all(), ("threshold_gap", "flagged_at", "id"), size=5, after=cursor)
