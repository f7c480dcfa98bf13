"""The demo's agent: what an agent developer would write against the API, and nothing more. It
talks to memory-review over HTTP with its token only, as a real agent does:

* it keeps a local cache of the tenant's memories in force: a snapshot (GET memories, every
  page), then the change feed from the snapshot's cursor, kept in step by long polls;
* it receives webhooks on loopback, checks each signature with the Standard Webhooks reference
  verifier, and applies the change at once (the feed catches anything a webhook missed);
* every so often it "answers" a customer: reads what is in force for them (GET memories) and
  reports what the answer used (POST receipts).

Each change it applies is logged with how long after the decision it heard it."""

import json
import random
import socket
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from standardwebhooks import Webhook, WebhookVerificationError

LIVE = {"active", "needs_review", "frozen"}
WEBHOOK_PORT_OFFSET = 766  # the web server's port + this (8766 beside 8000), when it is free
AGENT_ID = "support-bot"  # who the demo's agent is, in the scope it reads for an answer
ANSWERS = [
    "Where is my order?",
    "Can I still get a refund?",
    "Which plan am I on?",
    "When is support open?",
    "Where do you ship to?",
]


def webhook_port(web_port: int) -> int:
    """Where the agent hears webhooks on loopback: the web server's port + 766 when it is free,
    another free one when not, so two demos on one machine (PORT=8000 and PORT=8001, or two
    clones) never take each other's. run_demo lets this port in (WEBHOOK_ALLOW_NETWORKS)."""
    return loopback_port(web_port + WEBHOOK_PORT_OFFSET)


def loopback_port(wanted: int) -> int:
    """`wanted` on 127.0.0.1 when it is free, another free port when it is not."""
    for port in (wanted, 0) if wanted <= 65535 else (0,):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise OSError("no free port on 127.0.0.1")


def held(memory_id: int, kind: str, row: dict) -> dict:
    """What the cache keeps of a memory, in one shape whether it came from GET memories (`id`,
    `kind`) or from a change (`memory_id`, `memory_kind`)."""
    keep = ("version", "subject", "content", "scope", "status", "valid_until")
    return {"id": memory_id, "kind": kind, **{name: row[name] for name in keep}}


def _ago(at: str) -> str:
    seconds = (datetime.now(UTC) - datetime.fromisoformat(at)).total_seconds()
    return f"{seconds:.1f} s after the decision" if seconds < 120 else f"decided {at[:16].replace('T', ' ')}"


class Refused(Exception):
    """memory-review answered, but not with what was asked for (a 429 says when to come back)."""

    def __init__(self, answer: httpx.Response):
        super().__init__(f"{answer.status_code} {answer.text[:200]}")
        self.retry_after = float(answer.headers.get("Retry-After") or 2)


