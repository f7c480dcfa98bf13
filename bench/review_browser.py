"""A reviewer's seconds per decision and the memory page's first paint, through Chromium.

    .venv/bin/python bench/review_browser.py [--decisions 20] [--cold-loads 5] [--postgres URL]

Seeds a throwaway database with the demo and enough flagged items for both runs, serves it with
`runserver` (DEBUG off, this checkout, loopback), and drives a headless Chromium at 1440 x 900
as the demo's lead:

* the review flow: "Review these", then one key a decision (a and f in turn), timed from the key
  to the next item on screen;
* beside it, the queue-and-page path as it was before the flow (and is still there): claim the
  first row, open it, press Approve, wait for the answer, back to the queue;
* the memory page's cold load: a fresh browser each time, its cache empty, the session already
  logged in; navigation timing (first byte, DOMContentLoaded, load), bytes transferred and the
  number of resources.

Prints the median and p95 of each, the ratio of the two paths, and last one JSON object.
Needs Debian's chromium and chromium-driver (what `.ci/run` installs).
"""

import argparse
import io
import json
import os
import statistics
import tempfile
import time

import django
import throwaway  # noqa: E402, I001  (before Django: it chooses the database)

# The bytes a browser fetches are production's: hashed, compressed files (bench/settings.py).
os.environ["BENCH_STATIC_ROOT"] = tempfile.mkdtemp(prefix="bench-static-")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from memory_review.assessments.models import PolicyVersion  # noqa: E402
from memory_review.memories.models import Memory  # noqa: E402
from memory_review.tenancy.models import Tenant  # noqa: E402
from tests import chromium  # noqa: E402  (Chromium as the browser tests start it)
from tests.factories import flagged  # noqa: E402  (the flag as the pipeline writes it)

WIDTH, HEIGHT = 1440, 900


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def seed(items: int) -> None:
    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    call_command("seed_demo", "--no-history", verbosity=0, stdout=io.StringIO())
    acme = Tenant.objects.get(slug="acme")
    policy = PolicyVersion.objects.for_tenant(acme).active()
    for n in range(items):
        flagged(acme, policy, still_true=0.4 + (n % 10) / 50, subject=f"carrier cut-off for lane {n}")
    connection.close()  # the server process has the file (or database) to itself from here


def browser(*, cache: bool = True):
    if not (chromium.CHROMIUM and chromium.DRIVER):
        raise SystemExit("needs chromium and chromium-driver (apt-get install chromium chromium-driver)")
    d = chromium.start(WIDTH, HEIGHT + 100, cache=cache)
    d.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )
    return d


