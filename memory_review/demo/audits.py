"""Six weeks of sampled audits for the demo's health page (issue 31): a weekly plan, a sample of
the memories in force that no person reviewed and of the automation's decisions each week, and a
labeler's answers, with one channel that regressed.

The story: two weeks ago an inbox assistant began writing memories from customers' emails. Its
first week was sound. This week it stored what a junk-prone memory store stores (the Mem0 audit
the issue cites found 97.8% of one store was junk): email signatures and auto-replies as facts,
a pleasantry as a preference, memories it had recalled written again as new ones. So the newest
period's estimate for the `email` channel jumps, beyond chance, and the page flags it.

Beside it, each week the support bot writes order updates from chats and the policy decides
them when the next chat comes in, through the pipeline's own code (a verdict applied): most
kept, some superseded by a later status, a few contradicted, and now and then wrongly, as Jev's
votes fall. So each week's sample of the automatic decisions has real kills to audit, and a
labeler finds the ones the policy got wrong.

Every step runs at the time it happened, merged into the stories' timeline (demo/scenarios.py),
through the product's services. Whether an item is wrong follows from what the memory is (the
inbox's junk is not true; a few ordinary memories are wrong, drawn from a fixed seed), never from
which sample drew it, so a memory drawn twice is labeled alike."""

import hashlib
import random
from collections.abc import Callable
from datetime import timedelta

from memory_review.assessments import policy
from memory_review.assessments.models import PolicyVersion
from memory_review.integrity.context import acting_as
from memory_review.memories.models import Memory
from memory_review.memories.services import event_record, memory_write
from memory_review.quality import results, schedule
from memory_review.quality.models import AuditItem
from memory_review.tenancy.models import Tenant

from .history import NAMES, judge, verdict_votes

D = policy.Disposition

SEED = 20261205
AGENT = "inbox-assistant"
WEEKS = 6  # samples of each population, a week apart, the newest a few hours ago
ORDINARY_WRONG = 0.03  # the share of other memories a labeler finds not true
KILLED_TRUE = 0.15  # the share of the automation's kills a labeler finds were true after all
LABELED_OF_NEWEST = 0.8  # the newest samples are still being labeled

# (kind, subject, the memory, the email it was written from)
SOUND = [
    (
        "preference",
        "{name}: invoice copies",
        "{name} wants invoice copies sent to their accounts team by email.",
        "Hi, could you send invoice copies to our accounts team from now on? Thanks, {name}",
    ),
    (
        "fact",
        "{name}: order reference",
        "{name}'s open order is reference SO-{n:05d}.",
        "Hello, I'm writing about my order SO-{n:05d}, which hasn't arrived yet. {name}",
    ),
    (
        "preference",
        "{name}: contact hours",
        "{name} prefers to be contacted before noon.",
        "Please call me in the mornings if you need anything, I'm out in the afternoons. {name}",
    ),
    (
        "fact",
        "{name}: return in progress",
        "{name} has a return open for a damaged {item}.",
        "The {item} arrived with a cracked lid. I've started a return on your site. Regards, {name}",
    ),
]
# What a junk-prone store keeps from the same emails.
JUNK = [
    ("fact", "{name}: email signature", "{name} is 'Kind regards, {name}, sent from my phone'.",
     "Thanks for the update!\n\nKind regards,\n{name}\nSent from my phone"),
    ("preference", "{name}: likes", "{name} likes 'Thanks so much, talk soon!'.",
     "Thanks so much, talk soon! {name}"),
    ("fact", "{name}: availability", "{name} is out of office until Monday with limited access to email.",
     "Automatic reply: I am out of office until Monday with limited access to email. {name}"),
    ("fact", "{name}: recalled", "Recalled memory: {name} wants invoice copies sent to their accounts team.",
     "Re: invoices. As agreed, copies to the accounts team. {name}"),
    ("preference", "{name}: thread", "{name} prefers 'On Tue, Support wrote: > Your order has shipped'.",
     "Great!\n\nOn Tue, Support wrote:\n> Your order has shipped and should arrive on Thursday."),
]  # fmt: skip
ITEMS = ["kettle", "toaster", "blender", "air fryer"]
ORDERS = 24  # the support bot's order updates a week, each decided by the policy within the week
ORDER_TRUTHS = [D.SUPERSEDED] * 3 + [D.CONTRADICTED] * 2 + [D.CONFIRMED]
# What the bot wrote, then what the next chat said, by what became of it.
ORDER_NOTE = "Order SO-{n:05d} ({item}) is packed and waiting for the courier."
ORDER_NEWS = {
    D.CONFIRMED: "Checked SO-{n:05d} for {name}: still packed, the courier collects it tomorrow.",
    D.SUPERSEDED: "{name} asked about SO-{n:05d}: it left the warehouse this morning, with the courier.",
    D.CONTRADICTED: "{name} was told SO-{n:05d} was never packed: the {item} is out of stock, refunded.",
}


