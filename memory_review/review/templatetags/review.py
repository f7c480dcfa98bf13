from django import template
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils.safestring import mark_safe

from memory_review.assessments.models import Disposition
from memory_review.calibration import labeling
from memory_review.memories import hidden_text, trust
from memory_review.review import explain, rows, words

register = template.Library()


@register.filter
def revealed(text: str | None) -> str:
    """A memory's or an event's words with every hidden character shown in its place and every
    look-alike word marked (memories/hidden_text.py), line breaks kept."""
    if not text:
        return ""
    return mark_safe(str(hidden_text.reveal(text)).replace("\n", "<br>"))  # noqa: S308  (escaped by reveal)


@register.filter
def without_hidden(text: str | None) -> str:
    """The words with hidden characters taken out: what a corrected version starts from."""
    return hidden_text.without_hidden(text or "")


@register.filter
def hidden_notes(text: str | None, subject: str | None = None) -> list[str]:
    """What `text` (and its `subject`) hide or imitate, a sentence a finding; [] for plain text."""
    found = [*hidden_text.findings(subject or ""), *hidden_text.findings(text or "")]
    return hidden_text.in_words(found)


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
def rate(value: float | None) -> str:
    """A rate to a tenth of a point (an estimate and its interval's ends)."""
    return "–" if value is None else f"{value:.1%}"


@register.filter
def trust_words(name: str | None) -> str:
    """A memory's trust class (memories/trust.py) in words."""
    return trust.WORDS.get(name, "not classed") if name else "not classed"


@register.filter
def thousands(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


@register.filter
def outcome_words(value: str | None, kind: str) -> str:
    """A label's outcome in the labeling buttons' words."""
    return labeling.outcome_words(kind, value)


@register.filter
def actor_words(actor: str | None) -> str:
    """An actor string (`user:3`, `agent:support-bot`, `policy:v1`) as a name."""
    return explain.written_by(actor or "")


@register.filter
def ago(at) -> str:
    """`at|ago`: "2 weeks ago", or "just now" (never "0 minutes ago"); for `{{ x|timesince }} ago`."""
    return words.ago(at) if at else ""


@register.filter
def waited(at) -> str:
    """`at|waited`: how long since, in its largest unit ("2 weeks"), "under a minute" at first."""
    return words.waited(at) if at else ""


@register.filter
def vote_words(name: str) -> str:
    """A vote's name in words: "still true", never `still_true`."""
    return name.replace("_", " ")


@register.filter
def disposition_words(value: str | None) -> str:
    """A disposition in words ("Partially changed", "No source (code)"), never its code."""
    return dict(Disposition.choices).get(value, value or "")


@register.filter
def status_words(status: str | None) -> str:
    """A status in words: "needs review", never its code."""
    return words.status_words(status)


@register.filter
def decision_words(value: str | None, kind: str) -> str:
    """What the policy decided about an item, in words (labeling.decision_words)."""
    return labeling.decision_words(kind, value)


@register.filter
def kappa_words(kappa: float | None) -> str:
    """Landis and Koch's words for a kappa, so the number reads at a glance: chosen from the value
    as shown (two decimals), so 0.81 never reads "substantial"."""
    if kappa is None:
        return "undefined"
    kappa = float(floatformat(kappa, 2))  # exactly as the page shows it beside these words
    for floor, said in ((0.81, "almost perfect"), (0.61, "substantial"), (0.41, "moderate"), (0.21, "fair"),
                        (0.0, "slight")):  # fmt: skip
        if kappa >= floor:
            return f"{said} agreement"
    return "worse than chance"


@register.simple_tag
def memory_row(memory, row_context):
    """A list row (memory_review/review/rows.py renders it, for speed)."""
    return rows.memory_row(memory, row_context)


@register.filter
def prob(value) -> str:
    """A vote or probability in two places, or a dash (rows.prob: floatformat:2's rounding)."""
    return rows.prob(value)


@register.simple_tag
def vote_cells(verdict):
    return rows.vote_cells(verdict)


@register.simple_tag(takes_context=True)
def verdict_row(context, verdict):
    """An assessment's verdict row (rows.verdict_row renders it, for speed); the memories' URL
    worked out once a page."""
    kept = context.render_context
    if "memories_url" not in kept:
        kept["memories_url"] = reverse("memory-list", args=[context["tenant"].slug])
    return rows.verdict_row(verdict, kept["memories_url"])


@register.simple_tag(takes_context=True)
def delivery_row(context, delivery, endpoint):
    """A webhook delivery's row in its endpoint's log (rows.delivery_row renders it, for speed)."""
    kept, slug = context.render_context, context["tenant"].slug
    if "csrf_input" not in kept:
        kept["memories_url"] = reverse("memory-list", args=[slug])
        kept["csrf_input"] = rows.csrf_input(context["csrf_token"])
    return rows.delivery_row(
        delivery, endpoint=endpoint, memories_url=kept["memories_url"], csrf_input=kept["csrf_input"],
        redeliver_url=lambda pk: reverse("webhook-redeliver", args=[slug, endpoint.pk, pk]),
    )  # fmt: skip


@register.simple_tag
def claim_cell(memory):
    return rows.claim_cell(memory)
