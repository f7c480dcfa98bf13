"""Signed, chained checkpoints of each tenant's two chain heads, written outside the database.

A database administrator can cut a chain's tail and roll its head back together, leaving a
chain that verifies; a checkpoint taken earlier, somewhere they cannot write, still says how far
the chain reached and with which hash. `manage.py audit_checkpoint` and a Celery beat job every
AUDIT_CHECKPOINT_MINUTES (and once when beat starts) append one line per tenant to
AUDIT_CHECKPOINT_DIR/<slug>.jsonl:

    {"at": ISO time, "hash": the transitions' head hash, "key_id": ..., "prev": SHA-256 of the
     line before (64 zeros for the first), "seal_hash": ..., "seal_seq": the seals' head,
     "seq": the transitions' head, "tenant": slug, "tenant_id": id,
     "signature": HMAC-SHA256 of the other fields' canonical JSON}

Each line commits to the one before, so a line cannot be dropped or changed without breaking
every later one. What the file cannot show alone, a shorter file, is caught against the
database: each verification records how many lines it saw and the newest one's hash
(AuditVerification, itself sealed), and the next one reports a file that is missing, shorter,
rewritten, or older than the interval allows. The files are only ever appended to (O_APPEND).
In production point AUDIT_CHECKPOINT_DIR at a mount backed by object storage with object lock
(docs/audit.md says how), so neither the database's administrators nor the application can
rewrite them.
"""

import getpass
import hashlib
import hmac
import json
import logging
import os
import shlex
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory_review.integrity.db_context import tenant_context
from memory_review.integrity.heads import GENESIS, canonical
from memory_review.integrity.keys import keyring
from memory_review.tenancy.models import Tenant

from .models import AuditChain, AuditVerification

logger = logging.getLogger(__name__)

SIGNED = ("at", "hash", "key_id", "prev", "seal_hash", "seal_seq", "seq", "tenant", "tenant_id")
# Lines written before checkpoints were chained and covered the seals: still read and checked.
LEGACY = ("at", "hash", "key_id", "seq", "tenant", "tenant_id")


class CheckpointError(Exception):
    """A checkpoint file that was edited, shortened, removed or let go stale."""


@dataclass(frozen=True)
class Checkpoint:
    tenant: str
    tenant_id: int
    seq: int
    hash: str
    at: str
    key_id: str
    seal_seq: int | None = None
    seal_hash: str | None = None
    prev: str | None = None


@dataclass(frozen=True)
class CheckpointFile:
    """A tenant's checkpoint file, every line's signature and link checked."""

    checkpoints: tuple[Checkpoint, ...]
    newest_line_hash: str

    @property
    def newest(self) -> Checkpoint:
        return self.checkpoints[-1]

    @property
    def lines(self) -> int:
        return len(self.checkpoints)


def path_for(tenant: Tenant) -> Path:
    return Path(settings.AUDIT_CHECKPOINT_DIR) / f"{tenant.slug}.jsonl"


