"""Re-ask runs driven by scripted fake models (the model is the one external part; the Asker, renderer,
parser and store are real), for the store's trace and rate tests."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

from promptops import PromptVersion, load_contract
from promptops.reask import Asker, MemorySink, ModelReply, TraceSink, TraceStep
from promptops.render.renderer import Renderer
from tests.helpers import CHANGED, REPO_ROOT, Script, finding, response

START = datetime(2025, 5, 1, tzinfo=UTC)
INVALID = "Sure! The query concatenates user_id."  # rejected: invalid_json
VERSIONS = ("1.0.0", "1.1.0")  # review-result releases: 1.0.0 pins schema 1.0, 1.1.0 pins 1.1
# Answer scripts by shape: accepted at once, recovered after one or two re-asks, given up, or the model raising.
SHAPES = ("ok", "bad ok", "bad bad ok", "bad bad bad", "error", "bad error")


def valid(prompt_version: str = "1.0.0") -> str:
    schema = "1.1" if prompt_version == "1.1.0" else "1.0"
    return json.dumps(response([finding(1)], prompt_version=prompt_version, schema_version=schema))


class Tee:
    """Hands each run to several sinks: the store under test, and a MemorySink to compute expectations from."""

    def __init__(self, *sinks: TraceSink) -> None:
        self._sinks = sinks

    def record_trace(self, steps: Sequence[TraceStep]) -> None:
        for sink in self._sinks:
            sink.record_trace(steps)


def ticking(start: datetime = START, step: timedelta = timedelta(milliseconds=250)) -> Callable[[], datetime]:
    def moments() -> Iterator[datetime]:
        moment = start
        while True:
            yield moment
            moment += step

    clock = moments()
    return lambda: next(clock)


def review_asker(sink: TraceSink, prompt_version: str, clock: Callable[[], datetime], agent: str = "Sec") -> Asker:
    contract = load_contract(REPO_ROOT, "review-result")
    policy = contract.default_policy.with_overrides(prompt_version=PromptVersion.parse(prompt_version))
    return Asker(Renderer(REPO_ROOT), contract, policy=policy, sink=sink, agent=agent, clock=clock)


def drive(sink: TraceSink, runs: int, *, seed: int = 3, step: timedelta = timedelta(minutes=37)) -> MemorySink:
    """``runs`` asks of review-result across both releases and every SHAPE, with a clock that crosses days;
    every run goes to ``sink`` and to the returned MemorySink."""
    rng = random.Random(seed)
    memory = MemorySink()
    both = Tee(sink, memory)
    clock = ticking(step=step)
    askers = {version: review_asker(both, version, clock) for version in VERSIONS}
    for index in range(runs):
        version = rng.choice(VERSIONS)
        shape = rng.choice(SHAPES).split()
        answers = [_answer(word, version, 300 + index) for word in shape]
        with contextlib.suppress(TimeoutError):  # the failed step is recorded, then the error propagates
            askers[version].ask(Script(*answers), changed_files=CHANGED, run_id=f"run-{seed}-{index:04d}")
    return memory


def _answer(word: str, prompt_version: str, tokens: int) -> str | ModelReply | Exception:
    if word == "ok":
        return ModelReply(valid(prompt_version), tokens_used=tokens)
    if word == "bad":
        return INVALID
    return TimeoutError("provider timed out")
