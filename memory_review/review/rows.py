"""A row of the queue or of all memories, of an assessment's verdicts and of a webhook's delivery
log, rendered in Python the way Django's admin renders its result rows (`items_for_result`). A
list page renders fifty rows, and the queue re-renders them as reviewers page and act; the
template engine spent about 0.15 ms a row on this markup, most of the page's time, where
format_html spends a tenth of that. The markup lives here once: the list templates (through the
`memory_row`, `verdict_row` and `delivery_row` tags), an action's htmx answer and the polled
changes all use it. Every value goes through format_html, so everything is escaped."""

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from memory_review.assessments.models import Verdict
from memory_review.memories import hidden_text
from memory_review.memories.models import Memory, MemoryStatus

from .lists import excerpt
from .words import ago, moved, status_words, typed

LATE = mark_safe(' <span class="late" title="waiting longer than the review target">late</span>')
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
    can_lead: bool = False


def csrf_input(token: str) -> SafeString:
    """The form field `{% csrf_token %}` writes, for a form drawn in Python (one a page)."""
    return format_html('<input type="hidden" name="csrfmiddlewaretoken" value="{}">', token)


def row_context(request: HttpRequest, membership, list_name: str, *, query: str = "") -> RowContext:
    slug = membership.tenant.slug
    return RowContext(
        memories_url=reverse("memory-list", args=[slug]),
        assessments_url=reverse("assessment-list", args=[slug]),
        list_name=list_name,
        can_review=membership.can_review,
        csrf_input=csrf_input(get_token(request)),
        query=query,
        here=request.get_full_path(),
        can_lead=membership.can_lead,
    )


def memory_row(m: Memory, ctx: RowContext, *, outcome=None, conflict=None, problem=None) -> SafeString:
    """The row (a memory given its row fields by lists.decorate()), one line a cell so a screen
    holds a dozen; after an action, what happened to it."""
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
        '<span class="badge status-{}">{}</span> ', m.status, m.get_status_display()
    )  # fmt: skip
    return format_html(
        '<tr id="memory-{key}" data-row data-href="{url}" tabindex="0">'
        '<td class="subject">{status}<a href="{url}"><strong>{subject}</strong></a> '
        '<span class="content" title="{content}">{excerpt}</span>{trouble}</td>'
        '<td class="evidence" title="{evidence}">{evidence_cell}</td>'
        '<td class="why">{why}</td>'
        '<td class="num">{p}</td>'
        '<td class="ago"><time datetime="{moved}">{ago}</time>{late}</td>'
        '<td id="claim-{key}" class="claim">{claim}</td>'
        '<td class="actions">{actions}</td></tr>',
        key=m.key, url=url, subject=hidden_text.reveal(m.subject), status=status,
        content=hidden_text.as_read(m.content), excerpt=hidden_text.reveal(m.excerpt),
        trouble=_trouble(url, conflict, problem), evidence=m.evidence_line,
        evidence_cell=_evidence(m), why=_why(m, ctx), p=m.p_shown, moved=m.moved_iso, ago=m.ago,
        late=LATE if m.late else "",
        claim=claim_cell(m), actions=_actions(m, ctx, url),
    )  # fmt: skip


def _evidence(m: Memory) -> SafeString:
    if not m.evidence_line:
        return format_html('<span class="muted">{} · {}</span>', m.kind_label, m.scope_label)
    return format_html('<span class="muted">{}:</span> {}', m.last_move_channel, m.evidence_line)


def claim_cell(m: Memory) -> SafeString:
    """Who holds the item: the reviewer ("yours"), a colleague by name, or nobody."""
    if m.claim is not None:
        until = timezone.localtime(m.claim.expires_at).strftime("%H:%M")
        if m.mine:
            asked = (
                format_html(' <span class="claim-asked">{} asks for it</span>', m.claim.release_asked_by)
                if m.claim.release_asked_by
                else ""
            )
            return format_html(
                '<span class="claim-mine">yours</span> <span class="muted">· {}</span>{}', until, asked
            )
        return format_html(
            '<span class="claim-other">{}</span> <span class="muted">· {}</span>', m.claim.holder_name, until
        )
    if m.status == MemoryStatus.NEEDS_REVIEW:
        if m.assignees:
            return format_html('<span class="muted">for {}</span>', ", ".join(m.assignees))
        return mark_safe('<span class="muted">unclaimed</span>')
    return mark_safe("")


def _why(m: Memory, ctx: RowContext) -> SafeString:
    """One line, with the move and its evidence on demand (a disclosure, keyboard and screen
    reader friendly)."""
    move = m.last_move
    detail = ""
    if move is not None:
        evidence = ""
        if move.assessment_id:
            evidence = format_html(
                ' <a href="{}{}/">The assessment behind it →</a>', ctx.assessments_url, move.assessment_id
            )
        # A person's reason, as they typed it (none when they typed none); the policy's and the
        # jobs' are said by the sentence.
        said = typed(move.reason) if move.actor.startswith("user:") else None
        typed_line = format_html("{}: “{}”", move.actor_name, said) if said else ""
        detail = format_html("<p>{}{}</p>", typed_line, evidence) if typed_line or evidence else ""
    return format_html(
        '<details><summary title="{}">{}</summary><p>{}</p>{}</details>', m.why, m.why_short, m.why, detail
    )


