"""What a calibration labeler gets where a page would tell them what was made of an item they
have not labeled (review/blind.py): a 403 saying why and where to look instead, or the item's
evidence with the reveal of what they labeled."""

from functools import wraps

from django.http import HttpRequest, HttpResponse

from .. import blind
from ..access import works_blind
from .base import page

# A memory no vote to label rests on is no item's evidence; what is left to see is how it came
# to be (a reviewer's rewrite, an approved candidate, a successor the policy stored).
NO_VOTES = "no vote on this memory can be labeled, so all its page could add is what became of it"


def refused_when_blind(shows: str):
    """For a page of per-item judgment; `shows` says what it shows, in the 403 a labeler gets."""

    def decorate(view):
        @wraps(view)
        def wrapper(request: HttpRequest, membership, *args, **kwargs):
            if works_blind(membership):
                return refused(request, membership, shows)
            return view(request, membership, *args, **kwargs)

        return wrapper

    return decorate


def refused(request: HttpRequest, membership, shows: str) -> HttpResponse:
    return page(request, membership, "review/blind.html", status=403, shows=shows)


def memory_evidence(request: HttpRequest, membership, memory) -> HttpResponse:
    evidence = blind.memory_evidence(membership.tenant, request.user, memory)
    if not (evidence.revealed or evidence.waiting):
        return refused(request, membership, NO_VOTES)
    return page(request, membership, "review/memory_evidence.html", memory=memory, evidence=evidence)


def candidate_evidence(request: HttpRequest, membership, candidate) -> HttpResponse:
    shown, to_label = blind.candidate_evidence(membership.tenant, request.user, candidate)
    return page(
        request,
        membership,
        "review/promotion_evidence.html",
        candidate=candidate,
        reveal=shown,
        to_label=to_label,
    )
