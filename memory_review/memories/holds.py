"""Poisoned memories held before they are trusted (issue 31, item 4).

A memory an agent writes through the API, an import, or the policy's successor written from an
event's words goes into force at once; agents read it on their next turn. One that hides text
(memories/hidden_text.py) or that touches what an attacker wants an agent to act on (instructions
to the agent, payment details, permissions, identity and credentials) is moved to review in the
same transaction, so no agent reads it as in force before a person has seen it. The move is the
lifecycle's `hold`, by `system:trust`, with a reason that names each finding; agents' reads show
it `under_review`, and a person approves, rewrites or forgets it from the queue.

The topic rules are deliberately narrow (a payment detail is an IBAN that passes its mod-97
check, a card number that passes the Luhn check, a wallet address or words like "bank
details", not any mention of paying; "without approval" is how a tenant's own refund policy
reads too, so it holds nothing alone), and
tests/test_holds.py runs them over every memory of the demo, none of which they may hold. What
they cannot see: an instruction phrased as an ordinary fact ("the refund limit is unlimited"),
which Jev's instruction vote and the sampled audits (issue 31, items 1-3) are for."""

import re
from collections.abc import Sequence

from django.utils import timezone

from memory_review.integrity.context import acting_as
from memory_review.lifecycle import Actor, transition
from memory_review.tenancy.rows import save_one_row

from . import hidden_text, trust
from .models import DualControl, Memory, MemoryStatus, TrustRules

HOLDER = Actor.system("trust")
UNREAD = object()  # hold_if_untrusted reads the tenant's trust rules itself


def _patterns(*sources: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(source, re.IGNORECASE | re.DOTALL) for source in sources)


TOPICS: dict[str, tuple[re.Pattern, ...]] = {
    "instructions to the agent": _patterns(
        r"\b(ignore|disregard|forget|override)\b.{0,30}\b(previous|prior|above|earlier|all|your|the)\b"
        r".{0,20}\b(instructions?|rules|prompts?|messages|guidelines|guardrails|policy|policies)\b",
        r"\bsystem prompt\b|\byou are (now )?(an? |the )?(ai|assistant|agent|chatbot|language model)\b",
        r"<\|?(im_start|system)\|?>|\[/?INST\]|(?m:^[ \t]*#{2,}[ \t]*(system|instructions?)\b)",
        r"\balways (approve|refund|grant|allow|accept|comply|obey|trust)\b|\bapprove (every|all|any)\b",
        r"\b(reveal|repeat|print|share) (these|your|the) (instructions|system prompt|rules)\b",
        r"\byou are\b.{0,60}\b(assistant|chatbot|language model|ai agent)\b",
        r"\b(do not|don't|never) (tell|inform|mention|log|report|flag|escalate)\b",
    ),
    "payment details": _patterns(
        r"\b(iban|swift|bic code|routing number|sort code|account number|bank (details|account)|"
        r"payout (details|account)|payment details|wire (to|instructions)|wallet address)\b",
        r"(?-i:\b(0x[0-9a-fA-F]{40}|bc1[0-9a-z]{25,60}|[13][1-9A-HJ-NP-Za-km-z]{25,34})\b)",  # wallets
    ),
    "permissions": _patterns(
        r"\b(admin(istrator)?|root|superuser|owner) (access|rights|role|privileges?)\b",
        r"\b(grant|give|elevate|escalate)\w* .{0,30}\b(access|permissions?|privileges?|role)\b",
        r"\b(access level|access rights)\b",
    ),
    "identity and credentials": _patterns(
        r"\b(password|passcode|passphrase|pin code|one-time code|otp|2fa|mfa|api key|secret key)\b",
        r"\b(api|access|auth|bearer|session) token\b",
        r"\b(ssn|social security|passport number|national id|date of birth|tax id)\b",
        r"\b(is|as) (the )?verified (owner|identity)\b|\bidentity (verified|confirmed)\b",
        r"\bchange\w* (the |their |his |her )?(login |account )?(email|e-mail|phone) (address|number)\b",
    ),
}
CARD = re.compile(r"\b(?:\d[ -]?){13,19}\b")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", re.IGNORECASE)


def _iban(text: str) -> bool:
    """An IBAN by ISO 13616's check: the country and check digits moved to the end, letters as
    numbers (A=10), the whole mod 97 is 1. A VAT number or a parcel's tracking code of the same
    shape fails it. The match may run on into a word after it ("... 3000 EUR"): each shorter
    reading, a character less at a time, is tried too."""
    code = re.sub(r"\s", "", text).upper()
    return any(
        int("".join(str(int(char, 36)) for char in code[4:end] + code[:4])) % 97 == 1
        for end in range(min(len(code), 34), 14, -1)
    )


