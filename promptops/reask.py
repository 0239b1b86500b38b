"""The re-ask loop of the agent-output contract: "Validate every agent response with this schema; retry up to 2 times on
invalid JSON", re-asking with "Your previous response was invalid. Respond only with valid JSON matching this
schema".

``Asker.ask`` renders the contract's prompt (by default the release its parser policy pins, see
``version_to_render``), calls the model, and parses the answer with the versions the prompt pins as the
request's versions. A *rejected* answer (the parser's reject reasons: invalid JSON,
missing required top-level fields, wrong versions...) is re-asked up to ``max_retries`` times (default 2):
the conversation grows by the model's answer and a re-ask rendered from ``templates/_reask.j2``, which names
the reject reason and the first few diagnostic messages. An *accepted* answer ends the loop even when
findings were dropped: those are per-finding losses the parser already reports, and re-asking would trade
them for a fresh set of uncertainties.

Each attempt is a trace step in the agent-output contract's shape, ``{agent, started_at, finished_at, tokens_used,
status}``, extended with what per-version retry rates need (attempt, reason, contract, versions, run id).
When the loop ends, all of a run's steps go to the trace sink in one ``record_trace(steps)`` call, also when
the model raised (the failed step is recorded, then the exception propagates).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, Protocol

from promptops.core.contract import Contract
from promptops.core.errors import PolicyError
from promptops.core.policy import ParserPolicy
from promptops.core.versioning import PromptVersion, prompt_accepted, schema_accepted
from promptops.parsing import ChangedFiles, ParseOutcome, Parser
from promptops.render.renderer import RenderedPrompt, Renderer

REASK_TEMPLATE = "_reask.j2"
MODEL_ERROR = "model_error"  # the reason of a step whose model call raised


class Message(NamedTuple):
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class ModelReply:
    text: str
    tokens_used: int | None = None  # as the provider reports it; None when unknown


# A model: the conversation so far in, its answer out (a plain string when token counts are unknown).
Model = Callable[[Sequence[Message]], "ModelReply | str"]


@dataclass(frozen=True)
class TraceStep:
    """One attempt. ``to_dict`` is exactly agent-output's trace step; ``to_record`` adds the rest for the store."""

    agent: str
    started_at: str  # ISO 8601, UTC
    finished_at: str
    tokens_used: int | None
    status: Literal["ok", "failed"]
    attempt: int  # 1 for the first ask, 2... for re-asks
    reason: str | None  # the reject reason (or model_error) of a failed step
    contract: str
    prompt_version: str
    schema_version: str
    run_id: str  # shared by the steps of one ask

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent": self.agent, "started_at": self.started_at, "finished_at": self.finished_at}
        if self.tokens_used is not None:  # tokens_used?: number
            out["tokens_used"] = self.tokens_used
        out["status"] = self.status
        return out

    def to_record(self) -> dict[str, Any]:
        return {
            **self.to_dict(),
            "tokens_used": self.tokens_used,
            "attempt": self.attempt,
            "reason": self.reason,
            "contract": self.contract,
            "prompt_version": self.prompt_version,
            "schema_version": self.schema_version,
            "run_id": self.run_id,
        }


class TraceSink(Protocol):
    """Where trace steps go: anything with ``record_trace``; called once per ask with all its steps, in
    attempt order. The DuckDB diagnostics store implements it; ``MemorySink`` keeps them in a list."""

    def record_trace(self, steps: Sequence[TraceStep]) -> None: ...


class MemorySink:
    """A TraceSink that keeps every run's steps in memory (tests, notebooks)."""

    def __init__(self) -> None:
        self.traces: list[tuple[TraceStep, ...]] = []

    def record_trace(self, steps: Sequence[TraceStep]) -> None:
        self.traces.append(tuple(steps))

    @property
    def steps(self) -> list[TraceStep]:
        return [step for trace in self.traces for step in trace]


@dataclass(frozen=True)
class ReaskPolicy:
    max_retries: int = 2  # re-asks after the first attempt (the agent-output contract: "retry up to 2 times")
    template: str = REASK_TEMPLATE  # under templates/
    max_problems: int = 3  # diagnostic messages quoted in a re-ask


