"""Sampled audits (issue 31, item 1): a stratified random draw from the memories no person reviewed
or from a period's automatic decisions, each stratum as large as its precision needs, reproducible
from its seed, checkable with the standard library, and sealed."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import F
from django.utils import timezone

from memory_review.audit import verification
from memory_review.lifecycle import Actor, transition
from memory_review.memories.models import Memory
from memory_review.memories.services import event_record, memory_write
from memory_review.quality import sampling
from memory_review.quality.estimates import labels_needed
from memory_review.quality.models import AuditItem, AuditSample
from tests.factories import make_memory

pytestmark = pytest.mark.django_db

SEED = "5eed" * 16


def move(memory: Memory, action: str, actor: Actor) -> None:
    memory.refresh_from_db()
    transition(obj=memory, action=action, actor=actor, reason=action, seen_version=memory.row_version)


@pytest.fixture
def population(acme):
    """Three strata of unreviewed memories in force (5, 40 and 120), and memories that are not in
    the population: reviewed by a person, out of force, past their TTL, another tenant's."""
    made = {
        ("chat", "fact"): [make_memory(acme, source="chat", kind="fact") for _ in range(5)],
        ("email", "preference"): [make_memory(acme, source="email", kind="preference") for _ in range(40)],
        ("slack", "fact"): [
            make_memory(acme, source="slack", kind="fact", agent_id="ops-bot") for _ in range(120)
        ],
    }
    reviewed = make_memory(acme, source="chat", kind="fact")
    move(reviewed, "freeze", Actor("user", "3"))
    move(reviewed, "unfreeze", Actor("user", "3"))
    dead = make_memory(acme, source="chat", kind="fact")
    move(dead, "contradict", Actor.policy("v1"))
    expired = make_memory(acme, source="chat", kind="fact", valid_until=timezone.now() + timedelta(seconds=1))
    event = event_record(tenant=acme, source="chat", text="A lead's note.")
    rewritten = memory_write(
        event=event, kind="fact", subject="by a person", content="Set by the lead.", written_by="user:3"
    )
    return made, {reviewed.pk, dead.pk, expired.pk, rewritten.pk}


def test_each_stratum_gets_the_labels_its_precision_needs_and_its_lowest_ranked_items(acme, population):
    made, outside = population

    sample = sampling.draw(
        tenant=acme, population="unreviewed", by="user:3", precision=0.1, seed=SEED,
        end=timezone.now() + timedelta(seconds=5),
    )  # fmt: skip

    strata = {(s["key"]["channel"], s["key"]["kind"]): s for s in sample.strata}
    assert set(strata) == set(made)
    for key, memories in made.items():
        assert strata[key]["population"] == len(memories)
        assert strata[key]["sampled"] == labels_needed(0.1, len(memories))  # 5, 29, 54
        place = sample.strata.index(strata[key])
        drawn = set(
            AuditItem.objects.filter(sample=sample, stratum=place).values_list("memory_id", flat=True)
        )
        lowest = sorted(memories, key=lambda m: sampling.rank(SEED, m.pk))[: strata[key]["sampled"]]
        assert drawn == {m.pk for m in lowest}, key
    assert [s["sampled"] for s in strata.values()] == [5, 29, 54]
    assert strata[("slack", "fact")]["key"] == {
        "agent": "ops-bot", "channel": "slack", "kind": "fact", "decision": "in force",
    }  # fmt: skip
    assert not outside & set(AuditItem.objects.values_list("memory_id", flat=True))
    assert sample.items == 88 and sampling.problem(sample) is None
    assert verification.problem_in(acme) is None  # the sample and its items are sealed


def test_strata_that_need_more_than_the_budget_are_scaled_down_alike_and_the_sample_says_so(acme, population):
    made, _ = population

    sample = sampling.draw(
        tenant=acme, population="unreviewed", by="user:3", precision=0.1, most=30, seed=SEED,
        end=timezone.now() + timedelta(seconds=5),
    )  # fmt: skip

    assert (sample.labels_asked, sample.budget) == (88, 30)
    first = 0.1**-2 * 0.25 * 1.959963984540054**2
    shares = {(s["key"]["channel"], s["key"]["kind"]): s["sampled"] for s in sample.strata}
    assert shares == {key: sampling.share_of(len(made[key]), first, 30 / 88) for key in made}
    assert shares == {("chat", "fact"): 2, ("email", "preference"): 10, ("slack", "fact"): 19}
    assert sample.items == 31 and sampling.problem(sample) is None  # each rounded up: one over


