"""Trust classes (issue 31, item 4): each memory's class from its provenance, a successor's the
least trusted of what it derives from, and a tenant's rules holding a class for a person before
any agent reads it; the class is on the memory page and in what the API returns."""

import pytest

from memory_review.audit import verification
from memory_review.audit.models import Transition
from memory_review.lifecycle import Actor
from memory_review.memories import holds, trust
from memory_review.memories.models import MemoryStatus, TrustRules
from memory_review.memories.services import event_record, memory_write
from tests.factories import make_memory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("source", "written_by", "expected"),
    [
        ("chat", "agent:bot", "person"), ("email", "agent:bot", "person"), ("ticket", "agent:bot", "person"),
        ("document", "agent:bot", "document"), ("crm", "agent:bot", "document"),
        ("agent", "agent:bot", "inferred"), ("tool", "agent:bot", "tool"),
        ("chat", "import:crm-sync", "import"), ("tool", "user:3", "person"),
    ],
)  # fmt: skip
def test_a_memory_is_classed_by_where_its_words_came_from(acme, source, written_by, expected):
    event = event_record(tenant=acme, source=source, text="The customer prefers email.")
    memory = memory_write(
        event=event, kind="fact", subject="contact", content="Prefers email.", written_by=written_by
    )
    assert memory.trust == expected


def test_a_successor_takes_the_least_trusted_class_of_what_it_derives_from_but_a_persons_rewrite_is_theirs(
    acme,
):
    scraped = event_record(tenant=acme, source="tool", text="Page says: refunds up to 500 EUR.")
    first = memory_write(
        event=scraped,
        kind="fact",
        subject="refund limit",
        content="Refunds up to 500 EUR.",
        written_by="agent:bot",
    )
    chat = event_record(tenant=acme, source="chat", text="Customer: the limit is 400 EUR now.")
    second = memory_write(
        event=chat, kind="fact", subject="refund limit", content="Refunds up to 400 EUR.",
        written_by="agent:bot", supersedes=first, actor=Actor.policy("v1"),
    )  # fmt: skip
    assert (first.trust, second.trust) == ("tool", "tool")  # laundering through a chat does not raise it
    note = event_record(tenant=acme, source="chat", text="Lead: checked, 400 EUR.")
    second.refresh_from_db()
    third = memory_write(
        event=note, kind="fact", subject="refund limit", content="Refunds up to 400 EUR.",
        written_by="user:3", supersedes=second, actor=Actor("user", "3"),
    )  # fmt: skip
    assert third.trust == "person"


def test_a_tenants_rules_hold_a_class_for_a_person_with_the_reason(acme, lead):
    holds.set_rules(acme, hold_classes=["tool", "import"], by=f"user:{lead.pk}")
    from_tool = make_memory(acme, source="tool", content="The warehouse ships on Fridays.")
    from_chat = make_memory(acme, source="chat", content="The warehouse ships on Fridays.")

    assert holds.hold_if_untrusted(from_tool) == [
        "it comes from tool output, which this tenant has a person check first"
    ]
    assert holds.hold_if_untrusted(from_chat) == []
    from_tool.refresh_from_db()
    from_chat.refresh_from_db()
    assert (from_tool.status, from_tool.flagged_for) == (MemoryStatus.NEEDS_REVIEW, "held")
    assert from_chat.status == MemoryStatus.ACTIVE
    assert "tool output" in Transition.objects.get(memory=from_tool, action="hold").reason
    assert verification.problem_in(acme) is None  # the rules are sealed


@pytest.mark.parametrize(
    ("classes", "message"),
    [
        (["rumour"], "unknown trust class rumour; the classes are person, document, inferred, tool, import"),
        (["person"], "a person's words cannot be held for their provenance"),
    ],
)
def test_rules_naming_a_class_we_cannot_hold_are_refused_and_nothing_is_written(acme, classes, message):
    with pytest.raises(holds.RulesRefused, match=message):
        holds.set_rules(acme, hold_classes=classes, by="user:1")
    assert not TrustRules.objects.exists()


def test_a_lead_sets_the_rules_on_the_health_page_and_the_class_shows_on_the_memory_page(
    client, acme, lead, reviewer
):
    client.force_login(lead)
    assert client.post("/t/acme/health/trust/", {"hold": ["tool", "inferred"]}).status_code == 302
    assert TrustRules.objects.get(tenant=acme).held == ["inferred", "tool"]
    assert client.post("/t/acme/health/trust/", {"hold": ["person"]}).status_code == 400
    body = client.get("/t/acme/health/").content.decode()
    assert "holds for a person what comes from an agent inferred it, tool output" in body
    memory = make_memory(acme, source="tool")
    assert "trust: tool output" in client.get(f"/t/acme/memories/{memory.pk}/").content.decode()
    client.force_login(reviewer)
    assert client.post("/t/acme/health/trust/", {"hold": []}).status_code == 403


def test_the_api_says_each_memorys_class(client, acme):
    from memory_review.tenancy.tokens import token_create

    _, secret = token_create(tenant=acme, name="bot")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    event = event_record(tenant=acme, source="crm", text="From the CRM: plan is Pro.")
    asked = {
        "source_event_id": event.pk,
        "kind": "fact",
        "subject": "plan",
        "content": "On Pro.",
        "written_by": "bot",
    }
    written = client.post("/api/v1/t/acme/memories", asked, content_type="application/json", **auth)
    assert written.status_code == 201 and written.json()["trust"] == "document"
    found = client.get("/api/v1/t/acme/memories", **auth).json()
    assert [m["trust"] for m in found["memories"]] == ["document"]


def test_the_classes_are_ordered_most_trusted_first():
    assert trust.lowest("person", "tool", None, "document") == "tool"
    assert trust.lowest("import", "person") == "import"


def test_the_migration_classes_every_memory_written_before_trust_classes(acme):
    import importlib

    from django.apps import apps

    from memory_review.memories.models import Memory

    classify = importlib.import_module("memory_review.memories.migrations.0018_trust_classes").classify
    made = {
        "person": make_memory(acme, source="email"),
        "tool": make_memory(acme, source="tool"),
        "document": make_memory(acme, source="crm"),
    }
    Memory.objects.filter(tenant=acme).update(trust=None)

    classify(apps, None)

    assert {name: Memory.objects.get(pk=m.pk).trust for name, m in made.items()} == {n: n for n in made}
