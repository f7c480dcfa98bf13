"""Crafted input gets a 400 naming the parameter, never a 500, and nothing is written (issue 14,
item 8): the six inputs that once crashed, the shared parser's edges (memory_review/params.py,
Oracle's limits among them), and the attack drill's crafted values at every parameter every view
reads, in process on SQLite, where an integer past 64 bits cannot even be asked about."""

import base64
import json
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import QueryDict
from django.test import RequestFactory

from memory_review import params
from memory_review.calibration.models import ReplaySet
from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.models import Membership
from memory_review.tenancy.tokens import token_create
from tests.demo_data import seed_demo
from tests.factories import flagged, make_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_LINK = "[" * 2_000 + "]" * 2_000  # past Python's recursion limit, short enough for a page link
EXTREMES = ["9999-12-31T23:59-23:00", "0001-01-01T00:00+05:00"]


def cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def refused(response, name: str) -> bool:
    """A 400 whose page names the parameter."""
    return response.status_code == 400 and f"{name}: " in response.content.decode()


# -- the six inputs that were 500s -----------------------------------------------------------------


@pytest.mark.parametrize("link", ["after", "before"])
def test_a_page_link_of_deep_nesting_is_a_400_naming_it_on_every_paged_list(client, acme, lead, policy, link):
    memory = flagged(acme, policy)
    client.force_login(lead)
    for path in (
        "/t/acme/review/",
        "/t/acme/memories/",
        "/t/acme/audit/",
        "/t/acme/assessments/",
        "/t/acme/promotions/",
        f"/t/acme/memories/{memory.pk}/",
    ):
        if link == "before" and path.endswith(f"/{memory.pk}/"):
            continue  # a memory's votes page forwards only
        response = client.get(path, {link: cursor(DEEP_LINK)})
        assert refused(response, link), path
        assert "this page link is damaged" in response.content.decode()


def test_a_memory_id_past_64_bits_on_the_audit_page_is_a_400_naming_it(client, acme, lead):
    make_memory(acme)
    client.force_login(lead)

    response = client.get("/t/acme/audit/", {"memory": str(2**64)})

    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 9223372036854775807" in response.content.decode()
    assert "memory" in response.context["filters"].errors


@pytest.mark.parametrize("moment", EXTREMES)
def test_an_as_of_time_that_leaves_the_calendar_in_utc_is_a_400_naming_it(client, acme, lead, moment):
    memory = make_memory(acme)
    client.force_login(lead)

    response = client.get(f"/t/acme/memories/{memory.pk}/", {"as_of": moment})

    assert refused(response, "as_of")
    assert "once its UTC offset is applied" in response.content.decode()


@pytest.mark.parametrize("moment", EXTREMES)
def test_a_since_time_that_leaves_the_calendar_in_utc_is_a_400_naming_it(client, acme, lead, policy, moment):
    kept = flagged(acme, policy)
    client.force_login(lead)

    response = client.get("/t/acme/review/changes/", {"shown": kept.pk, "since": moment})

    assert refused(response, "since")


def test_a_replay_set_line_of_100000_nested_arrays_is_a_400_naming_the_line_and_keeps_nothing(
    client, acme, labeler
):
    client.force_login(labeler)
    upload = SimpleUploadedFile("deep.jsonl", b'{"id": "c1"}\n' + DEEP.encode() + b"\n")

    response = client.post("/t/acme/calibration/import/", {"file": upload})

    assert response.status_code == 400
    assert "deep.jsonl line 2: invalid JSON (nested deeper than 32 levels)" in response.content.decode()
    assert not ReplaySet.objects.exists()


def test_calibrate_names_the_line_of_100000_nested_arrays(tmp_path):
    replay_set = tmp_path / "deep.jsonl"
    replay_set.write_text(DEEP + "\n")

    with pytest.raises(
        CommandError, match=r"deep.jsonl line 1: invalid JSON \(nested deeper than 32 levels\)"
    ):
        call_command("calibrate", str(replay_set))


# -- the rest of the class, at the edges of the shared parser ---------------------------------------


def column_of(kind: str):
    from django.db import models

    return getattr(models, kind)()


def test_ids_stop_where_the_tightest_database_stops():
    from django.db.backends.oracle.base import DatabaseOperations as Oracle
    from django.db.backends.sqlite3.base import DatabaseWrapper

    SQLite = DatabaseWrapper.ops_class  # through base: importing operations first is circular

    # A memory's id: SQLite's and PostgreSQL's 64 bits; Oracle's NUMBER(19) holds more.
    assert params.column_range(Memory._meta.pk) == (-(2**63), 2**63 - 1)
    # A user's id: PostgreSQL's integer; Oracle's NUMBER(11) and SQLite hold more.
    assert params.column_range(Membership._meta.get_field("user")) == (-(2**31), 2**31 - 1)
    assert params.column_max(Memory, "row_version") == 2**31 - 1
    for kind, digits in params.ORACLE_DIGITS.items():
        oracle, sqlite = Oracle.integer_field_ranges[kind], SQLite.integer_field_range(None, kind)
        assert oracle[1] == 10**digits - 1, kind
        low, high = params.column_range(column_of(kind))
        assert max(oracle[0], sqlite[0]) <= low and high <= min(oracle[1], sqlite[1]), kind