@pytest.mark.parametrize(
    "margin, cap",
    [
        (sampling.CUT_MARGIN, None),  # the cut as it runs: two strata cut short of their size
        (-1.0, None),  # a cut too tight: each stratum it starves is read again whole
        (sampling.CUT_MARGIN, 1),  # a database allowing one cut stratum's parameters: the rest read whole
    ],
    ids=["as-run", "too-tight", "parameter-cap"],
)
def test_a_stratums_rank_cut_never_changes_what_is_drawn(acme, population, monkeypatch, caplog, margin, cap):
    """The draw reads only the ranks below each large stratum's cut (sampling.bound) and sorts
    those: whatever the cut, each stratum's sample is its lowest-ranked items."""
    made, _ = population
    monkeypatch.setattr(sampling, "CUT_MARGIN", margin)
    monkeypatch.setattr(sampling, "CUT_SLACK", 10 if margin > 0 else 0)
    if cap is not None:  # room for the ranked query's own parameters, the join's four and one stratum's five
        ranked = sampling._source(acme, "unreviewed", None, timezone.now()).annotate(
            draw_rank=sampling.SampleRank(SEED, F("pk"))
        )
        monkeypatch.setattr(
            connection.features, "max_query_params", len(ranked.query.sql_with_params()[1]) + 4 + 5 * cap
        )
    cuts, applied = [], []
    real, really_cut = sampling._below, sampling.cut_strata
    monkeypatch.setattr(sampling, "_below", lambda *a: cuts.append(dict(a[2])) or real(*a))
    monkeypatch.setattr(sampling, "cut_strata", lambda *a: applied.append(really_cut(*a)) or applied[-1])

    sample = sampling.draw(
        tenant=acme, population="unreviewed", by="user:3", precision=0.1, most=30, seed=SEED,
        end=timezone.now() + timedelta(seconds=5),
    )  # fmt: skip

    assert len(cuts[0]) == (2 if margin > 0 else 3)  # the 40 and the 120 are cut; the 5 is read whole
    # In SQL: as bounded, or under the cap only the largest (the 120, lowest bound) and the rest whole.
    assert [len(cut) for cut in applied[:1]] == [1 if cap else len(cuts[0])]
    if margin < 0:
        assert len(cuts) == 2 and len(cuts[1]) < len(cuts[0]) and "rank cut fell short" in caplog.text
    for place, stratum in enumerate(sample.strata):
        key = (stratum["key"]["channel"], stratum["key"]["kind"])
        drawn = set(
            AuditItem.objects.filter(sample=sample, stratum=place).values_list("memory_id", flat=True)
        )
        lowest = sorted(made[key], key=lambda m: sampling.rank(SEED, m.pk))[: stratum["sampled"]]
        assert drawn == {m.pk for m in lowest}, key
    assert [s["sampled"] for s in sample.strata] == [2, 10, 19] and sampling.problem(sample) is None


def test_the_same_seed_draws_the_same_items_and_another_seed_others(acme, population):
    end = timezone.now() + timedelta(seconds=5)

    def drawn(seed: str) -> set[int]:
        sample = sampling.draw(
            tenant=acme, population="unreviewed", by="system:audit", precision=0.1, seed=seed, end=end
        )
        return set(AuditItem.objects.filter(sample=sample).values_list("memory_id", flat=True))

    assert drawn(SEED) == drawn(SEED)
    assert drawn(SEED) != drawn("0" * 64)
    assert len(AuditSample.objects.exclude(seed__in=(SEED, "0" * 64)).values("seed")) == 0
    assert len(sampling.draw(tenant=acme, population="unreviewed", by="user:3").seed) == 64  # a new seed


def test_the_databases_rank_is_the_standard_librarys(acme):
    memories = [make_memory(acme) for _ in range(30)]

    sample = sampling.draw(tenant=acme, population="unreviewed", by="user:3", precision=0.4, seed=SEED)

    ranks = dict(AuditItem.objects.filter(sample=sample).values_list("memory_id", "rank"))
    assert ranks and all(
        ranks[m.pk] == f"{sampling.rank(SEED, m.pk):015x}" for m in memories if m.pk in ranks
    )
    print(f"{connection.vendor}: {len(ranks)} ranks as hashlib gives them")