def line_hash(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8")).hexdigest()


def write(tenant: Tenant) -> Checkpoint:
    """Append a signed record of the tenant's chain heads as they are now, linked to the last line."""
    with tenant_context(tenant.pk):
        head = AuditChain.objects.filter(tenant_id=tenant.pk).first()
    path = path_for(tenant)
    existing = _lines(path)
    ring = keyring()
    record = {
        "tenant": tenant.slug,
        "tenant_id": tenant.pk,
        "seq": head.seq if head else 0,
        "hash": head.head_hash if head else GENESIS,
        "seal_seq": head.seal_seq if head else 0,
        "seal_hash": head.seal_hash if head else GENESIS,
        "at": timezone.now().isoformat(timespec="seconds"),
        "key_id": ring.current,
        "prev": line_hash(existing[-1]) if existing else GENESIS,
    }
    signature = hmac.new(ring.key(ring.current), canonical(record), hashlib.sha256).hexdigest()
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({**record, "signature": signature}, sort_keys=True) + "\n"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    with os.fdopen(descriptor, "a") as file:
        file.write(line)
    copy(tenant, line)
    return Checkpoint(**record)


def copy(tenant: Tenant, line: str) -> None:
    """Hand the new line to AUDIT_CHECKPOINT_COPY_COMMAND, on its standard input, to keep where
    the database's administrators cannot write (an object-locked bucket, another host, an
    append-only log service). A copy that fails is logged as an error; the local line stays."""
    command = settings.AUDIT_CHECKPOINT_COPY_COMMAND
    if not command:
        return
    try:
        subprocess.run(
            shlex.split(command),
            input=line.encode(),
            env={**os.environ, "CHECKPOINT_TENANT": tenant.slug},
            timeout=settings.AUDIT_CHECKPOINT_COPY_TIMEOUT_S,
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        logger.error(
            "audit checkpoint of %s not copied by %r: %s %s", tenant.slug, command, exc, detail.decode()[:300]
        )


def shared_custody() -> str | None:
    """A warning when one host's administrator could rewrite both the database and the
    checkpoints (the demo's layout): the database is on this host, this process can write the
    checkpoint directory, and no copy leaves it (docs/audit.md, "Where checkpoints are kept")."""
    if settings.AUDIT_CHECKPOINT_COPY_COMMAND:
        return None
    database = connection.settings_dict
    host = database.get("HOST") or ""
    if (
        connection.vendor != "sqlite"
        and host not in ("", "localhost", "127.0.0.1", "::1")
        and not host.startswith("/")
    ):
        return None
    directory = Path(settings.AUDIT_CHECKPOINT_DIR)
    existing = next((p for p in (directory, *directory.parents) if p.exists()), directory)
    if not os.access(existing, os.W_OK):
        return None
    where = (
        database["NAME"]
        if connection.vendor == "sqlite"
        else f"{connection.vendor} on {host or 'a local socket'}"
    )
    return (
        f"the checkpoints ({directory}) and the database ({where}) share this host, and this user "
        f"({getpass.getuser()}) can write the checkpoints: whoever administers the host can cut the "
        "chains and the newest checkpoint lines together. Keep them apart: AUDIT_CHECKPOINT_DIR on "
        "storage the database's administrators cannot write, or AUDIT_CHECKPOINT_COPY_COMMAND to copy "
        'each line to a witness (docs/audit.md, "Where checkpoints are kept")'
    )


def _lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [line for line in path.read_text().splitlines() if line.strip()]


def read(tenant: Tenant) -> CheckpointFile | None:
    """The tenant's checkpoint file, each line's signature and its link to the line before
    checked; None when there is none yet."""
    path = path_for(tenant)
    lines = _lines(path)
    if not lines:
        return None
    ring = keyring()
    found, chained = [], False
    for number, line in enumerate(lines, start=1):
        where = f"{path}, line {number}"
        try:
            record = json.loads(line)
            signature = record.pop("signature")
            fields = SIGNED if "prev" in record else LEGACY
            if set(record) != set(fields):
                raise ValueError(f"fields {sorted(record)}")
            checkpoint = Checkpoint(**record)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CheckpointError(f"{where}: not a checkpoint ({exc})") from exc
        key = ring.key(checkpoint.key_id)
        if key is None:
            raise CheckpointError(f"{where}: signed with key {checkpoint.key_id!r}, not ours")
        if not hmac.compare_digest(hmac.new(key, canonical(record), hashlib.sha256).hexdigest(), signature):
            raise CheckpointError(f"{where}: its signature does not match: the file was edited")
        if checkpoint.tenant_id != tenant.pk:
            raise CheckpointError(f"{where}: it is another tenant's checkpoint")
        if checkpoint.prev is not None:
            expected = line_hash(lines[number - 2]) if number > 1 else GENESIS
            if checkpoint.prev != expected:
                raise CheckpointError(
                    f"{where}: it does not follow the line before it: lines were removed or changed"
                )
            chained = True
        elif chained:
            raise CheckpointError(f"{where}: an unchained line after chained ones: the file was edited")
        found.append(checkpoint)
    return CheckpointFile(checkpoints=tuple(found), newest_line_hash=line_hash(lines[-1]))


def allowed_age() -> timedelta:
    """How old the newest checkpoint may be: two intervals and five minutes' grace."""
    return timedelta(minutes=2 * settings.AUDIT_CHECKPOINT_MINUTES + 5)


def problem(
    tenant: Tenant, found: CheckpointFile | None, seen: AuditVerification | None, now=None
) -> str | None:
    """What is wrong with the file against what the last verification saw: missing, shorter,
    rewritten, or older than the interval allows. None also for a fresh install, not yet
    checkpointed (the workspace says "not checked yet", never "intact")."""
    path = path_for(tenant)
    seen_lines = seen.checkpoint_lines if seen else 0
    if found is None:
        if seen_lines:
            return (
                f"the checkpoint file {path} is missing, but the verification of "
                f"{seen.verified_at:%Y-%m-%d %H:%M} UTC read {seen_lines} line(s) in it"
            )
        return None
    if found.lines < seen_lines:
        return (
            f"the checkpoint file {path} has {found.lines} line(s), but the verification of "
            f"{seen.verified_at:%Y-%m-%d %H:%M} UTC read {seen_lines}: its newest lines were removed"
        )
    if seen_lines and seen.checkpoint_line_hash and _line_at(path, seen_lines) != seen.checkpoint_line_hash:
        return (
            f"line {seen_lines} of the checkpoint file {path} is not the line the verification of "
            f"{seen.verified_at:%Y-%m-%d %H:%M} UTC read: the file was rewritten"
        )
    newest_at = datetime.fromisoformat(found.newest.at)
    if (now or timezone.now()) - newest_at > allowed_age():
        return (
            f"the newest checkpoint is from {found.newest.at}, older than the "
            f"{settings.AUDIT_CHECKPOINT_MINUTES}-minute interval allows: checkpoints stopped (is Celery "
            "beat running?)"
        )
    return None


def _line_at(path: Path, number: int) -> str | None:
    lines = _lines(path)
    return line_hash(lines[number - 1]) if len(lines) >= number else None


def orphans() -> list[str]:
    """Checkpoint files whose tenant is no longer in the database: a tenant deleted with all its
    rows leaves nothing to verify there, but its checkpoints, kept outside, still name it."""
    found = []
    for path in sorted(Path(settings.AUDIT_CHECKPOINT_DIR).glob("*.jsonl")):
        lines = _lines(path)
        try:
            first = json.loads(lines[0]) if lines else None
        except ValueError:
            first = None
        if first is None:
            continue  # read, and reported, with its tenant
        tenant_id, slug = first.get("tenant_id"), first.get("tenant")
        if not Tenant.objects.filter(pk=tenant_id, slug=path.stem).exists():
            found.append(
                f"the checkpoint file {path} names tenant {slug} ({tenant_id}), which is not in the database"
            )
    return found
