"""Charts, laid out here as SVG and sent with the page: no chart library, no script, nothing to
wait for before a chart is on screen (the calibration page took 3 s to draw its 19 charts with
plotly.js, 1.2 MB; as SVG they arrive with the HTML). Each answers one question, names its
series in a legend (Okabe-Ito colours, each series also its own marker and dash, so no colour
carries meaning alone), and the page shows its numbers in a table beside it.

The memory page's chart (still_true_chart) is drawn by its template from the positions worked
out here; the calibration page's are built from the primitives below (a frame and its scales,
axes, bars, lines with their points, a legend), their marks written as one SVG string, since a
template loop spent milliseconds a chart on what is a few lines of Python.
"""

from dataclasses import dataclass, replace
from typing import NamedTuple

from django.utils.html import escape
from django.utils.safestring import mark_safe

from memory_review.assessments.models import Disposition
from memory_review.assessments.policy import Thresholds

from .memory_page import VotePoint

# Okabe-Ito: told apart with the common colour-vision deficiencies; the legend names each.
DISPOSITION_COLORS = {
    Disposition.CONFIRMED: "#009E73",
    Disposition.UNCERTAIN: "#E69F00",
    Disposition.PARTIAL: "#CC79A7",
    Disposition.SUPERSEDED: "#56B4E9",
    Disposition.CONTRADICTED: "#D55E00",
    Disposition.UNRELATED: "#999999",
    Disposition.HYPOTHETICAL: "#0072B2",
    Disposition.DIRECTIVE: "#000000",
}
LINE = "#6b7385"


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    color: str
    title: str


@dataclass(frozen=True)
class StillTrueChart:
    """Is this memory drifting towards a kill? Drawn as SVG on the memory page itself (no
    plotly.js to load there: the page's first paint), in a viewBox of WIDTH x HEIGHT."""

    dots: list[Dot]
    band: tuple[float, float]  # the review band's top and height, in the viewBox
    dead_bands: list[tuple[float, float]]  # the margin at each edge (top, height)
    edges: list[tuple[float, str]]  # dashed lines where a vote confirms or kills, and their words
    ticks_y: list[tuple[float, str]]  # (y of the label's baseline, label)
    ticks_x: list[tuple[float, str, str]]  # (x, label, text-anchor)
    legend: list[tuple[str, str]]  # (colour, disposition) of those drawn
    width: int = 640
    height: int = 220

    def dots_svg(self) -> str:
        """The dots as SVG, written here rather than by a template loop: a memory with a thousand
        votes spent about 20 ms of its page in the template engine drawing them."""
        circles = (
            f'<circle cx="{d.x}" cy="{d.y}" r="4.5" fill="{d.color}">'
            f"<title>{escape(d.title)}</title></circle>"
            for d in self.dots
        )
        return mark_safe("".join(circles))  # every value is a number, one of our colours, or escaped


LEFT, RIGHT, TOP, BOTTOM = 40, 10, 10, 28


