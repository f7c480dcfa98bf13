"""Offline, deterministic stand-in for TypeSafe's System One HTTP API: a test double, not a model.

It answers with lexical heuristics so the real `typesafe_sdk` client can run against it in tests and
demos, and it injects scripted or seeded faults (429, 500, hang, malformed body).

SDK reference (typesafe-sdk 0.7.5, read from its source)
--------------------------------------------------------
Client: `TypeSafeClient(api_key=, model=, retry=, timeout=, headers=, transport=, http_client=,
base_url=, compression=)`; explicit arguments beat env vars, blank env values are ignored.
  * `TYPESAFE_API_KEY` (required, else `TypeSafeError` at construction), `TYPESAFE_BASE_URL`
    (default `https://api.typesafe.ai`, trailing `/` stripped, `/v1/...` is appended, so no `/v1`
    in it), `TYPESAFE_DEFAULT_MODEL` (default `jev-latest`), `TYPESAFE_LOG_LEVEL`.
  * `timeout`: seconds or `httpx2.Timeout`, default 10.0, applied per HTTP operation (connect,
    read, write, pool), not as a deadline; no env var; `system_one(timeout=)` overrides per call.
  * `retry`: `RetryPolicy(max_retries=2, backoff_initial=0.5, backoff_max=5.0, backoff_jitter=0.25,
    http_statuses={408, 429, 500..599}, respect_retry_after=True, api_connection_error=True,
    api_timeout_error=True, timeout=30.0)`. Retries happen inside the SDK by default, sleeping
    `retry-after-ms`/`retry-after` when present (uncapped except by the 30 s budget), and send
    `X-TypeSafe-Retry-Count: n`. `RetryPolicy(max_retries=0)` turns them off, client-wide or per
    call via `system_one(retry=)`.
  * `compression`: `None` means zstd when `compression.zstd`/`backports.zstd` is importable (it is
    not in this venv), used for bodies of 1024+ bytes with `Content-Encoding: zstd`; `False` off.
Requests carry `Authorization: Bearer <key>`, `Accept` and `Content-Type: application/json`,
`User-Agent`/`X-TypeSafe-SDK: typesafe-sdk/0.7.5` and `X-TypeSafe-Runtime`.
  * `POST /v1/systemone` body: `{"state": str|object|array, "model": str, "questions": {name: q}}`,
    with `extra_body` merged on top. `q` is `{"type": "noul", "instructions"?, "criteria"?:
    {"true"?, "false"?}}`, `{"type": "choice", "instructions"?, "criteria": {label: desc|null}}`,
    `{"type": "score", "instructions"?, "criteria": [desc, ...]}` (level = index) or `{"type":
    "box", ...}`; unset fields are omitted. Image assets switch the body to multipart/form-data.
  * `GET /v1/models` (`client.models.list()`): `{"models": [{"name", "description",
    "release_date"}]}`.
Success body: `{"model": str, "answers": {name: answer}, "usage": {"input_tokens": int,
"output_tokens": int}}`, answers `{"type": "noul", "noul": p}`, `{"type": "choice", "choice",
"confidence", "probabilities": {label: p}}`, `{"type": "score", "score", "confidence", "legend":
{"0": desc}, "probabilities": {"0": p}}`. `SystemOneResponse` exposes `.model` (the model that
answered, e.g. `jev-1.13.0` for the alias `jev-latest`), `.usage.input_tokens`/`.output_tokens`,
`.answers`, `.nouls`, `.choices`, `.scores` (legend/probability keys become ints), `.request_id`
(header `x-typesafe-request-id`; raises `TypeSafeError` when absent) and `.raw_http_response`.
Errors (all `TypeSafeError`): non-2xx → `TypeSafeAPIError` with `.status`, `.body`, `.headers`,
`.endpoint`, `.request_id`; 400 BadRequest, 401 Authentication, 403 PermissionDenied, 404 NotFound,
422 UnprocessableEntity, 429 `TypeSafeRateLimitError` (`.retry_after_ms`, float ms or None),
5xx `TypeSafeInternalServerError`. A 2xx body that is not valid JSON or misses fields →
`TypeSafeAPIResponseValidationError` (a `TypeSafeAPIError` with status 200 and `.field_path`, not
retried). Timeouts → `TypeSafeAPITimeoutError` (`.timeout`; also a `TimeoutError` and a subclass
of `TypeSafeAPIConnectionError`, itself a `ConnectionError`). The message of an error body comes
from `error`, `error.message`, `message` or `detail`.

This stand-in answers `jev-latest` as `StandinConfig.model` and echoes any other model name.
Faults apply to `POST /v1/systemone` only. Every response carries `x-typesafe-standin: true`.
Noul ids `directive`, `hypothetical`, `bears_i`, `still_true_i`, `replaces_i`, `partial_i` and
`screen_i` read `event.text` and `memories[i].fact`; `supported`, `scope_fits` and `conflict` read
`claim` (top level or under `candidate`), `scope`, `source` and the facts under `current_facts`,
`governing`, `guidelines` or `existing`. Any other question compares the fields its instructions
name in backticks, and Choice and Score spread probability by word overlap with their criteria.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import random
import re
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

SYSTEM_ONE_PATH = "/v1/systemone"
MODELS_PATH = "/v1/models"
MODEL_ALIAS = "jev-latest"
FAULTS = ("429", "500", "hang", "malformed")


@dataclass
class StandinConfig:
    latency_ms: float = 0
    rate_429: float = 0
    retry_after_s: float = 1
    rate_500: float = 0
    rate_hang: float = 0
    hang_s: float = 30
    rate_malformed: float = 0
    seed: int = 0
    model: str = "jev-1.13.0"
    # Consumed one entry per System One request before the rates apply, so tests can stage faults.
    script: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        rates = (self.rate_429, self.rate_500, self.rate_hang, self.rate_malformed)
        if any(not 0 <= rate <= 1 for rate in rates) or sum(rates) > 1:
            raise ValueError("fault rates must each be in [0, 1] and sum to at most 1")
        unknown = set(self.script) - {*FAULTS, "ok"}
        if unknown:
            raise ValueError(f"unknown script entries: {sorted(unknown)}")


# --- Answers: pure functions of (state, question, question id, seed) -----------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the and or but of to in on at for from by with as is are was were be been being it its "
    "this that these those we our us i me my you your he she they them their there here will would "
    "can could should do does did has have had go goes going now not no all every so than then "
    "into about just also".split()
)
_DIRECTIVE = re.compile(
    r"ignore (all |any )?(previous|prior|above|earlier)|disregard|\bforget\b|remember that"
    r"|mark (everything|all|every)|\[\[memory_update|update your memor|you must (now )?believe"
    r"|from now on,? (you|assume|treat|believe)"
)
_HYPOTHETICAL = re.compile(
    r"\?|\bwhat if\b|\bshould we\b|\bplan(ning)? to\b|\bmight\b|\bmaybe\b|\bperhaps\b"
    r"|\bconsidering\b|\bthinking (about|of)\b|\bcould we\b|\bwould it\b|\bsuppose\b|\bif we\b"
)
_REPLACEMENT = re.compile(
    r"\bnow\b|\bchanged?\b|\bmov(e|ed|ing)\b|\binstead\b|\bswitch(ed)?\b|\breplac(e|ed|ing)\b"
    r"|\bupdated?\b|\brenamed?\b|\bnew\b|\bfrom (monday|today|tomorrow|next)\b"
)
_RETRACTION = re.compile(
    r"\bnot\b|n't\b|\bnever\b|\bno longer\b|\bcancel(l?ed)?\b|\bstop(ped)?\b|\bdiscontinued\b"
    r"|\bfalse\b|\bwrong\b|\bincorrect\b"
)
# Outages and one-offs don't make a standing fact false.
_TRANSIENT = re.compile(r"\bdown\b|\boutage\b|\bfor an hour\b|\bthis morning\b|\btemporar|\bjust today\b")
_NEGATION = re.compile(r"\bnot\b|n't\b|\bnever\b|\bno longer\b|\bno\b")
_PARTIAL = re.compile(r"\bonly\b|\bexcept\b|\bbut\b|\bpartly\b|\bpartially\b|\bsome(times)?\b|\bunless\b")
_LIMITED = re.compile(
    r"\bonce\b|one[- ]time|\bexception\b|\bthis (customer|order|time)\b|\border \d|\bonly\b"
)
_GENERAL = re.compile(r"\balways\b|\ball\b|\bany\b|\bevery(one)?\b|\bare allowed\b|\bin general\b")
_PERSONAL_SCOPE = re.compile(r"\b(user|personal|private|individual|me)\b")
_SHARED_SCOPE = re.compile(r"\b(team|org|organi[sz]ation|company|global|shared|project|workspace)\b")
_PERSONAL_VOICE = re.compile(r"\b(i|i'm|my|me|mine)\b")
_SHARED_VOICE = re.compile(r"\b(we|our|us|team|everyone|company)\b")
_MEMORY_QUESTION = re.compile(r"^(bears|still_true|replaces|partial|screen)_(\d+)$")
_PATH = re.compile(r"`([^`]+)`")


def text_of(value: Any) -> str:
    """Flatten any JSON value into the text the heuristics read."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(text_of(item) for item in value.values())
    if isinstance(value, list):
        return " ".join(text_of(item) for item in value)
    return "" if value is None else str(value)


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    # A six-letter prefix is a crude stem that lets "deliver" meet "deliveries".
    return frozenset(word[:6] for word in _WORD.findall(text.lower()) if word not in _STOPWORDS)


