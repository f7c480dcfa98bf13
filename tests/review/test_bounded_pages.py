"""The memory page, the auditor's memory page and lineage cost what they show, not what the
tenant holds (issue 29): a memory moved hundreds of times and voted on hundreds of times, a
chain of dozens of versions and a hub of hundreds of links read as many queries as a memory
moved once, a chain of two and a memory with one link, for the first tenant and for the second
(whose rows all come after the first's), and each page renders a page of rows with a way to
read the rest that reaches every row once."""

import re
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory_review.assessments.models import Assessment, Verdict
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import MemoryLink
from memory_review.memories.services import event_record, link_create, memory_write
from memory_review.review import lineage, memory_page
from memory_review.tenancy.models import Role
from tests.factories import long_trail, make_memory, make_user

pytestmark = pytest.mark.django_db

MOVES, VOTES, VERSIONS, LINKS = 300, 300, 60, 200


def _votes(memory, policy, n: int) -> None:
    """`n` votes on `memory`, each on an event of its own, as one assessment records them."""
    events = [event_record(tenant=memory.tenant, source="chat", text=f"Evidence {k}.") for k in range(n)]
    assessment = Assessment.objects.create(
        tenant=memory.tenant, purpose="invalidation", event=events[0], policy=policy,
        question_set_version="test", state="done", model_name="jev-1.13.0",
    )  # fmt: skip
    Verdict.objects.bulk_create(
        Verdict(
            tenant=memory.tenant,
            assessment=assessment,
            memory=memory,
            event=event,
            row_version=1,
            disposition="uncertain",
            still_true=0.5,
            bears=0.9,
            replaces=0.1,
            partial=0.1,
            hypothetical=0.02,
            directive=0.02,
        )  # fmt: skip
        for event in events
    )


def _policy(tenant):
    from memory_review.assessments.services import policy_ensure_default

    return policy_ensure_default(tenant=tenant, created_by="test")


def _chain(tenant, n: int, subject: str) -> list:
    """A memory rewritten `n - 1` times: `n` versions linked `supersedes`, oldest first."""
    versions = [make_memory(tenant, subject=subject)]
    for k in range(1, n):
        versions.append(
            memory_write(
                event=event_record(tenant=tenant, source="email", text=f"{subject} changed, {k}."),
                kind="fact",
                subject=subject,
                content=f"{subject}, version {k + 1}.",
                written_by="agent:x",
                supersedes=versions[-1],
                actor=Actor.policy("v1"),
            )  # fmt: skip
        )
    return versions


@pytest.fixture
def tenants(acme, globex):
    """Both tenants, each with a lead and an auditor; globex's rows are all written after acme's."""
    for tenant in (acme, globex):
        make_user(f"{tenant.slug}-lead", tenant, Role.LEAD)
        make_user(f"{tenant.slug}-auditor", tenant, Role.AUDITOR)
    return (acme, globex)


@pytest.fixture
def histories(tenants):
    """Per tenant: a memory moved MOVES times with VOTES votes, and one moved twice with two."""
    shapes = {}
    for tenant in tenants:
        policy = _policy(tenant)
        heavy = long_trail(tenant, MOVES)  # bulk, hash-chained: the trail's first MOVES rows
        _votes(heavy, policy, VOTES)
        plain = make_memory(tenant)
        _votes(plain, policy, 2)  # the chart and the table, as the heavy one has them
        for action in ("flag", "approve"):  # moved twice, and active again as the heavy one is
            transition(
                obj=plain,
                action=action,
                actor=Actor("user", "7"),
                reason="look",
                seen_version=plain.row_version,
            )
        shapes[tenant.slug] = (heavy, plain)
    return shapes


@pytest.fixture
def chains(tenants):
    """Per tenant: a chain of VERSIONS versions and a chain of two."""
    return {tenant.slug: (_chain(tenant, VERSIONS, "long"), _chain(tenant, 2, "short")) for tenant in tenants}


@pytest.fixture
def hubs(tenants):
    """Per tenant: a guideline LINKS memories rest on, and a memory with one link."""
    shapes = {}
    for tenant in tenants:
        hub, lone = make_memory(tenant, kind="policy"), make_memory(tenant, kind="policy")
        for _ in range(LINKS):
            link_create(src=hub, dst=make_memory(tenant), kind=MemoryLink.Kind.SUPPORTS, origin="explicit")
        link_create(src=lone, dst=make_memory(tenant), kind=MemoryLink.Kind.SUPPORTS, origin="explicit")
        shapes[tenant.slug] = (hub, lone)
    return shapes


def _client_for(client, tenant, role: str):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username=f"{tenant.slug}-{role}"))
    return client


def _queries(client, url: str) -> tuple[int, str]:
    client.get(url)  # caches warmed, as on a server that has served a page before
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    return len(captured), response.content.decode()


def _memory_url(memory) -> str:
    return f"/t/{memory.tenant.slug}/memories/{memory.pk}/"


def _lineage_url(memory) -> str:
    return f"/t/{memory.tenant.slug}/audit/memories/{memory.pk}/"


