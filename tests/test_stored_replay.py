"""A candidate policy replayed over a tenant's stored votes, beside the active one: what each
would decide, and which verdicts (and memories) would change, without asking Jev."""

from collections import Counter
from dataclasses import replace

import pytest

from memory_review.assessments.models import Verdict
from memory_review.assessments.policy import DEFAULTS, decide
from memory_review.calibration import stored
from memory_review.calibration.stored import replay_stored
from tests.factories import judged, make_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def votes(acme, globex, policy):
    made = []
    for still_true in (0.05, 0.3, 0.5, 0.62, 0.66, 0.9):
        memory = make_memory(acme)
        made.append(judged(memory, policy, disposition="uncertain", still_true=still_true))
    make_memory(globex)  # another tenant's memory: never replayed here
    return made


def test_each_verdict_is_decided_as_decide_would_under_each_policy(acme, votes):
    candidate = replace(DEFAULTS, confirm_min=0.64)

    result = replay_stored(acme, active=DEFAULTS, candidate=candidate, chunk=4)  # two chunks

    verdicts = list(Verdict.objects.filter(tenant=acme).order_by("pk"))
    expected_now = [decide(v.votes, policy=DEFAULTS) for v in verdicts]
    expected_then = [decide(v.votes, policy=candidate) for v in verdicts]
    assert result.verdicts == len(verdicts) == 6
    assert sum(result.active.values()) == sum(result.candidate.values()) == 6
    assert result.active == Counter(expected_now)
    assert result.candidate == Counter(expected_then)
    changed = [
        (v.pk, v.memory_id, a, b)
        for v, a, b in zip(verdicts, expected_now, expected_then, strict=True)
        if a != b
    ]
    assert result.changes == changed and result.changed == len(changed) == 1  # 0.66: confirmed -> uncertain


def test_the_list_of_changes_is_capped_but_the_count_is_not(acme, votes, monkeypatch):
    monkeypatch.setattr(stored, "LISTED", 1)
    strict = DEFAULTS.__class__(
        **{**DEFAULTS.to_data(), "review_only_sources": (), "confirm_min": 0.9, "contradict_max": 0.2}
    )

    result = replay_stored(acme, active=DEFAULTS, candidate=strict)

    assert result.changed >= 2 and len(result.changes) == 1