def log_in(d, base: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    d.get(f"{base}/accounts/login/")
    d.find_element(By.NAME, "username").send_keys("acme-lead")
    d.find_element(By.NAME, "password").send_keys("demo")
    d.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(d, 10).until(lambda driver: "/accounts/login/" not in driver.current_url)


def wait(d, test, timeout: float = 15):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = test(d)
        except (NoSuchElementException, StaleElementReferenceException):
            found = None
        if found:
            return found
        time.sleep(0.01)
    raise SystemExit(f"gave up waiting after {timeout} s on {d.current_url}")


# How long the bench's reviewer looks at an item before its key: past the 200 ms floor under which
# keys.js and the server refuse a decision as one nobody could have seen (README, the flow). The
# figures time the key to the next item, not this.
READ_S = 0.25


def flow(d, base: str, decisions: int) -> tuple[list[float], int]:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    def shown(driver) -> str:
        return driver.find_element(By.CSS_SELECTOR, "h1.flow-title a").text

    d.get(f"{base}/t/acme/review/")
    d.find_element(By.CSS_SELECTOR, "[data-review-these]").click()
    current, times, actions = wait(d, shown), [], 0
    for n in range(decisions):
        time.sleep(READ_S)  # the reviewer sees the item (keys.js drops a key on what is not yet seen)
        started = time.perf_counter()
        ActionChains(d).send_keys("a" if n % 2 == 0 else "f").perform()
        actions += 1
        current = wait(d, lambda driver, before=current: (now := shown(driver)) != before and now)
        times.append(time.perf_counter() - started)
    return times, actions


def queue_and_page(d, base: str, decisions: int) -> tuple[list[float], int]:
    from selenium.webdriver.common.by import By

    d.get(f"{base}/t/acme/review/")
    times, actions = [], 0
    for _ in range(decisions):
        started = time.perf_counter()
        row = d.find_element(By.CSS_SELECTOR, "table.queue tbody tr[data-row]")
        pk = row.get_attribute("id").removeprefix("memory-")
        row.find_element(By.CSS_SELECTOR, "button[data-key=c]").click()
        wait(d, lambda driver, pk=pk: "yours" in driver.find_element(By.ID, f"claim-{pk}").text)
        d.find_element(By.CSS_SELECTOR, f"#memory-{pk} td.subject a").click()
        wait(d, lambda driver: driver.find_element(By.CSS_SELECTOR, "#decide button[value=approve]")).click()
        wait(
            d,
            lambda driver: "approved" in driver.find_element(By.CSS_SELECTOR, "#memory-state .success").text,
        )
        d.find_element(By.LINK_TEXT, "Review queue").click()
        actions += 4  # claim, open, approve, back to the queue
        wait(
            d,
            lambda driver, pk=pk: (
                not driver.find_elements(By.ID, f"memory-{pk}") and "/review/" in driver.current_url
            ),
        )
        times.append(time.perf_counter() - started)
    return times, actions


def cold_loads(base: str, path: str, runs: int) -> list[dict]:
    out = []
    for _ in range(runs):
        d = browser(cache=False)
        try:
            log_in(d, base)
            d.execute_cdp_cmd("Network.enable", {})
            d.execute_cdp_cmd("Network.clearBrowserCache", {})
            d.get(base + path)
            wait(d, lambda driver: driver.execute_script("return document.readyState") == "complete")
            first_byte, ready, loaded, size, resources = d.execute_script(
                "const n = performance.getEntriesByType('navigation')[0];"
                "const r = performance.getEntriesByType('resource');"
                "return [n.responseStart, n.domContentLoadedEventEnd, n.loadEventEnd,"
                " r.reduce((sum, e) => sum + (e.transferSize || 0), n.transferSize || 0), r.length];"
            )
            out.append(
                {
                    "first_byte_ms": first_byte,
                    "ready_ms": ready,
                    "load_ms": loaded,
                    "bytes": size,
                    "resources": resources,
                }
            )
        finally:
            d.quit()
    return out


def summary(times: list[float]) -> dict:
    return {
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(percentile(times, 95), 3),
        "n": len(times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument("--cold-loads", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL (a throwaway database on it)")
    args = parser.parse_args()

    seed(2 * args.decisions + 5)
    acme = Tenant.objects.get(slug="acme")
    heaviest = max(Memory.objects.for_tenant(acme), key=lambda m: m.verdicts.count())
    connection.close()
    base, server = throwaway.serve()
    try:
        d = browser()
        try:
            log_in(d, base)
            in_flow, flow_actions = flow(d, base, args.decisions)
            by_page, page_actions = queue_and_page(d, base, args.decisions)
        finally:
            d.quit()
        cold = cold_loads(base, f"/t/acme/memories/{heaviest.pk}/", args.cold_loads)
    finally:
        server.terminate()
        server.wait()
        throwaway.drop()

    result = {
        "backend": connection.vendor,
        "flow": {**summary(in_flow), "actions_per_decision": flow_actions / args.decisions},
        "queue_and_page": {**summary(by_page), "actions_per_decision": page_actions / args.decisions},
        "ratio": round(statistics.median(by_page) / statistics.median(in_flow), 1),
        "memory_page_cold": {key: statistics.median(run[key] for run in cold) for key in cold[0]},
        "memory_page_cold_p95_load_ms": percentile([run["load_ms"] for run in cold], 95),
    }
    f, q, c = result["flow"], result["queue_and_page"], result["memory_page_cold"]
    print(f"seconds a decision ({args.decisions} each, {connection.vendor}):")
    print(
        f"  review flow                 median {f['median_s']:.2f} s   p95 {f['p95_s']:.2f} s   "
        f"{f['actions_per_decision']:.0f} key a decision"
    )
    print(
        f"  queue and page (before)     median {q['median_s']:.2f} s   p95 {q['p95_s']:.2f} s   "
        f"{q['actions_per_decision']:.0f} clicks a decision"
    )
    print("  (the browser's and server's time alone: a person adds their reading and reaching)")
    print(f"  the queue-and-page path takes {result['ratio']}x the flow's time")
    print(
        f"memory page, cold, median of {args.cold_loads}: first byte {c['first_byte_ms']:.0f} ms, "
        f"DOMContentLoaded {c['ready_ms']:.0f} ms, load {c['load_ms']:.0f} ms "
        f"(p95 {result['memory_page_cold_p95_load_ms']:.0f} ms), {c['bytes'] / 1024:.0f} KB in "
        f"{c['resources']:.0f} resources and the page"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