@pytest.mark.parametrize("role", ["lead", "auditor"])
def test_a_memory_moved_and_voted_on_hundreds_of_times_reads_as_many_queries_as_one_moved_once(
    client, tenants, histories, role
):
    counts = {}
    for tenant in tenants:
        heavy, plain = histories[tenant.slug]
        _client_for(client, tenant, role)
        counts[tenant.slug, "plain"], _ = _queries(client, _memory_url(plain))
        counts[tenant.slug, "heavy"], page = _queries(client, _memory_url(heavy))

        assert page.count('id="transition-') == memory_page.HISTORY_PAGE
        assert page.count('id="verdict-') == memory_page.VERDICT_PAGE
        assert f"{MOVES} moves" in page
    _bounded(counts, shape="heavy", baseline="plain")


def test_the_older_moves_links_reach_every_move_once_newest_first(client, tenants, histories):
    for tenant in tenants:
        heavy, _ = histories[tenant.slug]
        _client_for(client, tenant, "lead")
        every = list(Transition.objects.filter(memory=heavy).order_by("-seq").values_list("seq", flat=True))
        page = client.get(_memory_url(heavy)).content.decode()
        seen, pages = [], 0
        while True:
            seen += [int(seq) for seq in re.findall(r'id="transition-(\d+)"', page)]
            pages += 1
            older = re.search(r'hx-get="\?part=history&(?:amp;)?moves_after=([\w-]+)"', page)
            if older is None:
                break
            # the htmx region alone, as the link asks for it; its plain href gives the whole page
            page = client.get(
                _memory_url(heavy), {"part": "history", "moves_after": older.group(1)}, HTTP_HX_REQUEST="true"
            ).content.decode()
            assert "<html" not in page and 'id="status-history"' in page

        assert seen == every  # each move once, newest first, none skipped
        assert pages == -(-MOVES // memory_page.HISTORY_PAGE)
        assert "← Newest moves" in page


def test_a_plain_older_moves_link_shows_the_whole_page_at_the_older_moves(client, tenants, histories):
    heavy, _ = histories["acme"]
    _client_for(client, tenants[0], "lead")
    first = client.get(_memory_url(heavy)).content.decode()
    href = re.search(r'href="(\?moves_after=[\w-]+)#status-history"', first).group(1)

    second = client.get(_memory_url(heavy) + href).content.decode()

    shown = [int(seq) for seq in re.findall(r'id="transition-(\d+)"', second)]
    assert "<html" in second and shown == list(range(MOVES - 20, MOVES - 40, -1))


def test_lineage_of_a_long_chain_reads_as_many_queries_as_a_chain_of_two_at_either_tenant(
    client, tenants, chains
):
    counts = {}
    for tenant in tenants:
        long, short = chains[tenant.slug]
        _client_for(client, tenant, "auditor")
        counts[tenant.slug, "short end"], _ = _queries(client, _lineage_url(short[-1]))
        counts[tenant.slug, "end"], end = _queries(client, _lineage_url(long[-1]))
        counts[tenant.slug, "middle"], middle = _queries(client, _lineage_url(long[VERSIONS // 2]))

        versions = [int(v) for v in re.findall(r"<td>v(\d+)</td>", middle)]
        around = list(
            range(VERSIONS // 2 + 1 - lineage.VERSIONS_AROUND, VERSIONS // 2 + 2 + lineage.VERSIONS_AROUND)
        )
        assert versions == [1, *around, VERSIONS]  # the nearest, and the chain's two ends
        assert f"· {VERSIONS}</span>" in middle and "versions between, not shown" in middle
        assert end.count('id="move-') == lineage.MOVES_PAGE
        assert f"{VERSIONS - 1} moves" in end  # one supersede a version but the latest
    _bounded(counts, shape="end", baseline="short end")
    _bounded(counts, shape="middle", baseline="short end")


def test_lineage_pages_reach_every_move_of_the_chain_once_oldest_first(client, tenants, chains):
    for tenant in tenants:
        long, _ = chains[tenant.slug]
        url = _lineage_url(long[-1])
        _client_for(client, tenant, "auditor")
        every = list(Transition.objects.filter(memory__in=long).order_by("seq").values_list("seq", flat=True))
        page, pages = client.get(url).content.decode(), []
        while True:
            pages.append([int(seq) for seq in re.findall(r'id="move-(\d+)"', page)])
            later = re.search(r'href="\?after=([\w-]+)#moves"', page)
            if later is None:
                break
            page = client.get(url, {"after": later.group(1)}).content.decode()
        earlier = re.search(r'href="\?before=([\w-]+)#moves"', page).group(1)

        assert [seq for shown in pages for seq in shown] == every and len(every) == VERSIONS - 1
        assert len(pages) == -(-len(every) // lineage.MOVES_PAGE)
        back = client.get(url, {"before": earlier}).content.decode()
        assert [int(seq) for seq in re.findall(r'id="move-(\d+)"', back)] == pages[-2]


def test_lineage_of_a_memory_moved_hundreds_of_times_pages_its_moves(client, tenants, histories):
    counts = {}
    for tenant in tenants:
        heavy, plain = histories[tenant.slug]
        _client_for(client, tenant, "auditor")
        counts[tenant.slug, "plain"], _ = _queries(client, _lineage_url(plain))
        counts[tenant.slug, "heavy"], page = _queries(client, _lineage_url(heavy))

        assert page.count('id="move-') == lineage.MOVES_PAGE
        assert f"{MOVES} moves" in page and f"{VOTES} votes" in page
    _bounded(counts, shape="heavy", baseline="plain")


@pytest.mark.parametrize("role", ["lead", "auditor"])
def test_a_hub_of_hundreds_of_links_reads_as_many_queries_as_a_memory_with_one(client, tenants, hubs, role):
    counts = {}
    for tenant in tenants:
        hub, lone = hubs[tenant.slug]
        _client_for(client, tenant, role)
        counts[tenant.slug, "lone"], _ = _queries(client, _memory_url(lone))
        counts[tenant.slug, "hub"], page = _queries(client, _memory_url(hub))
        counts[tenant.slug, "hub lineage"], _ = (
            _queries(client, _lineage_url(hub)) if role == "auditor" else (None, None)
        )

        listed = page[page.index('id="graph-list"') :]
        assert listed[: listed.index("</ul>")].count("<li>") == memory_page.LINKS_READ
        assert "data-links-truncated" in page
    _bounded(counts, shape="hub", baseline="lone", slack=0)
    if role == "auditor":
        assert counts["acme", "hub lineage"] == counts["globex", "hub lineage"]


def test_every_link_of_a_hub_is_read_a_page_at_a_time_each_once(client, tenants, hubs):
    counts = {}
    for tenant in tenants:
        hub, _ = hubs[tenant.slug]
        _client_for(client, tenant, "lead")
        every = sorted(MemoryLink.objects.filter(src=hub).values_list("pk", flat=True))
        first = client.get(_memory_url(hub)).content.decode()
        assert 'hx-get="?part=links"' in first and 'id="link-' not in first  # asked for, not read
        page, seen, pages = client.get(_memory_url(hub), {"part": "links"}, HTTP_HX_REQUEST="true"), [], 0
        while True:
            html = page.content.decode()
            seen += [int(pk) for pk in re.findall(r'id="link-(\d+)"', html)]
            pages += 1
            more = re.search(r'hx-get="\?part=links&(?:amp;)?links_after=([\w-]+)"', html)
            if more is None:
                break
            counts[tenant.slug, "links page"], _ = _queries(
                client, f"{_memory_url(hub)}?part=links&links_after={more.group(1)}"
            )
            page = client.get(
                _memory_url(hub), {"part": "links", "links_after": more.group(1)}, HTTP_HX_REQUEST="true"
            )

        assert seen == every and pages == -(-LINKS // memory_page.LINKS_PAGE)
    assert counts["acme", "links page"] == counts["globex", "links page"]


def test_what_held_at_a_time_shows_the_versions_nearest_it_however_long_the_chain(client, tenants, chains):
    counts = {}
    at = {"as_of": (timezone.now() + timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M")}
    for tenant in tenants:
        long, short = chains[tenant.slug]
        _client_for(client, tenant, "lead")
        counts[tenant.slug, "short"], _ = _queries(client, _memory_url(short[-1]) + "?" + urlencode(at))
        counts[tenant.slug, "long"], page = _queries(client, _memory_url(long[-1]) + "?" + urlencode(at))
        held = client.get(_memory_url(long[-1]), at).context["belief"].held

        table = page[page.index('id="asof"') :]
        table = table[: table.index("</section>")]
        assert held.pk == long[-1].pk
        assert table.count("<tr") == 1 + memory_page.BELIEF_AROUND  # the header and the ten by then
        assert f"{VERSIONS - memory_page.BELIEF_AROUND} more of “long” in this scope are not shown" in table
    _bounded(counts, shape="long", baseline="short", slack=0)


def test_a_chain_longer_than_is_read_says_more_than(client, tenants, chains, monkeypatch):
    long, _ = chains["acme"]
    whole = lineage.chain_of(long[0])
    monkeypatch.setattr(lineage, "CHAIN_READ", 10)

    chain = lineage.chain_of(long[VERSIONS // 2])
    page = _client_for(client, tenants[0], "auditor").get(_lineage_url(long[VERSIONS // 2])).content.decode()

    assert sorted(chain.distance.values()) == list(range(-10, 11)) and chain.more_older and chain.more_newer
    assert "· more than 21</span>" in page
    assert [whole.distance[v.pk] for v in long] == list(range(VERSIONS)) and not whole.more_newer


def _bounded(counts: dict, *, shape: str, baseline: str, slack: int = 1) -> None:
    """The shape's page reads as many queries at both tenants, and at most `slack` more than
    the baseline's (a count of the rows past the first page)."""
    assert counts["acme", shape] == counts["globex", shape], counts
    assert counts["acme", baseline] == counts["globex", baseline], counts
    assert counts["acme", shape] <= counts["acme", baseline] + slack, counts
