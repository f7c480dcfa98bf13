"""The kinds of file a job can write. The layers that know a file register it here, as the
pages' derived figures register with calibration/figures.py: jobfiles writes, keeps and hands
over any of them and knows none."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memory_review.tenancy.models import Membership, Tenant


class Unreadable(ValueError):
    """What was asked for cannot be read (an unknown filter, a memory not in the tenant): each
    problem named, and nothing written."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Kind:
    name: str  # stored on the job: "audit.jsonl"
    label: str  # what the file is, in words
    content_type: str
    may: Callable[[Membership], bool]  # who may ask for it, see it and download it
    count: Callable[[Tenant, dict], int]  # the rows it will hold (Unreadable: what cannot be read)
    lines: Callable[[Tenant, dict], Iterator[str]]  # the file, one row (or header line) at a time
    filename: Callable[[Tenant, dict], str]
    header_lines: int = 1  # leading lines that are not rows


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


def kind_named(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise Unreadable([f"no export is called {name!r}"]) from None