def _overlap(a: str, b: str) -> float:
    """Share of the smaller text's content words that the other text also uses."""
    left, right = _terms(a), _terms(b)
    return len(left & right) / min(len(left), len(right)) if left and right else 0.0


def _relatedness(a: str, b: str) -> float:
    """Map lexical overlap to a probability: none gives 0.08, 60% or more saturates at 0.95."""
    return 0.08 + 0.87 * min(1.0, _overlap(a, b) / 0.6)


# json.dumps(value, sort_keys=True, default=str), without making an encoder on every call: an
# answer's jitter hashes its key, eighty times a request.
_KEY_JSON = json.JSONEncoder(sort_keys=True, default=str)


def _unit_hash(*parts: Any) -> float:
    return _unit_of(_KEY_JSON.encode(parts))


def _unit_of(text: str) -> float:
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _answer_unit(digest: str, qid: str, question: dict[str, Any], seed: int) -> float:
    """`_unit_hash(digest, qid, question, seed)`, the same bytes hashed, with the question's
    JSON kept per distinct question: a request's eighty are the same templates every time, and
    encoding each again was a third of the stand-in's work on a request."""
    try:
        criteria = question.get("criteria")
        if (
            len(question) == 3
            and type(question.get("type")) is str
            and type(question.get("instructions")) is str
            and type(criteria) is dict
            and all(type(value) is str or value is None for value in criteria.values())
        ):
            # The shape every question the app asks has, all text: its key built without a loop
            # (sorted keys make the JSON the same whichever order the key was taken in).
            encoded = _noul_json(question["type"], question["instructions"], tuple(criteria.items()))
        else:
            encoded = _question_json(tuple((name, *_typed(value)) for name, value in question.items()))
    except TypeError:  # a value that cannot be a key (a list): encoded as it is
        encoded = _KEY_JSON.encode(question)
    return _unit_of(f"[{_key_part(digest)}, {_key_part(qid)}, {encoded}, {_key_part(seed)}]")


