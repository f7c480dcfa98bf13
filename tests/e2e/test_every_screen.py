"""Every screen each demo role reaches by clicking, in Chromium: axe-core (the copy
axe-selenium-python ships) finds no serious or critical violation at 1440 x 900, and at a phone's
390 px no page scrolls sideways. One page of each kind (the same path with other ids or cursors
is the same screen), so the walk stays a couple of minutes for five roles.

PostgreSQL only, like the other browser tests: a live server needs committed rows."""

import re
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from django.db import connection

from tests.e2e.conftest import log_in

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL (make test's second pass)"
    ),
    pytest.mark.django_db(transaction=True),
]

ROLES = ("acme-lead", "acme-reviewer", "acme-auditor", "acme-labeler", "admin")
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
AXE_RUN = (
    "var done = arguments[arguments.length - 1];"
    "axe.run().then(function (r) { done(r.violations.filter(function (v) {"
    "  return v.impact === 'serious' || v.impact === 'critical'; }).map(function (v) {"
    "  return v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(function (n) {"
    "    return n.target.join(' '); }).join(', '); })); });"
)


def axe_script() -> str:
    import axe_selenium_python

    return (
        Path(axe_selenium_python.__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
    ).read_text()


def kind_of(path: str) -> str:
    return re.sub(r"/\d+/", "/N/", urlsplit(path).path)


def screens(browser, live_server):
    """(path, links) of one page of each kind reachable from the tenant's home."""
    seen, todo = set(), ["/t/acme/"]
    while todo:
        path = todo.pop(0)
        if kind_of(path) in seen:
            continue
        seen.add(kind_of(path))
        browser.get(live_server.url + path)
        yield path
        for href in browser.execute_script(
            "return Array.from(document.querySelectorAll('a[href]')).map(function (a) {"
            " return a.getAttribute('href'); })"
        ):
            target = urlsplit(urljoin(path, href))
            if (
                not target.netloc
                and target.path.startswith("/t/acme/")
                and not target.path.endswith((".csv", ".jsonl", "/download/"))
            ):
                todo.append(target.path + (f"?{target.query}" if target.query else ""))


def with_a_webhook_log() -> None:
    """An endpoint with a delivery log (tried, failed, delivered), so the admin's walk reaches it."""
    from django.utils import timezone

    from memory_review.agents import webhooks
    from memory_review.agents.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
    from memory_review.tenancy.models import Tenant

    acme = Tenant.objects.get(slug="acme")
    endpoint = WebhookEndpoint.objects.create(
        tenant=acme, url="https://hooks.example/acme", secret=webhooks.new_secret(), created_by="user:1",
        cursor=webhooks.feed.head(acme) - 3,
    )  # fmt: skip
    webhooks.fan_out(acme.pk, send=False)
    first = WebhookDelivery.objects.filter(endpoint=endpoint).order_by("pk").first()
    for number, code in ((1, 502), (2, 200)):
        WebhookAttempt.objects.create(
            tenant=acme, delivery=first, number=number, started_at=timezone.now(), latency_ms=40, code=code
        )
    WebhookDelivery.objects.filter(pk=first.pk).update(state="delivered", attempts=2, last_code=200)


def with_an_export() -> None:
    """An export a worker is writing, so the walk reaches the exports list and a job's page."""
    from memory_review.jobfiles.models import JobFile
    from memory_review.tenancy.models import Tenant

    JobFile.objects.create(
        tenant=Tenant.objects.get(slug="acme"), kind="audit.jsonl", params={"action": "flag"},
        filename="audit-acme.jsonl", requested_by="user:1", state="running", rows=1200, expected=5000,
    )  # fmt: skip


@pytest.mark.parametrize("username", ROLES)
def test_every_screen_passes_axe_and_fits_a_phone(browser, live_server, demo, username):
    if username == "admin":
        with_a_webhook_log()
    if username == "acme-auditor":
        with_an_export()
    log_in(browser, live_server, username)
    browser.set_script_timeout(30)
    axe = axe_script()

    violations, sideways, walked = [], [], 0
    for path in screens(browser, live_server):
        walked += 1
        browser.execute_script(axe)
        violations += [f"{path}: {found}" for found in browser.execute_async_script(AXE_RUN)]
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
        time.sleep(0.05)  # one layout at the new width
        width = browser.execute_script("return document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            sideways.append(f"{path}: {width} px wide")
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    assert walked >= (4 if username == "acme-labeler" else 15)  # a labeler works blind: few pages
    assert violations == []
    assert sideways == []
