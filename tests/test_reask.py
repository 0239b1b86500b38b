"""The re-ask loop, driven by scripted fake models (the model is the one external part); everything else is
real: the repository's templates and contracts, the renderer and the parser."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from promptops import PolicyError, PromptVersion, SchemaVersion, load_contract
from promptops.reask import Asker, MemorySink, Message, ModelReply, ReaskPolicy
from promptops.render.renderer import Renderer
from tests.helpers import REPO_ROOT, Script, finding, response

CHANGED = ["src/api/users.py", "src/auth/login.py"]
VALID = json.dumps(
    {
        "findings": [
            {
                "id": "SEC-1",
                "title": "SQL built from user input",
                "severity": "critical",
                "category": "security",
                "file": "src/api/users.py",
                "line": 41,
                "message": "user_id is concatenated into the query.",
            }
        ],
        "summary": "One injection.",
    }
)
PROSE = "Sure! I found one problem: the query concatenates user_id."


def ticking_clock(start: datetime = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)) -> Iterator[datetime]:
    moment = start
    while True:
        yield moment
        moment += timedelta(milliseconds=250)


def asker(contract: str = "agent-output", **kwargs: object) -> tuple[Asker, MemorySink]:
    sink = MemorySink()
    clock = ticking_clock()
    built = Asker(
        Renderer(REPO_ROOT),
        load_contract(REPO_ROOT, contract),
        sink=sink,
        clock=lambda: next(clock),
        **kwargs,  # type: ignore[arg-type]
    )
    return built, sink


def test_invalid_then_valid_recovers_with_two_trace_steps() -> None:
    loop, sink = asker(agent="Sec")
    model = Script(ModelReply(PROSE, tokens_used=120), ModelReply(VALID, tokens_used=340))

    result = loop.ask(model, changed_files=CHANGED, diff="+ query = 'SELECT' + user_id\n", run_id="run-1")

    assert result.accepted and result.recovered and result.attempts == 2
    assert result.outcome.result is not None and result.outcome.result["findings"][0]["id"] == "SEC-1"
    assert [s.to_dict() for s in result.steps] == [
        {
            "agent": "Sec",
            "started_at": "2025-01-02T03:04:05.000Z",
            "finished_at": "2025-01-02T03:04:05.250Z",
            "tokens_used": 120,
            "status": "failed",
        },
        {
            "agent": "Sec",
            "started_at": "2025-01-02T03:04:05.500Z",
            "finished_at": "2025-01-02T03:04:05.750Z",
            "tokens_used": 340,
            "status": "ok",
        },
    ]
    assert [(s.attempt, s.reason, s.contract, s.prompt_version, s.schema_version, s.run_id) for s in result.steps] == [
        (1, "invalid_json", "agent-output", "1.0.0", "1.0", "run-1"),
        (2, None, "agent-output", "1.0.0", "1.0", "run-1"),
    ]
    assert sink.traces == [result.steps]  # one call per run, all steps in order


def test_the_reask_names_what_was_wrong_and_continues_the_conversation() -> None:
    loop, _ = asker()
    model = Script(PROSE, VALID)
    result = loop.ask(model, changed_files=CHANGED)

    first, second = model.calls
    assert first == (Message("user", result.prompt.text),)
    assert [m.role for m in second] == ["user", "assistant", "user"]
    assert second[1].content == PROSE
    reask = second[2].content
    assert reask.startswith("Your previous response was invalid (invalid_json), so none of it could be used.")
    invalid = next(loop_outcome_diagnostics(PROSE))
    assert f"- {invalid}" in reask
    assert "Respond again with your complete answer, only valid JSON matching this schema:" in reask
    assert "- `summary` (string)" in reask and "- `severity` (string): one of `critical`, `high`" in reask
    assert "\u00e2\u20ac" not in reask and "\ufffd" not in reask  # no encoding damage in the re-ask text
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]


def loop_outcome_diagnostics(raw: str) -> Iterator[str]:
    """The messages the parser gives for ``raw`` (what the re-ask must quote)."""
    from promptops import Parser

    outcome = Parser(load_contract(REPO_ROOT, "agent-output")).parse(
        raw, CHANGED, schema_version="1.0", prompt_version="1.0.0"
    )
    return iter([d.message for d in outcome.diagnostics if d.level == "error"])


def test_gives_up_after_two_retries() -> None:
    loop, sink = asker()
    model = Script('{"findings": []}', "{'findings': []}", '{"summary": "s", "findings": {}}', VALID)
    result = loop.ask(model, changed_files=CHANGED)
    assert not result.accepted and result.attempts == 3 and len(model.calls) == 3
    assert [(s.status, s.reason) for s in result.steps] == [
        ("failed", "missing_required_field"),
        ("failed", "invalid_json"),
        ("failed", "findings_not_array"),
    ]
    assert [s.tokens_used for s in result.steps] == [None, None, None]
    assert "tokens_used" not in result.steps[0].to_dict()  # tokens_used?: absent when unknown
    assert len(sink.steps) == 3


@pytest.mark.parametrize(("retries", "calls"), [(0, 1), (1, 2), (4, 5)])
def test_max_retries(retries: int, calls: int) -> None:
    loop, _ = asker(reask=ReaskPolicy(max_retries=retries))
    model = Script(*[PROSE] * 6)
    assert loop.ask(model, changed_files=CHANGED).attempts == calls == len(model.calls)


def test_an_accepted_answer_with_dropped_findings_is_not_reasked() -> None:
    loop, _ = asker()
    lossy = json.loads(VALID)
    lossy["findings"][0]["file"] = "not/changed.py"
    result = loop.ask(Script(json.dumps(lossy), VALID), changed_files=CHANGED)
    assert result.accepted and result.attempts == 1 and result.outcome.findings_dropped == 1


def test_a_model_error_is_recorded_then_raised() -> None:
    loop, sink = asker()
    with pytest.raises(TimeoutError):
        loop.ask(Script(PROSE, TimeoutError("provider timed out")), changed_files=CHANGED)
    assert [(s.status, s.reason) for s in sink.steps] == [("failed", "invalid_json"), ("failed", "model_error")]


def test_a_contract_whose_answer_carries_versions_is_reasked_for_them() -> None:
    loop, _ = asker("review-result")
    wrong = json.dumps(response([finding(1)], prompt_version="0.9.0"))
    model = Script(wrong, json.dumps(response([finding(1)])))
    result = loop.ask(model, changed_files=CHANGED)
    assert result.recovered and result.steps[0].reason == "incompatible_version"
    reask = model.calls[1][2].content
    assert "prompt_version 0.9.0 does not match the pinned 1.0.0" in reask
    assert '- `prompt_version` (string): exactly "1.0.0"' in reask


def test_pins_the_parser_refuses_stop_before_the_model_is_called() -> None:
    contract = load_contract(REPO_ROOT, "agent-output")
    policy = contract.default_policy.with_overrides(prompt_version=PromptVersion(1, 1, 0))
    loop, sink = asker(policy=policy)
    model = Script(VALID)
    with pytest.raises(PolicyError, match=r"templates/agent-output.j2: the parser would refuse prompt_version 1.0.0"):
        loop.ask(model, changed_files=CHANGED)
    assert model.calls == [] and sink.traces == []


def test_a_model_must_return_text() -> None:
    loop, _ = asker()
    with pytest.raises(TypeError, match="a model must return a str or a ModelReply, not dict"):
        loop.ask(lambda messages: {"findings": []}, changed_files=CHANGED)  # type: ignore[arg-type,return-value]


def test_by_default_the_release_the_policy_pins_is_rendered_not_the_head() -> None:
    # review-result's head pins 1.1.1 / 1.1 while contract.yaml's policy still pins release 1.0.0.
    renderer = Renderer(REPO_ROOT)
    contract = load_contract(REPO_ROOT, "review-result")
    assert renderer.pins(renderer.resolve(contract)).prompt_text == "1.1.1"
    loop, _ = asker("review-result")
    model = Script(json.dumps(response([finding(1)])))  # a faithful answer to the 1.0.0 prompt

    result = loop.ask(model, changed_files=CHANGED)

    assert result.prompt.template == "versions/review-result/prompts/1.0.0.j2"
    assert (result.prompt.pins.prompt_text, result.prompt.pins.schema_text) == ("1.0.0", "1.0")
    assert result.prompt.text == renderer.render(contract, version=PromptVersion(1, 0, 0), changed_files=CHANGED).text
    assert result.accepted and result.attempts == 1


def test_a_policy_pinning_the_newer_release_renders_that_release() -> None:
    contract = load_contract(REPO_ROOT, "review-result")
    policy = contract.default_policy.with_overrides(prompt_version=PromptVersion(1, 1, 0))
    loop, _ = asker("review-result", policy=policy)
    answer = response([finding(1, cwe="CWE-89")], prompt_version="1.1.0", schema_version="1.1")
    result = loop.ask(Script(json.dumps(answer)), changed_files=CHANGED)
    assert result.prompt.template == "versions/review-result/prompts/1.1.0.j2"
    assert result.accepted and result.steps[0].prompt_version == "1.1.0"


def test_without_a_snapshot_of_the_pinned_release_the_head_is_rendered() -> None:
    loop, _ = asker()  # agent-output has no releases: its head pins what its policy pins
    result = loop.ask(Script(VALID), changed_files=CHANGED)
    assert result.prompt.template == "templates/agent-output.j2" and result.accepted


@pytest.mark.parametrize(
    ("version", "overrides", "refused"),
    [
        # The head's pins: the answer would declare 1.1.1, which the default policy (1.0.0) refuses.
        (PromptVersion(1, 1, 1), {}, r"prompt_version 1.1.1 \(pinned 1.0.0\)"),
        (None, {"schema_floor": SchemaVersion(1, 1)}, r"schema_version 1.0 \(floor 1.1\)"),
    ],
)
def test_a_contract_declaring_versions_is_checked_before_the_model_is_called(
    version: PromptVersion | None, overrides: dict[str, object], refused: str
) -> None:
    contract = load_contract(REPO_ROOT, "review-result")
    loop, sink = asker("review-result", policy=contract.default_policy.with_overrides(**overrides))  # type: ignore[arg-type]
    model = Script(json.dumps(response([finding(1)])))
    with pytest.raises(PolicyError, match=rf": the parser would refuse {refused} on every answer"):
        loop.ask(model, changed_files=CHANGED, version=version)
    assert model.calls == [] and sink.traces == []
