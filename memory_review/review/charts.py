"""Charts, as plotly figures built here and drawn by static/js/charts.js with the plotly.js that
ships inside the plotly package (no CDN). Each answers one question, and the page shows its
numbers beside it."""

from datetime import timedelta

import plotly.graph_objects as go

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


def still_true_figure(points: list[VotePoint], policy: Thresholds) -> go.Figure:
    """Is this memory drifting towards a kill? still_true per vote over time, against the active
    policy's thresholds and the review band between them."""
    figure = go.Figure()
    for disposition, label in Disposition.choices:
        mine = [p for p in points if p.disposition == disposition]
        if not mine:
            continue
        figure.add_trace(
            go.Scatter(
                x=[p.at for p in mine],
                y=[p.still_true for p in mine],
                mode="markers",
                name=label,
                marker={"color": DISPOSITION_COLORS.get(disposition, "#444"), "size": 9},
                hovertemplate="%{x|%Y-%m-%d %H:%M}<br>still_true %{y:.2f}<extra>" + label + "</extra>",
            )
        )
    # The review band: uncertain between the thresholds, and the margin's dead band at each edge.
    figure.add_hrect(
        y0=policy.contradict_max, y1=policy.confirm_min, fillcolor="#f3ead2", line_width=0, layer="below"
    )
    for low, high in ((policy.contradict_at, policy.contradict_max), (policy.confirm_min, policy.confirm_at)):
        figure.add_hrect(y0=low, y1=high, fillcolor="#e5d3a1", line_width=0, layer="below")
    for y, text in (
        (policy.confirm_at, f"confirm ≥ {policy.confirm_at:.2f}"),
        (policy.contradict_at, f"kill ≤ {policy.contradict_at:.2f}"),
    ):
        figure.add_hline(
            y=y,
            line={"color": "#6b7385", "width": 1, "dash": "dash"},
            annotation_text=text,
            annotation_position="top left",
            annotation_font_size=11,
        )
    xaxis = {"title": {"text": "judged at"}}
    if points:
        # A lone vote, or votes minutes apart, would get a scale of milliseconds: show days.
        first, last = points[0].at, points[-1].at
        pad = max((last - first) * 0.05, timedelta(hours=12))
        xaxis["range"] = [first - pad, last + pad]
    figure.update_layout(
        height=300,
        margin={"l": 48, "r": 12, "t": 12, "b": 36},
        yaxis={"range": [-0.02, 1.02], "title": {"text": "still_true"}, "tickformat": ".1f"},
        xaxis=xaxis,
        legend={"orientation": "h", "y": -0.25},
        plot_bgcolor="#fff",
        paper_bgcolor="#fff",
    )
    return figure
