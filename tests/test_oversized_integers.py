"""An integer of thousands of digits, past what Python reads from text (4,300 digits), in any file
or body we take is refused naming the line or the field, and nothing is kept (issue 27, item 7):
a replay set on the page and by `calibrate`, `import_jsonl`, and the API's bodies."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from memory_review.calibration.models import ReplaySet
from memory_review.memories.models import Memory, SourceEvent
from memory_review.tenancy.tokens import token_create

pytestmark = pytest.mark.django_db

HUGE = "9" * 5000
CASE = '{"id": "c1", "votes": {"bears": 0.5}, "expected": "confirmed"}'


def test_a_replay_set_line_with_a_5000_digit_integer_is_a_400_naming_the_line_and_keeps_nothing(
    client, acme, labeler
):
    client.force_login(labeler)
    lines = f'{CASE}\n{{"id": "c2", "votes": {{"bears": {HUGE}}}, "expected": "confirmed"}}\n'
    upload = SimpleUploadedFile("huge.jsonl", lines.encode())

    response = client.post("/t/acme/calibration/import/", {"file": upload})

    assert response.status_code == 400
    assert (
        "huge.jsonl line 2: invalid JSON (an integer 5,000 digits long; the most read is 40)"
        in response.content.decode()
    )
    assert not ReplaySet.objects.exists()


def test_calibrate_names_the_line_of_a_5000_digit_integer(tmp_path):
    replay_set = tmp_path / "huge.jsonl"
    replay_set.write_text(f'{CASE}\n{{"id": {HUGE}, "votes": {{}}, "expected": "confirmed"}}\n')

    with pytest.raises(CommandError, match=r"huge.jsonl line 2: invalid JSON \(an integer 5,000 digits long"):
        call_command("calibrate", str(replay_set))


def test_import_jsonl_names_the_line_of_a_5000_digit_integer_and_writes_nothing(acme, tmp_path):
    path = tmp_path / "load.jsonl"
    event = {"type": "event", "key": "e1", "text": "Said so.", "source": "chat"}
    path.write_text(
        json.dumps(event)
        + "\n"
        + f'{{"type": "memory", "content": "x", "kind": "fact", "subject": "s", "source_event_id": {HUGE}}}\n'
    )

    with pytest.raises(
        CommandError, match=r"load.jsonl line 2: not valid JSON \(an integer 5,000 digits long"
    ):
        call_command("import_jsonl", str(path), tenant="acme")
    assert not SourceEvent.objects.exists() and not Memory.objects.exists()


def test_an_integer_a_little_past_64_bits_still_reaches_the_fields_own_check_which_names_it(acme, tmp_path):
    path = tmp_path / "load.jsonl"
    path.write_text(
        f'{{"type": "memory", "content": "x", "kind": "fact", "subject": "s", "source_event_id": {2**70}}}\n'
    )

    with pytest.raises(CommandError, match=r"line 1: source_event_id: .*9223372036854775807"):
        call_command("import_jsonl", str(path), tenant="acme")


def test_an_api_body_with_a_5000_digit_integer_is_a_400_saying_where(client, acme, policy):
    """Every integer field of the API is bounded (api/schemas.py); one too long for the parser to
    read is refused by it, at its column."""
    token = token_create(tenant=acme, name="support-bot")[1]
    SourceEvent.objects.create(tenant=acme, source="chat", text="Said so.")
    body = '{"content": "x", "kind": "fact", "subject": "s", "source_event_id": ' + HUGE + "}"

    response = client.post(
        "/api/v1/t/acme/memories", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )

    assert response.status_code == 400, response.content
    assert response.json()["fields"] == {"body": "Invalid JSON: number out of range at line 1 column 4370"}
    assert not Memory.objects.exists()
