#!/usr/bin/env python3
"""Verify a memory-review audit trail export (JSONL or CSV) with the Python standard library alone.

    python tools/verify_export.py EXPORT.jsonl [--key-file KEYS.json | --key HEX --key-id ID]
    python tools/verify_export.py EXPORT.csv ...

It recomputes every row's HMAC-SHA256 from the fields the row carries, checks each row's free
text (reason, request id) against its keyed hash unless an erasure blanked it, checks that each
row points at the hash of the row before it, and for a complete export that the chain runs from
#1 to the head the export recorded. Exit status 0 when every check passes; otherwise 1 and a line
naming the first bad row. docs/audit.md describes the algorithm this file implements.

The key is found as the application finds it: AUDIT_KEY (hex) with AUDIT_KEY_ID in the
environment; else the JSON file AUDIT_KEY_FILE names; else var/audit-key.json under the current
directory (where `make demo` keeps it). --key-file or --key name an auditor's own copy.
"""

import argparse
import csv
import hashlib
import hmac
import json
import os
import sys
from pathlib import Path

FORMAT = "memory-review audit trail"
GENESIS = "0" * 64
ERASED = "[erased]"
HASHED = (
    "tenant_id", "seq", "memory_id", "candidate_id", "from_status", "to_status", "action", "actor",
    "reason_mac", "verdict_id", "row_version", "request_id_mac", "content_hash", "prev_hash", "key_id",
    "created_at",
)  # fmt: skip
# Free text rides beside its keyed hash, so an erasure can blank it and the row still verifies.
TEXT = {"reason": "reason_mac", "request_id": "request_id_mac"}


class Bad(Exception):
    pass


def load_keys(args) -> dict[str, bytes]:
    if args.key:
        return {args.key_id: bytes.fromhex(args.key)}
    if not args.key_file and os.environ.get("AUDIT_KEY"):
        return {os.environ.get("AUDIT_KEY_ID", "k1"): bytes.fromhex(os.environ["AUDIT_KEY"])}
    path = Path(args.key_file or os.environ.get("AUDIT_KEY_FILE") or Path("var") / "audit-key.json")
    try:
        data = json.loads(path.read_text())
        return {key_id: bytes.fromhex(value) for key_id, value in data["keys"].items()}
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise Bad(f"no audit key: {path} could not be read as a key file ({exc})") from exc


def canonical(row: dict) -> bytes:
    payload = {name: row[name] for name in HASHED}
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def mac(key: bytes, text: str | None) -> str | None:
    return None if text is None else hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def text_problem(row: dict, key: bytes) -> str | None:
    """The free text is what its keyed hash sealed, or an erasure blanked it."""
    if row.get("erased_by") is not None:
        if row.get("reason") != ERASED or row.get("request_id") is not None:
            return f"it says erasure {row['erased_by']} blanked its text, but the text is there"
        return None
    for text, sealed in TEXT.items():
        if mac(key, row.get(text)) != row[sealed]:
            return f"its {text.replace('_', ' ')} was edited (it no longer matches its keyed hash)"
    return None


INTEGERS = ("tenant_id", "seq", "memory_id", "candidate_id", "verdict_id", "row_version", "erased_by")
NULLABLE = (
    "memory_id", "candidate_id", "verdict_id", "request_id", "request_id_mac", "content_hash", "erased_by",
)  # fmt: skip


def cell(value: str) -> str:
    """A spreadsheet runs a cell starting with =, +, -, @, tab or CR as a formula: the CSV export
    puts a ' in front (OWASP's advice), and in front of a cell starting with ' itself, so reading
    back is exact: drop one leading '."""
    return value[1:] if value.startswith("'") else value


def csv_rows(lines) -> tuple[dict, list[str]]:
    """A CSV export as the JSONL one reads: a header (not complete: a CSV says nothing of the
    chain's head) and one JSON line a row, empty cells null, numbers numbers."""
    rows = []
    for record in csv.DictReader(lines):
        record = {name: cell(value) for name, value in record.items()}
        for name in NULLABLE:
            if record.get(name) == "":
                record[name] = None
        for name in INTEGERS:
            if record.get(name) is not None:
                record[name] = int(record[name])
        rows.append(json.dumps(record))
    tenant = json.loads(rows[0])["tenant_id"] if rows else None
    return {"export": FORMAT, "tenant": f"tenant {tenant}", "tenant_id": tenant, "complete": False}, rows


def verify(lines, keys: dict[str, bytes], *, is_csv: bool = False) -> str:
    if is_csv:
        header, rows = csv_rows(lines)
        lines = [json.dumps(header), *rows]
    lines = iter(lines)
    try:
        header = json.loads(next(lines))
    except (StopIteration, ValueError) as exc:
        raise Bad("line 1: not an export header") from exc
    if header.get("export") != FORMAT:
        raise Bad(f"line 1: not a {FORMAT} export")
    complete = bool(header.get("complete"))
    previous, count, gaps = None, 0, 0
    for number, line in enumerate(lines, start=2):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            missing = [name for name in (*HASHED, *TEXT, "hash") if name not in row]
        except ValueError as exc:
            raise Bad(f"line {number}: not JSON ({exc})") from exc
        if missing:
            raise Bad(f"line {number}: missing {', '.join(missing)}")
        where = f"line {number} (#{row['seq']})"
        key = keys.get(row["key_id"])
        if key is None:
            raise Bad(f"{where}: signed with key {row['key_id']!r}, which was not given")
        if not hmac.compare_digest(hmac.new(key, canonical(row), hashlib.sha256).hexdigest(), row["hash"]):
            raise Bad(f"{where}: its hash does not match its contents: the row was edited or forged")
        if problem := text_problem(row, key):
            raise Bad(f"{where}: {problem}")
        expected = (previous["seq"] + 1) if previous else 1
        if previous is not None and row["seq"] <= previous["seq"]:
            raise Bad(f"{where}: rows are out of order (after #{previous['seq']})")
        if row["seq"] == expected:
            link = previous["hash"] if previous else GENESIS
            if row["prev_hash"] != link:
                raise Bad(f"{where}: prev_hash does not match the row before it")
        elif complete:
            raise Bad(f"{where}: row #{expected} is missing from a complete export")
        else:
            gaps += 1
        if row["tenant_id"] != header.get("tenant_id"):
            raise Bad(f"{where}: a row of another tenant ({row['tenant_id']})")
        previous, count = row, count + 1
    if complete:
        head = header.get("head", {})
        last_seq, last_hash = (previous["seq"], previous["hash"]) if previous else (0, GENESIS)
        if (last_seq, last_hash) != (head.get("seq"), head.get("hash")):
            recorded = head.get("seq")
            raise Bad(f"the export ends at #{last_seq}, but the chain's head it recorded is #{recorded}")
        return f"{header['tenant']}: all {count} rows verified, a complete chain up to its head #{last_seq}"
    return f"{header['tenant']}: all {count} rows verified" + (
        f"; {gaps} of them follow rows this filtered export leaves out" if gaps else ""
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", help="a JSONL export, or - for standard input")
    parser.add_argument("--key-file", help='a JSON key file: {"current": ID, "keys": {ID: HEX}}')
    parser.add_argument("--key", help="one key, in hexadecimal")
    parser.add_argument("--key-id", default="k1", help="the id of --key (default k1)")
    args = parser.parse_args(argv)
    try:
        keys = load_keys(args)
        stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", newline="")
        with stream:
            print(verify(stream, keys, is_csv=args.file.endswith(".csv")))
    except Bad as problem:
        print(f"FAILED: {problem}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
