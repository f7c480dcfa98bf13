"""Signed checkpoints of each tenant's chain head, written outside the database.

A database administrator can cut the chain's tail and roll its head back together, leaving a
chain that verifies; a checkpoint taken earlier, somewhere they cannot write, still says how far
the chain reached and with which hash. `manage.py audit_checkpoint` and a Celery beat job every
AUDIT_CHECKPOINT_MINUTES append one line per tenant to AUDIT_CHECKPOINT_DIR/<slug>.jsonl:

    {"at": ISO time, "hash": the head's hash, "key_id": ..., "seq": the head's seq,
     "tenant": slug, "tenant_id": id, "signature": HMAC-SHA256 of the other fields' canonical JSON}

The files are only ever appended to (O_APPEND). In production point AUDIT_CHECKPOINT_DIR at a
mount backed by object storage with object lock (S3 Object Lock in compliance mode, or Oracle
Cloud Object Storage retention rules), so not even the application can rewrite them
(docs/audit.md says how).
"""

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from memory_review.tenancy.db_context import tenant_context
from memory_review.tenancy.models import Tenant

from .keys import keyring
from .models import AuditChain


class CheckpointError(Exception):
    """A checkpoint file that was edited, or signed with a key we do not have."""


@dataclass(frozen=True)
class Checkpoint:
    tenant: str
    tenant_id: int
    seq: int
    hash: str
    at: str
    key_id: str


def _path(tenant: Tenant) -> Path:
    return Path(settings.AUDIT_CHECKPOINT_DIR) / f"{tenant.slug}.jsonl"


def _signed(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def write(tenant: Tenant) -> Checkpoint:
    """Append a signed record of the tenant's chain head as it is now."""
    with tenant_context(tenant.pk):
        head = AuditChain.objects.for_tenant(tenant).first()
    ring = keyring()
    record = {
        "tenant": tenant.slug,
        "tenant_id": tenant.pk,
        "seq": head.seq if head else 0,
        "hash": head.head_hash if head else "0" * 64,
        "at": timezone.now().isoformat(timespec="seconds"),
        "key_id": ring.current,
    }
    signature = hmac.new(ring.key(ring.current), _signed(record), hashlib.sha256).hexdigest()
    path = _path(tenant)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    with os.fdopen(descriptor, "a") as file:
        file.write(json.dumps({**record, "signature": signature}, sort_keys=True) + "\n")
    return Checkpoint(**{key: record[key] for key in ("tenant", "tenant_id", "seq", "hash", "at", "key_id")})


def latest(tenant: Tenant) -> Checkpoint | None:
    """The tenant's newest checkpoint, its signature checked; None when there is none yet."""
    path = _path(tenant)
    if not path.exists():
        return None
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    if not lines:
        return None
    try:
        record = json.loads(lines[-1])
        signature = record.pop("signature")
        checkpoint = Checkpoint(**record)
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}, line {len(lines)}: not a checkpoint ({exc})") from exc
    key = keyring().key(checkpoint.key_id)
    if key is None:
        raise CheckpointError(
            f"{path}: the newest checkpoint is signed with key {checkpoint.key_id!r}, not ours"
        )
    if not hmac.compare_digest(hmac.new(key, _signed(record), hashlib.sha256).hexdigest(), signature):
        raise CheckpointError(f"{path}, line {len(lines)}: its signature does not match: the file was edited")
    if checkpoint.tenant_id != tenant.pk:
        raise CheckpointError(f"{path}: the newest checkpoint is another tenant's")
    return checkpoint