def still_true_chart(points: list[VotePoint], policy: Thresholds) -> StillTrueChart:
    """still_true per vote over time against the active policy's review band (uncertain between
    the thresholds, the margin's dead band at each edge, dashed lines where a vote confirms or
    kills), each vote coloured by what the policy made of it."""
    width, height = StillTrueChart.width, StillTrueChart.height
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def y_of(value: float) -> float:
        return round(TOP + (1 - value) * plot_h, 1)

    first = points[0].at if points else None
    span = (points[-1].at - first).total_seconds() if len(points) > 1 else 0.0
    pad = max(span * 0.05, 12 * 3600)

    def x_of(at) -> float:
        if first is None:
            return LEFT
        return round(LEFT + (((at - first).total_seconds() + pad) / (span + 2 * pad)) * plot_w, 1)

    labels = dict(Disposition.choices)
    dots = [
        Dot(
            x_of(p.at),
            y_of(p.still_true),
            DISPOSITION_COLORS.get(p.disposition, "#444"),
            f"{p.at:%Y-%m-%d %H:%M}: still true {p.still_true:.2f}, {labels.get(p.disposition, '')}",
        )  # fmt: skip
        for p in points
    ]
    ticks_x = []  # the first and the last vote's days (one when they share it)
    if first is not None:
        ticks_x.append((x_of(first), f"{first:%-d %b}", "start"))
        if f"{points[-1].at:%-d %b}" != ticks_x[0][1]:
            ticks_x.append((x_of(points[-1].at), f"{points[-1].at:%-d %b}", "end"))
    drawn = {p.disposition for p in points}

    def between(high: float, low: float) -> tuple[float, float]:
        return y_of(high), round(y_of(low) - y_of(high), 1)

    return StillTrueChart(
        dots=dots,
        band=between(policy.confirm_min, policy.contradict_max),
        dead_bands=[
            between(policy.contradict_max, policy.contradict_at),
            between(policy.confirm_at, policy.confirm_min),
        ],
        edges=[
            (y_of(policy.confirm_at), f"confirm ≥ {policy.confirm_at:.2f}"),
            (y_of(policy.contradict_at), f"kill ≤ {policy.contradict_at:.2f}"),
        ],
        ticks_y=[(round(y_of(v) + 4, 1), f"{v:.1f}") for v in (0.0, 0.5, 1.0)],
        ticks_x=ticks_x,
        legend=[(DISPOSITION_COLORS.get(d, "#444"), label) for d, label in Disposition.choices if d in drawn],
    )


# -- chart primitives: a frame and its scales, axes, bars, lines and their points, a legend ------

BLUE, GREEN, VERMILLION, BLACK = "#0072B2", "#009E73", "#D55E00", "#000000"  # Okabe-Ito
TEXT, GRID = "#4a5163", "#e3e6ee"


class Style(NamedTuple):
    """How a series is drawn: its colour, its points' marker ("" for none) and its line's dash
    ("" for solid; None for no line), so two series differ in more than colour."""

    color: str
    marker: str = "circle"  # circle, open-square, triangle, diamond or ""
    dash: str | None = ""
    fill: str | None = None  # a bar's inside (its edge is `color`)


@dataclass(frozen=True)
class Key:
    """One entry of a chart's legend: a series' name and a swatch drawn as the series is."""

    name: str
    style: Style

    def swatch(self) -> str:
        s = self.style
        if s.fill:
            mark = f'<rect x="7" y="1" width="12" height="10" fill="{s.fill}" stroke="{s.color}"/>'
        else:
            mark = (
                _stroke(s, "M1 6H25")
                + f'<g transform="translate(13 6)" {_paint(s)}>{MARKERS.get(s.marker, "")}</g>'
            )
        size = 'viewBox="0 0 26 12" width="26" height="12"'
        return mark_safe(f'<svg {size} aria-hidden="true" focusable="false">{mark}</svg>')


@dataclass(frozen=True)
class Plot:
    """A chart as its page draws it: the marks inside an <svg viewBox="0 0 width height">
    (the page gives the <svg> its role, name and the table that describes it), and its legend."""

    width: int
    height: int
    marks: str
    legend: tuple[Key, ...]


@dataclass(frozen=True)
class Frame:
    """The plot area inside a viewBox (margins for the axes' words), and the scales from data to
    it: `xs` and `ys` are the data's ranges along each axis."""

    width: int = 360
    height: int = 240
    left: int = 48
    right: int = 14
    top: int = 10
    bottom: int = 40
    xs: tuple[float, float] = (0.0, 1.0)
    ys: tuple[float, float] = (0.0, 1.0)

    def x(self, value: float) -> float:
        low, high = self.xs
        return round(self.left + (value - low) / (high - low) * (self.width - self.left - self.right), 1)

    def y(self, value: float) -> float:
        low, high = self.ys
        return round(self.height - self.bottom - (value - low) / (high - low) * self.plot_height, 1)

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom


def tenths(value: float) -> str:
    return f"{value:.1f}"


def whole(value: float) -> str:
    return f"{value:.0f}"