def _key_part(value: Any) -> str:
    """`_KEY_JSON.encode(value)`: what the encoder writes for a string or an integer, without
    the call through it."""
    if type(value) is str:
        return json.encoder.encode_basestring_ascii(value)
    return int.__repr__(value) if type(value) is int else _KEY_JSON.encode(value)


def _typed(value: Any) -> tuple:
    """A question's value as part of a cache key that tells what JSON tells apart: True from 1,
    1.0 from 1 (equal, and equally hashed, in Python)."""
    if isinstance(value, dict):
        return dict, tuple((key, type(item), item) for key, item in value.items())
    return type(value), value


@functools.lru_cache(maxsize=4096)
def _question_json(frozen: tuple) -> str:
    return _KEY_JSON.encode(
        {
            name: {key: item for key, _, item in value} if kind is dict else value
            for name, kind, value in frozen
        }
    )


@functools.lru_cache(maxsize=4096)
def _noul_json(kind: Any, instructions: Any, criteria: tuple) -> str:
    return _KEY_JSON.encode({"type": kind, "instructions": instructions, "criteria": dict(criteria)})


def _probability(value: float, unit: float) -> float:
    # A small keyed jitter (`unit`, the answer's key hashed) keeps numbers from looking canned
    # while staying reproducible.
    jittered = value + (unit - 0.5) * 0.04
    return round(min(0.99, max(0.01, jittered)), 3)


