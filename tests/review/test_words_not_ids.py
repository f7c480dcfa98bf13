"""Names, not ids (issue 15, item 4): every page a person reaches by clicking from their tenant's
home, as every demo role, reads in words. No visible text holds an actor string (`user:3`,
`policy:v1`), a memory or candidate named by its number in prose (the id belongs in a link), or
a status, disposition or vote in snake_case. Ids may stay in links, code and the audit's hashes."""

import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.test import Client

from tests.demo_data import seed_demo

pytestmark = pytest.mark.django_db

ROLES = ("acme-lead", "acme-reviewer", "acme-auditor", "acme-labeler", "admin")
PAGES_PER_ROLE = 150
# What a person should never read on a page.
FORBIDDEN = {
    "an actor string": re.compile(r"\b(?:user|policy|system|agent|job|token):[\w.-]+"),
    "a memory, candidate, event or verdict by its number": re.compile(
        r"\b(?:memory|memories|candidate|event|verdict|item) #?\d+\b|\b[vc]\d{2,}\b"
    ),
    "a status, disposition or vote in snake_case": re.compile(
        r"\b(?:needs_review|no_source|still_true|scope_fits|flagged_for|row_version|p_true|out_of_scope)\b"
    ),
}
# Text that is not prose: code, keys, the audit's hashes, pre-formatted exports, form values.
NOT_PROSE = {"code", "kbd", "pre", "script", "style", "textarea", "option", "select", "title"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.text, self.links, self.skipping = [], [], 0

    def handle_starttag(self, tag, attrs):
        if tag in NOT_PROSE:
            self.skipping += 1
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.links.append(href)

    def handle_endtag(self, tag):
        if tag in NOT_PROSE and self.skipping:
            self.skipping -= 1

    def handle_data(self, data):
        if not self.skipping:
            self.text.append(data)


def walk(client: Client, start: str):
    """Every page reachable by links from `start`, in this tenant, GET only (exports excluded)."""
    seen, todo = set(), [start]
    while todo and len(seen) < PAGES_PER_ROLE:
        path = todo.pop(0)
        if path in seen:
            continue
        seen.add(path)
        response = client.get(path)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        parsed = Page()
        parsed.feed(response.content.decode())
        yield path, " ".join(parsed.text)
        for href in parsed.links:
            target = urlsplit(urljoin(path, href))
            if (
                target.netloc
                or not target.path.startswith("/t/acme/")
                or target.path.endswith((".csv", ".jsonl"))
            ):
                continue
            todo.append(target.path + (f"?{target.query}" if target.query else ""))


@pytest.fixture
def demo(db):
    seed_demo()


@pytest.mark.parametrize("username", ROLES)
def test_every_page_a_person_clicks_to_reads_in_words(demo, username):
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))

    found = []
    walked = 0
    for path, text in walk(client, "/t/acme/"):
        walked += 1
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(text):
                context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
                found.append(f"{path}: {what}: …{context}…")
    assert walked >= (5 if username == "acme-labeler" else 40)  # a labeler works blind: few pages
    assert found == [], "\n".join(found[:60])