def test_a_periods_automatic_decisions_are_drawn_by_decision(acme):
    before = timezone.now()
    kept = [make_memory(acme, kind="fact") for _ in range(6)]
    for memory in kept:
        move(memory, "flag", Actor.policy("v1"))
        move(memory, "confirm", Actor.policy("v1"))
    killed = [make_memory(acme, kind="fact") for _ in range(4)]
    for memory in killed:
        move(memory, "contradict", Actor.policy("v1"))
    move(make_memory(acme, kind="fact"), "freeze", Actor("user", "3"))  # a person's: not automatic

    sample = sampling.draw(
        tenant=acme, population="decisions", by="user:3", precision=0.2, seed=SEED, start=before
    )

    by_decision = {s["key"]["decision"]: s for s in sample.strata}
    assert {d: (s["population"], s["sampled"]) for d, s in by_decision.items()} == {
        "kept": (6, labels_needed(0.2, 6)),  # 5 of 6
        "contradicted": (4, labels_needed(0.2, 4)),  # 4 of 4
    }  # fmt: skip
    items = AuditItem.objects.filter(sample=sample).select_related("transition")
    assert {item.transition.action for item in items} == {"confirm", "contradict"}  # flags are not decisions
    assert all(item.transition.memory_id == item.memory_id for item in items)
    assert sampling.problem(sample) is None

    later = sampling.draw(tenant=acme, population="decisions", by="user:3", start=timezone.now())
    assert later.items == 0 and later.strata == []  # nothing decided in that period


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ({"population": "everything"}, "population must be one of unreviewed, decisions, got 'everything'"),
        ({"precision": 0.7}, "precision must be between 0 and 0.5 (0.03 is +-3 points), got 0.7"),
        ({"confidence": 95}, "confidence must be between 0.5 and 1 (0.95 is 95%), got 95"),
        ({"most": 0}, "a draw needs at least one label to spend, got 0"),
        ({"start": timezone.now() + timedelta(days=1)}, "the period must start before it ends"),
    ],
)
def test_a_draw_asked_wrongly_is_refused_by_name_and_writes_nothing(acme, asked, message):
    make_memory(acme)

    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        sampling.draw(tenant=acme, **{"population": "unreviewed", "by": "user:3", **asked})
    assert not AuditSample.objects.exists()


def test_an_item_whose_rank_is_not_its_seeds_is_named(acme, population):
    sample = sampling.draw(tenant=acme, population="unreviewed", by="user:3", precision=0.2, seed=SEED)
    item = AuditItem.objects.filter(sample=sample).order_by("pk").first()
    AuditItem.objects.filter(pk=item.pk).update(rank="0" * 15)  # a sealed update: the rank is forged

    assert sampling.problem(sample) == (
        f"item {item.pk} (id {item.memory_id}) has rank 000000000000000, but its seed ranks it otherwise"
    )


def test_the_command_draws_and_names_what_it_drew_and_refuses_by_name(acme, population):
    out = io.StringIO()

    call_command(
        "draw_audit_sample",
        "--tenant",
        "acme",
        "--population",
        "unreviewed",
        "--precision",
        "0.1",
        stdout=out,
    )

    sample = AuditSample.objects.get()
    said = out.getvalue()
    assert f"audit sample {sample.pk} of acme's memories in force that no person reviewed: " in said
    assert f"seed {sample.seed}" in said and "54 of       120  ops-bot / slack / fact / in force" in said
    with pytest.raises(CommandError, match="no tenant with slug 'nobody'"):
        call_command("draw_audit_sample", "--tenant", "nobody", "--population", "unreviewed")
    with pytest.raises(
        CommandError, match=r"precision must be between 0 and 0.5 \(0.03 is \+-3 points\), got 2"
    ):
        call_command("draw_audit_sample", "--tenant", "acme", "--population", "decisions", "--precision", "2")
    with pytest.raises(CommandError, match="--end must be a time such as 2026-12-05T09:00:00"):
        call_command("draw_audit_sample", "--tenant", "acme", "--population", "unreviewed", "--end", "soon")
    assert AuditSample.objects.count() == 1

    again = io.StringIO()
    end = sample.period_end.isoformat()
    call_command(
        "draw_audit_sample", "--tenant", "acme", "--population", "unreviewed", "--precision", "0.1",
        "--seed", sample.seed, "--end", end, stdout=again,
    )  # fmt: skip
    redrawn = AuditSample.objects.latest("pk")
    assert set(redrawn.drawn.values_list("memory_id", flat=True)) == set(
        sample.drawn.values_list("memory_id", flat=True)
    )


def test_a_stratums_key_reads_the_same_from_both_statements_on_oracle(monkeypatch):
    """Django's Oracle backend gives a NULL text column back as '' through the ORM (the sizes)
    and as None through a cursor (the ranks); Oracle has no empty string, so both are NULL."""
    assert sampling.stratum_key(("", "chat", None)) == ("", "chat", None)  # elsewhere '' is a value
    monkeypatch.setattr(connection, "vendor", "oracle")
    assert sampling.stratum_key(("", "chat", None)) == (None, "chat", None)
