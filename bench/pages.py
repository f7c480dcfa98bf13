"""Every screen at size (issues 17 and 29): each page the navigation reaches, as a lead, an
auditor and a labeler, and the API's reads, beside Django's admin changelist of the same memories,
for the tenant built first and the tenant built last.

Two tenants (`--tenants`, default 2) of N memories each (default 200,000) share the tables, each a
year of work: ten verdicts per memory (the last two also decided by a shadow policy), ~1.6 audited
transitions per memory, hash-chained as the application chains them, 5% waiting in review, 7,500
labels from two labelers, 20,000 promotion candidates, claims and assignments, 100,000 receipts, a
webhook endpoint with 20,000 deliveries. The data has the shapes real tenants make, which a gentle
year hides (issue 29):

* the heavy memory, among the oldest rows: 3,001 moves, 3,000 votes, 50 links, 1,000 receipts;
* a supersession chain of 300 versions; a hub of 5,000 links and 5,000 votes;
* a subject word shared by half the memories and no candidate ("loyalty"), one by five;
* a customer with ~10,000 memories in force ("cust-big");
* for the tenant built last, a busy day at the end: a quarter of its memories written in the
  last day about one subject ("relocation"), half of them waiting in review, half approved by
  the lead in the last hours;
* filters that match what the data holds (an action that occurs, an API page that fills).

The shapes scale with N (the heavy memory's moves, the chain, the burst), so a small build has
them too (tests/test_queries_at_size.py counts queries at two sizes).

Each page is timed over HTTP through gunicorn as shipped (PostgreSQL; `--in-process` or SQLite:
through Django's test client), after warm-up requests, one request after another; its queries
are counted in-process in one request:

    .venv/bin/python bench/pages.py [--memories 200000] [--repeats 30] [--tenants 2]
    .venv/bin/python bench/pages.py --postgres postgres://postgres@127.0.0.1:5432 --keep
    .venv/bin/python bench/pages.py --reuse URL-or-path     # a kept database, timed again
    .venv/bin/python bench/pages.py --reuse URL --only memory  # pages whose name has "memory"
    .venv/bin/python bench/pages.py --reuse URL --walks        # queries whose plan throws rows away
    .venv/bin/python bench/pages.py --reuse URL --only queue --profile 30  # where the time goes

It prints median, p95 and queries per page for both tenants side by side, the targets met or
not, and closes with one JSON line.
"""

import argparse
import gc
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from datetime import timedelta
from types import SimpleNamespace
from urllib.parse import quote

# A derived figure's job (calibration/figures.py) runs in the request that queued it: the first,
# untimed request of such a page computes it, as the worker would; the timed ones read it kept.
os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")

import django  # noqa: E402
import numpy as np  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

import fill  # noqa: E402
from celery import current_app  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.agents.models import Receipt, WebhookAttempt, WebhookDelivery, WebhookEndpoint  # noqa: E402
from memory_review.assessments import selectors  # noqa: E402
from memory_review.assessments.models import (  # noqa: E402
    Assessment,
    PolicyVersion,
    PromotionCandidate,
    Verdict,
)
from memory_review.assessments.policy import Thresholds, decide_promotion  # noqa: E402
from memory_review.audit import chain  # noqa: E402
from memory_review.audit.models import Transition  # noqa: E402
from memory_review.calibration import figures as derived  # noqa: E402
from memory_review.calibration import labeling  # noqa: E402
from memory_review.calibration.models import Label  # noqa: E402
from memory_review.calibration.sweep import CODES, dispositions  # noqa: E402
from memory_review.integrity.heads import lock_head  # noqa: E402
from memory_review.integrity.keys import keyring  # noqa: E402
from memory_review.memories import tallies  # noqa: E402
from memory_review.memories.models import (  # noqa: E402
    Memory,
    MemoryChange,
    MemoryLink,
    SourceEvent,
    content_hash,
)
from memory_review.review.lists import QUEUE_ORDERS  # noqa: E402
from memory_review.review.paging import encode  # noqa: E402
from memory_review.tenancy.models import Membership, Role, Tenant  # noqa: E402
from memory_review.tenancy.tokens import token_create  # noqa: E402
from memory_review.workflow import assignment  # noqa: E402
from memory_review.workflow.models import Claim  # noqa: E402

# The tasks a worker knows (it imports them when it starts): a derived figure's job, queued by a page,
# then runs eagerly in that request.
current_app.loader.import_default_modules()

BATCH = 5000
PER_EVENT, WIDE = 100, 20_000  # memories an event bears on; the one broad event's
KINDS = [kind for kind, _ in Memory.Kind.choices]
SOURCES = [source for source, _ in SourceEvent.Source.choices]
POLICY = Thresholds()
SHADOW = Thresholds.from_data({**POLICY.to_data(), "confirm_min": 0.65, "contradict_max": 0.35})
DEAD = {
    "contradicted": ("policy", "contradict"),
    "superseded": ("policy", "supersede"),
    "expired": ("system", "expire"),
    "frozen": ("user", "freeze"),
    "deleted": ("user", "forget"),
}
WORDS = ("delivery", "refund", "invoice", "address", "language", "plan", "warranty", "contact", "billing")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def say(message: str) -> None:
    print(message, flush=True)


# -- the data ------------------------------------------------------------------------------------