def _trouble(url: str, conflict, problem) -> SafeString:
    if conflict is not None:
        now = timezone.now()
        moves = "; ".join(
            f"{move.actor_name} {moved(move)} {ago(move.created_at, now)}" for move in conflict.moves
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
    actions, with formaction when there is no JavaScript), each with its key; disabled, naming
    the holder, on a colleague's item, with ask to release (a lead may take it over); a way to
    restore for a dead one."""
    if not ctx.can_review:
        return mark_safe("")
    if m.status == MemoryStatus.NEEDS_REVIEW and m.claim is not None and not m.mine:
        take = (
            format_html(
                '<button type="submit" formaction="{url}claim/take-over/" hx-post="{url}claim/take-over/" '
                'class="small secondary">Take over</button>',
                url=url,
            )
            if ctx.can_lead
            else ""
        )
        return format_html(
            '<form method="post" action="{url}claim/ask/" hx-post="{url}claim/ask/" '
            'hx-target="#memory-{key}" hx-swap="outerHTML">{csrf}'
            '<input type="hidden" name="view" value="row">'
            '<input type="hidden" name="next" value="{here}">'
            '<button type="button" class="small" disabled title="{holder} holds it">Approve</button> '
            '<button type="button" class="small secondary" disabled title="{holder} holds it">Freeze'
            "</button> "
            '<button type="submit" class="small secondary">Ask {holder} to release</button> {take}</form>',
            url=url, key=m.key, csrf=ctx.csrf_input, here=ctx.here, holder=m.claim.holder_name, take=take,
        )  # fmt: skip
    if m.status == MemoryStatus.NEEDS_REVIEW:
        return format_html(
            '<form method="post" action="{url}act/" hx-post="{url}act/" hx-target="#memory-{key}" '
            'hx-swap="outerHTML">{csrf}'
            '<input type="hidden" name="seen_version" value="{version}">'
            '<input type="hidden" name="view" value="row">'
            '<input type="hidden" name="filters" value="{query}">'
            '<input type="hidden" name="next" value="{here}">'
            '<button type="submit" formaction="{url}claim/" hx-post="{url}claim/" class="small secondary" '
            'data-key="c"{mine}>Claim <kbd>c</kbd></button> '
            '<button type="submit" name="action" value="approve" class="small" data-key="a">'
            "Approve <kbd>a</kbd></button> "
            '<button type="submit" name="action" value="freeze" class="small secondary" data-key="f">'
            "Freeze <kbd>f</kbd></button>"
            "</form>",
            url=url, key=m.key, csrf=ctx.csrf_input, version=m.row_version, query=ctx.query, here=ctx.here,
            mine=mark_safe(" disabled") if m.mine else "",
        )  # fmt: skip
    if m.status in DEAD:
        # In the row itself: r focuses the reason box here, so nothing typed is lost to a page
        # load, and Ctrl+Enter restores (keys.js); one past its hard TTL is told to open its page.
        return format_html(
            '<form method="post" action="{url}act/" hx-post="{url}act/" hx-target="#memory-{key}" '
            'hx-swap="outerHTML" class="row-restore">{csrf}'
            '<input type="hidden" name="seen_version" value="{version}">'
            '<input type="hidden" name="view" value="row"><input type="hidden" name="next" value="{here}">'
            '<input type="hidden" name="list_name" value="{list_name}">'
            '<input name="reason" maxlength="1000" required data-reason aria-label="Why restore “{subject}”">'
            '<button type="submit" name="action" value="restore" class="small secondary" data-key="r" '
            "data-needs-reason>Restore <kbd>r</kbd></button></form>",
            url=url, key=m.key, csrf=ctx.csrf_input, version=m.row_version, here=ctx.here, subject=m.subject,
            list_name=ctx.list_name,
        )  # fmt: skip
    return mark_safe("")


CENT = Decimal("0.01")


def prob(value: float | None) -> str:
    """A vote or probability as every page shows it: two places, rounded half up exactly as
    Django's `floatformat:2` rounds (from the float's shortest repr), or a dash when there is none.
    floatformat costs 70 us a number (localisation, its general case); a page of fifty verdicts
    shows three hundred."""
    if value is None:
        return "–"
    return str(Decimal(repr(float(value))).quantize(CENT, rounding=ROUND_HALF_UP))


def vote_cells(verdict) -> SafeString:
    """A verdict's six votes, a cell each (assessments.models.Verdict)."""
    return format_html_join(
        "", '<td class="num">{}</td>', ((prob(getattr(verdict, vote)),) for vote in Verdict.VOTE_NAMES)
    )


