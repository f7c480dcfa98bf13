"""The audit chain's keys: HMAC-SHA256 keys that never live in the database, so a database
administrator who rewrites a transition cannot recompute its hash (docs/audit.md).

Where they come from, in order:

* `AUDIT_KEY` (hex, at least 32 bytes) with `AUDIT_KEY_ID` (default `k1`): one key, from the
  environment or a container secret;
* `AUDIT_KEY_FILE`: a JSON file `{"current": "k2", "keys": {"k1": "<hex>", "k2": "<hex>"}}`. New
  rows are signed with `current`; older ids stay so their rows still verify (key rotation);
* otherwise the demo's file, `var/audit-key.json`, created with a fresh random key the first
  time it is needed (a warning says so; set one of the above anywhere but a laptop).
"""

import json
import logging
import os
import secrets
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Keyring:
    current: str
    keys: dict[str, bytes]

    def key(self, key_id: str) -> bytes | None:
        return self.keys.get(key_id)


def keyring() -> Keyring:
    if settings.AUDIT_KEY:
        return _from_env(settings.AUDIT_KEY_ID, settings.AUDIT_KEY)
    path = Path(settings.AUDIT_KEY_FILE)
    if not path.exists():
        if path != default_file():
            raise ImproperlyConfigured(f"AUDIT_KEY_FILE names {path}, which does not exist")
        _create(path)
    stat = path.stat()  # every sealed write asks: read the file again only when it changed
    return _read_cached(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _from_env(key_id: str, value: str) -> Keyring:
    return Keyring(key_id, {key_id: _decode(value, "AUDIT_KEY")})


@lru_cache(maxsize=8)
def _read_cached(path: str, mtime_ns: int, size: int) -> Keyring:
    return read(Path(path))


def default_file() -> Path:
    return Path(settings.VAR_DIR) / "audit-key.json"


def read(path: Path) -> Keyring:
    try:
        data = json.loads(path.read_text())
        keys = {key_id: _decode(value, f"{path} key {key_id!r}") for key_id, value in data["keys"].items()}
        current = data["current"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ImproperlyConfigured(
            f'{path} is not an audit key file ({{"current": ID, "keys": {{ID: HEX}}}}): {exc}'
        ) from exc
    if current not in keys:
        raise ImproperlyConfigured(f"{path}: the current key {current!r} is not among its keys")
    return Keyring(current, keys)


def _decode(value: str, where: str) -> bytes:
    try:
        key = bytes.fromhex(value.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"{where} must be hexadecimal") from exc
    if len(key) < 32:
        raise ImproperlyConfigured(f"{where} must be at least 32 bytes (64 hex digits)")
    return key


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    content = json.dumps({"current": "k1", "keys": {"k1": secrets.token_hex(32)}}, indent=2)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return
    with os.fdopen(descriptor, "w") as file:
        file.write(content + "\n")
    logger.warning(
        "created a new audit key in %s: keep it, or the audit trail cannot be verified; "
        "in production set AUDIT_KEY or AUDIT_KEY_FILE",
        path,
    )