@pytest.mark.parametrize(
    "raw, problem",
    [
        ("9223372036854775807", None),
        ("9223372036854775808", "ids run from 1 to 9223372036854775807"),
        (str(10**19 - 1), "ids run from 1 to"),  # Oracle's NUMBER(19) holds it; the others do not
        ("0", "ids run from 1 to"),
        ("-1", "is not an id"),
        ("²", "is not an id"),
        ("9" * 5000, "ids run from 1 to"),  # never handed to int()
    ],
)
def test_an_id_parameter_is_one_every_database_holds(raw, problem):
    query = QueryDict(mutable=True)
    query["set"] = raw
    if problem is None:
        assert params.object_id(query, "set", Memory) == int(raw)
        return
    with pytest.raises(params.BadParameter, match=problem) as caught:
        params.object_id(query, "set", Memory)
    assert caught.value.name == "set"


def test_a_user_id_parameter_stops_at_postgresqls_integer(client, acme, lead, policy):
    memory = flagged(acme, policy)
    client.force_login(lead)

    response = client.post(f"/t/acme/memories/{memory.pk}/claim/reassign/", {"to": str(2**31)})

    assert refused(response, "to") and "ids run from 1 to 2147483647" in response.content.decode()


@pytest.mark.parametrize(
    "raw, fits",
    [
        ("0001-01-02T00:00Z", True),
        ("0001-01-01T23:59Z", False),  # a day's room: shown west of UTC it would leave the calendar
        ("0001-01-02T05:00+05:00", True),
        ("0001-01-02T04:59+05:00", False),
        ("9999-12-30T23:59:59.999999Z", True),
        ("9999-12-31T00:00Z", False),
        ("9999-12-30T00:00-23:59", True),
        ("9999-12-30T00:01-23:59", False),
        ("2026-01-01T00:00+24:00", "not a date and time"),  # no such offset
        ("2026-02-30T10:00", "not a date and time"),
    ],
)
def test_a_time_parameter_stays_inside_the_calendar_once_in_utc(raw, fits):
    query = QueryDict(mutable=True)
    query["as_of"] = raw
    if fits is True:
        assert params.moment(query, "as_of").astimezone(UTC) >= params.EARLIEST
        return
    with pytest.raises(params.BadParameter, match=fits or "once its UTC offset is applied"):
        params.moment(query, "as_of")


def test_form_times_and_days_keep_the_same_calendar():
    moment = params.DateTimeField(required=False)
    day = params.DateField(required=False)
    assert moment.clean("9999-12-30T12:00+00:00") == datetime(9999, 12, 30, 12, tzinfo=UTC)
    assert day.clean("9999-12-30") == date(9999, 12, 30)
    for field, value in ((moment, "9999-12-31T23:59-23:00"), (day, "9999-12-31"), (day, "0001-01-01")):
        with pytest.raises(Exception, match="(once its UTC offset is applied|Choose a day from)"):
            field.clean(value)


@pytest.mark.parametrize(
    "text, too_deep",
    [
        ("[" * 32 + "]" * 32, False),
        ("[" * 33 + "]" * 33, True),
        ('{"a": {"b": [1, {"c": []}]}}', False),
        ('["' + "[" * 1000 + '"]', False),  # brackets inside a string are text
        ('["\\"' + "[" * 1000 + '"]', False),  # past an escaped quote, still inside the string
        ('"unterminated ' + "[" * 1000, False),
        ("[" * 40, True),  # never closed: the parser would still descend
        ("[[]" * 40 + "]" * 40, True),
        ("]" * 1000, False),  # malformed, but shallow: the parser says where
    ],
)
def test_json_nesting_is_measured_before_parsing(text, too_deep):
    assert params.json_too_deep(text) is too_deep
    assert params.json_too_deep(text.encode()) is too_deep


def test_measuring_the_nesting_of_a_whole_request_body_is_quick():
    started = time.monotonic()
    for body in (b"[" * 1_250_000 + b"]" * 1_250_000, b'"\\"' * 800_000, b"[]" * 1_250_000):
        params.json_too_deep(body)
    assert time.monotonic() - started < 2