def verdict_row(v, memories_url: str) -> SafeString:
    """A verdict as an assessment's page lists it: its memory, what the policy made of it (and
    the shadow, where it differs), its votes and the move it caused. `v` comes with its memory
    and its transitions (assessments.selectors.verdicts_of)."""
    shadow = (
        format_html('<br><span class="muted">shadow: {}</span>', v.shadow_disposition)
        if v.shadow_disposition and v.shadow_disposition != v.disposition
        else ""
    )
    moves = format_html_join(
        "",
        '<span class="badge status-{}">{}</span> → <span class="badge status-{}">{}</span>',
        ((t.from_status, status_words(t.from_status), t.to_status, status_words(t.to_status))
         for t in v.transitions.all()),
    ) or mark_safe('<span class="muted">no change</span>')  # fmt: skip
    return format_html(
        '<tr id="verdict-{pk}"><td><a href="{memories}{memory}/"><strong>{subject}</strong></a><br>'
        '<span class="content">{content}</span></td>'
        '<td><span class="disp disp-{disposition}">{disposition_words}</span>{shadow}</td>{votes}'
        "<td>{moves}</td></tr>",
        pk=v.pk, memories=memories_url, memory=v.memory_id, subject=v.memory.subject,
        content=excerpt(v.memory.content, 120), disposition=v.disposition,
        disposition_words=v.get_disposition_display(), shadow=shadow, votes=vote_cells(v), moves=moves,
    )  # fmt: skip


DELIVERY_BADGE = {"delivered": "status-active", "failed": "status-contradicted"}


def _clock(when, fmt: str = "%H:%M:%S") -> str:
    """A time as the `date` filter writes it in the site's zone, or nothing."""
    return "" if when is None else timezone.localtime(when).strftime(fmt)


def delivery_row(d, *, endpoint, memories_url: str, csrf_input: SafeString, redeliver_url) -> SafeString:
    """A delivery in an endpoint's log (agents.webhooks.log: with its change and the change's
    memory, or its notice, and its tries): the change and the memory (or the notice and the page it
    is about), the webhook-id, its state, each try's answer, and Redeliver once it is settled
    (`redeliver_url(delivery_id)`)."""
    state = format_html(
        '<span class="badge {}">{}</span>',
        DELIVERY_BADGE.get(d.state, "status-needs_review"),
        d.get_state_display(),
    )
    if d.state == "pending" and d.attempts:
        state += format_html('<br><span class="muted">next try {}</span>', _clock(d.next_attempt_at))
    if d.last_error:
        state += format_html('<br><span class="muted">{}</span>', d.last_error)
    tries = format_html_join(
        "", "<div>{}. {} · {}{}</div>",
        ((t.number, _clock(t.started_at), _answer(t), "" if t.latency_ms is None else f" · {t.latency_ms} ms")
         for t in d.tries.all()),
    ) or mark_safe('<span class="muted">not tried yet</span>')  # fmt: skip
    redeliver = (
        format_html(
            '<form method="post" action="{}" class="inline">{}<button type="submit" class="small">Redeliver'
            "</button></form>",
            redeliver_url(d.pk), csrf_input,
        )
        if d.state != "pending" and endpoint.state != "removed"
        else ""
    )  # fmt: skip
    return format_html(
        "<tr><td>{what}</td><td>{about}</td><td><code>{msg_id}</code></td>"
        "<td>{state}</td><td>{tries}</td><td>{redeliver}</td></tr>",
        what=_carried(d), about=_about(d, memories_url), msg_id=d.msg_id, state=state, tries=tries,
        redeliver=redeliver,
    )  # fmt: skip


def _carried(d) -> SafeString:
    """What a delivery carries, and when it was made: a change by its place in the feed, a notice
    by its kind."""
    made = d.change or d.notice
    name = f"#{d.change.seq} {d.change.kind}" if d.change_id else d.notice.kind
    at = _clock(made.created_at, "%Y-%m-%d %H:%M:%S")
    return format_html('{}<br><span class="muted">{}</span>', name, at)


def _about(d, memories_url: str) -> SafeString:
    """The change's memory, or the page the notice is about (its own words, when it names one)."""
    if d.change_id:
        change = d.change
        return format_html('<a href="{}{}/">{}</a>', memories_url, change.memory_id, change.memory.subject)
    page, words = d.notice.data.get("page"), d.notice.data.get("words") or d.notice.kind
    return format_html('<a href="{}">{}</a>', page, words) if page else format_html("{}", words)


def _answer(attempt) -> str:
    if attempt.code:
        return str(attempt.code)
    if attempt.latency_ms is None:
        return "no answer recorded (the worker stopped)"
    return attempt.error or "no response"