def axes(frame: Frame, *, x_ticks, y_ticks, x_title: str, y_title: str, label=tenths) -> str:
    """The left and bottom axes: a light rule across the plot at each y tick, each tick's value,
    and each axis' title. Each tick is a <g class="tick x|y"> moved to its place, its label the
    value there (how a reader, and the tests, read a mark's value back off the chart)."""
    bottom, right = frame.height - frame.bottom, frame.width - frame.right
    ys = (
        f'<g class="tick y" transform="translate(0 {frame.y(v)})"><line x1="{frame.left}" x2="{right}" '
        f'stroke="{GRID}"/><text x="{frame.left - 6}" dy="4" text-anchor="end">{label(v)}</text></g>'
        for v in y_ticks
    )
    xs = (
        f'<g class="tick x" transform="translate({frame.x(v)} 0)"><line y1="{bottom}" y2="{bottom + 4}" '
        f'stroke="{TEXT}"/><text y="{bottom + 15}" text-anchor="middle">{label(v)}</text></g>'
        for v in x_ticks
    )
    middle_x, middle_y = (frame.left + right) / 2, frame.top + frame.plot_height / 2
    return (
        "".join(ys) + "".join(xs)
        + f'<path d="M{frame.left} {frame.top}V{bottom}H{right}" fill="none" stroke="{TEXT}"/>'
        + f'<text x="{middle_x}" y="{frame.height - 5}" text-anchor="middle">{escape(x_title)}</text>'
        + f'<text transform="translate(12 {middle_y}) rotate(-90)" text-anchor="middle">'
        + f"{escape(y_title)}</text>"
    )  # fmt: skip


def right_axis(frame: Frame, *, ticks, title: str, label=whole) -> str:
    """A second y axis on the right, for marks on a scale of their own (`frame`'s ys)."""
    edge = frame.width - frame.right
    marks = (
        f'<g class="tick right" transform="translate(0 {frame.y(v)})"><line x1="{edge}" x2="{edge + 4}" '
        f'stroke="{TEXT}"/><text x="{edge + 7}" dy="4">{label(v)}</text></g>'
        for v in ticks
    )
    middle_y = frame.top + frame.plot_height / 2
    return (
        "".join(marks)
        + f'<path d="M{edge} {frame.top}V{frame.height - frame.bottom}" fill="none" stroke="{TEXT}"/>'
        + f'<text transform="translate({frame.width - 6} {middle_y}) rotate(90)" text-anchor="middle">'
        + f"{escape(title)}</text>"
    )


def bars(frame: Frame, items, style: Style) -> str:
    """Bars rising from the frame's zero: (x from, x to, height, words on hover) each."""
    base = frame.y(frame.ys[0])
    return "".join(
        f'<rect class="bar" x="{frame.x(low)}" y="{frame.y(value)}" '
        f'width="{round(frame.x(high) - frame.x(low), 1)}" height="{round(base - frame.y(value), 1)}" '
        f'fill="{style.fill}" stroke="{style.color}"><title>{escape(words)}</title></rect>'
        for low, high, value, words in items
    )


def line(frame: Frame, name: str, points, style: Style) -> str:
    """A series: the line through its points (x, y, words on hover), and each point's marker as
    a <g class="point"> moved to its place."""
    at = [(frame.x(x), frame.y(y), words) for x, y, words in points]
    path = "M" + "L".join(f"{x} {y}" for x, y, _ in at) if len(at) > 1 and style.dash is not None else ""
    shape = MARKERS.get(style.marker)
    markers = "".join(
        f'<g class="point" transform="translate({x} {y})">{shape}<title>{escape(words)}</title></g>'
        for x, y, words in at
        if shape
    )
    return (
        f'<g class="series" data-series="{escape(name)}">{_stroke(style, path)}'
        f"<g {_paint(style)}>{markers}</g></g>"
    )


def rule(frame: Frame, x: float, style: Style) -> str:
    """A vertical line across the plot at `x` (a reference: the active policy's value)."""
    return _stroke(style, f"M{frame.x(x)} {frame.top}V{frame.height - frame.bottom}")


def plot(frame: Frame, marks: list[str], legend: list[Key]) -> Plot:
    """The marks in one group carrying the words' font and colour. Safe: every value in them is
    a number, one of our colours, or escaped."""
    group = f'<g font-size="11" fill="{TEXT}">{"".join(marks)}</g>'
    return Plot(frame.width, frame.height, mark_safe(group), tuple(legend))