class AuditSeeder:
    """The inbox assistant's memories, the plan, the weekly draws and their labels, as steps."""

    def __init__(self, tenant: Tenant, *, users: dict, labeler: str, lead: str, now):
        self.tenant = tenant
        self.labeler = users[labeler]
        self.lead = users[lead]
        self.now = now
        self.rng = random.Random(f"{SEED}:{tenant.slug}")
        self.junk: set[int] = set()
        self.orders: dict[int, str] = {}  # an order update's memory: what became of it
        self._order_of: dict[int, tuple[int, dict]] = {}  # an order's number: its memory, its words

    def steps(self) -> list[tuple[object, Callable[[], None]]]:
        """(when, what) for the stories' timeline to merge in time order."""
        start = self.now - timedelta(days=7 * WEEKS + 1)
        steps: list[tuple[object, Callable[[], None]]] = [(start, self._plan)]
        for n in range(12):  # the inbox's first week: sound
            steps.append(
                (self.now - timedelta(days=13, hours=-12 * n), lambda n=n: self._write(n, junk=False))
            )
        for n in range(34):  # this week: mostly junk
            junk = n % 4 != 0
            steps.append(
                (
                    self.now - timedelta(days=6, hours=-4 * n),
                    lambda n=n, junk=junk: self._write(12 + n, junk=junk),
                )
            )
        for week in range(WEEKS - 1, -1, -1):
            for k in range(ORDERS):
                n = 5000 + week * ORDERS + k
                # Written over four days from six days before the week's draw, each decided two days
                # later: the last an hour before the draw, never at its moment, never in the future.
                written = self.now - timedelta(days=7 * week + 6, hours=-4 * k)
                truth = self._order_rng(n, "truth").choice(ORDER_TRUTHS)
                steps.append((written, lambda n=n, truth=truth: self._order(n, truth)))
                steps.append((written + timedelta(days=2), lambda n=n: self._decide(n)))
            at = self.now - timedelta(days=7 * week, hours=3)
            steps.append((at, lambda week=week: self._draw(week)))
            steps.append(
                (at + timedelta(hours=1 if week == 0 else 20), lambda last=week == 0: self._label(last))
            )
        return steps

    def _plan(self) -> None:
        schedule.set_plan(
            self.tenant, by=f"user:{self.lead.pk}", every_days=7, precision=0.08, confidence=0.95, budget=150,
            share=0.3,
        )  # fmt: skip

    def _write(self, n: int, *, junk: bool) -> None:
        kind, subject, content, email = self.rng.choice(JUNK if junk else SOUND)
        fill = {"name": NAMES[(n * 7) % len(NAMES)], "n": 4100 + n, "item": ITEMS[n % len(ITEMS)]}
        event = event_record(
            tenant=self.tenant, source="email", agent_id=AGENT, user_id=f"cust-{n % 17:02d}",
            text=f"From: {fill['name']}\nSubject: Re: your order\n\n" + email.format(**fill),
        )  # fmt: skip
        memory = memory_write(
            event=event, kind=kind, subject=subject.format(**fill), content=content.format(**fill),
            written_by=f"agent:{AGENT}", agent_id=AGENT, user_id=event.user_id,
        )  # fmt: skip
        if junk:
            self.junk.add(memory.pk)

    def _order_rng(self, n: int, what: str) -> random.Random:
        """Each order's own draws, so the orders never move the inbox's (and so its regression)."""
        return random.Random(f"{SEED}:{self.tenant.slug}:order:{n}:{what}")

    def _order(self, n: int, truth: str) -> None:
        fill = {"name": NAMES[(n * 5) % len(NAMES)], "n": n, "item": ITEMS[n % len(ITEMS)]}
        event = event_record(
            tenant=self.tenant, source="chat", agent_id="support-bot", user_id=f"cust-{n % 23:02d}",
            text=f"Chat with {fill['name']}: where is my order SO-{n:05d}?",
        )  # fmt: skip
        memory = memory_write(
            event=event, kind="fact", subject=f"{fill['name']}: order SO-{n:05d}",
            content=ORDER_NOTE.format(**fill), written_by="agent:support-bot", agent_id="support-bot",
            user_id=event.user_id,
        )  # fmt: skip
        self.orders[memory.pk] = truth
        self._order_of[n] = (memory.pk, fill)

    def _decide(self, n: int) -> None:
        """The next chat about the order, judged and applied as the pipeline does (demo/history.py)."""
        memory_id, fill = self._order_of[n]
        memory, truth = Memory.objects.get(pk=memory_id), self.orders[memory_id]
        version = PolicyVersion.objects.for_tenant(self.tenant).get(mode=PolicyVersion.Mode.ACTIVE)
        event = event_record(
            tenant=self.tenant, source="chat", agent_id="support-bot", user_id=memory.user_id,
            text=ORDER_NEWS[truth].format(**fill),
        )  # fmt: skip
        votes = verdict_votes(truth, self._order_rng(n, "votes"))
        judge(memory, event, votes, version=version, tokens=2100 + len(event.text) // 4)

    def _draw(self, week: int) -> None:
        """The week's draws, each from a seed of its own made from the demo's (every run draws alike)."""
        with acting_as(schedule.SCHEDULE):
            for population in ("unreviewed", "decisions"):
                seed = hashlib.sha256(f"{SEED}:{self.tenant.slug}:{week}:{population}".encode()).hexdigest()
                schedule.draw_for(self.tenant, population, by=schedule.SCHEDULE, seed=seed)

    def _label(self, newest: bool) -> None:
        """The labeler answers every item of the week's samples (most of the newest ones)."""
        for sample in schedule.newest(self.tenant, "unreviewed"), schedule.newest(self.tenant, "decisions"):
            if sample is None:
                continue
            items = list(AuditItem.objects.filter(sample=sample).order_by("rank"))
            if newest:
                items = items[: round(len(items) * LABELED_OF_NEWEST)]
            for item in items:
                decision = sample.strata[item.stratum]["key"]["decision"]
                results.label_record(
                    item=item, labeler=self.labeler, outcome=self._truth(item.memory_id, decision)
                )

    def _truth(self, memory_id: int, decision: str) -> str:
        """Whether the memory is true, the same whichever sample drew it."""
        memory = Memory.objects.get(pk=memory_id)
        draw = random.Random(f"{SEED}:{memory.subject}:{memory.content}").random()
        if memory_id in self.junk:
            return "false"
        if memory_id in self.orders:  # what the next chat said, whatever the policy made of it
            return "true" if self.orders[memory_id] == D.CONFIRMED else "false"
        if decision in results.KILLED:
            return "true" if draw < KILLED_TRUE else "false"
        return "false" if draw < ORDINARY_WRONG else "true"


def junk_of(tenant: Tenant) -> list[Memory]:
    """The inbox assistant's memories (for tests and the README's tour)."""
    return list(Memory.objects.for_tenant(tenant).filter(agent_id=AGENT).order_by("pk"))
