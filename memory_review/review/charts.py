"""Charts. The memory page's one chart is SVG laid out here (no script to load for it); the
calibration pages' are plotly figures built here and drawn by static/js/charts.js with the
plotly.js that ships inside the plotly package (no CDN). Each answers one question, and the page
shows its numbers beside it.

The figure is written as plotly's own JSON (data, layout) rather than through
plotly.graph_objects, whose validation took 40 ms for a memory's thousand votes; the test reads
the figure back as plotly.js will.
"""

import json
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder
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


def to_json(figure: dict) -> str:
    return json.dumps(figure, cls=DjangoJSONEncoder)


def reliability_figure(result) -> dict:
    """Is this question's probability what it says? Each bin's observed share against its mean
    probability, beside the diagonal a calibrated question would follow; n in each point's
    hover, and the number of votes per bin as bars behind (their own axis, on the right: plotly
    draws an overlaying axis's traces on top, so the bars take the base axis)."""
    filled = [b for b in result.bins if b.n]
    return {
        "data": [
            {
                "type": "bar", "name": "votes in bin",
                "x": [round((b.low + b.high) / 2, 3) for b in result.bins],
                "y": [b.n for b in result.bins], "width": 0.09, "marker": {"color": "#e3e6ee"},
                "hovertemplate": "%{y} votes<extra></extra>",
            },
            {
                "type": "scatter", "mode": "lines", "name": "calibrated", "x": [0, 1], "y": [0, 1],
                "yaxis": "y2", "line": {"color": LINE, "dash": "dash", "width": 1}, "hoverinfo": "skip",
            },
            {
                "type": "scatter", "mode": "lines+markers", "name": "observed", "yaxis": "y2",
                "x": [round(b.mean_p, 4) for b in filled], "y": [round(b.observed, 4) for b in filled],
                "text": [f"n={b.n}" for b in filled], "marker": {"color": "#0072B2", "size": 8},
                "hovertemplate": "said %{x:.2f}, true %{y:.2f} (%{text})<extra></extra>",
            },
        ],
        "layout": {
            "height": 260, "margin": {"l": 44, "r": 40, "t": 8, "b": 36}, "showlegend": False,
            "xaxis": {"range": [0, 1], "title": {"text": f"{result.question} (mean in bin)"}, "dtick": 0.1},
            "yaxis": {"side": "right", "showgrid": False, "rangemode": "tozero", "tickformat": ",d",
                      "title": {"text": "n"}},
            "yaxis2": {"overlaying": "y", "side": "left", "range": [0, 1], "dtick": 0.2,
                       "title": {"text": "observed"}},
            "plot_bgcolor": "#fff", "paper_bgcolor": "#fff",
        },
    }  # fmt: skip


def curve_figure(name: str, values: list[float], series: dict[str, list[float]], current: float) -> dict:
    """What moving one threshold alone does: each rate against the threshold's value, with the
    active policy's value marked."""
    colors = ["#009E73", "#56B4E9", "#D55E00", "#E69F00"]
    return {
        "data": [
            {
                "type": "scatter", "mode": "lines+markers", "name": label, "x": values, "y": ys,
                "line": {"color": colors[i % len(colors)]}, "marker": {"size": 5},
                "hovertemplate": f"{name} %{{x:.2f}}: {label} %{{y:.3f}}<extra></extra>",
            }
            for i, (label, ys) in enumerate(series.items())
        ],
        "layout": {
            "height": 260, "margin": {"l": 44, "r": 12, "t": 8, "b": 24},
            "xaxis": {"range": [0, 1], "dtick": 0.1},
            "yaxis": {"range": [0, 1.02], "title": {"text": "share of labelled cases"}},
            "legend": {"orientation": "h", "y": -0.15, "yanchor": "top"},
            "shapes": [{"type": "line", "yref": "paper", "x0": current, "x1": current, "y0": 0, "y1": 1,
                        "line": {"color": LINE, "dash": "dot", "width": 1}}],
            "plot_bgcolor": "#fff", "paper_bgcolor": "#fff",
        },
    }  # fmt: skip
