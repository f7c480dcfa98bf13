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