class Stories:
    """What happened to each memory, decided before any row is written so that a memory's status
    and row version, its transitions and its verdicts agree. One array a property, a row a memory.

    The shapes real tenants make, which a gentle year hides (issue 29): the heavy memory, among
    the oldest rows, flagged and settled again and again (`churn` rounds: thousands of moves);
    and, for the tenant built last (`burst`), one busy day at the end: a quarter of its memories
    written in the last day about one subject no candidate shares, half waiting in review, half
    approved by the lead in the last hours (the flow's "after a busy day")."""

    def __init__(self, rng: np.random.Generator, n: int, *, burst: bool):
        self.rounds = rng.choice((0, 0, 0, 1, 1, 2), n)  # earlier flags, each settled
        roll = rng.random(n)
        dead = np.array(list(DEAD))[rng.integers(0, len(DEAD), n)]
        self.status = np.where(roll < 0.05, "needs_review", np.where(roll < 0.82, "active", dead))
        self.changed_minutes_ago = rng.integers(0, 60 * 24 * 300, n)
        self.lived_minutes = rng.integers(1, 60, n) * 60 * 24
        self.by_lead = np.zeros(n, dtype=bool)  # settled by the lead, whoever else would have
        self.burst = np.zeros(n, dtype=bool)
        if burst:
            self.burst[n - n // 4 :] = True
            size = int(self.burst.sum())
            waiting = np.arange(size) % 2 == 0
            self.status[self.burst] = np.where(waiting, "needs_review", "active")
            self.rounds[self.burst] = np.where(waiting, 0, 1)
            self.by_lead[self.burst] = ~waiting
            self.changed_minutes_ago[self.burst] = rng.integers(0, 8 * 60, size)  # decided today
            self.lived_minutes[self.burst] = rng.integers(8 * 60, 24 * 60, size)  # written in the day
        self.heavy = int(np.flatnonzero(self.status == "needs_review")[0])
        self.rounds[self.heavy] = churn(n)
        self.lived_minutes[self.heavy] = 299 * 24 * 60
        self.changed_minutes_ago[self.heavy] = 60
        self.moves = 2 * self.rounds + (self.status != "active")
        self.row_version = 1 + self.moves


def churn(n: int) -> int:
    """The heavy memory's flag-and-settle rounds: thousands of moves at size, fewer in a small
    build, so a test at two sizes sees a history four times longer (tests/test_queries_at_size.py)."""
    return min(1500, max(5, n // 4))


# Subjects a filter may meet: one shared by half the memories (100,000 at 200,000) and no
# candidate, one shared by a handful; and the busy day's, shared by every memory it wrote (the
# last tenant only).
MANY_WORD, FEW_WORD, BURST_WORD = "loyalty", "chargeback", "relocation"
BIG_CUSTOMER, BIG_CUSTOMER_MOST = "cust-big", 13_000  # ~10,000 in force at 200,000 memories
CHAIN_MOST = 300  # versions in the longest supersession chain


def subject_word(i: int, n: int, burst: bool) -> str:
    if burst:
        return BURST_WORD
    if i in (11, n // 5, n // 3, n // 2, 2 * n // 3):
        return FEW_WORD
    return MANY_WORD if i % 2 else WORDS[i % len(WORDS)]


def customer(i: int) -> str:
    return BIG_CUSTOMER if i % 14 == 1 and i < 14 * BIG_CUSTOMER_MOST else f"cust-{i % 5000}"


def write_transitions(
    tenant: Tenant, stories: Stories, mids: range, vid, hashes: list[str], people, now
) -> int:
    """Every memory's moves, in time order, hash-chained and signed as transition() does."""
    ring = keyring()
    key = ring.key(ring.current)
    head = lock_head(tenant.pk)
    moves = []
    statuses, rounds = stories.status.tolist(), stories.rounds.tolist()
    ago, lived = stories.changed_minutes_ago.tolist(), stories.lived_minutes.tolist()
    by_lead = stories.by_lead.tolist()
    for i, status in enumerate(statuses):
        changed = now - timedelta(minutes=ago[i])
        created = changed - timedelta(minutes=lived[i])
        span = (changed - created) / (2 * rounds[i] + (status != "active") + 1)
        at, version, was = created, 1, "active"
        for r in range(rounds[i]):
            at += span
            moves.append((at, i, was, "needs_review", "flag", "policy:v1", vid(r % 10, i), version + 1))
            at, version = at + span / 2, version + 1
            settle = (
                ("approve", f"user:{people[0 if by_lead[i] else i % len(people)]}", None)
                if i % 3 or by_lead[i]
                else ("confirm", "policy:v1", vid((r + 1) % 10, i))
            )
            moves.append((at, i, "needs_review", "active", settle[0], settle[1], settle[2], version + 1))
            version += 1
        if status == "needs_review":
            moves.append((changed, i, "active", "needs_review", "flag", "policy:v1", vid(9, i), version + 1))
        elif status != "active":
            kind, action = DEAD[status]
            actor = {"policy": "policy:v1", "system": "system:ttl"}.get(
                kind, f"user:{people[i % len(people)]}"
            )
            verdict = vid(9, i) if kind == "policy" else None
            moves.append((changed, i, "active", status, action, actor, verdict, version + 1))
    moves.sort(key=lambda move: move[0])
    macs = {}  # a reason's keyed hash, once per distinct reason
    ids = fill.next_ids(Transition, len(moves))
    state = {"prev": head.head_hash}

    def rows():
        for k, (at, i, from_status, to_status, action, actor, verdict, version) in enumerate(moves):
            reason = f"{action} on review" if actor.startswith("user") else f"{action} by {actor}"
            mac = macs.get(reason) or macs.setdefault(reason, chain.text_mac(reason, key))
            row = SimpleNamespace(
                tenant_id=tenant.pk, seq=head.seq + k + 1, memory_id=mids[i], candidate_id=None,
                from_status=from_status, to_status=to_status, action=action, actor=actor, reason_mac=mac,
                verdict_id=verdict, row_version=version, request_id_mac=None, content_hash=hashes[i],
                erased_by=None, created_at=at, key_id=ring.current, prev_hash=state["prev"],
            )  # fmt: skip
            digest = chain.row_hash(row, ring)
            yield (
                ids[k], tenant.pk, row.seq, row.memory_id, from_status, to_status, action, actor,
                reason, mac, verdict, version, hashes[i], at, state["prev"], digest, ring.current,
            )  # fmt: skip
            state["prev"] = digest

    fill.write(
        Transition,
        ("id", "tenant_id", "seq", "memory_id", "from_status", "to_status", "action", "actor", "reason",
         "reason_mac", "verdict_id", "row_version", "content_hash", "created_at", "prev_hash", "hash",
         "key_id"),
        rows(),
    )  # fmt: skip
    head.seq, head.head_hash = head.seq + len(moves), state["prev"]
    head.save(update_fields=["seq", "head_hash"])
    return head.seq


def write_memories(tenant: Tenant, n: int, stories: Stories, origins, rng: np.random.Generator, now):
    """The memories, and what later rows need of them: their ids and content hashes."""
    mids = fill.next_ids(Memory, n)
    queued = stories.status == "needs_review"
    p_true = np.round(np.where(queued, rng.uniform(0.36, 0.64, n), rng.random(n)), 3).tolist()
    options = rng.integers(0, 100, n).tolist()
    statuses, versions = stories.status.tolist(), stories.row_version.tolist()
    ago, lived = stories.changed_minutes_ago.tolist(), stories.lived_minutes.tolist()
    burst = stories.burst.tolist()
    hashes = []

    def rows():
        for i in range(n):
            word, origin, status = subject_word(i, n, burst[i]), origins[i % len(origins)], statuses[i]
            changed = now - timedelta(minutes=ago[i])
            created = changed - timedelta(minutes=lived[i])
            content = f"Customer {customer(i)[5:]} prefers option {options[i]} for the {word} (memory {i})."
            hashes.append(content_hash(content))
            waiting = status == "needs_review"
            yield (
                mids[i], tenant.pk, origin.pk, origin.source, KINDS[i % len(KINDS)],
                f"{word} {i:07d} for {customer(i)}", content, hashes[i], "agent:bench", customer(i),
                status, versions[i], p_true[i], POLICY.gap(p_true[i]), changed if waiting else None,
                ("partial" if i % 7 == 0 else "uncertain") if waiting else None,
                changed if status == "deleted" else None, created, changed, created,
            )  # fmt: skip

    fill.write(
        Memory,
        ("id", "tenant_id", "source_event_id", "channel", "kind", "subject", "content", "content_hash",
         "written_by", "user_id", "status", "row_version", "p_true", "threshold_gap", "flagged_at",
         "flagged_for", "deleted_at", "created_at", "updated_at", "valid_from"),
        rows(),
    )  # fmt: skip
    return mids, hashes


def write_verdicts(
    tenant: Tenant, n: int, stories: Stories, mids: range, policies, rng: np.random.Generator, now
):
    """Ten rounds of events, each bearing on 100 memories as a ticket or a chat does (the first
    round's first event is a broad change, a policy announcement, judged against 20,000), one
    assessment an event and a verdict for every memory each round; the last two rounds also
    decided by the shadow policy. Answers verdict ids: vid(round, memory index)."""
    policy, shadow = policies
    names = np.array(CODES)
    vbase = fill.next_ids(Verdict, 10 * n).start
    versions = np.maximum(1, stories.row_version - 1).tolist()
    for k in range(10):
        edges = list(range(0, n, PER_EVENT)) if k else [0, *range(min(n, WIDE), n, PER_EVENT)]
        eids, aids = fill.next_ids(SourceEvent, len(edges)), fill.next_ids(Assessment, len(edges))
        times = [now - timedelta(days=70 - 7 * k, minutes=-g) for g in range(len(edges))]
        fill.write(
            SourceEvent,
            ("id", "tenant_id", "source", "text", "text_hash", "occurred_at", "created_at"),
            (
                (eids[g], tenant.pk, SOURCES[(k + g) % len(SOURCES)],
                 f"Ticket {k}-{g}: the customer wrote about their {WORDS[g % len(WORDS)]}.", "y" * 64,
                 times[g], times[g])
                for g in range(len(edges))
            ),
        )  # fmt: skip
        fill.write(
            Assessment,
            ("id", "tenant_id", "purpose", "event_id", "policy_id", "state", "question_set_version",
             "model_name", "created_at", "finished_at"),
            ((aids[g], tenant.pk, "invalidation", eids[g], policy.pk, "done", "bench", "jev-1.13.0", times[g],
              times[g]) for g in range(len(edges))),
        )  # fmt: skip
        votes = SimpleNamespace(
            bears=rng.random(n),
            still_true=rng.random(n),
            replaces=rng.random(n) / 2,
            partial=rng.random(n) / 2,
            hypothetical=rng.random(n) / 5,
            directive=rng.random(n) / 5,
        )
        decided = names[dispositions(votes, POLICY)].tolist()
        shadowed = names[dispositions(votes, SHADOW)].tolist() if k >= 8 else [None] * n
        event = (np.searchsorted(edges, np.arange(n), side="right") - 1).tolist()
        columns = [getattr(votes, name).tolist() for name in Verdict.VOTE_NAMES]
        fill.write(
            Verdict,
            ("id", "tenant_id", "assessment_id", "memory_id", "event_id", *Verdict.VOTE_NAMES, "disposition",
             "row_version", "shadow_policy_id", "shadow_disposition", "created_at"),
            (
                (vbase + k * n + i, tenant.pk, aids[event[i]], mids[i], eids[event[i]],
                 *(column[i] for column in columns), decided[i], versions[i],
                 shadow.pk if k >= 8 else None, shadowed[i], times[event[i]])
                for i in range(n)
            ),
        )  # fmt: skip
    return lambda k, i: vbase + k * n + i


HUB_SUBJECT = "Refund guideline for every customer"
HUB_SIZE = 5000  # votes on it, and memories that rest on it


def write_hub(tenant: Tenant, linked: list[int], origin: SourceEvent, policy: PolicyVersion, now) -> None:
    """A guideline judged against 5,000 events, which 5,000 memories rest on: a memory page is
    bounded however many votes and links it has."""
    say(f"[{tenant.slug}] the hub: a guideline with {HUB_SIZE:,} votes and {HUB_SIZE:,} links ...")
    content = "Refunds over 100 EUR need a lead's approval, for every customer."
    hub = Memory.objects.create(
        tenant=tenant, source_event=origin, channel=origin.source, kind="config", subject=HUB_SUBJECT,
        content=content, content_hash=content_hash(content), written_by="agent:bench", p_true=0.8,
        threshold_gap=POLICY.gap(0.8), created_at=now - timedelta(days=200),
        updated_at=now - timedelta(days=1), valid_from=now - timedelta(days=200),
    )  # fmt: skip
    count = min(HUB_SIZE, len(linked))
    eids, aids = fill.next_ids(SourceEvent, count), fill.next_ids(Assessment, count)
    vids = fill.next_ids(Verdict, count)
    times = [now - timedelta(minutes=40 * (count - k)) for k in range(count)]
    fill.write(
        SourceEvent,
        ("id", "tenant_id", "source", "text", "text_hash", "occurred_at", "created_at"),
        ((eids[k], tenant.pk, "chat", f"Refund question {k}.", "h" * 64, times[k], times[k])
         for k in range(count)),
    )  # fmt: skip
    fill.write(
        Assessment,
        ("id", "tenant_id", "purpose", "event_id", "policy_id", "state", "question_set_version",
         "model_name", "created_at", "finished_at"),
        ((aids[k], tenant.pk, "invalidation", eids[k], policy.pk, "done", "bench", "jev-1.13.0", times[k],
          times[k]) for k in range(count)),
    )  # fmt: skip
    fill.write(
        Verdict,
        ("id", "tenant_id", "assessment_id", "memory_id", "event_id", *Verdict.VOTE_NAMES, "disposition",
         "row_version", "created_at"),
        ((vids[k], tenant.pk, aids[k], hub.pk, eids[k], 0.8, 0.7 + (k % 30) / 100, 0.1, 0.1, 0.02, 0.01,
          "confirmed", 1, times[k]) for k in range(count)),
    )  # fmt: skip
    fill.reset_sequences(SourceEvent, Assessment, Verdict)
    MemoryLink.objects.bulk_create(
        (
            MemoryLink(tenant=tenant, src_id=src, dst_id=hub.pk, kind="supports", origin="assessment")
            for src in linked[:count]
        ),
        batch_size=BATCH,
    )


def heavy_votes(n: int) -> int:
    return min(3000, max(10, n // 2))


def chain_of(n: int) -> range:
    """The indexes of the memories in the longest supersession chain: hundreds at size."""
    start = max(120, n // 10)  # past the heavy memory's neighbours (pks[1:110])
    return range(start, start + min(CHAIN_MOST, max(4, n // 20)))


def write_chain(tenant: Tenant, pks: range, n: int) -> None:
    """A memory rewritten version after version: each links `supersedes` to the one before."""
    chain = chain_of(n)
    say(f"[{tenant.slug}] a supersession chain of {len(chain)} versions ...")
    MemoryLink.objects.bulk_create(
        (
            MemoryLink(
                tenant=tenant, src_id=pks[i + 1], dst_id=pks[i], kind="supersedes", origin="assessment"
            )
            for i in chain[:-1]
        ),
        batch_size=BATCH,
    )


def add_hubs() -> None:
    for tenant in Tenant.objects.filter(slug__startswith="bench"):
        if not Memory.objects.for_tenant(tenant).filter(subject=HUB_SUBJECT).exists():
            linked = Memory.objects.for_tenant(tenant).order_by("-pk").values_list("pk", flat=True)[:HUB_SIZE]
            origin = SourceEvent.objects.for_tenant(tenant).order_by("pk").first()
            policy = PolicyVersion.objects.for_tenant(tenant).get(mode="active")
            write_hub(tenant, list(linked), origin, policy, timezone.now())
            tallies.recount(tenant)


def build_tenant(slug: str, n: int, seed: int, users: dict, *, burst: bool) -> dict:
    now = timezone.now()
    rng, arrays = random.Random(seed), np.random.default_rng(seed)
    tenant = Tenant.objects.create(slug=slug, name=slug.title())
    lead, labelers, auditor, team = users["lead"], users["labelers"], users["auditor"], users["team"]
    Membership.objects.create(tenant=tenant, user=lead, role=Role.LEAD)
    Membership.objects.create(tenant=tenant, user=auditor, role=Role.AUDITOR)
    Membership.objects.create(tenant=tenant, user=users["owner"], role=Role.ADMIN)
    Membership.objects.bulk_create(Membership(tenant=tenant, user=u, role=Role.LABELER) for u in labelers)
    Membership.objects.bulk_create(Membership(tenant=tenant, user=u, role=Role.REVIEWER) for u in team)
    policy = PolicyVersion.objects.create(
        tenant=tenant, number=1, mode="active", thresholds=POLICY.to_data(), created_by="bench"
    )
    shadow = PolicyVersion.objects.create(
        tenant=tenant, number=2, mode="shadow", thresholds=SHADOW.to_data(), created_by="bench"
    )
    origins = SourceEvent.objects.bulk_create(
        SourceEvent(
            tenant=tenant,
            source=source,
            text=f"Origin notes via {source}.",
            text_hash="x" * 64,
            occurred_at=now - timedelta(days=300),
        )
        for source in SOURCES
    )
    stories = Stories(arrays, n, burst=burst)
    big = (Memory, SourceEvent, Assessment, Verdict, Transition)
    with fill.filling(*big), transaction.atomic():
        say(f"[{slug}] writing {n:,} memories ...")
        mids, hashes = write_memories(tenant, n, stories, origins, arrays, now)
        say(f"[{slug}] writing ten verdicts per memory (the last two with the shadow's decision too) ...")
        vid = write_verdicts(tenant, n, stories, mids, (policy, shadow), arrays, now)
        say(f"[{slug}] writing the audit trail (hash-chained) ...")
        people = [lead.pk, *(u.pk for u in team)]
        transitions = write_transitions(tenant, stories, mids, vid, hashes, people, now)
        say(f"[{slug}] building the indexes again ...")
    fill.reset_sequences(*big)
    pks = mids

    votes = heavy_votes(n)
    say(
        f"[{slug}] the heavy memory: {2 * churn(n) + 1:,} moves, {votes:,} verdicts, 50 links, "
        "1,000 receipts ..."
    )
    heavy = Memory.objects.get(pk=pks[stories.heavy])
    events = SourceEvent.objects.bulk_create(
        SourceEvent(
            tenant=tenant,
            source=SOURCES[k % len(SOURCES)],
            text=f"Ticket update {k} about it.",
            text_hash="z" * 64,
            occurred_at=now - timedelta(hours=votes + 10 - k),
        )
        for k in range(votes)
    )
    small = Assessment.objects.bulk_create(
        Assessment(
            tenant=tenant,
            purpose="invalidation",
            event=e,
            policy=policy,
            state="done",
            question_set_version="bench",
            model_name="jev-1.13.0",
        )
        for e in events
    )
    Verdict.objects.bulk_create(
        (
            Verdict(
                tenant=tenant,
                assessment=a,
                memory=heavy,
                event=e,
                row_version=heavy.row_version,
                disposition="uncertain",
                bears=0.9,
                still_true=0.4 + 0.2 * rng.random(),
                replaces=0.2,
                partial=0.3,
                hypothetical=0.05,
                directive=0.02,
            )
            for a, e in zip(small, events, strict=True)
        ),
        batch_size=1000,
    )
    link_kinds = ["supports", "refines", "duplicates", "contradicts", "supersedes"]
    MemoryLink.objects.bulk_create(
        MemoryLink(
            tenant=tenant,
            src_id=pk if k % 2 else heavy.pk,
            dst_id=heavy.pk if k % 2 else pk,
            kind=link_kinds[k % 5],
            origin="assessment",
        )
        for k, pk in enumerate(p for p in pks[1:52] if p != heavy.pk)
        if k < 50
    )
    # The neighbours link on, so a second hop has somewhere to go.
    MemoryLink.objects.bulk_create(
        MemoryLink(tenant=tenant, src_id=pks[1 + k], dst_id=pks[60 + k], kind="refines", origin="assessment")
        for k in range(50)
    )

    write_hub(tenant, list(pks[-HUB_SIZE:]), origins[0], policy, now)
    write_chain(tenant, pks, n)

    say(f"[{slug}] receipts, labels, candidates, claims, a webhook's deliveries ...")
    Receipt.objects.bulk_create(
        (
            Receipt(
                tenant=tenant,
                memory_id=heavy.pk if k < 1000 else pks[rng.randrange(n)],
                version=1,
                response_id=f"resp-{k}",
                user_id=f"cust-{k % 5000}",
                agent_id="support-bot",
                thread_id=f"thread-{k % 20000}",
                used_at=now - timedelta(minutes=k),
            )
            for k in range(min(100_000, 1000 + n // 2))
        ),
        batch_size=BATCH,
    )
    # Two labelers, overlapping on a third of what they label (agreement needs pairs).
    picked = rng.sample(range(n), min(n, 5_700))
    labels = []
    for j, i in enumerate(picked):
        who = [labelers[0]] if j % 3 == 1 else [labelers[1]] if j % 3 == 2 else labelers
        for labeler in who:
            outcome = rng.choice(("confirmed", "confirmed", "contradicted", "uncertain", "partial"))
            labels.append(Label(tenant=tenant, verdict_id=vid(9, i), labeler=labeler, outcome=outcome))
    Label.objects.bulk_create(labels[:7_000], batch_size=BATCH)
    labeling.fill_vote_bins(Label.objects.for_tenant(tenant))  # what Label.save() keeps with each
    candidates = []
    for k in range(min(20_000, 100 + n // 10)):
        votes = {"supported": rng.random(), "scope_fits": rng.random(), "conflict": rng.random() / 2}
        decision = decide_promotion(votes, policy=POLICY)
        reviewed = k % 4 != 0
        reviewer = (
            (decision if rng.random() < 0.85 else rng.choice(("promote", "reject"))) if reviewed else None
        )
        status = {"promote": "approved", "reject": "rejected", "review": "approved"}.get(
            reviewer, "needs_review"
        )
        claim = f"Customer {k % 5000} asked for {WORDS[k % len(WORDS)]} option {k % 100}."
        candidates.append(
            PromotionCandidate(
                tenant=tenant,
                kind=KINDS[k % len(KINDS)],
                subject=f"{WORDS[k % len(WORDS)]} proposal {k}",
                claim=claim,
                claim_hash=content_hash(claim),
                source_event=origins[k % len(origins)],
                proposed_by="agent:bench",
                **votes,
                policy_decision=decision,
                reviewer_decision="promote" if reviewer == "review" else reviewer,
                reviewed_by=f"user:{lead.pk}" if reviewed else None,
                disagreement=(reviewer != decision and decision != "review") if reviewed else None,
                status=status,
                user_id=f"cust-{k % 5000}",
            )
        )
    PromotionCandidate.objects.bulk_create(candidates, batch_size=BATCH)
    Label.objects.bulk_create(
        Label(
            tenant=tenant,
            candidate=c,
            labeler=labelers[k % 2],
            outcome=rng.choice(("promote", "unsupported", "conflict")),
        )
        for k, c in enumerate(candidates[:500])
    )
    waiting = Memory.objects.for_tenant(tenant).needs_review().order_by("pk")
    Claim.objects.bulk_create(
        Claim(
            tenant=tenant,
            memory=m,
            holder=team[k % len(team)],
            claimed_at=now - timedelta(minutes=k),
            expires_at=now + timedelta(minutes=30) if k < 60 else now - timedelta(minutes=k - 30),
            released_at=None if k < 60 else now - timedelta(minutes=k - 10),
        )
        for k, m in enumerate(waiting[:3000])
    )
    assignment.rule_create(tenant=tenant, to=team[0], by=lead, channel="email")
    assignment.rule_create(tenant=tenant, to=team[1], by=lead, kind="preference", subject="refund")
    # A few by hand (a small tenant's queue is not all handed out, so the rules have items too).
    for k, memory in enumerate(waiting[: min(200, waiting.count() // 5)]):
        assignment.assign(memory=memory, to=lead if k % 2 else team[2 + k % 4], by=lead)

    moved = (
        Transition.objects.for_tenant(tenant).order_by("-seq").values_list("pk", "memory_id", "created_at")
    )
    changes = MemoryChange.objects.bulk_create(
        (
            MemoryChange(
                tenant=tenant, seq=k + 1, memory_id=memory, kind="moved", transition_id=pk, created_at=at
            )
            for k, (pk, memory, at) in enumerate(reversed(list(moved[:20_000])))
        ),
        batch_size=BATCH,
    )
    endpoint = WebhookEndpoint.objects.create(
        tenant=tenant,
        url="https://agent.example.com/hooks",
        secret="whsec_" + "A" * 32,
        created_by="bench",
        cursor=changes[-1].seq,
        description="support-bot's cache",
    )
    deliveries = WebhookDelivery.objects.bulk_create(
        (
            WebhookDelivery(
                tenant=tenant,
                endpoint=endpoint,
                change=c,
                msg_id=f"msg_{slug}_{c.seq}",
                state="delivered" if k % 50 else ("failed" if k % 100 else "pending"),
                attempts=1 if k % 50 else 3,
                next_attempt_at=c.created_at,
                delivered_at=c.created_at if k % 50 else None,
                last_code=200 if k % 50 else 503,
            )
            for k, c in enumerate(changes)
        ),
        batch_size=BATCH,
    )
    WebhookAttempt.objects.bulk_create(
        (
            WebhookAttempt(
                tenant=tenant,
                delivery=d,
                number=1,
                started_at=d.next_attempt_at,
                latency_ms=40,
                code=d.last_code,
            )
            for d in deliveries
        ),
        batch_size=BATCH,
    )
    tallies.recount(tenant)  # the rows went in around the writers that keep the counts
    write_audits(tenant, users["labelers"], now)
    return {"tenant": tenant, "heavy": heavy, "transitions": transitions}


def write_audits(tenant: Tenant, labelers, now) -> None:
    """Twelve daily periods of each sampled-audit population, as the health page reads them: one
    real draw of each (the app's own, over the whole population), copied back eleven days, with a
    lead's plan and the gate on. Labeled in the shapes a team leaves: about 4% not true, but a
    quarter in the email channel on the newest day (a regression, so the banner and the trend's
    test run); the newest day labeled only two thirds of the way (so "still to label" is worked
    out); and one item in thirty labeled again, the other way, by a second labeler (disputes)."""
    from memory_review.quality import sampling, schedule
    from memory_review.quality.models import AuditItem, AuditLabel, AuditSample

    schedule.set_plan(
        tenant, by="system:bench", every_days=1, precision=0.03, confidence=0.95, budget=2000, share=0.25,
        gate_target=0.95,
    )  # fmt: skip
    rng = random.Random(tenant.pk)
    first, second = labelers[0], labelers[1]
    for population in ("unreviewed", "decisions"):
        drawn = sampling.draw(
            tenant=tenant, population=population, by="system:bench", start=now - timedelta(days=1), end=now
        )
        items = list(AuditItem.objects.filter(sample=drawn))
        channel = dict(
            Memory.objects.filter(pk__in={i.memory_id for i in items}).values_list("pk", "channel")
        )
        for day in range(12):
            sample = drawn
            if day:
                sample = AuditSample.objects.get(pk=drawn.pk)
                sample.pk, sample.drawn_at = None, drawn.drawn_at - timedelta(days=day)
                sample.period_end = drawn.period_end - timedelta(days=day)
                AuditSample.objects.bulk_create([sample])
                copies = AuditItem.objects.bulk_create(
                    [AuditItem(tenant=tenant, sample=sample, stratum=i.stratum, memory_id=i.memory_id,
                               transition_id=i.transition_id, rank=i.rank) for i in items],
                    batch_size=BATCH,
                )  # fmt: skip
            else:
                copies = [item for item in items if rng.random() < 2 / 3]
            labels = []
            for item in copies:
                wrong = 0.25 if day == 0 and channel.get(item.memory_id) == "email" else 0.04
                outcome = "false" if rng.random() < wrong else "true"
                labels.append(AuditLabel(tenant=tenant, item=item, labeler=first, outcome=outcome))
                if rng.random() < 1 / 30:
                    other = "true" if outcome == "false" else "false"
                    labels.append(AuditLabel(tenant=tenant, item=item, labeler=second, outcome=other))
            AuditLabel.objects.bulk_create(labels, batch_size=BATCH)


def rewrite_audits(now) -> None:
    """A kept database's sampled audits written again, in write_audits' shapes, a bench tenant at
    a time, each deleted and written in one transaction (a bench database: its rows are deleted
    around the application, and nothing here verifies their seals)."""
    labelers = list(
        get_user_model().objects.filter(username__startswith="bench-labeler-").order_by("username")
    )
    for tenant in Tenant.objects.filter(slug__startswith="bench").order_by("pk"):
        with transaction.atomic():
            with connection.cursor() as cursor:
                for table in ("quality_auditlabel", "quality_audititem", "quality_auditsample"):
                    cursor.execute(f"DELETE FROM {table} WHERE tenant_id = %s", [tenant.pk])
            write_audits(tenant, labelers, now)


def build(n: int, tenants: int) -> None:
    User = get_user_model()
    users = {
        "lead": User.objects.create_user(
            "bench-lead", password="bench", first_name="Maria", last_name="Chen"
        ),
        "auditor": User.objects.create_user("bench-auditor", first_name="Omar", last_name="Haddad"),
        "owner": User.objects.create_user("bench-owner", first_name="Sam", last_name="Okoro"),
        "labelers": [
            User.objects.create_user(f"bench-labeler-{k}", first_name=name, last_name="Labeler")
            for k, name in enumerate(("Lea", "Lou"))
        ],
        "team": [
            User.objects.create_user(f"bench-reviewer-{k}", first_name=name, last_name="Reviewer")
            for k, name in enumerate(("Ana", "Ben", "Chloe", "Dev", "Eli", "Fay"))
        ],
    }
    User.objects.create_superuser("bench-admin", password="bench")
    for t in range(tenants):
        build_tenant("bench" if t == 0 else f"bench{t + 1}", n, 7 + t, users, burst=t == tenants - 1)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


# -- the measurements ----------------------------------------------------------------------------


def heaviest(captured) -> dict:
    """The page's slowest query (as it ran in the counted request), with its plan on PostgreSQL:
    the index review docs/performance.md keeps."""
    top = max(captured.captured_queries, key=lambda q: float(q["time"]))
    found = {"sql": top["sql"], "ms": round(float(top["time"]) * 1000, 1)}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + top["sql"])
            found["plan"] = [row[0] for row in cursor.fetchall()]
    return found


def measure(client: Client, url: str, repeats: int, *, explain: bool = False) -> dict:
    """In-process: the page's queries (counted in one request), and with `repeats` its time."""
    for _ in range(3 if repeats else 1):
        response = client.get(url)
        assert response.status_code == 200 or (url == "/" and response.status_code == 302), (
            url,
            response.status_code,
            response.content[:500],
        )
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    queries = len(captured)  # now: the next request clears the connection's query log
    plan = heaviest(captured) if explain else None
    if not repeats:
        return {"queries": queries, **({"heaviest": plan} if plan else {})}
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get(url)
        if response.streaming:
            b"".join(response.streaming_content)
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(percentile(samples, 95), 1),
        "queries": queries,
        **({"heaviest": plan} if plan else {}),
    }


def profile(client: Client, url: str, repeats: int, top: int) -> None:
    """Where a page's time goes in Python: its costliest functions by own time over `repeats`
    requests (after a warm-up), to choose what to make faster; never part of the figures."""
    import cProfile
    import io
    import pstats

    client.get(url)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeats):
        response = client.get(url)
        if response.streaming:
            b"".join(response.streaming_content)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(top)
    say(f"--- {url}, {repeats} requests, by own time:\n" + out.getvalue().split("\n", 6)[-1])
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    say("its queries, slowest first:")
    for query in sorted(captured.captured_queries, key=lambda q: -float(q["time"]))[:top]:
        say(f"  {float(query['time']) * 1000:7.1f} ms  {query['sql'][:300]}")


class Gunicorn:
    """The web app served as shipped (memory_review/gunicorn_conf.py: threaded workers) on this
    database, for the figures over HTTP the targets are stated in (issue 29): what a person's
    browser waits for, the WSGI server and its threads included."""

    def __enter__(self):
        self.port = throwaway.free_port()
        env = {**os.environ, "WEB_BIND": f"127.0.0.1:{self.port}", "DATABASE_URL": database_url()}
        conf = throwaway.ROOT / "memory_review" / "gunicorn_conf.py"
        self.web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(conf)],
            env=env, cwd=throwaway.ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        throwaway.wait_until_answers(f"http://127.0.0.1:{self.port}/healthz", "gunicorn")
        return self

    def __exit__(self, *exc):
        os.killpg(self.web.pid, signal.SIGTERM)
        self.web.wait(timeout=30)

    def get(self, conn: http.client.HTTPConnection, url: str, headers: dict) -> int:
        conn.request("GET", url, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status

    def measure(self, url: str, headers: dict, repeats: int) -> dict:
        """One person's requests, one after another on a kept-alive connection, after warm-ups: a
        gthread worker hands each request on a connection to any of its threads, and a thread's
        first request opens its own database connection (4 to 10 ms) and fills its caches; two
        warm-ups a thread give every thread its own before the timing starts."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        for _ in range(2 * int(os.environ.get("WEB_THREADS", "8"))):
            status = self.get(conn, url, headers)
            assert status in (200, 302), (url, status)
        samples = []
        for _ in range(repeats):
            started = time.perf_counter()
            self.get(conn, url, headers)
            samples.append((time.perf_counter() - started) * 1000)
        conn.close()
        return {
            "median_ms": round(statistics.median(samples), 1),
            "p95_ms": round(percentile(samples, 95), 1),
        }

    def concurrent(self, url: str, headers: dict, *, clients: int, seconds: float) -> dict:
        """`clients` people reading `url` at once for `seconds`: requests a second and the latency
        each saw. What one request costs is the table; this is what the server gives when they
        overlap on this machine's two cores."""
        latencies, stop = [], time.perf_counter() + seconds

        def client() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            warm = 0
            while (started := time.perf_counter()) < stop:
                assert self.get(conn, url, headers) == 200, url
                if warm >= 2:  # each client's first two: its connection and the worker's warm-up
                    latencies.append((time.perf_counter() - started) * 1000)
                warm += 1

        threads = [threading.Thread(target=client) for _ in range(clients)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.perf_counter() - began
        return {
            "clients": clients,
            "requests_per_s": round(len(latencies) / took, 1),
            "median_ms": round(statistics.median(latencies), 1),
            "p95_ms": round(percentile(latencies, 95), 1),
        }


def database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor != "postgresql":
        raise SystemExit("over HTTP is PostgreSQL only (gunicorn's workers on one SQLite file would queue)")
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    return f"postgres://{settings['USER']}@{host}:{port}/{settings['NAME']}"


def write_plans(path: str, figures: dict, n: int) -> None:
    """Each page's slowest query and its plan, as markdown (docs/performance.md's appendix)."""
    lines = [f"# The slowest query of each page at {n:,} memories a tenant ({connection.vendor})", ""]
    for name, page in figures.items():
        top = page.pop("heaviest")
        lines += [
            f"## {name} ({page['who']}): {top['ms']} ms of {page['median_ms']} ms",
            "",
            "```sql",
            top["sql"],
            "```",
        ]
        if "plan" in top:
            lines += ["", "```", *top["plan"], "```"]
        lines.append("")
    with open(path, "w") as out:
        out.write("\n".join(lines))
    say(f"plans: {path}")


WASTE_ROWS = 10_000  # a plan node that reads and throws away more rows than this is a walk


def replayed(client: Client, url: str, explain: str):
    """Each query the page sends (a SELECT or a WITH), with its `EXPLAIN (explain)` lines, run
    under the plan settings the page held it to (memories/search.py's `set_config(..., true)`
    before a statement; SET LOCAL here, gone with the replay's transaction). PostgreSQL only."""
    client.get(url)  # a figure gone stale meanwhile is computed here (its job, eager in the bench)
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    held = None
    for query in captured.captured_queries:
        sql = query["sql"]
        if "set_config('enable_" in sql:
            held = sql if "'off'" in sql else None
            continue
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")) or "set_config" in sql:
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            if held:
                cursor.execute(held)
            cursor.execute(f"EXPLAIN ({explain}) " + sql)
            yield sql, held, [row[0] for row in cursor.fetchall()]


def walks(client: Client, url: str) -> list[str]:
    """Every query of the page whose plan throws away more than WASTE_ROWS rows in one node
    (Rows Removed by Filter, by Join Filter, by Index Recheck): a primary key walked past
    another tenant's rows, an index that cannot give the order, a filter the index misses.
    PostgreSQL only; the planner's choice shows at size, never in a test's few rows."""
    import re

    found = []
    for sql, _, plan in replayed(client, url, "ANALYZE, FORMAT TEXT"):
        for line in plan:
            removed = re.search(r"Rows Removed by (?:Filter|Join Filter|Index Recheck): (\d+)", line)
            if removed and int(removed.group(1)) > WASTE_ROWS:
                found.append(f"{int(removed.group(1)):>12,} rows thrown away: {sql[:160]}")
                break
    return found


def explain_all(client: Client, url: str, title: str) -> list[str]:
    """Every query the page sends with its EXPLAIN (ANALYZE, BUFFERS), as markdown: the whole of
    a page's reads (docs/performance-plans-*.md)."""
    lines = [f"## {title}: `{url}`", ""]
    for sql, held, plan in replayed(client, url, "ANALYZE, BUFFERS"):
        lines += ["```sql", sql, "```", *([f"(held: `{held}`)"] if held else []), "```", *plan, "```", ""]
    return lines


def day_ago(days: int) -> str:
    return (timezone.now() - timedelta(days=days)).date().isoformat()


def deep_cursor(tenant: Tenant, position: int) -> str:
    ordering = QUEUE_ORDERS["risk"]
    row = Memory.objects.for_tenant(tenant).needs_review().order_by(*ordering)[position]
    return encode(row, ordering)


# Each page: (who, url, target group). Groups and their p95 targets (issue 17, item 2).
TARGETS = {"list": 60, "memory": 100, "derived": 300, "label": 50, "api": 60, "admin": None}


def pages(tenant: Tenant, heavy: Memory, token: str) -> dict[str, tuple[str, str, str]]:
    t = f"/t/{tenant.slug}"
    queued = Memory.objects.for_tenant(tenant).needs_review().count()
    wide, typical = Assessment.objects.for_tenant(tenant).order_by("pk")[:2]  # 20,000 and 100 verdicts
    candidates = PromotionCandidate.objects.for_tenant(tenant).order_by("pk")
    candidate = candidates.filter(disagreement=True).first() or candidates.first()
    endpoint = WebhookEndpoint.objects.for_tenant(tenant).get()
    n = Memory.objects.for_tenant(tenant).count()
    deep_seq = encode(Transition.objects.for_tenant(tenant).order_by("seq")[min(1000, n // 2)], ("-seq",))
    wide_deep = encode(
        selectors.verdicts_of(wide, with_unrelated=False).order_by(*selectors.VOTED_ORDER)[min(WIDE, n) // 3],
        selectors.VOTED_ORDER,
    )  # a third of the way down the broad event's verdicts
    hub = Memory.objects.for_tenant(tenant).get(subject=HUB_SUBJECT).pk
    deep_memory = Memory.objects.for_tenant(tenant).order_by("-pk").values_list("pk", flat=True)[n // 3]
    by_age = Memory.objects.for_tenant(tenant).exclude(subject=HUB_SUBJECT).order_by("pk")
    chain = chain_of(by_age.count())
    chain_end = by_age.values_list("pk", flat=True)[chain[-1]]
    chain_middle = by_age.values_list("pk", flat=True)[chain[len(chain) // 2]]
    one_subject = quote(heavy.subject)
    feed_end = MemoryChange.objects.for_tenant(tenant).count()
    lead = f"user:{get_user_model().objects.get(username='bench-lead').pk}"
    same = f"status__exact=needs_review&tenant__id__exact={tenant.pk}"  # the queue's memories
    api = f"/api/v1/t/{tenant.slug}"
    return {
        # A support lead's day
        "home": ("lead", "/", "list"),
        "tenant_home": ("lead", f"{t}/", "list"),
        "queue_first": ("lead", f"{t}/review/", "list"),
        "queue_deep": ("lead", f"{t}/review/?after={deep_cursor(tenant, max(0, queued - 10))}", "list"),
        "queue_filtered": ("lead", f"{t}/review/?kind=preference&source=email&flagged_for=uncertain", "list"),
        "queue_by_subject": ("lead", f"{t}/review/?q=refund%2000", "list"),
        "queue_by_subject_rare": ("lead", f"{t}/review/?q=0012345", "list"),
        "queue_by_subject_many": ("lead", f"{t}/review/?q={MANY_WORD}", "list"),
        "queue_by_subject_burst": ("lead", f"{t}/review/?q={BURST_WORD}", "list"),
        "queue_assigned_mine": ("lead", f"{t}/review/?assigned=mine", "list"),
        # A reviewer whose rule hands them every item from email (a fifth of the queue)
        "reviewer_home": ("reviewer", f"{t}/", "list"),
        "queue_mine_by_rule": ("reviewer", f"{t}/review/?assigned=mine", "list"),
        "queue_oldest": ("lead", f"{t}/review/?order=oldest", "list"),
        "queue_changes": ("lead", f"{t}/review/changes/?since=2026-01-01T00:00:00Z", "list"),
        "review_flow": ("lead", f"{t}/review/flow/", "list"),
        "review_team": ("lead", f"{t}/review/team/", "list"),
        "memories_all": ("lead", f"{t}/memories/", "list"),
        "memories_by_status": ("lead", f"{t}/memories/?status=superseded", "list"),
        "memories_search": ("lead", f"{t}/memories/?q=invoice%20001", "list"),
        "memories_search_common": ("lead", f"{t}/memories/?q=invoice", "list"),
        "memories_search_many": ("lead", f"{t}/memories/?q={MANY_WORD}", "list"),
        "memories_search_few": ("lead", f"{t}/memories/?q={FEW_WORD}", "list"),
        "memory_heavy": ("lead", f"{t}/memories/{heavy.pk}/", "memory"),
        "memory_heavy_2hops": ("lead", f"{t}/memories/{heavy.pk}/?hops=2", "memory"),
        "memory_plain": ("lead", f"{t}/memories/{deep_memory}/", "memory"),
        "memory_chain_middle": ("lead", f"{t}/memories/{chain_middle}/", "memory"),
        "memory_hub": ("lead", f"{t}/memories/{hub}/", "memory"),
        "memory_hub_2hops": ("lead", f"{t}/memories/{hub}/?hops=2", "memory"),
        "promotions": ("lead", f"{t}/promotions/", "list"),
        "promotions_all": ("lead", f"{t}/promotions/?show=all", "list"),
        "promotion_detail": ("lead", f"{t}/promotions/{candidate.pk}/", "memory"),
        "disagreements": ("lead", f"{t}/promotions/disagreements/", "derived"),
        "assessments": ("lead", f"{t}/assessments/", "list"),
        "assessment_typical": ("lead", f"{t}/assessments/{typical.pk}/", "list"),
        "assessment_wide": ("lead", f"{t}/assessments/{wide.pk}/", "list"),
        "assessment_wide_deep": ("lead", f"{t}/assessments/{wide.pk}/?after={wide_deep}", "list"),
        "erasures": ("lead", f"{t}/erasures/", "list"),
        "members": ("lead", f"{t}/members/", "list"),
        "tokens": ("owner", f"{t}/tokens/", "list"),
        "webhooks": ("owner", f"{t}/webhooks/", "list"),
        "webhook_log": ("owner", f"{t}/webhooks/{endpoint.pk}/", "list"),
        "calibration": ("lead", f"{t}/calibration/", "derived"),
        "compare": ("lead", f"{t}/calibration/compare/?confirm_min=0.55&contradict_max=0.45", "derived"),
        "policies": ("lead", f"{t}/policies/", "list"),
        "memory_health": ("lead", f"{t}/health/", "derived"),
        # A compliance auditor's
        "audit_first": ("auditor", f"{t}/audit/", "list"),
        "audit_deep": ("auditor", f"{t}/audit/?after={deep_seq}", "list"),
        "audit_by_actor": ("auditor", f"{t}/audit/?actor={lead}", "list"),
        "audit_by_action": ("auditor", f"{t}/audit/?action=freeze", "list"),
        "audit_by_action_rare": ("auditor", f"{t}/audit/?action=restore", "list"),
        "audit_by_actor_subject": ("auditor", f"{t}/audit/?actor={lead}&subject={MANY_WORD}", "list"),
        "audit_by_subject": ("auditor", f"{t}/audit/?subject=warranty%200001", "list"),
        "audit_by_subject_one": ("auditor", f"{t}/audit/?subject={one_subject}", "list"),
        "audit_by_subject_few": ("auditor", f"{t}/audit/?subject={FEW_WORD}", "list"),
        "audit_by_subject_many": ("auditor", f"{t}/audit/?subject={MANY_WORD}", "list"),
        "audit_by_subject_burst": ("auditor", f"{t}/audit/?subject={BURST_WORD}", "list"),
        "audit_by_common_subject": ("auditor", f"{t}/audit/?subject=warranty", "list"),
        "audit_by_memory": ("auditor", f"{t}/audit/?memory={heavy.pk}", "list"),
        "audit_one_day": ("auditor", f"{t}/audit/?since={day_ago(150)}&until={day_ago(150)}", "list"),
        "audit_until": ("auditor", f"{t}/audit/?until={day_ago(200)}", "list"),
        "lineage": ("auditor", f"{t}/audit/memories/{heavy.pk}/", "memory"),
        "lineage_chain_end": ("auditor", f"{t}/audit/memories/{chain_end}/", "memory"),
        "lineage_chain_middle": ("auditor", f"{t}/audit/memories/{chain_middle}/", "memory"),
        "auditor_memory": ("auditor", f"{t}/memories/{heavy.pk}/", "memory"),
        # A calibration labeler's
        "next_label": ("labeler", f"{t}/labels/", "label"),
        "next_candidate_label": ("labeler", f"{t}/labels/?kind=candidate", "label"),
        "label_agreement": ("lead", f"{t}/labels/agreement/", "derived"),
        "labeler_calibration": ("labeler", f"{t}/calibration/", "derived"),
        # The agents' API
        "api_in_force": ("agent", f"{api}/memories?user_id=cust-42", "api"),
        "api_in_force_big": ("agent", f"{api}/memories?user_id={BIG_CUSTOMER}", "api"),
        "api_memories_page": ("agent", f"{api}/memories?kind=preference&limit=500", "api"),
        "api_as_of": ("agent", f"{api}/memories?user_id=cust-42&as_of=2026-09-01T00:00:00Z", "api"),
        "api_changes": ("agent", f"{api}/changes?after={max(0, feed_end - 500)}", "api"),
        "api_assessment": ("agent", f"{api}/assessments/{typical.pk}", "api"),
        "api_assessment_wide": ("agent", f"{api}/assessments/{wide.pk}", "api"),
        "api_webhooks": ("lead-agent", f"{api}/webhooks", "api"),
        # Django's admin on the same rows
        "admin_first": ("admin", f"/admin/memories/memory/?{same}", "admin"),
        "admin_deep": ("admin", f"/admin/memories/memory/?{same}&p={-(-queued // 100)}", "admin"),
    }


def timed_tenants() -> list[Tenant]:
    """The tenant built first (lowest ids in every table) and the one built last (whose rows a
    plan walking ids from the start reaches only after every other tenant's, and which had the
    busy day): a plan that is fast for one only is a plan that depends on luck."""
    built = list(Tenant.objects.filter(slug__startswith="bench").order_by("pk"))
    return [built[0], built[-1]] if len(built) > 1 else built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--tenants", type=int, default=2, help="tenants of that size sharing the tables")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--postgres", metavar="URL", help="e.g. postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards (then --reuse it)")
    parser.add_argument("--reuse", metavar="URL_OR_PATH", help="time a database kept by --keep, no build")
    parser.add_argument("--only", metavar="TEXT", help="only the pages whose name contains TEXT")
    parser.add_argument(
        "--in-process", action="store_true",
        help="time through Django's test client, not over HTTP through gunicorn (SQLite always is)",
    )  # fmt: skip
    parser.add_argument(
        "--explain", metavar="FILE", help="write each page's slowest query and its plan to FILE"
    )
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="profile each chosen page (cProfile) and print its N costliest functions",
    )
    parser.add_argument(
        "--walks", action="store_true",
        help=f"list every query of every chosen page whose plan throws away over {WASTE_ROWS:,} rows",
    )  # fmt: skip
    parser.add_argument(
        "--explain-all", metavar="FILE",
        help="write every query of each chosen page, for both tenants, with its plan, to FILE (PostgreSQL)",
    )  # fmt: skip
    parser.add_argument(
        "--rewrite-audits", action="store_true",
        help="with --reuse: write the sampled audits again in this version's shapes",
    )  # fmt: skip
    parser.add_argument("--clients", type=int, default=0, help="then this many at once, through gunicorn")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the --clients run lasts")
    args = parser.parse_args()
    if args.rewrite_audits and not args.reuse:
        parser.error("--rewrite-audits rewrites a kept database's audits: give --reuse too")
    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    if not args.reuse:
        build(args.memories, args.tenants)
    if args.reuse:
        with transaction.atomic():
            add_hubs()  # a database kept before the hub was in the build
        if args.rewrite_audits:
            rewrite_audits(timezone.now())
    tenants = timed_tenants()
    n = Memory.objects.for_tenant(tenants[0]).count()
    say(
        f"{'reused' if args.reuse else 'built'} in {time.perf_counter() - started:.0f} s: "
        f"{Tenant.objects.filter(slug__startswith='bench').count()} tenant(s) of "
        f"{n:,} memories; in all {Verdict.objects.count():,} verdicts, {Transition.objects.count():,} "
        f"transitions, {Label.objects.count():,} labels ({connection.vendor})"
    )
    over_http = connection.vendor == "postgresql" and not args.in_process
    say(
        "timed over HTTP through gunicorn as shipped, one request after another"
        if over_http
        else "timed in-process through Django's test client"
    )
    User = get_user_model()
    people = {}
    for who, username in (
        ("lead", "bench-lead"),
        ("auditor", "bench-auditor"),
        ("labeler", "bench-labeler-0"),
        ("reviewer", "bench-reviewer-0"),
        ("owner", "bench-owner"),
        ("admin", "bench-admin"),
    ):
        people[who] = Client()
        people[who].force_login(User.objects.get(username=username))  # the login throttle wants a request
    computed = {}  # figure name -> ms its job took
    compute = derived.compute

    def timed(name, tenant, params, **kwargs):
        kept = compute(name, tenant, params, **kwargs)
        computed[f"{name} ({', '.join(sorted(params))})" if params else name] = kept["took_ms"]
        return kept

    derived.compute = timed
    chosen, clients, headers = {}, {}, {}
    for tenant in tenants:
        token = token_create(tenant=tenant, name=f"bench-{time.time_ns()}")[1]
        clients[tenant.slug] = {**people, "agent": Client(HTTP_AUTHORIZATION=f"Bearer {token}")}
        clients[tenant.slug]["lead-agent"] = clients[tenant.slug]["agent"]
        headers[tenant.slug] = {
            who: {"Authorization": f"Bearer {token}"}
            if who in ("agent", "lead-agent")
            else {"Cookie": f"sessionid={client.cookies['sessionid'].value}"}
            for who, client in clients[tenant.slug].items()
        }
        heavy = Memory.objects.for_tenant(tenant).needs_review().order_by("pk").first()  # as built
        chosen[tenant.slug] = {
            name: page for name, page in pages(tenant, heavy, token).items() if (args.only or "") in name
        }
    # The derived figures' jobs first, as the Celery worker would have run them before anyone
    # looked (here in this process, CELERY_TASK_ALWAYS_EAGER), then their garbage collected: a
    # job that read 40,000,000 votes left this process slower for every page timed after it
    # (the audit pages 40 to 62 ms), which a web worker, never running jobs, is not.
    for slug, named in chosen.items():
        for who, url, group in named.values():
            if group == "derived":
                clients[slug][who].get(url)
    gc.collect()
    server = Gunicorn().__enter__() if over_http else None
    figures, met = {slug: {} for slug in chosen}, {}
    slugs = list(chosen)
    say(
        f"\n{'page':<26} {'who':<8} "
        + " ".join(f"{slug + ' median':>14} {'p95':>7} {'queries':>7}" for slug in slugs)
        + f" {'target':>8}"
    )
    try:
        for name, (who, _, group) in chosen[slugs[0]].items():
            for slug in slugs:
                url = chosen[slug][name][1]
                client = clients[slug][who]
                if args.profile:
                    profile(client, url, args.repeats, args.profile)
                if args.walks and connection.vendor == "postgresql":
                    for walk in walks(client, url):
                        say(f"  walk on {name} ({slug}): {walk}")
                f = measure(client, url, 0 if server else args.repeats, explain=bool(args.explain))
                if server:
                    f.update(server.measure(url, headers[slug][who], args.repeats))
                figures[slug][name] = {**f, "who": who, "group": group}
            target = TARGETS[group]
            p95 = max(figures[slug][name]["p95_ms"] for slug in slugs)
            if target is not None:
                met[name] = p95 <= target
            mark = "" if target is None else (f"{target} ms" if met[name] else f"{target} MISS")
            say(
                f"{name:<26} {who:<8} "
                + " ".join(
                    f"{figures[slug][name]['median_ms']:>12.1f}ms {figures[slug][name]['p95_ms']:>5.1f}ms "
                    f"{figures[slug][name]['queries']:>7}"
                    for slug in slugs
                )
                + f" {mark:>8}"
            )
        served = {}
        if args.clients:
            for name in ("queue_first", "memory_heavy"):
                slug = slugs[-1]
                with Gunicorn() if server is None else nullcontext(server) as web:
                    served[name] = web.concurrent(
                        chosen[slug][name][1],
                        headers[slug]["lead"],
                        clients=args.clients,
                        seconds=args.seconds,
                    )
                f = served[name]
                say(
                    f"{args.clients} clients at once on {name} ({slug}), through gunicorn as shipped: "
                    f"{f['requests_per_s']} requests/s, median {f['median_ms']} ms, p95 {f['p95_ms']} ms"
                )
    finally:
        if server:
            server.__exit__(None, None, None)
    if computed:
        say("\nderived figures, computed by their job once per change of their data (not per request):")
        for name, took in computed.items():
            say(f"  {name:<60} {took:>9,} ms")
    missed = sorted(name for name, ok in met.items() if not ok)
    missing = f"; missed: {', '.join(missed)}" if missed else ""
    say(f"\ntargets met on {len(met) - len(missed)} of {len(met)} pages, on every tenant timed{missing}")
    first = figures[slugs[0]]
    if "admin_first" in first and "queue_first" in first:
        ratio = first["admin_first"]["median_ms"] / first["queue_first"]["median_ms"]
        say(f"admin changelist / review queue, first page medians: {ratio:.1f}x")
    backend = connection.vendor
    if args.explain_all and connection.vendor == "postgresql":
        lines = [f"# Every query of each page, at {n:,} memories a tenant (bench/pages.py --explain-all)", ""]
        for name, (who, _, _) in chosen[slugs[0]].items():
            for slug in slugs:
                lines += explain_all(clients[slug][who], chosen[slug][name][1], f"{name} ({slug})")
        with open(args.explain_all, "w") as out:
            out.write("\n".join(lines))
        say(f"every query and its plan: {args.explain_all}")
    if args.explain:
        for slug in slugs:
            write_plans(args.explain.replace(".md", f"-{slug}.md"), figures[slug], n)
    if args.keep:
        say(f"kept: {connection.settings_dict['NAME']}  (time it again with --reuse)")
    else:
        throwaway.drop()
    print(
        json.dumps(
            {
                "memories": n,
                "tenants": slugs,
                "backend": backend,
                "over_http": over_http,
                "pages": figures[slugs[0]],
                "last": figures[slugs[-1]],
                "missed": missed,
                "figure_jobs_ms": computed,
                "concurrent": served,
            }
        )
    )


if __name__ == "__main__":
    main()
