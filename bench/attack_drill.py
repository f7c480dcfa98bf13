"""The attack drill (issue 8): try what an attacker would against a running server, and count.

    .venv/bin/python bench/attack_drill.py [--size small|full] [--postgres URL]
    .venv/bin/python bench/attack_drill.py --base-url http://127.0.0.1:8000 [--size small|full]

Without --base-url it makes its own: a throwaway database (SQLite, or one on --postgres's
server) seeded by seed_demo, served by this checkout's runserver with DEBUG off on loopback,
thrown away after.

It walks every URL pattern as every role (anonymous, each demo user) with its own tenant's and
the other tenant's slug, objects of the other tenant included, by GET and by POST (with a CSRF
token, and as the lead without one); fuzzes the API from its OpenAPI schemas (hypothesis-
jsonschema: by-the-schema bodies, arbitrary JSON, bytes that are not JSON); tries 50 wrong
passwords then the right one, oversized bodies, revoked, missing and other tenants' tokens; and
throws crafted values (deep nesting, huge integers, extreme dates and UTC offsets, bytes that are
not UTF-8, NUL characters, very long strings) at every query parameter, form field, upload and
API body field each view reads, found in the views' source (`parameters()`), one at a time; ids
no database holds at every id of every URL; and a 5,000-digit integer at every place of a line of
every uploaded file.

It prints requests tried, 5xx seen, rows changed by refused requests and leaks found (each must
be 0), and the last line is one JSON object with them. A leak is a 2xx for something another
tenant owns, or a 2xx body holding another tenant's canary (a memory the drill plants in each
tenant). A refused request (4xx, or a redirect to a login page) must change no row: the drill
fingerprints the database around each.

With --base-url, the server must be this checkout's, on loopback, on the database this process's
settings name, seeded by seed_demo. The drill writes (canaries, tokens, and whatever the roles may
rightly do): run it on a throwaway copy. `make test` runs it at the small size against the PostgreSQL pass's
live server (tests/web/test_attack_drill.py).
"""

import argparse
import ast
import base64
import hashlib
import importlib
import inspect
import json
import os
import re
import secrets
import sys
import time
import typing
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
ROLES = ("acme-lead", "acme-reviewer", "acme-auditor", "acme-labeler", "globex-lead", "admin")
PASSWORD = "demo"  # seed_demo's
TENANTS = ("acme", "globex")
# Bookkeeping a refused request may write without harm: sessions, login attempts, admin log.
UNWATCHED = ("django_session", "axes_", "django_admin_log")
UNWATCHED_COLUMNS = {"tenancy_apitoken": {"last_used_at"}}  # touched by any authenticated API call
SECOND_IDS = {"<id:delivery>": "delivery"}  # a route's other ids, and the object each names
KIND_BY_ROUTE = (  # which object a route's <id:pk> names, by the route's shape
    ("rules/", "rule"),
    ("promotions/", "candidate"),
    ("requests/", "request"),
    ("tokens/", "token"),
    ("webhooks/", "webhook"),
    ("assessments/", "assessment"),
    ("exports/", "export"),
    ("memories/", "memory"),
)


@dataclass
class Findings:
    requests: int = 0
    by_status: Counter = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    refused_writes: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    crafted: Counter = field(default_factory=Counter)  # the crafted-value sweep's statuses

    def summary(self, seconds: float) -> dict:
        return {
            "requests": self.requests,
            "server_errors": len(self.server_errors),
            "refused_writes": len(self.refused_writes),
            "leaks": len(self.leaks),
            "seconds": round(seconds, 1),
            "statuses": dict(sorted(self.by_status.items())),
            "crafted": {
                "requests": sum(self.crafted.values()),
                "statuses": dict(sorted(self.crafted.items())),
            },
        }


# -- the database, seen directly --------------------------------------------------------------


_QUERIES: dict[str, str] = {}


def _fingerprint_queries() -> dict[str, str]:
    """One query a watched table, made once: its rows, hashed (the columns a refusal may touch left out)."""
    from django.db import connection

    if _QUERIES:
        return _QUERIES
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            if table.startswith(UNWATCHED):
                continue
            columns = [
                c.name
                for c in connection.introspection.get_table_description(cursor, table)
                if c.name not in UNWATCHED_COLUMNS.get(table, ())
            ]
            row = f"ROW({', '.join(quote(c) for c in columns)})::text"
            if connection.vendor == "postgresql":
                hashed = f"md5(string_agg(md5({row}), ',' ORDER BY md5({row})))"
                _QUERIES[table] = f"SELECT count(*), {hashed} FROM {quote(table)}"
            else:
                _QUERIES[table] = f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}"
    return _QUERIES


def fingerprint() -> dict[str, str]:
    """A hash of every watched table's rows (the owner's view: row-level security hides none)."""
    from django.db import connection

    prints = {}
    with connection.cursor() as cursor:
        for table, query in _fingerprint_queries().items():
            cursor.execute(query)
            if connection.vendor == "postgresql":
                prints[table] = repr(cursor.fetchone())
            else:
                rows = sorted(repr(row) for row in cursor.fetchall())
                prints[table] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return prints


def changed(before: dict, after: dict) -> list[str]:
    return sorted(table for table in before.keys() | after.keys() if before.get(table) != after.get(table))


@dataclass
class Ground:
    """What the drill knows about the server's data: tenants, objects, canaries, tokens."""

    objects: dict[str, dict[str, int]]  # tenant -> kind -> pk
    versions: dict[int, int]  # memory pk -> row_version (so a missing check would really act)
    canaries: dict[str, str]  # tenant -> a string only that tenant's pages may show
    tokens: dict[str, list[str]]  # tenant -> fresh API tokens
    revoked: str
    victim: str  # a user the password drill may lock out


