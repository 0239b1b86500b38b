"""One loader for the hand-kept files (promptops.core.specs): each kind of file, one mistake, one line naming the file,
the line and the key. Each row edits a valid file once (old text -> new text) and reads it with the real reader."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from promptops.cli.review_gate import load_topology
from promptops.core.contract import load_contract
from promptops.core.errors import PromptopsError
from promptops.core.lock import ReleaseLock, dump_lock, parse_lock
from promptops.lint import RULES_BY_CODE, contracts, parse_config
from promptops.lint.rules import UNSUPPRESSIBLE
from promptops.rollout.plan import load_plan
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.release.test_lock import _release
from tests.rollout.plans import PLAN

LOCK = dump_lock(ReleaseLock("x", (_release("1.0.0"), _release("1.0.1")), True))
CONTRACT = (REPO_ROOT / "versions" / "review-result" / "contract.yaml").read_text(encoding="utf-8")
PYPROJECT = "[project]\nname = 'x'\n\n[tool.promptops.lint]\nignore = ['PO006']\n\n[tool.promptops.review-gate]\n"
RECORD = '{"response_id": "r1", "raw": "{}", "changed_files": ["a.py"]}\n'


def _plan(tmp: Path, text: str) -> None:
    (tmp / "review-1.1.yaml").write_text(text, encoding="utf-8")
    load_plan(tmp / "review-1.1.yaml", "rollout/review-result/review-1.1.yaml")


def _contract(tmp: Path, text: str) -> None:
    shutil.copytree(REPO_ROOT / "versions" / "review-result", tmp / "versions" / "review-result")
    (tmp / "versions" / "review-result" / "contract.yaml").write_text(text, encoding="utf-8")
    load_contract(tmp, "review-result")
    contracts.load(tmp, "review-result", None)  # as lint reads it: the features' sections too (merge: ...)


def _pyproject(tmp: Path, text: str) -> None:
    (tmp / "pyproject.toml").write_text(text, encoding="utf-8")
    parse_config(text, "pyproject.toml", RULES_BY_CODE, UNSUPPRESSIBLE)
    load_topology(tmp)


KINDS: dict[str, tuple[str, Callable[[Path, str], object]]] = {
    "plan": (PLAN, _plan),
    "lock": (LOCK, lambda tmp, text: parse_lock(text, "x", "versions/x/releases.yaml")),
    "contract": (CONTRACT, _contract),
    "pyproject": (PYPROJECT, _pyproject),
}

P, C = "rollout/review-result/review-1.1.yaml", "versions/review-result/contract.yaml"
L = "versions/x/releases.yaml"
# (kind, old text, new text, the whole message)
TABLE = [
    ("plan", "weight: 0.25,", "weight: 1.5,", f"{P}: line 13: steps[2].weight: must be a number from 0 to 1"),
    ("plan", "weight: 0.25,", "weight: yes,", f"{P}: line 13: steps[2].weight: must be a number from 0 to 1"),
    ("plan", "unit: pr", "unit: team", f"{P}: line 6: unit: must be one of pr, repo, request"),
    ("plan", "unit: pr\n", "", f"{P}: line 2: unit: required, one of pr, repo, request"),
    ("plan", "salt: review-1.1", "salt: '  '", f"{P}: line 7: salt: must be a non-empty string"),
    ("plan", "alpha: 0.05", "alpah: 0.05", f"{P}: line 8: alpah: unknown key (check the spelling)"),
    (
        "plan",
        "min_responses: 300",
        "min_responses: 2.5",
        f"{P}: line 12: steps[1].min_responses: must be a whole number from 0 to 1,000,000,000",
    ),
    (
        "plan",
        "min_duration: 24h}\n  - {name: ramp",
        "min_duration: 1 day}\n  - {name: ramp",
        f"{P}: line 12: steps[1].min_duration: '1 day' is not a duration such as 30m, 24h or 14d",
    ),
    (
        "plan",
        "slo: 0.2, severity: warning",
        "slo: 0.2, severity: low",
        f"{P}: line 18: slos.coercion.severity: must be one of critical, warning",
    ),
    (
        "plan",
        "weight: 0.25,",
        "weight: 0.01,",
        f"{P}: line 13: steps[2].weight: weights never decrease: a unit in a slice stays in it",
    ),
    (
        "plan",
        'schema_version: "1.1"',
        "schema_version: 1.1",
        f'{P}: line 5: candidate.schema_version: must be a quoted version string such as "1.0"',
    ),
    (
        "lock",
        "  status: released\n",
        "  status: live\n",
        f"{L}: line 12: key 'releases[0].status': must be one of deprecated, released, withdrawn",
    ),
    ("lock", "  note: n\n", "", f"{L}: line 6: key 'releases[0].note': required, a string"),
    (
        "lock",
        "  note: n\n",
        "  note: n\n  by: me\n",
        f"{L}: line 12: key 'releases[0].by': unknown key (check the spelling)",
    ),
    ("contract", "max_depth: 256", "max_depth: 0", f"{C}: line 33: key 'limits.max_depth': must be a positive integer"),
    (
        "contract",
        "null_means_absent: false",
        "null_means_absent: maybe",
        f"{C}: line 24: key 'null_means_absent': must be true or false",
    ),
    (
        "contract",
        'schema_floor: "1.0"',
        "schema_floor: 1.0",
        f"{C}: line 41: key 'policy.schema_floor': must be a quoted version string such as \"1.0\"",
    ),
    ("plan", "alpha: 0.05", "1: 0.05", f"{P}: line 2: every key must be a string"),
    (
        "contract",
        "default: 0.6 ",
        "default: 6 ",
        f"{C}: line 54: key 'merge.confidence.default': must be a number from 0 to 1",
    ),
    (
        "contract",
        "map: {high: 0.8,",
        "map: {high: 8,",
        f"{C}: line 53: key 'merge.confidence.map': must be a mapping whose values are each a number from 0 to 1",
    ),
    (
        "pyproject",
        "ignore = ['PO006']",
        "ignore = 'PO006'",
        "pyproject.toml: line 5: tool.promptops.lint.ignore: must be a list of strings",
    ),
    (
        "pyproject",
        "ignore = ['PO006']",
        "ignore = ['PO999']",
        "pyproject.toml: line 5: tool.promptops.lint.ignore: unknown rule code or prefix 'PO999'",
    ),
    (
        "pyproject",
        "[tool.promptops.review-gate]\n",
        "[tool.promptops.review-gate]\nevidence_root = 3\n",
        "pyproject.toml: line 8: tool.promptops.review-gate.evidence_root: must be a string",
    ),
    (
        "pyproject",
        "[tool.promptops.review-gate]\n",
        "[tool.promptops.reviewgate]\n",
        "pyproject.toml: line 7: tool.promptops.reviewgate: unknown key (check the spelling)",
    ),
]


@pytest.mark.parametrize(("kind", "old", "new", "message"), TABLE, ids=[f"{r[0]}-{r[3].split(': ')[2]}" for r in TABLE])
def test_one_mistake_is_one_line_naming_file_line_and_key(
    tmp_path: Path, kind: str, old: str, new: str, message: str
) -> None:
    good, read = KINDS[kind]
    read(tmp_path, good)  # the unedited file reads
    assert old in good
    edited = tmp_path / "edited"
    edited.mkdir()
    with pytest.raises(PromptopsError) as info:
        read(edited, good.replace(old, new, 1))
    assert str(info.value) == message


JSONL = [
    ('{"response_id": "r2", "changed_files": ["a.py"]}', "missing required field 'raw'"),
    ('{"response_id": "r2", "raw": 5}', "field 'raw': expected str, got int"),
    ('{"raw": "{}", "changed_files": "a.py"}', "field 'changed_files': expected array | null, got str"),
    ("[1, 2]", "not a JSON object"),
]


@pytest.mark.parametrize(("line", "problem"), JSONL)
def test_a_bad_jsonl_record_is_named_by_its_line_in_the_stores_words(
    project: Path, cli: Cli, tmp_path: Path, line: str, problem: str
) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text(RECORD + line + "\n", encoding="utf-8")
    code, _, err = cli(project, "validate", "--contract", "review-result", "--batch", str(batch))
    assert (code, err) == (3, f"promptops: {batch}:2: {problem}\n")
