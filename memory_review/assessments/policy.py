"""Code, never the model, turns votes into decisions (DESIGN §4). Thresholds are data.

`Thresholds` is one policy version's numbers; `decide()` is the invalidation table and
`decide_promotion()` the promotion rule. The calibration pages and `manage.py calibrate`
replay stored votes through these same functions.
"""

from dataclasses import asdict, dataclass, fields

from django.dispatch import Signal

from memory_review.memories.models import MemoryStatus

from .models import Disposition


@dataclass(frozen=True)
class Thresholds:
    bears_min: float = 0.60
    directive_max: float = 0.70
    hypothetical_max: float = 0.70
    confirm_min: float = 0.60
    contradict_max: float = 0.40
    partial_min: float = 0.85
    replace_min: float = 0.60
    margin: float = 0.05
    # Above JEV_SCREEN_ABOVE candidates, a one-question screen keeps only memories scoring at
    # least this; low on purpose, since a dropped bearing memory is never judged.
    screen_min: float = 0.30
    review_only_sources: tuple[str, ...] = ()
    # Promotion (seeds/000): supported and scope_fits high, conflict low.
    supported_min: float = 0.90
    scope_fits_min: float = 0.90
    conflict_max: float = 0.10
    # A dead band around each promotion threshold: votes within it go to review rather than a
    # 0.89 rejecting and a 0.90 promoting. 0 keeps the plain rule.
    promote_margin: float = 0.0

    @classmethod
    def from_data(cls, data: dict) -> "Thresholds":
        """Build from stored or user-given JSON; unknown keys and out-of-range numbers are errors."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown policy key(s): {', '.join(unknown)}")
        values = dict(data)
        for name, value in values.items():
            if name == "review_only_sources":
                if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                    raise ValueError("review_only_sources must be a list of source names")
                values[name] = tuple(value)
            elif isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"policy key {name} must be a number in [0, 1], got {value!r}")
        policy = cls(**values)
        if policy.contradict_max > policy.confirm_min:
            raise ValueError(
                f"contradict_max ({policy.contradict_max}) must not exceed confirm_min ({policy.confirm_min})"
            )
        return policy

    def to_data(self) -> dict:
        data = asdict(self)
        data["review_only_sources"] = list(self.review_only_sources)
        return data

    # The review band's edges. Rounded so 0.55 + 0.05 is 0.60, not 0.6000000000000001: a vote on
    # the line is inside.
    @property
    def confirm_at(self) -> float:
        """still_true at or above this confirms."""
        return round(self.confirm_min + self.margin, 9)

    @property
    def contradict_at(self) -> float:
        """still_true at or below this kills (contradicted, superseded or partial)."""
        return round(self.contradict_max - self.margin, 9)

    def gap(self, still_true: float | None) -> float:
        """How far a still_true vote lies from the nearer edge of the review band: the smaller,
        the closer the call. 1 when there is no vote."""
        if still_true is None:
            return 1.0
        return round(min(abs(still_true - self.confirm_at), abs(still_true - self.contradict_at)), 6)


DEFAULTS = Thresholds()

# What each disposition proposes for a memory; None means "no status change".
PROPOSED_STATUS = {
    Disposition.NO_SOURCE: MemoryStatus.NEEDS_REVIEW,
    Disposition.EXPIRED: MemoryStatus.EXPIRED,
    Disposition.CONFIRMED: MemoryStatus.ACTIVE,
    Disposition.PARTIAL: MemoryStatus.NEEDS_REVIEW,
    Disposition.UNCERTAIN: MemoryStatus.NEEDS_REVIEW,
    Disposition.SUPERSEDED: MemoryStatus.SUPERSEDED,
    Disposition.CONTRADICTED: MemoryStatus.CONTRADICTED,
}

# What the policy does with a disposition. Whether it may, for a memory's current status
# (never a frozen one, say), is the lifecycle's table to say: lifecycle.permits().
POLICY_ACTIONS: dict[str, str] = {
    Disposition.CONFIRMED: "confirm",
    Disposition.UNCERTAIN: "flag",
    Disposition.PARTIAL: "flag",
    Disposition.NO_SOURCE: "flag",
    Disposition.CONTRADICTED: "contradict",
    Disposition.SUPERSEDED: "supersede",
}

# Dispositions whose still_true vote is about this memory (it becomes p_true).
BEARING = frozenset(
    {
        Disposition.CONFIRMED,
        Disposition.UNCERTAIN,
        Disposition.PARTIAL,
        Disposition.CONTRADICTED,
        Disposition.SUPERSEDED,
    }
)

_KILLS = {Disposition.CONTRADICTED, Disposition.SUPERSEDED, Disposition.PARTIAL}

# Asked before the policy kills a memory alone (contradict, supersede), with `tenant_id`, `memory`
# and `action`: a receiver answers a sentence to send it to a person instead, or None. The gate on
# measured precision answers it (quality/gate.py), so this package never imports the audits.
kill_asked = Signal()


def held_kill(tenant_id: int, memory, action: str) -> str | None:
    """Why a receiver of `kill_asked` holds this kill for a person, or None."""
    for _, said in kill_asked.send(sender=Disposition, tenant_id=tenant_id, memory=memory, action=action):
        if said:
            return said
    return None


def decide(votes: dict[str, float], *, policy: Thresholds = DEFAULTS) -> str:
    """The invalidation table. Form checks come first so a question cannot confirm a fact."""
    if votes["bears"] < policy.bears_min:
        return Disposition.UNRELATED
    if votes["directive"] >= policy.directive_max:
        return Disposition.DIRECTIVE
    if votes["hypothetical"] >= policy.hypothetical_max:
        return Disposition.HYPOTHETICAL
    still_true = votes["still_true"]
    if still_true >= policy.confirm_at:
        return Disposition.CONFIRMED
    if still_true > policy.contradict_at:
        return Disposition.UNCERTAIN
    if votes["partial"] >= policy.partial_min:
        disposition = Disposition.PARTIAL
    elif votes["replaces"] >= policy.replace_min:
        disposition = Disposition.SUPERSEDED
    else:
        disposition = Disposition.CONTRADICTED
    # The policy's own word, whatever the source: the review-only rule is applied when
    # transitioning (policy_action), so the log, shadow replay and calibration see what it said.
    return disposition


def policy_action(
    disposition: str, *, source: str, policy: Thresholds = DEFAULTS
) -> tuple[str | None, str | None]:
    """What the lifecycle is asked to do with a disposition from this source, and why it differs
    from POLICY_ACTIONS when it does. A review-only source may flag, never flip (DESIGN §4): its
    kill or partial only flags, and its confirmation moves nothing."""
    action = POLICY_ACTIONS.get(disposition)
    if source not in policy.review_only_sources or action is None:
        return action, None
    if disposition in _KILLS:
        return (
            "flag",
            f"source {source} is review-only: the policy said {disposition}, so it is flagged for a person",
        )
    if action == "confirm":
        return None, f"source {source} is review-only: its confirmation moves nothing"
    return action, None


def decide_promotion(votes: dict[str, float], *, policy: Thresholds = DEFAULTS) -> str:
    """Promote when every vote clears its threshold by the dead band; review on a conflict;
    reject when support or scope falls short by more than the band; otherwise, within the band,
    review."""
    band = policy.promote_margin
    if votes["conflict"] > policy.conflict_max:
        return "review"
    if (
        votes["supported"] >= round(policy.supported_min + band, 9)
        and votes["scope_fits"] >= round(policy.scope_fits_min + band, 9)
        and votes["conflict"] <= round(policy.conflict_max - band, 9)
    ):
        return "promote"
    if votes["supported"] < round(policy.supported_min - band, 9) or votes["scope_fits"] < round(
        policy.scope_fits_min - band, 9
    ):
        return "reject"
    return "review"