def _resolve(state: Any, path: str) -> Any:
    node = state
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path.removeprefix("state.")):
        if index:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return None
    return node


def _path_texts(state: Any, instructions: Any) -> list[str]:
    resolved = (_resolve(state, path) for path in _PATH.findall(text_of(instructions)))
    return [text_of(value) for value in resolved if value is not None]


@functools.lru_cache(maxsize=256)
def _event_cues(event: str) -> tuple[bool, bool, bool, bool, bool]:
    """The event's cues, read once per event rather than once per question about it."""
    return tuple(
        bool(pattern.search(event))
        for pattern in (_DIRECTIVE, _HYPOTHETICAL, _TRANSIENT, _REPLACEMENT, _RETRACTION)
    )


def _invalidation(state: dict[str, Any], qid: str) -> float | None:
    """Noul heuristics for an event against remembered facts; None when the layout doesn't fit."""
    raw_event = state.get("event")
    event = text_of(raw_event.get("text") if isinstance(raw_event, dict) else raw_event).lower()
    directive, hypothetical, transient, replacement, retraction = _event_cues(event)
    if qid == "directive":
        return 0.92 if directive else 0.05
    if qid == "hypothetical":
        return 0.88 if hypothetical else 0.06
    match = _MEMORY_QUESTION.match(qid)
    memories = state.get("memories")
    if not match or not isinstance(memories, list) or int(match[2]) >= len(memories):
        return None
    memory = memories[int(match[2])]
    fact = text_of(memory.get("fact") if isinstance(memory, dict) else memory)
    bears = _relatedness(event, fact)
    # Instructions to the assistant, open questions and one-offs report no lasting change.
    credible = 0.15 if directive or hypothetical or transient else 1.0
    kind = match[1]
    if kind == "bears":
        return bears
    if kind == "screen":
        return bears + 0.08
    if kind == "still_true":
        return 1 - 0.92 * bears * credible * (1.0 if replacement or retraction else 0.1)
    if kind == "replaces":
        return bears * credible * (0.95 if replacement else 0.35 if retraction else 0.05)
    # A move that leaves much of the fact unmentioned changed a detail, not the central claim.
    detail_changed = replacement and not retraction and len(_terms(fact) - _terms(event)) >= 3
    return max(0.05, bears * (0.7 if _PARTIAL.search(event) else 0.55 if detail_changed else 0.2))


def _promotion(state: dict[str, Any], qid: str) -> float | None:
    """Noul heuristics for promoting a claim to shared memory; None when the layout doesn't fit."""
    # The claim sits at the top level or under `candidate`, and the facts it may contradict under
    # any of the names the app has used for them.
    candidate = state["candidate"] if isinstance(state.get("candidate"), dict) else state
    if "claim" not in candidate:
        return None
    claim, source = text_of(candidate["claim"]).lower(), text_of(state.get("source")).lower()
    if qid == "supported":
        covered = len(_terms(claim) & _terms(source)) / max(1, len(_terms(claim)))
        hedged = 0.5 if _HYPOTHETICAL.search(source) else 1.0
        return (0.05 + 0.92 * min(1.0, max(0.0, covered - 0.3) / 0.5)) * hedged
    if qid == "scope_fits":
        scope = text_of(candidate.get("scope", state.get("scope"))).lower()
        voice = f"{claim} {source}"
        personal, shared = _PERSONAL_VOICE.search(voice), _SHARED_VOICE.search(voice)
        mismatch = (
            (_LIMITED.search(source) and not _LIMITED.search(claim))
            or (_GENERAL.search(claim) and not _GENERAL.search(source))
            or (_PERSONAL_SCOPE.search(scope) and shared and not personal)
            or (_SHARED_SCOPE.search(scope) and personal and not shared)
        )
        return 0.22 if mismatch else 0.94
    if qid == "conflict":
        keys = ("current_facts", "governing", "guidelines", "existing")
        facts = [fact for key in keys if isinstance(state.get(key), list) for fact in state[key]]
        return max((_conflict(claim, text_of(fact).lower()) for fact in facts), default=0.04)
    return None