class DemoAgent:
    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        tenant: str,
        state_file: Path,
        write,
        answer_every: float,
        wait: float = 25,
    ):
        self.api = f"{base_url.rstrip('/')}/api/v1/t/{tenant}"
        self.http = httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=40, trust_env=False)
        self.state_file, self.write, self.answer_every, self.wait = state_file, write, answer_every, wait
        self.cache: dict[int, dict] = {}  # memory id -> held(), for those in force
        self.seen: dict[int, int] = {}  # memory id -> the feed position of the latest change applied
        self.cursor = self.snapshot_at = 0  # the snapshot holds every change up to snapshot_at
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.answered = 0

    def log(self, message: str) -> None:
        self.write(f"[agent {datetime.now():%H:%M:%S}] {message}")

    # -- the cache -------------------------------------------------------------------------

    def apply(self, change: dict, *, via: str) -> None:
        """One change from the feed or a webhook; older than what the cache holds (or than the
        snapshot, for a webhook that was late): ignored."""
        pk = change["memory_id"]
        with self.lock:
            before = self.cache.get(pk)
            if change["seq"] <= self.seen.get(pk, self.snapshot_at):  # heard already, by the other way
                self.log(f"{via} brought change #{change['seq']} too ({_ago(change['at'])}): already applied")
                return
            self.seen[pk] = change["seq"]
            live = change["status"] in LIVE and not change["tombstone"]
            who = change.get("by_name") or change.get("by") or "someone"
            scope = change["scope"].get("user_id") or "everyone"
            if live:
                self.cache[pk] = held(pk, change["memory_kind"], change)
                verb = "cached" if before is None else f"updated ({change['kind']})"
                self.log(
                    f'{verb} "{change["subject"]}" (memory {pk}, {scope}) via {via}, {_ago(change["at"])}'
                )
            elif before is not None:
                del self.cache[pk]
                self.log(
                    f'dropped "{change["subject"]}" (memory {pk}, {scope}): {change["kind"]} by {who}; '
                    f"heard via {via}, {_ago(change['at'])}"
                )

    def catch_up(self) -> None:
        """Build the cache from a snapshot of what is in force (every page), and start the feed at
        the first page's cursor: what changed while it paged comes again, and applies the same."""
        after, cursor = 0, None
        while after is not None:
            page = self.read("memories", after=after, limit=500)
            cursor = page["cursor"] if cursor is None else cursor
            for memory in page["memories"]:
                self.cache[memory["id"]] = held(memory["id"], memory["kind"], memory)
            after = page["next_after"]
        self.cursor = self.snapshot_at = cursor
        self.log(
            f"cached {len(self.cache)} memories in force from a snapshot; following the feed from {cursor}"
        )

    def follow(self) -> None:
        while not self.stopping.is_set():
            try:
                page = self.read("changes", after=self.cursor, wait=self.wait, limit=500)
            except (httpx.HTTPError, Refused) as exc:
                self.log(f"the feed did not answer ({exc}); trying again")
                self.stopping.wait(getattr(exc, "retry_after", 2))
                continue
            for change in page["changes"]:
                self.apply(change, via="the feed")
            self.cursor = page["cursor"]

    def read(self, what: str, **params) -> dict:
        answer = self.http.get(f"{self.api}/{what}", params=params)
        if answer.status_code != 200:
            raise Refused(answer)
        return answer.json()

    # -- answers and receipts --------------------------------------------------------------

    def answer(self) -> None:
        with self.lock:
            customers = sorted({c["scope"]["user_id"] for c in self.cache.values() if c["scope"]["user_id"]})
        if not customers:
            return
        customer = random.choice(customers)
        scope = {"user_id": customer, "agent_id": AGENT_ID, "thread_id": f"chat-{customer}"}
        found = self.read("memories", **scope)["memories"]  # what applies in this very conversation
        used = [m for m in found if m["standing"] == "in_force"][:3]
        if not used:
            return
        self.answered += 1
        response_id = f"demo-answer-{int(time.time())}-{self.answered}"
        receipt = {
            "response_id": response_id,
            "used_at": datetime.now(UTC).isoformat(),
            "scope": scope,
            "memories": [{"id": m["id"], "version": m["version"]} for m in used],
        }
        answer = self.http.post(f"{self.api}/receipts", json={"responses": [receipt]})
        subjects = ", ".join(f'"{m["subject"]}"' for m in used)
        self.log(
            f'answered {customer} ("{random.choice(ANSWERS)}") using {subjects}: receipt {answer.status_code}'
        )

    def answer_now_and_then(self) -> None:
        while not self.stopping.wait(self.answer_every):
            try:
                self.answer()
            except (httpx.HTTPError, Refused) as exc:
                self.log(f"could not answer ({exc})")

    # -- webhooks --------------------------------------------------------------------------

    def listen(self, port: int) -> None:
        """Receive webhooks on loopback; register (or reuse) the endpoint that points here."""
        agent = self
        secret_box: dict[str, Webhook] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    event = secret_box["hook"].verify(body, dict(self.headers))
                except (KeyError, WebhookVerificationError) as exc:
                    agent.log(f"refused a webhook whose signature did not verify ({exc})")
                    self.send_response(401)
                    self.end_headers()
                    return
                self.send_response(204)
                self.end_headers()
                agent.apply(event["data"], via=f"a webhook ({self.headers['webhook-id']})")

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/webhooks/memory-review"
        secret_box["hook"] = Webhook(self._endpoint_secret(url))
        self.log(f"receiving webhooks at {url} (signatures checked with the Standard Webhooks verifier)")

    def _endpoint_secret(self, url: str) -> str:
        saved = json.loads(self.state_file.read_text()) if self.state_file.is_file() else {}
        if saved.get("url") == url:
            found = self.http.get(f"{self.api}/webhooks/{saved['id']}")
            if found.status_code == 200 and found.json()["state"] != "removed":
                if found.json()["state"] == "disabled":
                    self.http.patch(f"{self.api}/webhooks/{saved['id']}", json={"enabled": True})
                return saved["secret"]
        if saved.get("id"):
            self.http.delete(f"{self.api}/webhooks/{saved['id']}")
        made = self.http.post(
            f"{self.api}/webhooks", json={"url": url, "description": "the demo agent's cache (make demo)"}
        )
        if made.status_code != 201:
            raise RuntimeError(f"could not register the webhook: {made.status_code} {made.text}")
        body = made.json()
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps({"id": body["id"], "url": url, "secret": body["secret"]}))
        self.state_file.chmod(0o600)
        return body["secret"]

    # -- the whole loop --------------------------------------------------------------------

    def run(self, *, webhook_port: int | None) -> None:
        self.catch_up()  # a refusal here (a wrong token) stops the agent, saying why
        if webhook_port is not None:
            try:
                self.listen(webhook_port)
            except (OSError, RuntimeError) as exc:
                self.log(f"no webhooks ({exc}); the change feed alone keeps the cache in step")
        threading.Thread(target=self.answer_now_and_then, daemon=True).start()
        self.follow()