def _luhn(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def topics(text: str) -> list[str]:
    """The topics `text` touches that hold a memory, in TOPICS' order."""
    found = [name for name, patterns in TOPICS.items() if any(p.search(text) for p in patterns)]
    if "payment details" not in found and (
        any(_luhn(re.sub(r"\D", "", match.group())) for match in CARD.finditer(text))
        or any(_iban(match.group()) for match in IBAN.finditer(text))
    ):
        found.append("payment details")
    return found


def reasons(subject: str, content: str) -> list[str]:
    """Why a memory of this subject and content waits for a person; [] when nothing holds it."""
    said = []
    hidden = hidden_text.findings(subject) + hidden_text.findings(content)
    if hidden:
        said.append("it hides text: " + "; ".join(hidden_text.in_words(hidden)))
    read = hidden_text.as_read(f"{subject}\n{content}")
    # Read as written (a line that starts "### System"), and with its lines run together (an
    # instruction broken over lines).
    flat = re.sub(r"\s+", " ", read)
    if touched := topics(f"{read}\n{flat}"):
        said.append("it touches " + " and ".join(touched))
    return said


def rules_of(tenant_id: int) -> TrustRules | None:
    return TrustRules.objects.filter(tenant_id=tenant_id).first()


def class_held(rules: TrustRules | None, source: str, written_by: str) -> bool:
    """Whether a memory written by `written_by` from an event of `source` will be held for its
    trust class alone (memories/trust.py): asked before it is written."""
    return rules is not None and trust.of_provenance(source, written_by) in rules.held


def hold_if_untrusted(
    memory: Memory,
    *,
    request_id: str | None = None,
    also: Sequence[str] = (),
    found: list[str] | None = None,
    rules: TrustRules | None | object = UNREAD,
) -> list[str]:
    """Move a memory just written to review when `reasons` finds any, or when its trust class is
    one the tenant's rules hold (memories/trust.py), or for the reasons `also` gives (Jev's
    instruction vote, asked by the caller), in the writer's transaction; the reasons (empty when
    it stays in force). `found` and `rules`: `reasons` and `rules_of` as the caller already has
    them, so they are not worked out twice."""
    said = (reasons(memory.subject, memory.content) if found is None else list(found)) + list(also)
    if rules is UNREAD:
        rules = rules_of(memory.tenant_id)
    if rules is not None and memory.trust in rules.held:
        said.insert(
            0, f"it comes from {trust.WORDS[memory.trust]}, which this tenant has a person check first"
        )
    hold(memory, said, request_id=request_id)
    return said


def hold(memory: Memory, said: list[str], *, request_id: str | None = None) -> None:
    """Move a memory in force to review for these reasons (none: nothing to do)."""
    if said and memory.status == MemoryStatus.ACTIVE:
        transition(
            obj=memory,
            action="hold",
            actor=HOLDER,
            reason="held before it is trusted: " + "; ".join(said),
            seen_version=memory.row_version,
            request_id=request_id,
        )


def unreleased(memory: Memory) -> bool:
    """Whether the memory was held before it was trusted and no person has approved it since,
    whatever happened to it in between (killed, restored, frozen, undone): what the two-person
    rule asks a second person for before its words are in force."""
    from memory_review.audit.models import Transition  # the trail, read for this memory alone

    moves = Transition.objects.filter(memory_id=memory.pk)
    last_hold = moves.filter(action="hold").order_by("-pk").values_list("pk", "created_at").first()
    if last_hold is None:
        return False
    approved = moves.filter(pk__gt=last_hold[0], action="approve", actor__startswith="user:").exists()
    confirmed = DualControl.objects.filter(
        memory_id=memory.pk, kind=DualControl.Kind.APPROVE, outcome="confirmed", decided_at__gte=last_hold[1]
    ).exists()  # a second person agreed to put it in force, whichever move that was
    return not (approved or confirmed)


class RulesRefused(ValueError):
    """Trust rules that name no class we know; nothing is written."""


def set_rules(tenant, *, hold_classes, by: str) -> TrustRules:
    """Keep which trust classes the tenant holds for a person (sealed; one row a tenant)."""
    unknown = sorted(set(hold_classes) - set(trust.CLASSES))
    if unknown:
        raise RulesRefused(
            f"unknown trust class {', '.join(unknown)}; the classes are {', '.join(trust.CLASSES)}"
        )
    if trust.PERSON in hold_classes:
        raise RulesRefused("a person's words cannot be held for their provenance: hold what they say instead")

    def fill(rules: TrustRules) -> None:
        rules.hold_classes = ",".join(name for name in trust.CLASSES if name in set(hold_classes))
        rules.changed_by, rules.changed_at = by, timezone.now()

    with acting_as(by):
        return save_one_row(TrustRules, tenant, fill)
