"""A few factories. Status changes go through the lifecycle, as in the product."""

import os
from contextlib import contextmanager

import redis
from django.contrib.auth import get_user_model
from django.db import connection

from memory_review.assessments.jev import Jev
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.memories.services import event_record, memory_write
from memory_review.tenancy.models import Membership, Tenant


def make_user(username: str, tenant: Tenant | None = None, role: str | None = None):
    user = get_user_model().objects.create_user(username=username, password="demo")
    if tenant is not None:
        Membership.objects.create(tenant=tenant, user=user, role=role)
    return user


_counter = iter(range(1, 10**9))


def make_memory(
    tenant: Tenant,
    *,
    subject: str | None = None,
    content: str | None = None,
    kind: str = "fact",
    source: str = "chat",
    valid_until=None,
    **scope,
) -> Memory:
    n = next(_counter)
    event = event_record(tenant=tenant, source=source, text=f"Customer said thing number {n}.", **scope)
    return memory_write(
        event=event,
        kind=kind,
        subject=subject or f"subject-{n}",
        content=content or f"Fact number {n} about the customer.",
        written_by="agent:support-bot",
        valid_until=valid_until,
        **scope,
    )


# How to bring a fresh (active) memory into each status, through the lifecycle itself.
ROUTE_TO = {
    "active": [],
    "needs_review": [("policy", "flag")],
    "frozen": [("user", "freeze")],
    "contradicted": [("policy", "contradict")],
    "superseded": [("policy", "supersede")],
    "expired": [("system", "expire")],
    "deleted": [("user", "forget")],
}


def memory_in(tenant: Tenant, status: str) -> Memory:
    memory = make_memory(tenant)
    for kind, action in ROUTE_TO[status]:
        transition(
            obj=memory,
            action=action,
            actor=Actor(kind, "7" if kind == "user" else "setup"),
            reason="test setup",
            seen_version=memory.row_version,
        )
    return memory


APPEND_ONLY_TRIGGERS = ("audit_transition_no_update", "audit_transition_no_delete", "audit_seal_no_update")


def without_append_only_trigger(sql: str, params: list) -> None:
    """Tamper with the database the way its administrator would: the app's triggers off (and on
    PostgreSQL its foreign keys, which are triggers too), within the test's transaction."""
    with around_the_application() as cursor:
        cursor.execute(sql, params)


@contextmanager
def around_the_application():
    """A cursor that writes as the database's owner would, past the append-only triggers and
    foreign keys: PostgreSQL's replica role for the statement, SQLite with its triggers dropped
    (the test's rollback puts them back) and foreign keys checked only at a commit that never comes."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")  # user triggers off
            yield cursor
            cursor.execute("SET LOCAL session_replication_role = origin")
        else:
            for trigger in APPEND_ONLY_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute("PRAGMA defer_foreign_keys = ON")
            yield cursor


def make_jev(url: str, **overrides) -> Jev:
    """The real client, pointed at a stand-in, with fast backoff for tests."""
    options = dict(
        api_key="test-key",
        base_url=url,
        model="jev-1.13.0",
        timeout_s=2.0,
        max_tries=4,
        backoff_s=0.01,
        backoff_max_s=0.05,
        max_concurrency=8,
        requests_per_minute=60_000,
    )
    options.update(overrides)
    return Jev(**options)


def judged(memory: Memory, policy, *, disposition: str = "uncertain", still_true: float = 0.5, **votes):
    """A verdict on `memory` from a fresh event in its scope, as an assessment records it."""
    from memory_review.assessments.models import Assessment, Verdict

    event = event_record(
        tenant=memory.tenant, source=votes.pop("source", "chat"), text=f"Evidence about {memory.subject}."
    )
    assessment = Assessment.objects.create(
        tenant=memory.tenant,
        purpose="invalidation",
        event=event,
        policy=policy,
        question_set_version="test",
        state="done",
        model_name="jev-1.13.0",
    )
    values = dict(bears=0.9, replaces=0.1, partial=0.1, hypothetical=0.02, directive=0.02)
    values.update(votes)
    return Verdict.objects.create(
        tenant=memory.tenant,
        assessment=assessment,
        memory=memory,
        event=event,
        row_version=memory.row_version,
        disposition=disposition,
        still_true=still_true,
        **values,
    )


def flagged(
    tenant: Tenant, policy, *, still_true: float = 0.5, disposition: str = "uncertain", **fields
) -> Memory:
    """A memory the policy sent to review on a vote, as the pipeline does (p_true and its gap to
    the review band recorded, then the flag with its verdict)."""
    from memory_review.assessments.policy import Thresholds

    memory = make_memory(tenant, **fields)
    verdict = judged(memory, policy, disposition=disposition, still_true=still_true)
    gap = Thresholds.from_data(policy.thresholds).gap(still_true)
    Memory.objects.filter(pk=memory.pk).update(p_true=still_true, threshold_gap=gap)
    transition(
        obj=memory,
        action="flag",
        actor=Actor.policy(policy.label),
        reason=f"{disposition} by policy:{policy.label}: still_true {still_true:.2f}",
        seen_version=memory.row_version,
        verdict=verdict,
    )
    memory.refresh_from_db()
    return memory


def long_trail(tenant: Tenant, rows: int, *, batch: int = 5000) -> Memory:
    """`rows` transitions of one memory, hash-chained as the application chains them but written
    in bulk (a million through transition() would take an hour); the chain's head moved to the
    last. The export and verification benches and the long-download tests read them."""
    from django.utils import timezone

    from memory_review.audit import chain
    from memory_review.audit.models import AuditChain, Transition
    from memory_review.integrity.heads import GENESIS
    from memory_review.integrity.keys import keyring

    memory = make_memory(tenant, subject="long trail", content="A memory moved many times.")
    ring, prev, now, pending = keyring(), GENESIS, timezone.now(), []
    key = ring.key(ring.current)
    for seq in range(1, rows + 1):
        reason = f"uncertain by policy:v1 on chat event {seq}"
        row = Transition(
            tenant_id=tenant.pk, seq=seq, memory_id=memory.pk, from_status="active", to_status="needs_review",
            action="flag", actor="policy:v1", reason=reason, reason_mac=chain.text_mac(reason, key),
            row_version=seq + 1, content_hash=memory.content_hash, created_at=now, prev_hash=prev,
            key_id=ring.current,
        )  # fmt: skip
        row.hash = chain.row_hash(row, ring)
        prev = row.hash
        pending.append(row)
        if len(pending) == batch:
            Transition.objects.bulk_create(pending)
            pending = []
    Transition.objects.bulk_create(pending)
    AuditChain.objects.filter(tenant=tenant).update(seq=rows, head_hash=prev)  # made by the sealed writes
    return memory


# The Redis database the tests that need a real one use (worker drills, the shared Jev budget).
TEST_REDIS = os.environ.get("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")


def redis_up(url: str = TEST_REDIS) -> bool:
    try:
        return redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError:
        return False
