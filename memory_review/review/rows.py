"""A row of the queue or of all memories, rendered in Python the way Django's admin renders its
result rows (`items_for_result`). A list page renders fifty rows, and the queue re-renders them
as reviewers page and act; the template engine spent about 0.15 ms a row on this markup, most of
the page's time, where format_html spends a tenth of that. The markup lives here once: the list
templates (through the `memory_row` tag), an action's htmx answer and the polled changes all
use it. Every value goes through format_html, so everything is escaped."""

from dataclasses import dataclass

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from memory_review.memories.models import Memory, MemoryStatus

DEAD = (MemoryStatus.CONTRADICTED, MemoryStatus.SUPERSEDED, MemoryStatus.EXPIRED)


@dataclass(frozen=True)
class RowContext:
    """What every row of one list shares, worked out once a page."""

    memories_url: str  # /t/<slug>/memories/: a row's links hang off it
    assessments_url: str
    list_name: str  # "queue" or "memories"
    can_review: bool
    csrf_input: SafeString
    query: str = ""  # the list's filters, so an action's answer can recount them
    here: str = ""  # where a form without JavaScript comes back to


def row_context(request: HttpRequest, membership, list_name: str, *, query: str = "") -> RowContext:
    slug = membership.tenant.slug
    return RowContext(
        memories_url=reverse("memory-list", args=[slug]),
        assessments_url=reverse("assessment-list", args=[slug]),
        list_name=list_name,
        can_review=membership.can_review,
        csrf_input=format_html(
            '<input type="hidden" name="csrfmiddlewaretoken" value="{}">', get_token(request)
        ),
        query=query,
        here=request.get_full_path(),
    )


def memory_row(m: Memory, ctx: RowContext, *, outcome=None, conflict=None, problem=None) -> SafeString:
    """The row (a memory given its row fields by lists.decorate()); after an action, what
    happened to it."""
    url = f"{ctx.memories_url}{m.key}/"
    if outcome is not None:
        left = ctx.list_name == "queue" and m.status != MemoryStatus.NEEDS_REVIEW
        return format_html(
            '<tr id="memory-{}" class="done" data-row data-href="{}" tabindex="0"><td colspan="7">'
            '<span class="ok">✓</span> {} <a href="{}">Open</a>{}</td></tr>',
            m.key, url, outcome.message, url,
            mark_safe(' <span class="muted">It left the queue.</span>') if left else "",
        )  # fmt: skip
    status = "" if ctx.list_name == "queue" else format_html(
        ' <span class="badge status-{}">{}</span>', m.status, m.get_status_display()
    )  # fmt: skip
    return format_html(
        '<tr id="memory-{key}" data-row data-href="{url}" tabindex="0">'
        '<td class="subject"><a href="{url}"><strong>{subject}</strong></a>{status}'
        '<br><span class="content">{excerpt}</span>{trouble}</td>'
        '<td>{kind}<br><span class="muted">{scope}</span></td>'
        '<td class="num">{p}</td>'
        '<td class="why">{why}<br><span class="muted">written from: {channel}</span></td>'
        '<td><time datetime="{moved}">{ago}</time></td>'
        '<td id="claim-{key}" class="claim">{claim}</td>'
        '<td class="actions">{actions}</td></tr>',
        key=m.key, url=url, subject=m.subject, status=status, excerpt=m.excerpt,
        trouble=_trouble(url, conflict, problem), kind=m.kind_label, scope=m.scope_label, p=m.p_shown,
        why=_why(m, ctx), channel=m.channel_label, moved=m.moved_iso, ago=m.ago, claim=claim_cell(m),
        actions=_actions(m, ctx, url),
    )  # fmt: skip


def claim_cell(m: Memory) -> SafeString:
    """Who holds the item: the reviewer ("yours"), a colleague by name, or nobody."""
    if m.claim is not None:
        until = timezone.localtime(m.claim.expires_at).strftime("%H:%M")
        if m.mine:
            return format_html(
                '<span class="claim-mine">yours</span><br><span class="muted">until {}</span>', until
            )
        return format_html(
            '<span class="claim-other">{}</span><br><span class="muted">until {}</span>',
            m.claim.holder_name,
            until,
        )
    if m.status == MemoryStatus.NEEDS_REVIEW:
        return mark_safe('<span class="muted">unclaimed</span>')
    return mark_safe("")


def _why(m: Memory, ctx: RowContext) -> SafeString:
    move = m.last_move
    if move is None:
        return format_html('<span class="muted">written {}; never moved</span>', m.ago)
    evidence = ""
    if move.assessment_id:
        evidence = format_html(
            ', <a href="{}{}/">assessment {}</a>', ctx.assessments_url, move.assessment_id, move.assessment_id
        )
    return format_html('{} <span class="muted">({}{})</span>', move.reason, move.actor_name, evidence)


def _trouble(url: str, conflict, problem) -> SafeString:
    if conflict is not None:
        now = timezone.now()
        moves = "; ".join(
            f"{move.actor_name} moved it {move.from_status} → {move.to_status} "
            f"{timesince(move.created_at, now)} ago"
            for move in conflict.moves
        )
        return format_html(
            '<p class="error" role="alert">Changed since you loaded it: {}. Nothing was changed. '
            '<a href="{}">Look again</a></p>',
            moves, url,
        )  # fmt: skip
    if problem:
        return format_html('<p class="error" role="alert">{}</p>', problem)
    return mark_safe("")


def _actions(m: Memory, ctx: RowContext, url: str) -> SafeString:
    """Claim, approve and freeze for a queue item (one form: its buttons post to their own
    actions, with formaction when there is no JavaScript); a way to restore for a dead one."""
    if not ctx.can_review:
        return mark_safe("")
    if m.status == MemoryStatus.NEEDS_REVIEW:
        return format_html(
            '<form method="post" action="{url}act/" hx-post="{url}act/" hx-target="#memory-{key}" '
            'hx-swap="outerHTML">{csrf}'
            '<input type="hidden" name="seen_version" value="{version}">'
            '<input type="hidden" name="view" value="row">'
            '<input type="hidden" name="filters" value="{query}">'
            '<input type="hidden" name="next" value="{here}">'
            '<button type="submit" formaction="{url}claim/" hx-post="{url}claim/" class="small secondary" '
            'data-key="c"{mine}>Claim</button> '
            '<button type="submit" name="action" value="approve" class="small" data-key="a">Approve</button> '
            '<button type="submit" name="action" value="freeze" class="small secondary" data-key="f">'
            "Freeze</button>"
            "</form>",
            url=url, key=m.key, csrf=ctx.csrf_input, version=m.row_version, query=ctx.query, here=ctx.here,
            mine=mark_safe(" disabled") if m.mine else "",
        )  # fmt: skip
    if m.status in DEAD:
        return format_html(
            '<a class="button small secondary" href="{}#decide" data-key="r">Restore…</a>', url
        )
    return mark_safe("")
