"""The attack drill (issue 8): try what an attacker would against a running server, and count.

    python bench/attack_drill.py --base-url http://127.0.0.1:8000 [--size small|full]

It walks every URL pattern as every role (anonymous, each demo user) with its own tenant's and
the other tenant's slug, objects of the other tenant included, by GET and by POST (with a CSRF
token, and as the lead without one); fuzzes the API from its OpenAPI schemas (hypothesis-
jsonschema: by-the-schema bodies, arbitrary JSON, bytes that are not JSON); tries 50 wrong
passwords then the right one, oversized bodies, revoked, missing and other tenants' tokens.

It prints requests tried, 5xx seen, rows changed by refused requests and leaks found (each must
be 0), and the last line is one JSON object with them. A leak is a 2xx for something another
tenant owns, or a 2xx body holding another tenant's canary (a memory the drill plants in each
tenant). A refused request (4xx, or a redirect to a login page) must change no row: the drill
fingerprints the database around each.

The server must be this checkout's, on loopback, on the database this process's settings name,
seeded by seed_demo. The drill writes (canaries, tokens, and whatever the roles may rightly do):
run it on a throwaway copy. `make test` runs it at the small size against the PostgreSQL pass's
live server (tests/web/test_attack_drill.py).
"""

import argparse
import hashlib
import json
import os
import re
import secrets
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
ROLES = ("acme-lead", "acme-reviewer", "acme-auditor", "acme-labeler", "globex-lead", "admin")
PASSWORD = "demo"  # seed_demo's
TENANTS = ("acme", "globex")
# Bookkeeping a refused request may write without harm: sessions, login attempts, admin log.
UNWATCHED = ("django_session", "axes_", "django_admin_log")
UNWATCHED_COLUMNS = {"tenancy_apitoken": {"last_used_at"}}  # touched by any authenticated API call
KIND_BY_ROUTE = (  # which object a route's <int:pk> names, by the route's shape
    ("promotions/", "candidate"),
    ("requests/", "request"),
    ("tokens/", "token"),
    ("assessments/", "assessment"),
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

    def summary(self, seconds: float) -> dict:
        return {
            "requests": self.requests,
            "server_errors": len(self.server_errors),
            "refused_writes": len(self.refused_writes),
            "leaks": len(self.leaks),
            "seconds": round(seconds, 1),
            "statuses": dict(sorted(self.by_status.items())),
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


def prepare() -> Ground:
    from django.contrib.auth import get_user_model

    from memory_review.assessments.models import Assessment, PromotionCandidate
    from memory_review.memories.models import DualControl, Memory
    from memory_review.memories.services import event_record, memory_write
    from memory_review.tenancy.db_context import tenant_context
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


# -- the server, seen from outside ------------------------------------------------------------


class Drill:
    def __init__(self, base_url: str, size: str):
        import httpx

        host = urlsplit(base_url).hostname or ""
        if host not in LOOPBACK:
            raise SystemExit(f"the drill attacks loopback only, not {host!r}")
        self.base = base_url.rstrip("/")
        self.size = size
        self.http = httpx
        self.findings = Findings()
        self.clients: list = []
        self.ground = prepare()
        self.memberships = self._memberships()

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
        **kw,
    ):
        """One request, fingerprinted around when it should be refused."""
        before = fingerprint() if refused_expected or method != "GET" else None
        response = session.request(method, path, data=data, headers=headers, **kw)
        what = f"{who} {method} {path}"
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
        if "<" not in route:
            return "/" + route
        path = route.replace("<slug:slug>", slug)
        if "<int:pk>" in path:
            kind = next((k for marker, k in KIND_BY_ROUTE if marker in route), None)
            pk = self.ground.objects[objects_of].get(kind) if kind else None
            if pk is None:
                return None
            path = path.replace("<int:pk>", str(pk))
        return None if "<" in path else "/" + path

    def post_data(self, path: str, session) -> dict:
        memory = re.search(r"/memories/(\d+)/", path)
        version = self.ground.versions.get(int(memory.group(1)), 1) if memory else 1
        return {
            "csrfmiddlewaretoken": session.cookies.get("csrftoken", ""),
            "action": "approve", "decision": "reject", "reason": "attack drill", "note": "attack drill",
            "seen_version": version, "name": "attack-drill", "user_id": "drill-nobody",
            "confirm_user_id": "drill-nobody", "content": "attack drill", "view": "page",
        }  # fmt: skip

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
                        and (objects_of == slug or "<int:pk>" in route)
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
                self.send(session, method, path, who=who, refused_expected=False, data=data),
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
        tokens = iter(self.ground.tokens["acme"] * 100)
        state = {"token": next(tokens), "sent": 0}
        client = self.client()

        def post(path: str, raw: bytes) -> None:
            if state["sent"] and state["sent"] % 250 == 0:  # stay under each token's rate limit
                state["token"] = next(tokens)
            state["sent"] += 1
            response = self.send(
                client, "POST", path, who="fuzzer", refused_expected=True, content=raw,
                headers={"Authorization": f"Bearer {state['token']}", "Content-Type": "application/json"},
            )  # fmt: skip
            if response.status_code >= 400 and "json" not in response.headers.get("content-type", ""):
                self.findings.notes.append(f"fuzzer POST {path} -> {response.status_code} without JSON")

        any_json = st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
            max_leaves=20,
        )
        for route, operations in document.get("paths", {}).items():
            operation = operations.get("post")
            if not operation:
                continue
            path = route.replace("{slug}", "acme")
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            bodies = st.one_of(
                self._by_schema(schema, components, st).map(lambda body: json.dumps(body).encode()),
                any_json.map(lambda body: json.dumps(body).encode()),
                st.binary(max_size=200),
            )
            quiet = settings(
                max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
            )
            quiet(given(bodies)(self._sender(post, path)))()

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

    def run(self) -> Findings:
        try:
            self.api_tokens()
            self.fuzz_api()
            self.walk()
            self.oversized()
            self.passwords()
        finally:
            for client in self.clients:  # the server's threads for kept-alive connections end too
                client.close()
        return self.findings


def run_drill(base_url: str, size: str = "small") -> tuple[Findings, dict]:
    started = time.monotonic()
    findings = Drill(base_url, size).run()
    return findings, findings.summary(time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--size", choices=("small", "full"), default="full")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_review.settings")
    import django

    django.setup()
    findings, summary = run_drill(args.base_url, args.size)
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