def _rule(tenant) -> int | None:
    """An assignment rule, for the remove form."""
    from memory_review.tenancy.models import Membership, Role
    from memory_review.workflow import assignment

    lead = Membership.objects.filter(tenant=tenant, role=Role.LEAD).select_related("user").first()
    if lead is None:
        return None
    return assignment.rule_create(tenant=tenant, to=lead.user, by=lead.user, subject="drill").pk


def _proposal(tenant) -> int | None:
    """A policy proposal from the tenant's lead, for the admin's adopt and decline forms."""
    from memory_review.calibration import adoption, labeling
    from memory_review.tenancy.models import Membership, Role

    lead = Membership.objects.filter(tenant=tenant, role=Role.LEAD).select_related("user").first()
    if lead is None:
        return None
    thresholds = labeling.active_policy(tenant)[1]
    return adoption.propose(
        tenant, lead.user, thresholds=thresholds, mode="shadow", reason="attack drill", evidence={}
    ).pk


def _export(tenant) -> int:
    """A file a job is to write (queued; no worker runs in the drill), for its page and download."""
    from memory_review.jobfiles.models import JobFile

    return JobFile.objects.create(
        tenant=tenant, kind="audit.jsonl", filename="audit.jsonl", requested_by="system:attack-drill"
    ).pk


def prepare() -> Ground:
    from django.contrib.auth import get_user_model

    from memory_review.agents import feed, webhooks
    from memory_review.agents.models import WebhookEndpoint
    from memory_review.assessments.models import Assessment, PromotionCandidate
    from memory_review.integrity.db_context import tenant_context
    from memory_review.memories.models import DualControl, Memory
    from memory_review.memories.services import event_record, memory_write
    from memory_review.tenancy.models import ApiToken, Tenant
    from memory_review.tenancy.tokens import token_create, token_revoke

    tenants = {t.slug: t for t in Tenant.objects.filter(slug__in=TENANTS)}
    if set(tenants) != set(TENANTS):
        raise SystemExit(
            "the drill needs seed_demo's tenants acme and globex: run `manage.py seed_demo` first"
        )
    mark = secrets.token_hex(6)
    objects, canaries, tokens = {}, {}, {}
    for slug, tenant in tenants.items():
        with tenant_context(tenant.pk):
            canary = f"drill-canary-{slug}-{mark}"
            event = event_record(
                tenant=tenant, source="chat", text=f"{canary} said so.", user_id=f"{canary}-user"
            )
            memory_write(
                event=event,
                kind="fact",
                subject=canary,
                content=f"{canary} is a fact.",
                written_by="agent:drill",
            )
            canaries[slug] = canary
            # An endpoint that heard the canary's creation (made as the page would, but for the
            # address check: the drill never sends it anything).
            hook = WebhookEndpoint.objects.create(
                tenant=tenant,
                url=f"https://hooks.example/{canary}",
                secret=webhooks.new_secret(),
                created_by="system:attack-drill",
                cursor=feed.head(tenant) - 1,
            )
            webhooks.fan_out(tenant.pk, send=False)
            delivery = hook.deliveries.values_list("pk", flat=True).first()
            memory = Memory.objects.for_tenant(tenant).filter(status="needs_review").order_by("pk").first()
            memory = memory or Memory.objects.for_tenant(tenant).order_by("pk").first()
            found = {
                "memory": memory.pk,
                "candidate": PromotionCandidate.objects.for_tenant(tenant)
                .order_by("pk")
                .values_list("pk", flat=True)
                .first(),
                "assessment": Assessment.objects.for_tenant(tenant)
                .order_by("-pk")
                .values_list("pk", flat=True)
                .first(),
                "request": DualControl.objects.filter(tenant=tenant)
                .order_by("-pk")
                .values_list("pk", flat=True)
                .first(),
                "token": ApiToken.objects.filter(tenant=tenant)
                .order_by("pk")
                .values_list("pk", flat=True)
                .first(),
                "event": event.pk,
                "proposal": _proposal(tenant),
                "rule": _rule(tenant),
                "webhook": hook.pk,
                "delivery": delivery,
                "export": _export(tenant),
            }
            objects[slug] = {kind: pk for kind, pk in found.items() if pk}
            tokens[slug] = [token_create(tenant=tenant, name=f"drill-{mark}-{n}")[1] for n in range(8)]
    revoked_row, revoked = token_create(tenant=tenants["acme"], name=f"drill-{mark}-revoked")
    token_revoke(token=revoked_row, by="system:attack-drill")
    versions = dict(Memory.objects.values_list("pk", "row_version"))
    victim = f"drill-victim-{mark}"
    get_user_model().objects.create_user(victim, password=PASSWORD)
    return Ground(objects, versions, canaries, tokens, revoked, victim)


def routes() -> list[str]:
    """Every URL pattern's route, admin's included, as Django's resolver holds them."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = []

    def walk(patterns, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern):
                found.append(route)

    walk(get_resolver().url_patterns, "")
    return found


def fill(route: str, ground: Ground, slug: str, objects_of: str, *, kinds=KIND_BY_ROUTE) -> str | None:
    """The route as a path on `slug`, its <id:pk> one of `objects_of`'s objects; None if none."""
    if "<" not in route:
        return "/" + route
    path = route.replace("<slug:slug>", slug)
    if "<id:pk>" in path:
        kind = next((k for marker, k in kinds if marker in route), None)
        pk = ground.objects[objects_of].get(kind) if kind else None
        if pk is None:
            return None
        path = path.replace("<id:pk>", str(pk))
    for name, kind in SECOND_IDS.items():
        if name in path:
            pk = ground.objects[objects_of].get(kind)
            if pk is None:
                return None
            path = path.replace(name, str(pk))
    return None if "<" in path else "/" + path


def post_data(path: str, ground: Ground, *, csrf: str) -> dict:
    """What the drill's forms send: a value for every field any form takes."""
    memory = re.search(r"/memories/(\d+)/", path)
    version = ground.versions.get(int(memory.group(1)), 1) if memory else 1
    return {
        "csrfmiddlewaretoken": csrf,
        "action": "approve", "decision": "reject", "reason": "attack drill", "note": "attack drill",
        "seen_version": version, "name": "attack-drill", "user_id": "drill-nobody",
        "confirm_user_id": "drill-nobody", "content": "attack drill", "view": "page",
    }  # fmt: skip