@dataclass(frozen=True)
class AskResult:
    outcome: ParseOutcome  # of the last attempt
    steps: tuple[TraceStep, ...]
    prompt: RenderedPrompt
    messages: tuple[Message, ...]  # the whole conversation, the last answer included

    @property
    def accepted(self) -> bool:
        return self.outcome.accepted

    @property
    def attempts(self) -> int:
        return len(self.steps)

    @property
    def recovered(self) -> bool:
        """Accepted only after at least one re-ask."""
        return self.accepted and self.attempts > 1


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Asker:
    """Asks one contract's prompt of a model, re-asking on rejection; build once and reuse."""

    def __init__(
        self,
        renderer: Renderer,
        contract: Contract,
        *,
        policy: ParserPolicy | None = None,
        reask: ReaskPolicy | None = None,
        sink: TraceSink | None = None,
        agent: str | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if reask is not None and reask.max_retries < 0:
            raise PolicyError(f"max_retries must be >= 0, not {reask.max_retries}")
        self._renderer = renderer
        self._contract = contract
        self._policy = policy or contract.default_policy
        self._parser = Parser(contract, self._policy)
        self._reask = reask or ReaskPolicy()
        self._sink = sink
        self._agent = agent or contract.name
        self._clock = clock

    def ask(
        self,
        model: Model,
        *,
        changed_files: Sequence[str],
        diff: str = "",
        variables: Mapping[str, Any] | None = None,
        version: PromptVersion | None = None,
        run_id: str | None = None,
    ) -> AskResult:
        prompt = self._renderer.render(
            self._contract,
            version=self.version_to_render(version),
            changed_files=changed_files,
            diff=diff,
            variables=variables,
        )
        self._check_pins(prompt)
        changed = ChangedFiles(changed_files)
        run = run_id or uuid.uuid4().hex
        messages: list[Message] = [Message("user", prompt.text)]
        steps: list[TraceStep] = []
        outcome: ParseOutcome | None = None
        try:
            for attempt in range(1, self._reask.max_retries + 2):
                if outcome is not None:
                    messages.append(Message("user", self.reask_text(outcome, attempt - 1, prompt)))
                started = self._clock()
                try:
                    reply = _reply(model(tuple(messages)))
                except Exception:
                    steps.append(self._step(prompt, run, attempt, started, None, None))
                    raise
                finished = self._clock()
                messages.append(Message("assistant", reply.text))
                outcome = self._parser.parse(
                    reply.text,
                    changed,
                    schema_version=prompt.pins.schema_text,
                    prompt_version=prompt.pins.prompt_text,
                )
                steps.append(self._step(prompt, run, attempt, started, finished, reply, outcome))
                if outcome.accepted:
                    break
        finally:
            if self._sink is not None and steps:
                self._sink.record_trace(tuple(steps))
        assert outcome is not None
        return AskResult(outcome, tuple(steps), prompt, tuple(messages))

    def version_to_render(self, version: PromptVersion | None = None) -> PromptVersion | None:
        """The prompt ``ask`` renders: ``version`` when given; else the release the parser policy pins when
        its frozen snapshot exists (what ``render --version`` renders), else None for the head template.

        The head may run ahead of the release the parser serves (review-result's head pins 1.1.1 while its
        policy pins 1.0.0); rendering it would get every answer refused, so the policy decides.
        """
        if version is not None:
            return version
        pinned = self._policy.prompt_version
        return pinned if self._renderer.snapshot_template(self._contract.name, pinned).is_file() else None

    def reask_text(self, outcome: ParseOutcome, attempt: int, prompt: RenderedPrompt) -> str:
        """The re-ask after rejected ``outcome`` of ``attempt``, naming the reason and the first problems."""
        ranked = sorted(outcome.diagnostics, key=lambda d: {"error": 0, "warning": 1}.get(d.level, 2))
        problems = [d.message for d in ranked if d.level in ("error", "warning")][: self._reask.max_problems]
        fields = self._contract.versions
        pinned = {
            name: value
            for name, value in ((fields.prompt, prompt.pins.prompt_text), (fields.schema, prompt.pins.schema_text))
            if name is not None
        }
        return self._renderer.render_file(
            self._reask.template,
            {
                "reason": str(outcome.reason),
                "problems": problems,
                "attempt": attempt,
                "retries_left": self._reask.max_retries - attempt + 1,
                "contract": self._contract,
                "schema": self._contract.shape(prompt.pins.schema_version),
                "pinned": pinned,
                "changed_files": list(prompt.changed_files),
            },
        )

    def _check_pins(self, prompt: RenderedPrompt) -> None:
        """A prompt whose pins the parser refuses fails every attempt, whatever the model writes: stop now.

        For every contract: where the request states the versions they are the pins; where the answer
        declares them, the prompt tells the model to write the pins, so a faithful answer is refused too.
        """
        policy, pins = self._policy, prompt.pins
        refused = []
        if not schema_accepted(policy.schema_floor, pins.schema_version):
            refused.append(f"schema_version {pins.schema_text} (floor {policy.schema_floor})")
        allow = policy.allow_prompt_patch_drift
        if not prompt_accepted(policy.prompt_version, pins.prompt_version, allow_patch_drift=allow):
            refused.append(f"prompt_version {pins.prompt_text} (pinned {policy.prompt_version})")
        if refused:
            raise PolicyError(f"{prompt.template}: the parser would refuse {' and '.join(refused)} on every answer")

    def _step(
        self,
        prompt: RenderedPrompt,
        run: str,
        attempt: int,
        started: datetime,
        finished: datetime | None,
        reply: ModelReply | None,
        outcome: ParseOutcome | None = None,
    ) -> TraceStep:
        accepted = outcome is not None and outcome.accepted
        if outcome is None:
            reason: str | None = MODEL_ERROR
        else:
            reason = None if outcome.reason is None else str(outcome.reason)
        return TraceStep(
            agent=self._agent,
            started_at=_iso(started),
            finished_at=_iso(finished or self._clock()),
            tokens_used=reply.tokens_used if reply is not None else None,
            status="ok" if accepted else "failed",
            attempt=attempt,
            reason=reason,
            contract=self._contract.name,
            prompt_version=prompt.pins.prompt_text,
            schema_version=prompt.pins.schema_text,
            run_id=run,
        )


def _reply(value: Any) -> ModelReply:
    if isinstance(value, ModelReply):
        return value
    if isinstance(value, str):
        return ModelReply(value)
    raise TypeError(f"a model must return a str or a ModelReply, not {type(value).__name__}")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
