"""The review gate's rules one by one: stages, selection, parsing, roles, signals, verdicts, topology."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from promptops.cli.review_gate import load_topology
from promptops.core.outcomes import ExitCode, exit_code
from promptops.review_gate import (
    Checkpoint,
    ConsensusParseError,
    EvidenceRefs,
    Reason,
    ReasonCode,
    ReviewGateError,
    ReviewPolicy,
    ReviewResult,
    ReviewSignal,
    Role,
    Stage,
    Topology,
    Verdict,
    infer_role,
    parse_consensus,
    resolve_stage,
    select_latest,
)
from promptops.review_gate.consensus import ConsensusRecord
from promptops.review_gate.signals import (
    Origin,
    Severity,
    SignalKind,
    consensus_signals,
    parse_failure_signal,
)
from promptops.review_gate.topology import check_spec_id
from promptops.review_gate.verdict import (
    Resolution,
    display_verdict,
    enforce_invariant,
    resolve,
)

# --- stage to checkpoint --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "checkpoint", "slug", "note"),
    [
        (Stage.PLAN, Checkpoint.AFTER_PLAN, "plan", None),
        (Stage.TASKS, Checkpoint.AFTER_TASKS, "tasks", None),
        (Stage.AUDIT, Checkpoint.BEFORE_UNLOCK, "audit", None),
        (Stage.IMPLEMENT, Checkpoint.AFTER_IMPLEMENT, "implement", None),
        (Stage.VALIDATE, Checkpoint.AFTER_VALIDATE, "validate", None),
        (Stage.UNLOCK, Checkpoint.BEFORE_UNLOCK, "audit", "Reviewing Audit output"),
    ],
)
def test_stage_table(stage: Stage, checkpoint: Checkpoint, slug: str, note: str | None) -> None:
    resolution = resolve_stage(stage)
    assert resolution.checkpoint is checkpoint
    assert checkpoint.stage_slug == slug
    assert resolution.note == note


def test_specify_is_not_applicable_with_the_seed_message() -> None:
    resolution = resolve_stage(Stage.SPECIFY)
    assert resolution.checkpoint is None
    assert not resolution.applicable
    assert resolution.note == "Run /speckit.status or review Plan"


def test_stage_names_are_case_insensitive() -> None:
    assert Stage.parse("unlock") is Stage.UNLOCK
    assert Stage.parse(" PLAN ") is Stage.PLAN
    with pytest.raises(ValueError, match="unknown stage 'review'"):
        Stage.parse("review")


# --- file selection -------------------------------------------------------------------------------


def test_selection_is_the_lexicographic_max_of_matching_names() -> None:
    names = [
        "spec-plan_claude_20251121.json",
        "spec-plan_gemini_20251101.json",  # max: 'g' > 'c', whatever the date says
        "spec-plan_Zeta_20991231.json",  # uppercase sorts before lowercase (code point order)
        "spec-plans_zz.json",  # another pattern
        "spec-plan_zzz.txt",  # not .json
        "spec-plan_.json",  # matches: '*' may be empty
        "xspec-plan_zzz.json",
        "spec-tasks_zzz.json",
    ]
    assert select_latest(names, "plan") == "spec-plan_gemini_20251101.json"
    assert select_latest(names, "audit") is None
    assert select_latest(["spec-plan_.json"], "plan") == "spec-plan_.json"


@given(st.lists(st.from_regex(r"spec-(plan|tasks)_[a-zA-Z0-9_]{0,8}\.json", fullmatch=True), max_size=8))
def test_selection_ignores_order_and_picks_the_max(names: list[str]) -> None:
    matching = [n for n in names if n.startswith("spec-plan_")]
    expected = max(matching) if matching else None
    assert select_latest(names, "plan") == expected
    assert select_latest(list(reversed(names)), "plan") == expected


# --- ConsensusJson parsing ------------------------------------------------------------------------


def _parse(document: Any) -> ConsensusRecord:
    return parse_consensus(json.dumps(document).encode())


def test_unknown_fields_are_ignored_and_null_means_absent() -> None:
    record = _parse(
        {
            "agent": "claude",
            "model": None,
            "extra": [1, {"x": 2}],
            "consensus": {"conflicts": None, "synthesis_status": "ok", "votes": 3},
        }
    )
    assert record == ConsensusRecord(agent="claude", synthesis_status="ok")
    assert _parse({}) == ConsensusRecord()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b'{"agent": "a",',
            "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 15",
        ),
        (b"[]", "expected a JSON object at the top level, found an array"),
        (b'{"agent": 42}', "field 'agent': expected a string or null, found a number"),
        (b'{"error": true}', "field 'error': expected a string or null, found a boolean"),
        (b'{"consensus": []}', "field 'consensus': expected an object or null, found an array"),
        (
            b'{"consensus": {"conflicts": "x"}}',
            "field 'consensus.conflicts': expected an array of strings or null, found a string",
        ),
        (
            b'{"consensus": {"conflicts": ["a", 2]}}',
            "field 'consensus.conflicts[1]': expected a string, found a number",
        ),
        (b'{"agent": "a", "agent": "b"}', "field 'agent' appears more than once"),
        (b'{"consensus": {"conflicts": NaN}}', "invalid JSON: NaN is not valid JSON"),
        (
            b'\xef\xbb\xbf{"agent": "a"}',
            "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1 column 1",
        ),
        (b'{"agent": "\xff"}', "invalid UTF-8 at byte 11"),
        (b"[" * 100_000, "invalid JSON: nesting too deep"),
    ],
)
def test_parse_failures_name_the_problem(raw: bytes, message: str) -> None:
    with pytest.raises(ConsensusParseError) as caught:
        parse_consensus(raw)
    assert str(caught.value) == message


def test_a_repeated_unknown_field_is_not_a_failure() -> None:
    assert parse_consensus(b'{"note": 1, "note": 2, "agent": "a"}').agent == "a"


# --- signals --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "role"),
    [
        ("gpt-architect", Role.ARCHITECT),
        ("Code-Implementer", Role.IMPLEMENTER),
        ("implementer-validator", Role.IMPLEMENTER),  # first keyword in table order wins
        ("validator", Role.VALIDATOR),
        ("release-judge", Role.JUDGE),
        ("auditor", Role.JUDGE),
        ("sidecar", Role.SIDECAR_CRITIC),
        ("plan-critic", Role.SIDECAR_CRITIC),
        ("claude", Role.UNKNOWN),
        ("", Role.UNKNOWN),
        (None, Role.UNKNOWN),
    ],
)
def test_role_inference(agent: str | None, role: Role) -> None:
    assert infer_role(agent) is role


def test_each_conflict_blocks_with_the_inferred_role_and_error_is_advisory_from_system() -> None:
    record = ConsensusRecord(agent="gpt-architect", error="", conflicts=("a", ""))
    signals = consensus_signals(record, "ev/spec-plan_x.json")
    assert [(s.kind, s.severity, s.origin, s.role, s.message) for s in signals] == [
        (SignalKind.CONTRADICTION, Severity.BLOCK, Origin.ROLE, Role.ARCHITECT, "a"),
        (SignalKind.CONTRADICTION, Severity.BLOCK, Origin.ROLE, Role.ARCHITECT, ""),  # fail closed
        (SignalKind.OTHER, Severity.ADVISORY, Origin.SYSTEM, None, ""),  # an empty error is still present
    ]
    assert all(s.evidence_path == "ev/spec-plan_x.json" for s in signals)


def test_parse_failure_message_format_is_exact() -> None:
    signal = parse_failure_signal("docs/e/spec-plan_a.json", "invalid JSON: x")
    assert signal.message == "Failed to parse consensus file: docs/e/spec-plan_a.json: invalid JSON: x"
    assert (signal.kind, signal.severity, signal.origin) == (
        SignalKind.OTHER,
        Severity.ADVISORY,
        Origin.SYSTEM,
    )


def test_signals_refuse_absolute_evidence_paths() -> None:
    with pytest.raises(ValueError, match="repo-relative"):
        parse_failure_signal("/abs/spec-plan_a.json", "x")


# --- invariant, verdicts and exit codes -----------------------------------------------------------

_BLOCK = ReviewSignal(SignalKind.CONTRADICTION, Severity.BLOCK, Origin.ROLE, "c", role=Role.UNKNOWN)
_ADVISE = ReviewSignal(SignalKind.OTHER, Severity.ADVISORY, Origin.SYSTEM, "e")


def test_invariant_turns_autoapply_with_blocking_signals_into_escalate() -> None:
    assert enforce_invariant(Resolution.AUTO_APPLY, [_ADVISE, _BLOCK]) is Resolution.ESCALATE
    assert enforce_invariant(Resolution.AUTO_APPLY, [_ADVISE]) is Resolution.AUTO_APPLY
    assert enforce_invariant(Resolution.ESCALATE, []) is Resolution.ESCALATE


@given(
    agent=st.none() | st.text(max_size=12),
    conflicts=st.none() | st.lists(st.text(max_size=5), max_size=4),
    error=st.none() | st.text(max_size=5),
)
def test_autoapply_never_has_blocking_signals(
    agent: str | None, conflicts: list[str] | None, error: str | None
) -> None:
    record = ConsensusRecord(agent=agent, error=error, conflicts=None if conflicts is None else tuple(conflicts))
    signals = consensus_signals(record, "ev/spec-plan_x.json")
    resolution = resolve(signals)
    assert (resolution is Resolution.ESCALATE) == bool(conflicts)
    if resolution is Resolution.AUTO_APPLY:
        assert not any(s.blocking for s in signals)


@pytest.mark.parametrize(
    ("resolution", "signals", "verdict"),
    [
        (Resolution.AUTO_APPLY, [], Verdict.PASSED),
        (Resolution.AUTO_APPLY, [_ADVISE], Verdict.PASSED_WITH_WARNINGS),
        (Resolution.ESCALATE, [_BLOCK], Verdict.FAILED),
        (None, [], Verdict.SKIPPED),
    ],
)
def test_display_verdict(resolution: Resolution | None, signals: list[ReviewSignal], verdict: Verdict) -> None:
    assert display_verdict(resolution, signals) is verdict


@pytest.mark.parametrize(
    ("verdict", "strict_warnings", "strict_artifacts", "code"),
    [
        (Verdict.PASSED, True, True, 0),
        (Verdict.PASSED_WITH_WARNINGS, False, True, 0),
        (Verdict.PASSED_WITH_WARNINGS, True, False, 1),
        (Verdict.FAILED, False, False, 2),
        (Verdict.FAILED, True, True, 2),
        (Verdict.SKIPPED, True, False, 0),
        (Verdict.SKIPPED, False, True, 2),
        (Verdict.NOT_APPLICABLE, True, True, 0),
    ],
)
def test_exit_code_table(verdict: Verdict, strict_warnings: bool, strict_artifacts: bool, code: int) -> None:
    assert exit_code(verdict, strict_warnings=strict_warnings, strict_artifacts=strict_artifacts) == code
    assert code in {ExitCode.OK, ExitCode.WARNINGS, ExitCode.FAILED}  # the library's numbers are the CLI's


# --- topology, repo-relative ----------------------------------------------------------------------


def test_topology_defaults_are_the_seed_constants() -> None:
    topology = Topology()
    assert topology.spec_packet("S-1") == "docs/S-1"
    assert topology.consensus("S-1") == "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/S-1"
    assert topology.commands("S-1") == "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/commands/S-1"


def test_topology_normalizes_harmless_spellings() -> None:
    assert Topology(evidence_root="./review//evidence/").evidence_root == "review/evidence"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"evidence_root": "/var/evidence"}, "evidence_root: must be a repo-relative path"),
        ({"evidence_root": "C:/evidence"}, "evidence_root: must be a repo-relative path"),
        ({"consensus_dir": "..\\votes"}, "consensus_dir: must be a repo-relative path"),
        ({"commands_dir": "a/../../b"}, "commands_dir: must not contain '..'"),
        ({"spec_packet_root": ""}, "spec_packet_root: must be a non-empty string"),
        ({"spec_packet_root": "."}, "spec_packet_root: must name a directory inside the repo"),
        ({"evidence_root": 3}, "line 2: tool.promptops.review-gate.evidence_root: must be a string"),
        ({"consensus_directory": "votes"}, "line 2: tool.promptops.review-gate.consensus_directory: unknown key"),
    ],
)
def test_topology_rejects_paths_that_could_leave_the_repo(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in data.items())
    (tmp_path / "pyproject.toml").write_text(f"[tool.promptops.review-gate]\n{lines}", encoding="utf-8")
    with pytest.raises(ReviewGateError, match=rf"^{tmp_path.as_posix()}/pyproject.toml: ") as caught:
        load_topology(tmp_path)
    assert message in str(caught.value)


@pytest.mark.parametrize("spec_id", ["", " ", ".", "..", "a/b", "a\\b", "../SPEC-1"])
def test_spec_ids_are_one_path_segment(spec_id: str) -> None:
    with pytest.raises(ReviewGateError, match="invalid SPEC-ID"):
        check_spec_id(spec_id)


def test_result_refuses_autoapply_with_blocking_signals() -> None:
    with pytest.raises(ValueError, match="invariant"):
        ReviewResult(
            spec_id="S",
            requested_stage=Stage.PLAN,
            evaluated_checkpoint=Checkpoint.AFTER_PLAN,
            stage_note=None,
            verdict=Verdict.PASSED,
            resolution=Resolution.AUTO_APPLY,
            reason=Reason(ReasonCode.CLEAN, "x"),
            artifacts_collected=1,
            signals=(_BLOCK,),
            evidence_refs=EvidenceRefs(),
            consensus=None,
            telemetry=None,
            policy=ReviewPolicy(),
        )