# -- what each view reads, found in its source ------------------------------------------------

REQUEST_DICTS = {"GET": "query", "POST": "form", "FILES": "files"}
# What reads the JSON body into the pydantic model it is handed: that model's fields are the
# parameters. (memory_review/params.py's readers take (data, name, ...): `name` is one.)
BODY_READERS = {"memory_review.api.views.parse"}
# What reads the query string into the pydantic model it is handed: that model's fields.
QUERY_READERS = {"memory_review.api.views.query"}
# Forms whose __init__ adds fields, and where the names of the fields it adds are.
ADDED_FIELDS = {
    "memory_review.review.views.policies.ThresholdsForm": "memory_review.review.views.policies.NUMBERS",
}


@dataclass
class Reads:
    """The parameters one view reads: by where they come from, and what the scan cannot follow."""

    methods: tuple[str, ...] = ("GET", "POST")
    query: set[str] = field(default_factory=set)
    form: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    body: set[str] = field(default_factory=set)  # JSON fields, dotted ("scope.user_id")
    model: type | None = None  # the pydantic model the body is read into
    unexplained: list[str] = field(default_factory=list)


def _resolve(node, module):
    """The object a name or dotted attribute in `module`'s source stands for, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    found = vars(module).get(node.id)
    for part in reversed(parts):
        found = getattr(found, part, None)
    return found


def _qualified(obj) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"


_TREES: dict[str, ast.Module] = {}


def _function_node(function):
    """The function's module and its definition there (found by its first line, decorators
    included: a module may define two functions of one name)."""
    module = inspect.getmodule(function)
    tree = _TREES.setdefault(module.__name__, ast.parse(inspect.getsource(module)))
    first = function.__code__.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function.__name__:
            if min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first:
                return module, node
    raise LookupError(f"no source for {_qualified(function)}")


def _form_fields(form) -> set[str]:
    names = set(form.base_fields)
    added = ADDED_FIELDS.get(_qualified(form))
    if added:
        module, attribute = added.rsplit(".", 1)
        names |= set(getattr(importlib.import_module(module), attribute))
    return names


def _adds_fields(form) -> bool:
    return any(
        re.search(r"self\.fields\[[^\]]+\]\s*=", inspect.getsource(klass.__init__))
        for klass in form.__mro__
        if klass.__module__.startswith("memory_review") and "__init__" in vars(klass)
    )


def _body_fields(model, prefix: str = "") -> set[str]:
    """Every field of a pydantic model, those of the models inside it too (dotted)."""
    from pydantic import BaseModel

    out = set()
    for name, info in model.model_fields.items():
        out.add(prefix + name)
        if typing.get_origin(info.annotation) is list:
            continue  # a list of models is crafted whole: its items have no dotted name
        for inner in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                out |= _body_fields(inner, f"{prefix}{name}.")
    return out


def view_reads(view) -> Reads:
    """What `view` (undecorated) reads of request.GET, .POST, .FILES and the body, following the
    helpers it hands the request to, and the forms it fills from them."""
    _, node = _function_node(view)
    decorators = {decorator.id for decorator in node.decorator_list if isinstance(decorator, ast.Name)}
    methods = tuple(method for method in ("GET", "POST") if f"require_{method}" in decorators)
    reads = Reads(methods=methods or ("GET", "POST"))
    _scan(view, reads, seen=set())
    return reads


def _scan(function, reads: Reads, seen: set) -> None:
    if function in seen:
        return
    seen.add(function)
    module, node = _function_node(function)
    request = node.args.args[0].arg if node.args.args else "request"
    parents = {child: parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    where = f"{module.__name__}.{node.name}"
    for use in ast.walk(node):
        if isinstance(use, ast.Call):
            callee = _resolve(use.func, module)
            handed = [
                a
                for a in (*use.args, *(k.value for k in use.keywords))
                if isinstance(a, ast.Name) and a.id == request
            ]
            if handed and _qualified(callee) in BODY_READERS:
                reads.model = _resolve(use.args[1], module)
                reads.body |= _body_fields(reads.model)
            elif handed and _qualified(callee) in QUERY_READERS:
                reads.query |= set(_resolve(use.args[1], module).model_fields)
            elif handed and inspect.isfunction(callee) and callee.__module__.startswith("memory_review"):
                _scan(callee, reads, seen)
            continue
        if not (
            isinstance(use, ast.Attribute) and isinstance(use.value, ast.Name) and use.value.id == request
        ):
            continue
        if use.attr == "body":
            if _qualified(function) not in BODY_READERS:
                reads.unexplained.append(f"{where} reads the raw body")
            continue
        if use.attr not in REQUEST_DICTS:
            continue
        found = getattr(reads, REQUEST_DICTS[use.attr])
        parent = parents.get(use)
        grand = parents.get(parent)
        if isinstance(parent, ast.Attribute) and parent.attr == "copy":
            continue  # kept to build the page links, not read
        if (
            isinstance(parent, ast.Attribute)
            and parent.attr in ("get", "getlist")
            and isinstance(grand, ast.Call)
        ):
            keys = _keys(grand.args[0], parents, module) if grand.args else None
        elif isinstance(parent, ast.Subscript):
            keys = _keys(parent.slice, parents, module)
        elif _unreachable(use, parent, request, reads.methods):
            continue
        else:
            keys = _handed_to(parent, grand, module)
        if keys is None:
            reads.unexplained.append(
                f"{where} line {use.lineno}: request.{use.attr} used in a way the scan cannot follow"
            )
        else:
            found |= set(keys)
            if isinstance(keys, _FormKeys) and keys.hidden:
                reads.unexplained.append(f"{where}: {keys.hidden} adds fields the scan cannot see")


class _FormKeys(set):
    hidden = ""  # a form whose __init__ adds fields ADDED_FIELDS does not name


def _keys(node, parents, module) -> list[str] | None:
    """The parameter names a key expression stands for: a string, or the variable of a loop (a
    comprehension's, too) over a list the module's names spell out."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if not isinstance(node, ast.Name):
        return None
    scope = node
    while scope is not None:
        loops = getattr(scope, "generators", None) or ([scope] if isinstance(scope, ast.For) else [])
        for loop in loops:
            if isinstance(loop.target, ast.Name) and loop.target.id == node.id:
                values = eval(compile(ast.Expression(loop.iter), "<drill>", "eval"), vars(module))  # noqa: S307 (our own source)
                return [value for value in values if isinstance(value, str)]
        scope = parents.get(scope)
    return None


def _unreachable(use, parent, request: str, methods: tuple[str, ...]) -> bool:
    """`request.GET if request.method == "GET" else request.POST`: the branch this view's methods
    never take."""
    test = parent.test if isinstance(parent, ast.IfExp) else None
    if not (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "method"
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == request
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
    ):
        return False
    method = test.comparators[0].value
    return method not in methods if use is parent.body else methods == (method,)


def _handed_to(parent, grand, module) -> list[str] | None:
    """The names a request dict handed to a call stands for: a form's fields, or the parameter a
    memory_review/params.py reader is told to read."""
    from django import forms

    call = grand if isinstance(parent, ast.IfExp) else parent
    callee = _resolve(call.func, module) if isinstance(call, ast.Call) else None
    if isinstance(callee, type) and issubclass(callee, forms.BaseForm):
        keys = _FormKeys(_form_fields(callee))
        if _adds_fields(callee) and _qualified(callee) not in ADDED_FIELDS:
            keys.hidden = _qualified(callee)
        return keys
    if getattr(callee, "__module__", "") == "memory_review.params" and len(call.args) > 1:
        return _keys(call.args[1], {}, module)
    return None


def parameters() -> dict[str, Reads]:
    """Every URL pattern of the review screens, the API and the probes, with what its view reads."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found = {}

    def walk(patterns, prefix: str) -> None:
        for entry in patterns:
            route = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                if not route.startswith("admin/"):
                    walk(entry.url_patterns, route)
            elif isinstance(entry, URLPattern) and entry.callback.__module__.startswith("memory_review"):
                found[route] = view_reads(inspect.unwrap(entry.callback))

    walk(get_resolver().url_patterns, "")
    return found


# -- crafted values at every parameter (issue 14, item 8) -------------------------------------

DEEP = 2000  # brackets: past Python's recursion limit, inside the request line a server takes
LONG = {"query": 20_000, "form": 100_000}  # past params.QUERY_MAX_CHARS and FORM_MAX_CHARS
HUGE = b"9" * 5000  # past Python's own limit for reading an integer from text (4,300 digits)
CURSOR_SHAPES = (("int",), ("time", "int"), ("float", "time", "int"))  # the lists' orders' columns
FILLERS = {"int": 1, "time": "2026-01-01T00:00:00+00:00", "float": 0.5}
API_BASE = {  # a valid value for each required field of the API's bodies; the event is the drill's
    "text": "attack drill", "source": "chat", "content": "attack drill", "claim": "attack drill",
    "kind": "fact", "subject": "attack drill",
}  # fmt: skip
UNREAD = "drill"  # a parameter no view reads: screened all the same
UNREAD_VALUES = {
    "small": {"bytes that are not UTF-8"},
    "full": {"bytes that are not UTF-8", "a NUL character", "a very long string"},
}


@dataclass(frozen=True)
class Crafted:
    """One request with one crafted value in one parameter."""

    what: str
    method: str
    path: str  # with the query string as sent, percent-encoded
    body: bytes | None = None
    content_type: str | None = None
    api: bool = False  # sent with an API token


def _values(size: str, where: str) -> list[tuple[str, str]]:
    """(what, value as sent, percent-encoded) for a query parameter or form field."""
    values = [
        ("deep nesting", quote("[" * DEEP + "]" * DEEP)),
        ("a huge integer", "9" * 30),
        ("the last day, 23 h west of UTC", quote("9999-12-31T23:59-23:00")),
        ("the first day, 5 h east of UTC", quote("0001-01-01T00:00+05:00")),
        ("bytes that are not UTF-8", "%FF%FE"),
        ("a NUL character", "a%00b"),
        ("a very long string", "x" * LONG[where]),
    ]
    if size == "full":
        values += [
            ("2**63", str(2**63)),
            ("Oracle's NUMBER(19) plus one", str(10**19)),
            ("-(2**63) - 1", str(-(2**63) - 1)),
            ("2**31 (past a user id)", str(2**31)),
            ("a lone surrogate, as UTF-8", "%ED%A0%80"),
            ("the last day", "9999-12-31"),
            ("the first day", "0001-01-01"),
            ("1e999", "1e999"),
            ("NaN", "NaN"),
            ("a 24-hour UTC offset", quote("2026-01-01T00:00+24:00")),
        ]
    return values


def _cursors(size: str) -> list[tuple[str, str]]:
    """Page links holding deep nesting, or a value no column holds in each column of each order."""

    def token(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    atoms = {"int": [2**70], "time": ["9999-12-31T23:59:59-23:59"], "float": [float("inf")]}
    if size == "full":
        atoms["int"] += [2**63, 10**19, -(2**63) - 1]
        atoms["time"] += ["0001-01-01T00:00:00+23:59"]
        atoms["float"] += [float("nan")]
    cursors = [("a page link of deep nesting", token(b"[" * DEEP + b"]" * DEEP))]
    for shape in CURSOR_SHAPES:
        for slot, kind in enumerate(shape):
            for atom in atoms[kind]:
                values = [atom if i == slot else FILLERS[k] for i, k in enumerate(shape)]
                cursors.append((f"a page link of {values}", token(json.dumps(values).encode())))
    return cursors


def _json_values(size: str) -> list[tuple[str, bytes]]:
    """(what, raw JSON) for a field of an API body."""
    values = [
        ("deep nesting", b"[" * 50_000 + b"]" * 50_000),
        ("2**63", str(2**63).encode()),
        ("a 5,000-digit integer", HUGE),
        ("the last day, 23 h 59 west of UTC", b'"9999-12-31T23:59:59-23:59"'),
        ("the first day, 23 h 59 east of UTC", b'"0001-01-01T00:00:00+23:59"'),
        ("bytes that are not UTF-8", b'"\xff\xfe"'),
        ("a NUL character", b'"a\\u0000b"'),
        ("a very long string", b'"' + b"x" * LONG["form"] + b'"'),
    ]
    if size == "full":
        values += [
            ("2**70", str(2**70).encode()),
            ("Oracle's NUMBER(19) plus one", str(10**19).encode()),
            ("-(2**63) - 1", str(-(2**63) - 1).encode()),
            ("a lone surrogate", b'"\\ud800"'),
            ("1e999", b"1e999"),
            ("a 24-hour UTC offset", b'"2026-01-01T00:00:00+24:00"'),
        ]
    return values


def _oversized_lines() -> list[tuple[str, bytes]]:
    """A file's line with a 5,000-digit integer at each place a line of any of our formats
    (a replay set, import_jsonl's events and memories) holds a value."""
    case = {"id": "c1", "votes": {"bears": 0.5}, "expected": "confirmed"}
    lines = [("as the whole line", HUGE + b"\n")]
    for path in ("id", "votes.bears", "expected", "source_event_id", "scope.user_id"):
        lines.append((f"as {path}", _with(case, path, HUGE) + b"\n"))
    return lines


def _with(base: dict, path: str, raw: bytes) -> bytes:
    """`base` as JSON with the field at the dotted `path` set to `raw`, sent as it is."""
    body, marker = json.loads(json.dumps(base)), "crafted-value-goes-here"
    *outer, last = path.split(".")
    place = body
    for name in outer:
        place = place.setdefault(name, {})
    place[last] = marker
    return json.dumps(body).encode().replace(json.dumps(marker).encode(), raw)


def _multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    boundary = "drill-" + secrets.token_hex(8)
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
        for k, v in fields.items()
    ]
    parts += [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"; filename="drill.jsonl"\r\n'
        f"Content-Type: application/x-ndjson\r\n\r\n".encode()
        + content
        + b"\r\n"
        for k, content in files.items()
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _path_ids(size: str) -> list[tuple[str, str]]:
    """(what, value) for an id in a URL: none of them is an id any database holds."""
    values = [("2**63", str(2**63)), ("a 5,000-digit integer", "9" * 5000)]
    if size == "full":
        values += [("Oracle's NUMBER(19) plus one", str(10**19)), ("zero", "0")]
    return values


def crafted_requests(ground: "Ground", *, size: str, form_base) -> list[Crafted]:
    """Crafted values at every parameter each view reads (`parameters()`), one at a time, the
    others as a plain request sends them (`form_base(path)`); at one no view reads; and in every
    id of every URL, one id at a time, the others real."""
    requests = []
    kinds = (*KIND_BY_ROUTE, ("policies/", "proposal"))
    for route, reads in parameters().items():
        path = fill(route, ground, "acme", "acme", kinds=kinds)
        for method in reads.methods if path else ():
            base = form_base(path) if method == "POST" and not route.startswith("api/") else {}
            requests += _crafted_for(route, path, method, reads, ground=ground, size=size, base=base)
        for name in re.findall(r"<id:\w+>", route):
            for what, value in _path_ids(size):
                crafted = fill(route.replace(name, value), ground, "acme", "acme", kinds=kinds)
                requests += [
                    Crafted(f"{method} /{route} {name} {what}", method, crafted, api=route.startswith("api/"))
                    for method in reads.methods if crafted
                ]  # fmt: skip
    return requests


def _crafted_for(route: str, path: str, method: str, reads: Reads, *, ground, size, base) -> list[Crafted]:
    made = []

    def add(what: str, *, query: str = "", fields: dict | None = None, body=None, kind=None) -> None:
        if fields:
            body = "&".join(f"{quote(k)}={v}" for k, v in fields.items()).encode()
            kind = "application/x-www-form-urlencoded"
        made.append(
            Crafted(f"{method} /{route} {what}", method, path + query, body, kind, route.startswith("api/"))
        )

    plain = {k: quote(str(v)) for k, v in base.items()}
    posting = method == "POST"
    for name in sorted(reads.query):
        cursors = _cursors(size) if name in ("after", "before") else []
        for what, value in _values(size, "query") + cursors:
            add(f"?{name}= {what}", query=f"?{name}={value}", fields=plain)
    for name in sorted(reads.form) if posting else ():
        for what, value in _values(size, "form"):
            add(f"{name}= {what}", fields={**plain, name: value})
    for name in sorted(reads.files) if posting else ():
        for what, value in _json_values(size):
            line = b'{"id": "c1", "votes": {"bears": ' + value + b'}, "expected": "confirmed"}\n'
            body, kind = _multipart(base, {name: line})
            add(f"{name}: a replay-set line of {what}", body=body, kind=kind)
        for where, line in _oversized_lines():
            body, kind = _multipart(base, {name: line})
            add(f"{name}: a 5,000-digit integer {where}", body=body, kind=kind)
    event = ground.objects["acme"]["event"]
    required = (
        {k: API_BASE.get(k, event) for k, f in reads.model.model_fields.items() if f.is_required()}
        if reads.model
        else {}
    )
    for name in sorted(reads.body) if posting else ():
        for what, value in _json_values(size):
            add(f"{name}: {what}", body=_with(required, name, value), kind="application/json")
    for what, value in _values(size, "query"):
        if what in UNREAD_VALUES[size]:
            add(f"?{UNREAD}= {what}", query=f"?{UNREAD}={value}", fields=plain)
    return made


# -- the server, seen from outside ------------------------------------------------------------


class Drill:
    def __init__(self, base_url: str, size: str, *, crafted: bool = True):
        import httpx

        host = urlsplit(base_url).hostname or ""
        if host not in LOOPBACK:
            raise SystemExit(f"the drill attacks loopback only, not {host!r}")
        self.base = base_url.rstrip("/")
        self.size = size
        self.crafted = crafted  # the crafted-value sweep (the test suite runs it in-process too)
        self.http = httpx
        self.findings = Findings()
        self.clients: list = []
        self.ground = prepare()
        self.memberships = self._memberships()
        self.token_supply = iter(self.ground.tokens["acme"] * 100)
        self.api_sent = 0

    @staticmethod
    def _memberships() -> dict[str, set[str]]:
        from memory_review.tenancy.models import Membership

        out: dict[str, set[str]] = {role: set() for role in ROLES}
        for username, slug in Membership.objects.filter(user__username__in=ROLES).values_list(
            "user__username", "tenant__slug"
        ):
            out[username].add(slug)
        return out

    def client(self):
        client = self.http.Client(base_url=self.base, follow_redirects=False, timeout=60)
        self.clients.append(client)
        return client

    def login(self, username: str, password: str = PASSWORD):
        session = self.client()
        session.get("/accounts/login/")
        response = session.post(
            "/accounts/login/",
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
            },
        )
        self.count("POST /accounts/login/", response)
        if response.status_code != 302:
            raise SystemExit(f"could not log in as {username}: {response.status_code}")
        return session

    def api_headers(self) -> dict:
        """An acme token, a fresh one every 250 requests to stay under each token's rate limit."""
        if self.api_sent % 250 == 0:
            self.api_token = next(self.token_supply)
        self.api_sent += 1
        return {"Authorization": f"Bearer {self.api_token}", "Content-Type": "application/json"}

    def count(self, what: str, response) -> None:
        self.findings.requests += 1
        self.findings.by_status[response.status_code] += 1
        if response.status_code == 503 and response.request.url.path == "/readyz":
            self.findings.notes.append(f"/readyz says not ready: {response.text[:200]}")
        elif response.status_code >= 500:
            self.findings.server_errors.append(f"{what} -> {response.status_code}")

    def send(
        self,
        session,
        method: str,
        path: str,
        *,
        who: str,
        refused_expected: bool,
        data=None,
        headers=None,
        what: str = "",
        watched: bool = True,
        **kw,
    ):
        """One request, fingerprinted around when it should be refused (not when `watched` is
        False: a batch's fingerprint is around it); `what` names it in the findings (its method
        and path otherwise)."""
        before = fingerprint() if watched and (refused_expected or method != "GET") else None
        response = session.request(method, path, data=data, headers=headers, **kw)
        what = what or f"{who} {method} {path}"
        self.count(what, response)
        refused = response.status_code >= 400 or (
            response.status_code in (301, 302) and "login" in response.headers.get("location", "")
        )
        if before is not None and refused:
            moved = changed(before, fingerprint())
            if moved:
                self.findings.refused_writes.append(
                    f"{what} -> {response.status_code} changed {', '.join(moved)}"
                )
        return response

    # -- the walk --

    def fill(self, route: str, slug: str, objects_of: str) -> str | None:
        return fill(route, self.ground, slug, objects_of)

    def post_data(self, path: str, session) -> dict:
        return post_data(path, self.ground, csrf=session.cookies.get("csrftoken", ""))

    def walk(self) -> None:
        tenant_routes = [r for r in routes() if r.startswith("t/")]
        other_routes = [r for r in routes() if not r.startswith(("t/", "api/", "admin/"))]
        sessions = {"anonymous": self.client(), **{role: self.login(role) for role in ROLES}}
        sessions["anonymous"].get("/accounts/login/")  # a CSRF cookie, so its POSTs reach the views
        for who, session in sessions.items():
            mine = self.memberships.get(who, set())
            for route in other_routes:
                path = self.fill(route, "acme", "acme")
                if path and "logout" not in path:
                    self.check_body(
                        who, mine, self.send(session, "GET", path, who=who, refused_expected=False)
                    )
            for slug in TENANTS:
                for objects_of in TENANTS:
                    foreign = slug not in mine or objects_of != slug
                    batch = [
                        (method, path)
                        for route in tenant_routes
                        if (path := self.fill(route, slug, objects_of))
                        and (objects_of == slug or "<id:pk>" in route)
                        for method in ("GET", "POST")
                    ]
                    if foreign:  # every request should be refused: one fingerprint around them all
                        self.refused_batch(session, who, mine, slug, objects_of, batch)
                        continue
                    for method, path in batch:
                        data = self.post_data(path, session) if method == "POST" else None
                        response = self.send(
                            session, method, path, who=who, refused_expected=False, data=data
                        )
                        self.judge(who, mine, slug, objects_of, method, path, response)
        lead = sessions["acme-lead"]
        for route in tenant_routes:  # as the lead, without a CSRF token: refused before any view
            path = self.fill(route, "acme", "acme")
            if path:
                response = self.send(
                    lead,
                    "POST",
                    path,
                    who="acme-lead (no CSRF)",
                    refused_expected=True,
                    data={"action": "approve"},
                )
                if response.status_code < 400:
                    self.findings.leaks.append(
                        f"acme-lead POST {path} without a CSRF token -> {response.status_code}"
                    )
        self.admin_pages(sessions)

    def refused_batch(self, session, who, mine, slug, objects_of, batch) -> None:
        """Requests that must all be refused, fingerprinted as a batch; when the batch changed
        rows, it is sent again a request at a time to name the one that did."""
        before = fingerprint()
        for method, path in batch:
            data = self.post_data(path, session) if method == "POST" else None
            self.judge(
                who,
                mine,
                slug,
                objects_of,
                method,
                path,
                self.send(session, method, path, who=who, refused_expected=False, data=data, watched=False),
            )
        moved = changed(before, fingerprint())
        if not moved:
            return
        found = len(self.findings.refused_writes)
        for method, path in batch:
            data = self.post_data(path, session) if method == "POST" else None
            self.send(session, method, path, who=who, refused_expected=True, data=data)
        if len(self.findings.refused_writes) == found:
            self.findings.refused_writes.append(
                f"{who} on {slug} ({objects_of}'s objects) changed {', '.join(moved)}"
            )

    def admin_pages(self, sessions) -> None:
        from django.contrib import admin

        paths = ["/admin/"] + [
            f"/admin/{m._meta.app_label}/{m._meta.model_name}/" for m in admin.site._registry
        ]
        if self.size == "small":
            paths = paths[:6]
        for who, session in sessions.items():
            for path in paths:
                response = self.send(session, "GET", path, who=who, refused_expected=who != "admin")
                if who != "admin" and response.status_code == 200:
                    self.findings.leaks.append(f"{who} GET {path} -> 200 (admin pages are for superusers)")

    def judge(self, who, mine, slug, objects_of, method, path, response) -> None:
        status = response.status_code
        if who == "anonymous":
            if 200 <= status < 300:
                self.findings.leaks.append(f"anonymous {method} {path} -> {status}")
            return
        if slug not in mine or objects_of != slug:
            if (
                200 <= status < 300
                or status in (301, 302)
                and "login" not in response.headers.get("location", "")
            ):
                self.findings.leaks.append(f"{who} {method} {path} (tenant {objects_of}'s) -> {status}")
            elif status not in (404, 405) and not (method == "POST" and status == 403):
                self.findings.notes.append(f"{who} {method} {path}: {status} where 404 hides the tenant")
            return
        self.check_body(who, mine, response)

    def check_body(self, who, mine, response) -> None:
        if not 200 <= response.status_code < 300 or who == "admin":
            return
        body = response.text
        for slug, canary in self.ground.canaries.items():
            if slug not in mine and canary in body:
                self.findings.leaks.append(f"{who} saw {slug}'s canary at {response.request.url.path}")

    # -- passwords, bodies, tokens --

    def login_form(self, session, username: str, password: str) -> dict:
        return {
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
        }

    def passwords(self) -> None:
        session = self.client()
        session.get("/accounts/login/")
        statuses = Counter()
        victim = self.ground.victim
        for _ in range(50):
            wrong = self.login_form(session, victim, secrets.token_hex(4))
            response = self.send(
                session, "POST", "/accounts/login/", who="guesser", refused_expected=False, data=wrong
            )
            statuses[response.status_code] += 1
        right = self.login_form(session, victim, PASSWORD)
        right = self.send(
            session, "POST", "/accounts/login/", who="guesser", refused_expected=False, data=right
        )
        if right.status_code == 302:
            self.findings.leaks.append("the right password was accepted after 50 wrong ones")
        self.findings.notes.append(
            f"50 wrong passwords: {dict(statuses)}; then the right one: {right.status_code} "
            f"(Retry-After {right.headers.get('retry-after')})"
        )

    def oversized(self) -> None:
        session = self.client()
        session.get("/accounts/login/")
        big = "x" * 3_000_000
        form = self.login_form(session, big, big)
        login = self.send(
            session, "POST", "/accounts/login/", who="anonymous", refused_expected=True, data=form
        )
        token = self.ground.tokens["acme"][0]
        api = self.send(
            self.client(), "POST", "/api/v1/t/acme/events", who="agent", refused_expected=True,
            content=json.dumps({"text": big, "source": "chat"}),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )  # fmt: skip
        if "json" not in api.headers.get("content-type", ""):
            self.findings.notes.append(f"oversized API body answered {api.status_code} without JSON")
        self.findings.notes.append(f"3 MB bodies: login {login.status_code}, API {api.status_code}")

    def api_tokens(self) -> None:
        acme, globex = self.ground.tokens["acme"][0], self.ground.tokens["globex"][0]
        other_assessment = self.ground.objects["globex"].get("assessment")
        cases = [
            ("no token", None, "/api/v1/t/acme/events", 401),
            ("revoked token", self.ground.revoked, "/api/v1/t/acme/events", 401),
            ("a forged token", "mr_xxxxxxxx_" + secrets.token_urlsafe(24), "/api/v1/t/acme/events", 401),
            ("acme's token on globex", acme, "/api/v1/t/globex/events", 404),
            ("globex's token on acme", globex, "/api/v1/t/acme/memories", 404),
        ]
        if other_assessment:
            cases.append(
                (
                    "acme's token, globex's assessment",
                    acme,
                    f"/api/v1/t/acme/assessments/{other_assessment}",
                    404,
                )
            )
        for what, token, path, expected in cases:
            headers = {
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {token}"} if token else {}),
            }
            method = "GET" if "/assessments/" in path else "POST"
            body = json.dumps({"text": "drill", "source": "chat"}) if method == "POST" else None
            response = self.send(
                self.client(), method, path, who=what, refused_expected=True, content=body, headers=headers
            )
            if response.status_code != expected:
                target = self.findings.leaks if response.status_code < 400 else self.findings.notes
                target.append(f"{what}: {method} {path} -> {response.status_code}, expected {expected}")

    def fuzz_api(self) -> None:
        """Bodies by the OpenAPI schemas (with real values half the time, so some reach deep),
        arbitrary JSON, and bytes that are not JSON, to each write operation."""
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        document = self.client().get("/api/v1/openapi.json").json()
        components = document.get("components", {}).get("schemas", {})
        examples = 15 if self.size == "small" else 150
        client = self.client()

        def sender(method: str):
            def send(path: str, raw: bytes) -> None:
                headers = self.api_headers()
                response = self.send(
                    client, method, path, who="fuzzer", refused_expected=True, content=raw, headers=headers
                )
                if response.status_code >= 400 and "json" not in response.headers.get("content-type", ""):
                    self.findings.notes.append(
                        f"fuzzer {method} {path} -> {response.status_code} without JSON"
                    )

            return send

        any_json = st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
            max_leaves=20,
        )
        ids = {
            "{id}": self.ground.objects["acme"].get("webhook"),
            "{delivery}": self.ground.objects["acme"].get("delivery"),
        }
        operations_with_bodies = [
            (route, method.upper(), operation)
            for route, operations in document.get("paths", {}).items()
            for method, operation in operations.items()
            if method in ("post", "patch") and "requestBody" in operation  # a bodiless POST: the walk's
        ]
        for route, method, operation in operations_with_bodies:
            path = route.replace("{slug}", "acme")
            for name, pk in ids.items():
                path = path.replace(name, str(pk))
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            bodies = st.one_of(
                self._by_schema(schema, components, st).map(lambda body: json.dumps(body).encode()),
                any_json.map(lambda body: json.dumps(body).encode()),
                st.binary(max_size=200),
            )
            quiet = settings(
                max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )
            quiet(given(bodies)(self._sender(sender(method), path)))()

    def _by_schema(self, schema: dict, components: dict, st, name: str = ""):
        """A hypothesis strategy for a JSON schema as pydantic writes them (refs, anyOf, objects)."""
        from memory_review.memories.models import Memory, SourceEvent

        if "$ref" in schema:
            return self._by_schema(components[schema["$ref"].rsplit("/", 1)[1]], components, st, name)
        if "anyOf" in schema:
            return st.one_of([self._by_schema(s, components, st, name) for s in schema["anyOf"]])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        known = {
            "kind": Memory.Kind.values,
            "source": SourceEvent.Source.values,
            "source_event_id": list(SourceEvent.objects.order_by("-pk").values_list("pk", flat=True)[:20]),
        }.get(name)
        kind = schema.get("type")
        if kind == "object":
            properties = schema.get("properties", {})
            required = set(schema.get("required", ()))
            strategies = {key: self._by_schema(sub, components, st, key) for key, sub in properties.items()}
            return st.fixed_dictionaries(
                {k: v for k, v in strategies.items() if k in required},
                optional={k: v for k, v in strategies.items() if k not in required},
            )
        if kind == "string":
            if schema.get("format") == "date-time":
                base = st.datetimes().map(lambda moment: moment.isoformat() + "Z") | st.text(max_size=40)
            else:
                base = st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 400))
        elif kind == "integer":
            base = st.integers(min_value=-(2**70), max_value=2**70)
        elif kind == "number":
            base = st.floats(allow_nan=False, allow_infinity=False)
        elif kind == "boolean":
            base = st.booleans()
        elif kind == "null":
            base = st.none()
        else:
            base = st.nothing()
        return st.sampled_from(known) | base if known else base

    @staticmethod
    def _sender(post, path: str):
        def send_body(raw: bytes) -> None:
            post(path, raw)

        return send_body

    def crafted_values(self) -> None:
        """Crafted values at every parameter of every URL, as acme's admin: one role a page, the
        one that reaches every form. A 5xx is a server error; a refusal must write nothing."""
        admin, agent = self.login("admin"), self.client()
        made = crafted_requests(
            self.ground, size=self.size, form_base=lambda path: self.post_data(path, admin)
        )
        for request in made:
            headers = self.api_headers() if request.api else {}
            if request.content_type:
                headers["Content-Type"] = request.content_type
            response = self.send(
                agent if request.api else admin, request.method, request.path, who="crafted",
                refused_expected=False, content=request.body, headers=headers, what=request.what,
            )  # fmt: skip
            self.findings.crafted[response.status_code] += 1

    def run(self) -> Findings:
        try:
            self.api_tokens()
            self.fuzz_api()
            self.walk()
            if self.crafted:
                self.crafted_values()
            self.oversized()
            self.passwords()
        finally:
            for client in self.clients:  # the server's threads for kept-alive connections end too
                client.close()
        return self.findings