def _conflict(claim: str, fact: str) -> float:
    # Same subject with a differing value ("Lyon" vs "Paris") reads as a contradiction.
    values_differ = bool(_terms(claim) - _terms(fact)) and bool(_terms(fact) - _terms(claim))
    if bool(_NEGATION.search(claim)) != bool(_NEGATION.search(fact)):
        factor = 0.9
    elif values_differ and _overlap(claim, fact) >= 0.5:
        factor = 0.75
    else:
        factor = 0.12
    # A one-off exception doesn't contradict the rule it is an exception to.
    one_off = _LIMITED.search(claim) and not _GENERAL.search(claim)
    return max(0.04, _relatedness(claim, fact) * factor * (0.4 if one_off else 1.0))


def _noul(state: Any, qid: str, question: dict[str, Any]) -> float:
    estimate = None
    if isinstance(state, dict):
        estimate = _invalidation(state, qid) if "event" in state else _promotion(state, qid)
    if estimate is None:
        texts = _path_texts(state, question.get("instructions"))
        if len(texts) >= 2:
            estimate = _relatedness(texts[0], " ".join(texts[1:]))
        else:
            estimate = 0.15 + 0.7 * _unit_hash(state, qid, question)
    return estimate


def _distribution(subject: str, options: list[str], key: tuple[Any, ...]) -> list[float]:
    """Softmax over each option's word overlap with the subject, plus a keyed tie-breaker."""
    subject_terms = _terms(subject)
    scores = [
        len(_terms(option) & subject_terms) + 0.6 * _unit_hash(*key, i) for i, option in enumerate(options)
    ]
    weights = [math.exp(1.5 * (score - max(scores))) for score in scores]
    return [round(weight / sum(weights), 3) for weight in weights]


def state_digest(state: Any) -> str:
    return hashlib.sha256(_KEY_JSON.encode(state).encode()).hexdigest()


def answer(
    state: Any, qid: str, question: dict[str, Any], seed: int, digest: str | None = None
) -> dict[str, Any]:
    """Answer one validated question from only the state, the question, its id and the seed.

    `digest` is `state_digest(state)`, computed once per request by the caller: hashing a
    100-memory state for each of its 100 questions would make the stand-in, not Jev, the cost."""
    digest = digest or state_digest(state)
    key = (digest, qid, question, seed)
    if question["type"] == "noul":
        unit = _answer_unit(digest, qid, question, seed)
        return {"type": "noul", "noul": _probability(_noul(state, qid, question), unit)}
    subject = " ".join(_path_texts(state, question.get("instructions"))) or text_of(state)
    if question["type"] == "choice":
        labels = list(question["criteria"])
        options = [f"{label} {text_of(question['criteria'][label])}" for label in labels]
        probabilities = dict(zip(labels, _distribution(subject, options, key), strict=True))
        choice = max(labels, key=probabilities.__getitem__)
        return {
            "type": "choice",
            "choice": choice,
            "confidence": probabilities[choice],
            "probabilities": probabilities,
        }
    if question["type"] == "score":
        levels = question["criteria"]
        distribution = _distribution(subject, [text_of(level) for level in levels], key)
        return {
            "type": "score",
            "score": round(sum(i * p for i, p in enumerate(distribution)), 3),
            "confidence": max(distribution),
            "legend": {str(i): level for i, level in enumerate(levels)},
            "probabilities": {str(i): p for i, p in enumerate(distribution)},
        }
    raise ValueError(f"unsupported question type {question['type']!r}")  # validation refuses these


