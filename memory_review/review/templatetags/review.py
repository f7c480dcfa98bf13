from django import template

from memory_review.review import rows

register = template.Library()


@register.filter
def get_item(mapping, key):
    """`mapping|get_item:key`: a dict lookup by a variable key."""
    return mapping.get(key) if mapping else None


@register.filter
def row_total(cells) -> int:
    """The total of a confusion-matrix row of (column, count) cells."""
    return sum(count for _, count in cells)


@register.filter
def percent(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


@register.filter
def kappa_words(kappa: float | None) -> str:
    """Landis and Koch's words for a kappa, so the number reads at a glance."""
    if kappa is None:
        return "undefined"
    for floor, words in ((0.81, "almost perfect"), (0.61, "substantial"), (0.41, "moderate"), (0.21, "fair"),
                         (0.0, "slight")):  # fmt: skip
        if kappa >= floor:
            return f"{words} agreement"
    return "worse than chance"


@register.simple_tag
def memory_row(memory, row_context):
    """A list row (memory_review/review/rows.py renders it, for speed)."""
    return rows.memory_row(memory, row_context)


@register.simple_tag
def claim_cell(memory):
    return rows.claim_cell(memory)
