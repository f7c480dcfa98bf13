"""What verify_audit costs as the sealed record grows: time, and the verifying process's memory.

    .venv/bin/python bench/verify_audit.py [--sizes 250000,1000000] [--postgres URL]

Fills one tenant through the application's own sealed writes (bulk_create seals each row as the
product does): for every memory, its source event, the memory and two verdicts (four sealed rows;
the verdicts of each batch share a ledger row a GROUP_MOST, as an event's do),
with one memory in ten flagged by a hash-chained transition, and a signed checkpoint. At each
size it runs `manage.py verify_audit --tenant bench` in a fresh process and reports the wall time
and that process's peak resident memory: verification streams both chains and every sealed table
in chunks, so the peak should stay flat as the record grows. It times this machine's speed at
its start and end (bench/machine.py), and its last line is one JSON object.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import django  # noqa: E402
import machine  # noqa: E402
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from memory_review.assessments.models import Assessment, PolicyVersion, Verdict  # noqa: E402
from memory_review.assessments.services import policy_ensure_default  # noqa: E402
from memory_review.audit import chain, checkpoints  # noqa: E402
from memory_review.audit.models import Seal, Transition  # noqa: E402
from memory_review.integrity.db_context import tenant_context  # noqa: E402
from memory_review.integrity.heads import lock_head  # noqa: E402
from memory_review.integrity.keys import keyring  # noqa: E402
from memory_review.memories.models import Memory, SourceEvent, content_hash  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402

BATCH = 2_000


def grow(tenant: Tenant, policy: PolicyVersion, memories: int, start: int) -> None:
    """Add memories `start`..`memories` (and their events, verdicts and flags)."""
    ring = keyring()
    key = ring.key(ring.current)
    for first in range(start, memories, BATCH):
        n = min(BATCH, memories - first)
        with transaction.atomic():
            now = timezone.now()
            events = SourceEvent.objects.bulk_create(
                SourceEvent(
                    tenant=tenant,
                    source="chat",
                    text=f"Customer {i} says the invoice goes to office {i}.",
                    text_hash=content_hash(f"event {i}"),
                    occurred_at=now,
                    user_id=f"cust-{i % 5000}",
                )  # fmt: skip
                for i in range(first, first + n)
            )
            made = Memory.objects.bulk_create(
                Memory(
                    tenant=tenant,
                    kind="fact",
                    subject=f"invoice address {i}",
                    content=f"Invoices for customer {i} go to office {i}.",
                    content_hash=content_hash(f"memory {i}"),
                    written_by="agent:bench",
                    source_event=event,
                    user_id=event.user_id,
                )  # fmt: skip
                for i, event in zip(range(first, first + n), events, strict=True)
            )
            assessment = Assessment.objects.create(
                tenant=tenant, purpose=Assessment.Purpose.INVALIDATION, event=events[0], policy=policy,
                question_set_version="bench", model_name="jev-standin", state=Assessment.State.DONE,
            )  # fmt: skip
            Verdict.objects.bulk_create(  # a memory's own event, and its neighbour's (one vote a pair)
                Verdict(
                    tenant=tenant,
                    assessment=assessment,
                    memory=memory,
                    event=events[(j + k) % n],
                    row_version=1,
                    bears=0.9,
                    still_true=0.3 + (j % 5) / 10,
                    replaces=0.1,
                    partial=0.05,
                    hypothetical=0.02,
                    directive=0.01,
                    disposition="uncertain",
                )  # fmt: skip
                for j, memory in enumerate(made)
                for k in range(2)
            )
            flagged = made[::10]
            head = lock_head(tenant.pk)
            seq, prev, rows = head.seq, head.head_hash, []
            for memory in flagged:
                seq += 1
                reason = "uncertain by policy v1: still true 0.45, inside the review band"
                row = Transition(
                    tenant_id=tenant.pk, seq=seq, memory_id=memory.pk, from_status="active",
                    to_status="needs_review", action="flag", actor="policy:v1", reason=reason,
                    reason_mac=chain.text_mac(reason, key), row_version=2, content_hash=memory.content_hash,
                    created_at=now, prev_hash=prev, key_id=ring.current,
                )  # fmt: skip
                row.hash = chain.row_hash(row, ring)
                prev = row.hash
                rows.append(row)
            Transition.objects.bulk_create(rows)
            head.seq, head.head_hash = seq, prev
            head.save(update_fields=["seq", "head_hash"])
            Memory.objects.filter(pk__in=[m.pk for m in flagged]).update(status="needs_review", row_version=2)


def verify_in_a_fresh_process(profile_out: str | None = None) -> dict:
    """Wall time, and the child's own CPU time and peak resident memory (wait4 reports that child
    alone); under cProfile, its functions' figures written to `profile_out`."""
    command = [sys.executable, str(throwaway.ROOT / "manage.py"), "verify_audit", "--tenant", "bench"]
    if profile_out:
        command[1:1] = ["-m", "cProfile", "-o", profile_out]
    started = time.perf_counter()
    child = subprocess.Popen(
        command, env=os.environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"verify_audit failed: {err.strip()}")
    return {
        "seconds": round(seconds, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_mib": round(usage.ru_maxrss / 1024, 1),
        "said": out.strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250000,1000000", help="sealed rows at each measurement")
    parser.add_argument("--postgres", metavar="URL")
    parser.add_argument(
        "--profile-out",
        metavar="FILE",
        help="run the last size's verify_audit under cProfile, its figures in FILE",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    speed = {"before": machine.speed()}
    print(f"this machine: {machine.describe(speed['before'])}")
    call_command("migrate", verbosity=0)
    tenant = Tenant.objects.create(slug="bench", name="Bench")
    results = []
    with tenant_context(tenant.pk):
        policy = policy_ensure_default(tenant=tenant, created_by="system:bench")
        memories = 0
        for size in sizes:
            started = time.perf_counter()
            target = size // 4  # four sealed rows a memory: event, memory, two verdicts
            grow(tenant, policy, target, memories)
            memories = target
            checkpoints.write(tenant)
            ledger = Seal.objects.filter(tenant=tenant).count()
            sealed = sum(
                model._base_manager.filter(tenant=tenant).count() for model in (SourceEvent, Memory, Verdict)
            )
            transitions = Transition.objects.filter(tenant=tenant).count()
            built = time.perf_counter() - started
            print(
                f"{sealed:,} sealed rows ({ledger:,} ledger rows: the votes of a write share one), "
                f"{memories:,} memories, {transitions:,} transitions ({built:.0f} s)"
            )
            result = verify_in_a_fresh_process(args.profile_out if size == sizes[-1] else None)
            print(
                f"  verify_audit: {result['seconds']} s ({result['cpu_s']} s of its own CPU), "
                f"peak {result['peak_mib']} MiB: {result['said']}"
            )
            results.append(
                {"sealed_rows": sealed, "ledger_rows": ledger, "transitions": transitions, **result}
            )
    throwaway.drop()
    speed["after"] = machine.speed()
    print(f"this machine afterwards: {machine.describe(speed['after'])}")
    backend = "postgresql" if args.postgres else "sqlite"
    print(json.dumps({"backend": backend, "machine": speed, "runs": results}))


if __name__ == "__main__":
    main()
