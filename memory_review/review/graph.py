"""Laying out a memory's neighbourhood as an SVG the server draws. The memory sits in the middle
tier; memories whose links point at it (newer versions, what refines or supports it) stand above
it, what it points at (what it supersedes, refines, supports) below, one tier per link away, so a
version chain reads from the newest at the top down. Nodes are plain links, so the graph works
without JavaScript and with a keyboard; the list beside it says the same in words. The drawing is
a group of links (role="group"), not one image: an image may hold nothing a person can focus."""

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memory_review.memories.models import MemoryLink

from . import words
from .memory_page import GRAPH_LIMIT, Neighbourhood

NODE_W, NODE_H = 150, 40
TIER_GAP = 54  # between tiers: room for an edge's label beside it
SIDE_GAP = 40  # between boxes of one tier
LABEL_ROOM = 190  # beside a lone column of boxes, for the edges' labels
MARGIN = 10


@dataclass(frozen=True)
class Node:
    pk: int
    x: float  # centre
    y: float
    subject: str
    version: int
    status: str
    centre: bool

    @property
    def left(self) -> float:
        return self.x - NODE_W / 2

    @property
    def top(self) -> float:
        return self.y - NODE_H / 2

    @property
    def label_y(self) -> float:
        return self.y - 3

    @property
    def sub_y(self) -> float:
        return self.y + 12


@dataclass(frozen=True)
class Edge:
    x1: float
    y1: float
    x2: float
    y2: float
    label: str
    lx: float
    ly: float


@dataclass(frozen=True)
class Layout:
    nodes: list[Node]
    edges: list[Edge]
    width: float
    height: float
    node_w: int = NODE_W
    node_h: int = NODE_H
    hidden: int = 0


def memory_href(memory_url: str) -> Callable[[int], str]:
    """A memory's page from another's (`reverse()` once, not once a node: fifty links are a
    hundred reversals)."""
    base = memory_url.rstrip("/").rsplit("/", 1)[0]
    return lambda pk: f"{base}/{pk}/"


def _named(memory) -> str:
    return escape(f"{memory.subject} (version {memory.version}, {words.status_words(memory.status)})")


def svg_items(drawn: Layout, href: Callable[[int], str]) -> SafeString:
    """The edges and the nodes of the drawing, written here rather than by template loops (a
    memory with fifty links spent about 10 ms of its page drawing them in the template engine)."""
    # The edges are drawn for the eye alone: the list beside the graph says each link in words.
    out = ['<g aria-hidden="true">']
    out += [
        f'<line x1="{e.x1}" y1="{e.y1}" x2="{e.x2}" y2="{e.y2}" class="edge" marker-end="url(#arrow)"/>'
        f'<text x="{e.lx}" y="{e.ly}" class="edge-label">{escape(e.label)}</text>'
        for e in drawn.edges
    ]
    out.append("</g>")
    for n in drawn.nodes:
        status = words.status_words(n.status)
        out.append(
            f'<a href="{href(n.pk)}"><title>{escape(n.subject)} (version {n.version}, {status})</title>'
            f'<rect x="{n.left}" y="{n.top}" width="{NODE_W}" height="{NODE_H}" rx="6" '
            f'class="node node-{escape(n.status)}{" centre" if n.centre else ""}"/>'
            f'<text x="{n.x}" y="{n.label_y}" class="node-label">{escape(n.subject)}</text>'
            f'<text x="{n.x}" y="{n.sub_y}" class="node-sub">version {n.version} · {status}</text></a>'
        )
    return mark_safe("".join(out))  # numbers, our own class names and words, or escaped


def link_items(graph: Neighbourhood, href: Callable[[int], str]) -> SafeString:
    """The same links as a list, in words: one `<li>` a link."""
    origins = dict(MemoryLink.Origin.choices)
    out = []
    for link in graph.links:
        src, dst = graph.nodes.get(link.src_id), graph.nodes.get(link.dst_id)
        if src is None or dst is None:
            continue
        out.append(
            f'<li><a href="{href(link.src_id)}">{_named(src)}</a> <strong>{escape(link.kind)}</strong> '
            f'<a href="{href(link.dst_id)}">{_named(dst)}</a> '
            f'<span class="muted">· {escape(str(origins.get(link.origin, link.origin)).lower())}</span></li>'
        )
    return mark_safe("".join(out))  # every text is escaped


def tiers(graph: Neighbourhood) -> dict[int, int]:
    """Each drawn memory's tier: 0 for the centre, negative for what points at it, positive for
    what it points at; a memory two links away takes its side from the one that leads to it."""
    tier = {graph.centre.pk: 0}
    for hop in (1, 2):
        for link in graph.links:
            for near, far, side in ((link.dst_id, link.src_id, -1), (link.src_id, link.dst_id, 1)):
                if far in tier or graph.distance.get(far) != hop or near not in tier:
                    continue
                direction = tier[near] // abs(tier[near]) if tier[near] else side
                tier[far] = direction * hop
    return tier


def layout(graph: Neighbourhood) -> Layout:
    drawn = set(sorted(graph.nodes, key=lambda pk: (graph.distance[pk], pk))[:GRAPH_LIMIT])
    tier = {pk: t for pk, t in tiers(graph).items() if pk in drawn}
    rows: dict[int, list[int]] = {}
    for pk in sorted(tier, key=lambda pk: (graph.distance[pk], pk)):
        rows.setdefault(tier[pk], []).append(pk)
    top_tier = min(rows)
    widest = max(len(row) for row in rows.values())
    step_x, step_y = NODE_W + SIDE_GAP, NODE_H + TIER_GAP
    width = max(widest * step_x - SIDE_GAP, NODE_W + LABEL_ROOM) + 2 * MARGIN
    height = (max(rows) - top_tier) * step_y + NODE_H + 2 * MARGIN
    nodes = {}
    for t, row in rows.items():
        left = (width - (len(row) * step_x - SIDE_GAP)) / 2
        for i, pk in enumerate(row):
            memory = graph.nodes[pk]
            nodes[pk] = Node(
                pk=pk,
                x=left + NODE_W / 2 + i * step_x,
                y=MARGIN + NODE_H / 2 + (t - top_tier) * step_y,
                subject=memory.subject if len(memory.subject) <= 22 else memory.subject[:21] + "…",
                version=memory.version,
                status=memory.status,
                centre=pk == graph.centre.pk,
            )
    edges = []
    for link in graph.links:
        a, b = nodes.get(link.src_id), nodes.get(link.dst_id)
        if a is None or b is None:
            continue
        x1, y1 = _border(a, b)
        x2, y2 = _border(b, a)
        label = f"{link.kind} · {link.origin}"
        # The label sits 40% along from the source, beside the line: converging edges keep apart.
        edges.append(Edge(x1, y1, x2, y2, label, x1 + 0.4 * (x2 - x1) + 6, y1 + 0.4 * (y2 - y1) + 4))
    hidden = len(graph.nodes) - len(nodes)
    return Layout(nodes=list(nodes.values()), edges=edges, width=width, height=height, hidden=hidden)


def _border(a: Node, b: Node) -> tuple[float, float]:
    """Where the line from a's centre towards b leaves a's box, so arrows stop at the box."""
    dx, dy = b.x - a.x, b.y - a.y
    if dx == 0 and dy == 0:
        return a.x, a.y
    scale = min(
        (NODE_W / 2) / abs(dx) if dx else float("inf"),
        (NODE_H / 2) / abs(dy) if dy else float("inf"),
    )
    return round(a.x + dx * scale, 1), round(a.y + dy * scale, 1)
