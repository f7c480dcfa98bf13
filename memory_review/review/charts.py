"""Charts, as plotly figures built here and drawn by static/js/charts.js with the plotly.js that
ships inside the plotly package (no CDN). Each answers one question, and the page shows its
numbers beside it.

The figure is written as plotly's own JSON (data, layout) rather than through
plotly.graph_objects, whose validation took 40 ms for a memory's thousand votes; the test reads
the figure back as plotly.js will.
"""

import json
from datetime import timedelta

from django.core.serializers.json import DjangoJSONEncoder

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
BAND, DEAD_BAND, LINE = "#f3ead2", "#e5d3a1", "#6b7385"


def still_true_figure(points: list[VotePoint], policy: Thresholds) -> dict:
    """Is this memory drifting towards a kill? still_true per vote over time, against the active
    policy's review band: uncertain between the thresholds, the margin's dead band at each edge,
    dashed lines where a vote confirms or kills."""
    traces = []
    for disposition, label in Disposition.choices:
        mine = [p for p in points if p.disposition == disposition]
        if mine:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": label,
                    "x": [p.at for p in mine],
                    "y": [p.still_true for p in mine],
                    "marker": {"color": DISPOSITION_COLORS.get(disposition, "#444"), "size": 9},
                    "hovertemplate": "%{x|%Y-%m-%d %H:%M}<br>still_true %{y:.2f}<extra>" + label + "</extra>",
                }
            )
    shapes = [_band(policy.contradict_max, policy.confirm_min, BAND)]
    shapes += [
        _band(policy.contradict_at, policy.contradict_max, DEAD_BAND),
        _band(policy.confirm_min, policy.confirm_at, DEAD_BAND),
    ]
    edges = (
        (policy.confirm_at, f"confirm ≥ {policy.confirm_at:.2f}"),
        (policy.contradict_at, f"kill ≤ {policy.contradict_at:.2f}"),
    )
    for y, _ in edges:
        shapes.append(
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y,
             "line": {"color": LINE, "width": 1, "dash": "dash"}}
        )  # fmt: skip
    xaxis = {"title": {"text": "judged at"}, "type": "date"}
    if points:
        # A lone vote, or votes minutes apart, would get a scale of milliseconds: show days.
        first, last = points[0].at, points[-1].at
        pad = max((last - first) * 0.05, timedelta(hours=12))
        xaxis["range"] = [first - pad, last + pad]
    return {
        "data": traces,
        "layout": {
            "height": 300,
            "margin": {"l": 48, "r": 12, "t": 12, "b": 36},
            "yaxis": {"range": [-0.02, 1.02], "title": {"text": "still_true"}, "tickformat": ".1f"},
            "xaxis": xaxis,
            "legend": {"orientation": "h", "y": -0.25},
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
            "shapes": shapes,
            "annotations": [
                {
                    "xref": "paper",
                    "x": 0,
                    "y": y,
                    "text": text,
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "font": {"size": 11},
                }
                for y, text in edges
            ],  # fmt: skip
        },
    }


def _band(low: float, high: float, color: str) -> dict:
    return {
        "type": "rect", "xref": "paper", "x0": 0, "x1": 1, "y0": low, "y1": high,
        "fillcolor": color, "line": {"width": 0}, "layer": "below",
    }  # fmt: skip


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