def _stroke(style: Style, path: str) -> str:
    if not path or style.dash is None:
        return ""
    dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
    return f'<path d="{path}" fill="none" stroke="{style.color}" stroke-width="1.6"{dash}/>'


# Each marker centred on (0, 0), moved into place by its group; its paint is the series' (_paint).
MARKERS = {
    "circle": '<circle r="4"/>',
    "open-square": '<rect x="-5" y="-5" width="10" height="10"/>',  # around a circle, not over it
    "triangle": '<path d="M0 -5L4.5 3.5H-4.5Z"/>',
    "diamond": '<path d="M0 -5L5 0L0 5L-5 0Z"/>',
}


def _paint(style: Style) -> str:
    """The markers' paint, given once on the group that holds them. The open square is drawn
    around, not over, a circle at the same place: where strict and lenient agree both show."""
    if style.marker.startswith("open-"):
        return f'fill="none" stroke="{style.color}" stroke-width="1.5"'
    return f'fill="{style.color}"'


def _nice_ceiling(n: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50 ... at least n: the top of a count's axis."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= n:
                return m * step
        step *= 10


# -- the calibration page's charts ---------------------------------------------------------------------

TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
OBSERVED = Style(BLUE, "circle")
CALIBRATED = Style(LINE, "", "5 4")
IN_BIN = Style("#8a91a3", "", None, fill="#dde1e9")
ACTIVE = Style(LINE, "", "2 3")
# The curves' series in the order they are given: strict, lenient or false, ..., review rate.
CURVE_STYLES = (
    Style(BLUE, "circle"),
    Style(GREEN, "open-square", "6 3"),
    Style(VERMILLION, "triangle"),
    Style(BLACK, "diamond", "2 3"),
)


def reliability_chart(result) -> Plot:
    """Is this question's probability what it says? Each bin's observed share against its mean
    probability, beside the diagonal a calibrated question would follow; behind them the number
    of votes in each bin as bars, on their own axis (right)."""
    frame = Frame(right=42)
    counts = replace(frame, ys=(0, _nice_ceiling(max((b.n for b in result.bins), default=0))))
    filled = [b for b in result.bins if b.n]
    observed = [
        (b.mean_p, b.observed, f"said {b.mean_p:.2f}, true {b.observed:.2f} (n={b.n})") for b in filled
    ]
    in_bin = [(b.low + 0.01, b.high - 0.01, b.n, f"{b.low:.1f}–{b.high:.1f}: {b.n} votes") for b in filled]
    marks = [
        axes(frame, x_ticks=TICKS, y_ticks=TICKS, x_title="probability given (the bin's mean)",
             y_title="observed share"),
        right_axis(counts, ticks=(0, counts.ys[1]), title="votes in bin"),
        bars(counts, in_bin, IN_BIN),
        line(frame, "calibrated", [(0, 0, ""), (1, 1, "")], CALIBRATED),
        line(frame, "observed", observed, OBSERVED),
    ]  # fmt: skip
    legend = [Key("observed share", OBSERVED), Key("calibrated", CALIBRATED), Key("votes in bin", IN_BIN)]
    return plot(frame, marks, legend)


def curve_chart(name: str, values: list[float], counts: dict[str, list[int]], n: int, current: float) -> Plot:
    """What moving one threshold alone does: each count as a share of the `n` labelled cases
    against the threshold's value, with the active policy's value marked."""
    frame = Frame()
    marks = [
        axes(frame, x_ticks=TICKS, y_ticks=TICKS, x_title=name, y_title="share of labelled cases"),
        rule(frame, current, ACTIVE),
    ]
    legend = []
    for (label, found), style in zip(counts.items(), CURVE_STYLES, strict=False):
        points = [
            (v, c / n, f"{name} {v:.2f}: {label} {c} of {n}") for v, c in zip(values, found, strict=True)
        ]
        marks.append(line(frame, label, points, style))
        legend.append(Key(label, style))
    return plot(frame, marks, [*legend, Key(f"active policy ({current:g})", ACTIVE)])