def test_bytes_that_are_not_utf8_a_nul_or_a_huge_value_in_any_parameter_are_refused_by_name():
    factory = RequestFactory()
    for request, name, problem in (
        (factory.get("/?q=%FF%FE"), "q", "is not UTF-8 text"),
        (factory.get("/?unread=%ED%A0%80"), "unread", "is not UTF-8 text"),
        (factory.get("/?q=a%00b"), "q", "contains a NUL character"),
        (factory.get("/?q=" + "x" * 10_001), "q", "the limit is 10000"),
        (
            factory.post("/", "reason=ok&note=" + "x" * 64_001, "application/x-www-form-urlencoded"),
            "note",
            "64000",
        ),
        (
            factory.post("/", "reason=%C3%28", "application/x-www-form-urlencoded"),
            "reason",
            "is not UTF-8 text",
        ),
    ):
        with pytest.raises(params.BadParameter, match=problem) as caught:
            params.screen(request)
        assert caught.value.name == name
    params.screen(factory.get("/?q=caf%C3%A9&as_of=2026-01-01T10:00"))  # plain UTF-8 passes


def test_a_nul_in_a_form_field_is_a_400_and_writes_nothing(client, acme, lead, policy):
    memory = flagged(acme, policy)
    client.force_login(lead)

    response = client.post(
        f"/t/acme/memories/{memory.pk}/act/", {"action": "approve", "seen_version": 2, "reason": "a\x00b"}
    )

    assert refused(response, "reason")
    memory.refresh_from_db()
    assert memory.status == "needs_review"


def test_the_api_refuses_deep_bodies_and_event_ids_past_64_bits_by_name(client, acme, policy):
    token = token_create(tenant=acme, name="support-bot")[1]
    event = SourceEvent.objects.create(tenant=acme, source="chat", text="Said so.")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    memory = {"content": "Prefers email.", "kind": "preference", "subject": "channel"}

    deep = client.post("/api/v1/t/acme/events", DEEP, content_type="application/json", **auth)
    huge = client.post(
        "/api/v1/t/acme/memories",
        json.dumps({**memory, "source_event_id": 2**63}),
        content_type="application/json",
        **auth,
    )

    assert deep.status_code == 400 and deep.json()["fields"] == {"body": "nested deeper than 32 levels"}
    assert huge.status_code == 400 and "9223372036854775807" in huge.json()["fields"]["source_event_id"]
    assert SourceEvent.objects.count() == 1 and event.pk and not Memory.objects.exists()


# -- every parameter, as the attack drill throws at them --------------------------------------------


def test_the_drills_fingerprint_names_a_table_a_request_changed_and_no_other(acme, lead):
    """The drill's 'no write from a refused request' holds only if its fingerprint sees a write:
    a changed row names its table; a new session (which any request may write) names none."""
    from attack_drill import changed, fingerprint
    from django.contrib.sessions.backends.db import SessionStore

    before = fingerprint()
    assert changed(before, fingerprint()) == []
    SessionStore().create()
    assert changed(before, fingerprint()) == []
    Membership.objects.filter(tenant=acme, user=lead).update(role="auditor")  # sealed: its ledger moves too
    assert changed(before, fingerprint()) == ["audit_auditchain", "audit_seal", "tenancy_membership"]


def test_the_drill_knows_every_parameter_each_view_reads():
    from attack_drill import parameters

    reads = parameters()

    assert {route: r.unexplained for route, r in reads.items() if r.unexplained} == {}
    assert {"memory", "after", "before", "since"} <= reads["t/<slug:slug>/audit/"].query
    assert "as_of" in reads["t/<slug:slug>/memories/<id:pk>/"].query
    assert {"since", "shown"} <= reads["t/<slug:slug>/review/changes/"].query
    assert reads["t/<slug:slug>/calibration/import/"].files == {"file"}
    assert {"confirm_min", "mode", "reason"} <= reads["t/<slug:slug>/calibration/propose/"].form
    assert {"source_event_id", "valid_until", "scope.user_id"} <= reads["api/v1/t/<slug:slug>/memories"].body
    assert reads["t/<slug:slug>/memories/<id:pk>/act/"].methods == ("POST",)


def test_crafted_values_at_every_parameter_are_never_a_5xx(client, settings):
    from attack_drill import crafted_requests, post_data, prepare

    settings.API_RATE_PER_MINUTE = 0
    seed_demo()
    ground = prepare()
    client.force_login(User.objects.get(username="admin"))
    client.raise_request_exception = False
    token = ground.tokens["acme"][0]

    statuses, errors = {}, []
    for crafted in crafted_requests(
        ground, size="small", form_base=lambda path: post_data(path, ground, csrf="")
    ):
        extra = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if crafted.api else {}
        response = client.generic(
            crafted.method, crafted.path, crafted.body or b"", crafted.content_type or "", **extra
        )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500 and not crafted.path.startswith("/readyz"):  # no Jev here
            errors.append(f"{crafted.what} -> {response.status_code}")

    print(statuses)
    assert errors == []
    assert sum(statuses.values()) > 500 and statuses[400] > 400
