"""What an assessment's requests cost, and asking Jev one question set: shared by both
pipelines (invalidation and promotion)."""

import time
from dataclasses import dataclass, field

from memory_review.ops import metrics

from .jev import Jev, JevError, JevReply, cost_usd


@dataclass
class Usage:
    """What an assessment's requests cost, counted as they come back."""

    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    model: str | None = None
    standin: bool = False
    failure: JevError | None = None

    def fail(self, exc: JevError) -> None:
        self.requests += 1
        self.retries += exc.tries - 1
        self.failure = self.failure or exc
        metrics.JEV_REQUESTS.labels("failed").inc()
        metrics.JEV_RETRIES.inc(exc.tries - 1)

    def add(self, reply: JevReply) -> None:
        self.requests += 1
        self.retries += reply.tries - 1
        self.input_tokens += reply.input_tokens
        self.model = reply.model
        self.standin = self.standin or reply.standin
        metrics.JEV_REQUESTS.labels("ok").inc()
        metrics.JEV_RETRIES.inc(reply.tries - 1)
        metrics.JEV_INPUT_TOKENS.inc(reply.input_tokens)
        metrics.JEV_COST.inc(float(cost_usd(reply.input_tokens)))
        metrics.JEV_LATENCY.observe(reply.latency_ms / 1000)

    def fields(self) -> dict:
        """The Assessment columns these figures fill."""
        return {
            "requests": self.requests,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "cost_usd": cost_usd(self.input_tokens),
            "latency_ms": round((time.monotonic() - self.started) * 1000),
            "model_name": self.model,
            "offline_standin": self.standin,
        }


def ask_one(jev: Jev, state: dict, questions: dict, usage: Usage, **bounds) -> dict[str, float]:
    """A single request, counted in `usage` whether it succeeds or fails (`bounds`: Jev.ask's)."""
    try:
        reply = jev.ask(state, questions, **bounds)
    except JevError as exc:
        usage.fail(exc)
        raise
    usage.add(reply)
    return reply.votes
