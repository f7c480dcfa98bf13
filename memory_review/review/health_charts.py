"""The memory health page's chart (issue 31, item 5): each period's estimated error rate with its
interval, drawn as SVG on the server from review/charts.py's parts; a period worse than the one
before beyond chance is marked with a second marker and named in the table beside it."""

from django.utils.html import escape

from memory_review.quality.health import Health

from .charts import BLUE, TEXT, VERMILLION, Frame, Key, Plot, Style, _nice_ceiling, axes, line, plot

RATE = Style(BLUE, "circle")
REGRESSED = Style(VERMILLION, "triangle", None)
INTERVAL = Style(BLUE, "", "")


def _whiskers(frame: Frame, spans) -> str:
    """A vertical line from each period's low to its high (x, low, high)."""
    return "".join(
        f'<path class="interval" d="M{frame.x(x)} {frame.y(low)}V{frame.y(high)}" '
        f'stroke="{INTERVAL.color}" stroke-width="1.4"/>'
        for x, low, high in spans
    )


def _dates(frame: Frame, ticks) -> str:
    """The x axis' ticks: each period's end, under its point."""
    bottom = frame.height - frame.bottom
    return "".join(
        f'<g class="tick x" transform="translate({frame.x(x)} 0)"><line y1="{bottom}" y2="{bottom + 4}" '
        f'stroke="{TEXT}"/><text y="{bottom + 15}" text-anchor="middle">{escape(words)}</text></g>'
        for x, words in ticks
    )


LEAST = 10  # labels a period, at the median, before a chart is drawn: fewer, and every interval
# spans most of the axis (two decisions a week: 0% to 84%), so the table says it better


def trend_chart(h: Health) -> Plot | None:
    """The estimate per period, oldest on the left, in percent; None before two periods have labels,
    or while a period's labels are too few for a chart to show anything but its intervals."""
    periods = [(i, p) for i, p in enumerate(h.trend) if p.estimate.rate is not None]
    if len(periods) < 2 or sorted(p.estimate.sampled for _, p in periods)[len(periods) // 2] < LEAST:
        return None
    top = _nice_ceiling(max(p.estimate.high for _, p in periods) * 100)
    frame = Frame(width=560, height=240, xs=(-0.5, len(h.trend) - 0.5), ys=(0, top))

    def words(p) -> str:
        e = p.estimate
        return f"{p.sample.period_end:%Y-%m-%d}: {e.rate:.1%} ({e.low:.1%}–{e.high:.1%}), {e.sampled} labels"

    worse = [(i, p) for i, p in periods if p.regressed]
    y_ticks = [top * k / 4 for k in range(5)]
    marks = [
        axes(frame, x_ticks=[], y_ticks=y_ticks, x_title="period ending", y_title="estimated wrong (%)",
             label=lambda v: f"{v:g}"),
        _dates(frame, [(i, f"{p.sample.period_end:%d %b}") for i, p in periods]),
        _whiskers(frame, [(i, p.estimate.low * 100, p.estimate.high * 100) for i, p in periods]),
        line(frame, "estimate", [(i, p.estimate.rate * 100, words(p)) for i, p in periods], RATE),
        line(frame, "worse", [(i, p.estimate.rate * 100, words(p)) for i, p in worse], REGRESSED),
    ]  # fmt: skip
    legend = [Key("estimated rate, with its interval", RATE), Key("worse than the period before", REGRESSED)]
    return plot(frame, marks, legend)
