"""once_on_commit: what follows a commit is asked for once a transaction, however many of its
writes ask (the sequencer's nudge, the webhooks' fan-out), and never for a rollback."""

import pytest
from django.db import transaction

from memory_review.integrity.commits import once_on_commit
from tests.factories import make_memory

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_call_a_key_when_the_transaction_commits():
    calls = []
    with transaction.atomic():
        for n in range(5):
            once_on_commit(("fan-out", 1), lambda n=n: calls.append(("fan-out", 1, n)))
        once_on_commit(("fan-out", 2), lambda: calls.append(("fan-out", 2)))
        once_on_commit(("sequence", 1), lambda: calls.append(("sequence", 1)))
        assert calls == []  # nothing before the commit

    assert calls == [("fan-out", 1, 0), ("fan-out", 2), ("sequence", 1)]


def test_a_rollback_drops_it_and_the_next_transaction_asks_again():
    calls = []
    with pytest.raises(RuntimeError), transaction.atomic():
        once_on_commit(("fan-out", 1), lambda: calls.append("rolled back"))
        raise RuntimeError
    with transaction.atomic():
        once_on_commit(("fan-out", 1), lambda: calls.append("committed"))

    assert calls == ["committed"]


def test_outside_a_transaction_it_runs_at_once_every_time():
    calls = []
    once_on_commit(("fan-out", 1), lambda: calls.append(1))
    once_on_commit(("fan-out", 1), lambda: calls.append(2))

    assert calls == [1, 2]


def test_one_function_under_two_keys_is_asked_for_under_each():
    calls = []

    def fan_out():
        calls.append(len(calls))

    with transaction.atomic():
        once_on_commit(("fan-out", 1), fan_out)
        once_on_commit(("fan-out", 2), fan_out)  # a tag on the function itself would be overwritten
        once_on_commit(("fan-out", 1), fan_out)  # here, and this one taken for new

    assert calls == [0, 1]
    assert not hasattr(fan_out, "once_key")


def test_a_savepoint_rolled_back_takes_its_request_and_a_later_write_asks_again():
    calls = []
    with transaction.atomic():
        with pytest.raises(RuntimeError), transaction.atomic():
            once_on_commit(("fan-out", 1), lambda: calls.append("rolled back"))
            raise RuntimeError
        once_on_commit(("fan-out", 1), lambda: calls.append("committed"))

    assert calls == ["committed"]


@pytest.mark.django_db  # in the test's transaction: the callbacks wait for a commit that never comes
def test_many_sealed_writes_of_a_transaction_ask_for_one_sequencer_run(
    acme, settings, django_capture_on_commit_callbacks
):
    settings.AUDIT_SEQUENCER = "deferred"
    with django_capture_on_commit_callbacks() as callbacks:
        for _ in range(5):
            make_memory(acme)

    runs = [c for c in callbacks if getattr(c, "once_key", None) == ("sequence", acme.pk)]
    assert len(runs) == 1