def run_drill(base_url: str, size: str = "small", *, crafted: bool = True) -> tuple[Findings, dict]:
    started = time.monotonic()
    findings = Drill(base_url, size, crafted=crafted).run()
    return findings, findings.summary(time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="a running server's (else the drill serves a throwaway one)")
    parser.add_argument("--size", choices=("small", "full"), default="full")
    parser.add_argument("--postgres", help="with no --base-url: a PostgreSQL server for the throwaway")
    args = parser.parse_args()
    server = None
    if args.base_url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import throwaway

        os.environ["JEV_STANDIN_URL"] = "http://127.0.0.1:9"  # no Jev: /readyz says so, nothing needs it
    else:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_review.settings")
    import django

    django.setup()
    if args.base_url is None:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("seed_demo", "--no-history", verbosity=0, stdout=open(os.devnull, "w"))
        args.base_url, server = throwaway.serve()
    try:
        findings, summary = run_drill(args.base_url, args.size)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
            throwaway.drop()
    print(f"requests tried:                  {summary['requests']}")
    print(f"5xx seen:                        {summary['server_errors']}")
    print(f"rows changed by refused requests: {summary['refused_writes']}")
    print(f"leaks found:                     {summary['leaks']}")
    print(f"statuses:                        {summary['statuses']}")
    for title, lines in (
        ("5xx", findings.server_errors),
        ("refused writes", findings.refused_writes),
        ("leaks", findings.leaks),
        ("notes", findings.notes),
    ):
        for line in lines[:40]:
            print(f"  {title}: {line}")
    print(json.dumps(summary))
    sys.exit(1 if summary["server_errors"] or summary["refused_writes"] or summary["leaks"] else 0)


if __name__ == "__main__":
    main()
