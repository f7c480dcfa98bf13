"""What waits for each reviewer, kept as a derived figure (calibration/figures.py): counting it
reads the whole queue against every assignment rule (100,000 items at two million memories), so
a tenant past FIGURES_INLINE_BELOW reads it from the cache with its age; it is counted again when
a memory moves or an assignment or rule changes."""

from memory_review.calibration import figures
from memory_review.workflow import assignment
from memory_review.workflow.models import Assignment, AssignmentRule

# Hand assignments made and ended, rules written and removed: few rows, counted.
figures.mark_part(
    "assignments",
    "assignments or their rules changed",
    lambda: {
        "assigned": figures.counted(Assignment),
        "ended": figures.counted(Assignment, ended_at__isnull=False),
        "ruled": figures.counted(AssignmentRule),
        "unruled": figures.counted(AssignmentRule, removed_at__isnull=False),
    },
)


@figures.figure("team_waiting", standing=True, rests_on=("moves", "assignments"))
def kept_waiting(tenant) -> dict:
    return {str(pk): counted for pk, counted in assignment.waiting_by_reviewer(tenant).items()}


def waiting(shown: figures.Shown) -> dict[int, tuple] | None:
    """User id -> (items waiting, the oldest's flag time); None while the first count runs."""
    return {int(pk): tuple(counted) for pk, counted in shown.value.items()} if shown.ready else None
