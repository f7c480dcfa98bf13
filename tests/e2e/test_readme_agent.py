"""The README's agent, run as written (issue 28): the Python and shell blocks of "The agents' API"
are taken from README.md and run against a live server holding the demo's data, with a token in
var/api-token as `make demo` writes it. The Python list-and-watch runs as a program of its own
(`python -c`, the README's two blocks in order); the webhook check is run beside the list, in
this process, on a real delivery; the curl lines run under bash. Only the webhook registration is
left out: its example URL is on the internet, which a webhook must be and these tests cannot reach.

PostgreSQL only, as the other live-server tests (tests/e2e/test_browser.py says why)."""

import ast
import json
import os
import re
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.models import Q
from django.utils import timezone
from standardwebhooks import Webhook

from memory_review.agents import feed, webhooks
from memory_review.assessments.invalidation import run_invalidation
from memory_review.lifecycle import Actor
from memory_review.memories.models import LIVE_STATUSES, Memory
from memory_review.memories.services import memory_forget
from memory_review.tenancy.models import Tenant
from memory_review.tenancy.tokens import token_create
from tests.factories import make_jev, make_memory
from tests.webhook_receiver import Receiver

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    # `make demo`'s ids (its README names memory 1): seeded afresh, from sequences that start at 1.
    pytest.mark.django_db(transaction=True, reset_sequences=True),
]

CUSTOMER = "cust-4100"  # the README's customer: Aisha Bello


def section() -> str:
    text = (Path(settings.BASE_DIR) / "README.md").read_text()
    return text[text.index("## The agents' API\n") : text.index("## How an event is judged")]


def block(language: str, holding: str) -> str:
    """The one fenced block of `language` in the agents' section that holds `holding`."""
    found = [
        body
        for body in re.findall(rf"^```{language}\n(.*?)^```", section(), flags=re.S | re.M)
        if holding in body
    ]
    assert len(found) == 1, f"{len(found)} {language} blocks in the README's agents' section hold {holding!r}"
    return found[0]


class Running:
    """A program the README shows, run as a reader would, its output kept line by line."""

    def __init__(self, command: list[str], *, cwd: Path, port: int):
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}  # loopback, directly
        self.lines: list[str] = []
        env["PORT"] = str(port)
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, seconds: float = 30) -> str:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            found = [line for line in self.lines if text in line]
            if found:
                return found[0]
            if self.process.poll() is not None and not any(text in line for line in self.lines):
                break
            time.sleep(0.1)
        raise AssertionError(f"no line with {text!r}; the program said:\n" + "\n".join(self.lines))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def acme(db) -> Tenant:
    """The demo as `make demo` seeds it (history and all)."""
    call_command("seed_demo", verbosity=0)
    return Tenant.objects.get(slug="acme")


@pytest.fixture
def checkout(tmp_path, acme) -> Path:
    """A directory as `make demo` leaves the repository: the agents' token in var/api-token."""
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "api-token").write_text(token_create(tenant=acme, name="demo-agent")[1] + "\n")
    return tmp_path


def port(live_server) -> int:
    return int(live_server.url.rsplit(":", 1)[1])


def in_force_for_the_customer(acme) -> list[int]:
    """What the README says `?user_id=cust-4100` gives, read from the rows themselves."""
    now = timezone.now()
    return sorted(
        Memory.objects.filter(tenant=acme, status__in=LIVE_STATUSES, deleted_at__isnull=True)
        .filter(Q(user_id__isnull=True) | Q(user_id=CUSTOMER), valid_from__lte=now)
        .filter(Q(valid_until__isnull=True) | Q(valid_until__gt=now))
        .values_list("pk", flat=True)
    )


def forget(memory: Memory) -> None:
    memory_forget(memory=memory, actor=Actor("user", "1"), reason="asked to", seen_version=memory.row_version)