def validation_errors(body: Any) -> list[dict[str, Any]]:
    """The 422 `detail` entries the real API would return, in its FastAPI shape."""
    if not isinstance(body, dict):
        return [_detail(["body"], "Input should be an object", "model_type")]
    errors = [
        _detail(["body", name], "Field required", "missing")
        for name, kinds in (("model", str), ("state", str | dict | list))
        if not isinstance(body.get(name), kinds)
    ]
    questions = body.get("questions")
    if not isinstance(questions, dict) or not questions:
        return [*errors, _detail(["body", "questions"], "Should have at least 1 item", "too_short")]
    for name, question in questions.items():
        problem = _question_problem(question if isinstance(question, dict) else {})
        if problem:
            errors.append(_detail(["body", "questions", name], problem, "value_error"))
    return errors


def _detail(loc: list[str], msg: str, kind: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": kind}


def _question_problem(question: dict[str, Any]) -> str | None:
    criteria = question.get("criteria")
    if question.get("type") == "noul" and question.get("instructions") is not None:
        return None  # nearly every question asked: valid whatever its criteria (below, in full)
    described = isinstance(criteria, dict) and any(value is not None for value in criteria.values())
    checks = {
        "noul": (
            question.get("instructions") is not None or described,
            "Noul needs instructions or criteria",
        ),
        "choice": (
            isinstance(criteria, dict) and bool(criteria),
            "Choice criteria must be a nonempty object",
        ),
        "score": (isinstance(criteria, list) and bool(criteria), "Score criteria must be a nonempty list"),
        "box": (False, "Box questions need an image asset, which this stand-in does not accept"),
    }
    valid, problem = checks.get(str(question.get("type")), (False, "type must be noul, choice, score or box"))
    return None if valid else problem


def respond(body: dict[str, Any], config: StandinConfig) -> dict[str, Any]:
    """Build the System One response body for a validated request."""
    digest = state_digest(body["state"])
    answers = {
        qid: answer(body["state"], qid, question, config.seed, digest)
        for qid, question in body["questions"].items()
    }
    # The real API counts model tokens; four characters a token is close enough for usage demos.
    text = json.dumps([body["state"], body["questions"]], separators=(",", ":"))
    return {
        "model": config.model if body["model"] == MODEL_ALIAS else body["model"],
        "answers": answers,
        "usage": {"input_tokens": max(1, len(text) // 4), "output_tokens": len(answers)},
    }


# --- HTTP --------------------------------------------------------------------------------------


class StandinServer:
    """The stand-in bound to a port: `start()`/`stop()` in-process, or `run_forever()` to block."""

    def __init__(self, config: StandinConfig | None = None, host: str = "127.0.0.1", port: int = 0):
        self.config = config or StandinConfig()
        self._httpd = _HTTPServer((host, port), _Handler, self)
        self._lock = threading.Lock()
        self._script = deque(self.config.script)
        self._random = random.Random(self.config.seed)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.request_count = 0
        self.system_one_count = 0

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> StandinServer:
        # Idempotent, so `with serve() as server:` doesn't run two loops that stop() can't both end.
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping through latency or a hang
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def run_forever(self) -> None:
        try:
            self._httpd.serve_forever()
        finally:
            self._stopping.set()
            self._httpd.server_close()

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def record(self, path: str) -> int:
        """Count a request and return its number, which also names its request id."""
        with self._lock:
            self.request_count += 1
            if path == SYSTEM_ONE_PATH:
                self.system_one_count += 1
            return self.request_count

    def next_fault(self) -> str:
        # The only order-dependent part: one seeded draw per request, under the lock.
        with self._lock:
            if self._script:
                return self._script.popleft()
            draw = self._random.random()
        config = self.config
        for fault, rate in zip(
            FAULTS,
            (config.rate_429, config.rate_500, config.rate_hang, config.rate_malformed),
            strict=True,
        ):
            if draw < rate:
                return fault
            draw -= rate
        return "ok"

    def pause(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when the full pause elapsed."""
        return seconds <= 0 or not self._stopping.wait(seconds)


class _HTTPServer(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops the SYNs of a large event's concurrent batches,
    # and the kernel retries them a second later: a delay Jev itself would not add.
    request_queue_size = 256
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, standin: StandinServer):
        self.standin = standin
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out close their socket before a hung answer is written: expected.
        if isinstance(sys.exc_info()[1], ConnectionError):
            logger.debug("stand-in client %s went away", client_address)
        else:
            logger.exception("stand-in failed to answer %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Longer than the SDK's 30 s keep-alive, so the server never closes a connection it may reuse.
    timeout = 120
    # Headers and body go out in two writes; with Nagle on, each keep-alive reply waits ~40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        standin = self.server.standin
        path = urlsplit(self.path).path
        self.request_number = standin.record(path)
        method = {SYSTEM_ONE_PATH: "POST", MODELS_PATH: "GET"}.get(path)
        if method != self.command:
            # The body is left unread, so this connection can't carry another request.
            self.close_connection = True
            return self._error(
                404 if method is None else 405,
                "Not Found" if method is None else "Method Not Allowed",
            )
        raw = self._read_body() if method == "POST" else b""
        if raw is None:
            self.close_connection = True
            return self._error(411, "Content-Length is required")
        if not (self.headers.get("Authorization") or self.headers.get("X-API-Key")):
            return self._error(401, "Missing API key: send Authorization: Bearer <key>")
        if path == MODELS_PATH:
            return self._send(200, self._models())
        if not standin.pause(standin.config.latency_ms / 1000):
            return
        fault = standin.next_fault()
        if fault == "429":
            seconds = standin.config.retry_after_s
            headers = {"retry-after": f"{seconds:g}", "retry-after-ms": f"{seconds * 1000:g}"}
            return self._error(429, "Rate limit exceeded", headers)
        if fault == "500":
            return self._error(500, "Internal server error (stand-in fault)")
        if fault == "hang" and not standin.pause(standin.config.hang_s):
            self.close_connection = True
            return
        body, problem = self._decode(raw)
        if problem is not None:
            return self._error(*problem)
        errors = validation_errors(body)
        if errors:
            return self._send(422, {"detail": errors})
        payload = json.dumps(respond(body, standin.config)).encode()
        # A body cut mid-stream is what a broken proxy or dropped connection looks like to a client.
        self._send(200, payload[: len(payload) // 2] if fault == "malformed" else payload)

    def _read_body(self) -> bytes | None:
        length = self.headers.get("Content-Length", "")
        return self.rfile.read(int(length)) if length.isdigit() else None

    def _decode(self, raw: bytes) -> tuple[Any, tuple[int, str] | None]:
        if self.headers.get_content_type() == "multipart/form-data":
            return None, (415, "This stand-in does not accept image assets")
        if self.headers.get("Content-Encoding", "").lower() == "zstd":
            try:
                from backports.zstd import decompress  # the SDK's own zstd extra
            except ImportError:
                return None, (
                    415,
                    "zstd bodies need backports.zstd; build the client with compression=False",
                )
            raw = decompress(raw)
        try:
            return json.loads(raw), None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            return None, (400, f"Request body is not valid JSON: {error}")

    def _models(self) -> dict[str, Any]:
        model = self.server.standin.config.model
        description = f"Offline stand-in answering as {model}: lexical heuristics, not a model."
        names = (MODEL_ALIAS, model)
        return {
            "models": [
                {"name": name, "description": description, "release_date": "2026-09-15"} for name in names
            ]
        }

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"detail": message}, headers)

    def _send(self, status: int, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None) -> None:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(content)))
        self.send_header("x-typesafe-request-id", f"req_standin_{self.request_number:06d}")
        self.send_header("x-typesafe-standin", "true")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("stand-in %s - " + format, self.address_string(), *args)


def serve(host: str = "127.0.0.1", port: int = 0, config: StandinConfig | None = None) -> StandinServer:
    """Start a stand-in on a background thread; call `.stop()` (or use it as a context manager)."""
    return StandinServer(config, host, port).start()