def test_the_readme_agent_lists_its_customers_memories_then_hears_what_changes_after(
    live_server, acme, checkout
):
    addresses = Memory.objects.get(pk=1)
    program = block("python", '"/memories"') + "\n\n" + block("python", '"/changes"')
    agent = Running([sys.executable, "-c", program], cwd=checkout, port=port(live_server))
    try:
        listed = agent.wait_for("memories in force for")
        held = ast.literal_eval(listed.rsplit(": ", 1)[1])
        cursor = int(re.search(r"at cursor (\d+)", listed)[1])
        expected = in_force_for_the_customer(acme)

        someone_else = make_memory(acme, user_id="cust-9054", subject="someone else's")
        theirs = make_memory(acme, user_id=CUSTOMER, agent_id="support-bot", thread_id="chat-7")
        forget(addresses)
        gone = agent.wait_for(f"forgotten: memory {addresses.pk} is deleted")
        agent.wait_for("caught up at cursor")
    finally:
        agent.stop()

    assert (addresses.subject, addresses.user_id, addresses.agent_id) == (
        "Aisha Bello: delivery address",
        CUSTOMER,
        "support-bot",
    )  # the README names it as the customer's agent-scoped memory
    assert held == expected and addresses.pk in held
    assert cursor == feed.head(acme) - 3  # the feed started where the snapshot stood, not at 0
    assert f"created: memory {theirs.pk} is active" in "\n".join(agent.lines)
    assert f"memory {someone_else.pk} " not in "\n".join(agent.lines)  # another customer's: not kept
    assert gone == f"#{cursor + 3} forgotten: memory {addresses.pk} is deleted"


def test_the_readme_webhook_check_takes_a_real_delivery_and_refuses_an_altered_one(
    live_server, acme, checkout, monkeypatch
):
    monkeypatch.setattr(settings, "WEBHOOK_ALLOW_NETWORKS", ["127.0.0.0/8"])  # the receiver is on loopback
    receiver = Receiver()
    endpoint, secret = webhooks.endpoint_create(acme, url=receiver.url, by="user:1")
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("PORT", str(port(live_server)))
    monkeypatch.setenv("MEMORY_REVIEW_WEBHOOK_SECRET", secret)
    agent: dict = {}
    exec(block("python", '"/memories"'), agent)  # the list, against the live server
    exec(block("python", "webhook-signature"), agent)
    addresses = Memory.objects.get(pk=1)
    try:
        forget(addresses)
        webhooks.fan_out(acme.pk, send=False)
        for pk in webhooks.due(acme.pk, timezone.now() + timedelta(minutes=1)):
            webhooks.send(acme.pk, pk)
    finally:
        receiver.stop()
    delivery = next(r for r in receiver.received if json.loads(r.body)["data"]["memory_id"] == addresses.pk)
    body, headers = delivery.body, delivery.headers

    assert addresses.pk in agent["cache"]
    for altered_body, altered_headers in [
        (body.replace(b'"forgotten"', b'"created"'), headers),
        (body, {**headers, "webhook-id": "msg_someone_elses"}),
        (body, {**headers, "webhook-timestamp": str(int(time.time()) - 3600)}),
    ]:
        with pytest.raises(ValueError):
            agent["verified"](altered_body, altered_headers)
    assert Webhook(secret).verify(body, headers) == agent["verified"](body, headers)  # the reference agrees
    agent["receive"](body, headers)
    agent["receive"](body, headers)  # a retry: dropped
    assert addresses.pk not in agent["cache"]
    assert agent["seen_ids"] == {headers["webhook-id"]}


def test_the_readme_curl_calls_answer_and_an_address_change_keeps_the_new_address(
    live_server, acme, checkout, standin
):
    script = block("sh", "$API/receipts") + "\n" + block("sh", "remember_successor")
    calls = Running(["bash", "-c", "set -e\n" + script], cwd=checkout, port=port(live_server))
    try:
        snapshot = json.loads(calls.wait_for('"cursor"'))
        tenant_wide = Memory.objects.filter(tenant=acme, user_id__isnull=True, status="active").first()
        forget(tenant_wide)  # the long poll's answer
        changes = json.loads(calls.wait_for('"changes"'))
        receipt = json.loads(calls.wait_for('"recorded"'))
        accepted = json.loads(calls.wait_for('"assessment_id"'))
    finally:
        calls.stop()
    run_invalidation(accepted["assessment_id"], jev=make_jev(standin.url))  # what the worker does
    after = feed.read(acme, snapshot["cursor"] + 1).changes

    assert 1 in [m["id"] for m in snapshot["memories"]]
    assert [(c["seq"], c["memory_id"], c["kind"]) for c in changes["changes"]] == [
        (snapshot["cursor"] + 1, tenant_wide.pk, "forgotten")
    ]
    assert receipt == {"recorded": 1, "already_recorded": 0}
    moved, rewritten = after
    assert (moved.memory_id, moved.kind, moved.transition.to_status) == (1, "moved", "superseded")
    successor = Memory.objects.get(pk=1).superseded_by
    assert (rewritten.memory_id, rewritten.kind) == (successor.pk, "rewritten")
    assert successor.content == "Aisha Bello has moved: her deliveries now go to 14 Park Row, York YO1 6GA."
    assert (successor.status, successor.version, successor.user_id, successor.agent_id) == (
        "active",
        2,
        CUSTOMER,
        "support-bot",
    )
