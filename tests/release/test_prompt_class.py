"""Prompt classification: the rendered contract read from prompt text, and the class of each kind of change.

Cases edit one hand-written prompt (tests/lint_cases/good_review_result.j2, rendered by hand here: its only
template code is the version pins and the changed files), so each case shows exactly which change forces
which class, near misses included.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from promptops import load_contract
from promptops.core.shape import OutputShape, compile_shape
from promptops.core.versioning import SchemaVersion
from promptops.release import classify_prompt, rendered_contract
from promptops.render.renderer import Renderer
from tests.helpers import REPO_ROOT
from tests.release.conftest import unreleased_copy

CONTRACT = load_contract(REPO_ROOT, "review-result")
SCHEMA_10: dict[str, object] = json.loads((REPO_ROOT / "versions/review-result/schemas/1.0.json").read_text("utf-8"))
BASE = (
    (REPO_ROOT / "tests/lint_cases/good_review_result.j2")
    .read_text(encoding="utf-8")
    .replace("{{ prompt_version }}", "1.0.0")
    .replace("{{ schema_version }}", "1.0")
    .replace("{% for path in changed_files %}\n- {{ path | json }}\n{% endfor %}", '- "src/a.py"\n')
)


def _shape(version: str, *, cwe: bool = False, required_cwe: bool = False) -> OutputShape:
    schema = copy.deepcopy(SCHEMA_10)
    item = schema["properties"]["findings"]["items"]  # type: ignore[index]
    if cwe:
        item["properties"]["cwe"] = {"type": "string"}
    if required_cwe:
        item["required"].append("cwe")
    return compile_shape(schema, SchemaVersion.parse(version), "findings", f"schemas/{version}.json")


def _edit(text: str, *replacements: tuple[str, str]) -> str:
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


CWE_OPTIONAL = ("- `rule_id` (string)", "- `rule_id` (string)\n- `cwe` (string)")
CWE_REQUIRED = ("- `message` (string, non-empty)", "- `message` (string, non-empty)\n- `cwe` (string)")


@pytest.mark.parametrize(
    ("new_text", "new_shape", "change", "kinds"),
    [
        pytest.param(BASE, _shape("1.0"), "patch", [], id="identical"),
        pytest.param(
            _edit(BASE, ("You review a code change.", "You are reviewing a change; be terse.")),
            _shape("1.0"),
            "patch",
            [],
            id="wording-only",
        ),
        pytest.param(
            _edit(BASE, ("- `confidence` (string): one of", "- `confidence` (string, a word): one of")),
            _shape("1.0"),
            "major",
            ["rule_changed"],
            id="type-text-reworded",
        ),
        pytest.param(
            _edit(BASE, ("`low`, `info`", "`low`, `info`, `trivial`")),
            _shape("1.0"),
            "major",
            ["enum_set_changed"],
            id="enum-value-added",
        ),
        pytest.param(
            _edit(BASE, (", `style`, `test`", ", `style`")),
            _shape("1.0"),
            "major",
            ["enum_set_changed"],
            id="enum-value-removed",
        ),
        pytest.param(
            _edit(BASE, ("- `rule_id` (string)\n", "")),
            _shape("1.0"),
            "major",
            ["field_no_longer_restated"],
            id="optional-field-dropped",
        ),
        pytest.param(
            _edit(
                BASE,
                ("- `end_line` (integer, >= 1)\n", ""),
                (
                    "- `message` (string, non-empty)\n",
                    "- `message` (string, non-empty)\n- `end_line` (integer, >= 1)\n",
                ),
            ),
            _shape("1.0"),
            "major",
            ["status_changed"],
            id="optional-became-required",
        ),
        pytest.param(
            _edit(BASE, CWE_OPTIONAL, ("schema_version 1.0", "schema_version 1.1")),
            _shape("1.1", cwe=True),
            "minor",
            ["schema_retargeted", "field_restated"],
            id="retarget-minor-new-optional-field",
        ),
        pytest.param(
            _edit(BASE, CWE_OPTIONAL),
            _shape("1.0", cwe=True),
            "minor",
            ["field_restated"],
            id="newly-restated-optional-field",
        ),
        pytest.param(
            _edit(BASE, CWE_REQUIRED),
            _shape("2.0", cwe=True, required_cwe=True),
            "major",
            ["schema_retargeted", "field_restated"],
            id="new-schema-major-new-required-field",
        ),
        pytest.param(BASE, _shape("2.0"), "major", ["schema_retargeted"], id="retarget-major-only"),
        pytest.param(
            _edit(BASE, ('- "src/a.py"', '- "src/a.py"\n- "src/b.py"'), ("- `summary` (string)", "- `summary` (text)")),
            _shape("1.0"),
            "major",
            ["rule_changed"],
            id="changed-files-are-no-fields-but-summary-is",
        ),
        pytest.param(
            _edit(BASE, ('- "src/a.py"', '- "src/a.py"\n- "src/b.py"\n- `notes` (string)')),
            _shape("1.0"),
            "patch",
            [],
            id="near-miss-non-field-list-items",
        ),
    ],
)
def test_prompt_change_classes(new_text: str, new_shape: OutputShape, change: str, kinds: list[str]) -> None:
    old = rendered_contract(BASE, _shape("1.0"))
    new = rendered_contract(new_text, new_shape)
    comparison = classify_prompt(old, new)
    assert comparison.change == change
    assert [d.kind for d in comparison.differences] == kinds
    assert comparison.to_dict()["change"] == change


def test_retarget_to_an_older_minor_is_major() -> None:
    old = rendered_contract(_edit(BASE, CWE_OPTIONAL), _shape("1.1", cwe=True))
    new = rendered_contract(BASE, _shape("1.0"))
    comparison = classify_prompt(old, new)
    assert comparison.change == "major"
    assert comparison.differences[0].message == "retargeted from schema 1.1 to 1.0: an older schema of the same major"


def test_rendered_contract_of_the_real_head(tmp_path: Path) -> None:
    """The head template's render, read like lint reads it: every schema field with its status and enums."""
    root = unreleased_copy(tmp_path / "project")
    text = Renderer(root).render(CONTRACT, changed_files=["src/app.py"]).text
    contract = rendered_contract(text, CONTRACT.shape(SchemaVersion(1, 0)))
    fields = {f"{level}.{name}": field for (level, name), field in contract.fields.items()}
    assert sorted(fields) == sorted(
        [f"top.{n}" for n in ("schema_version", "prompt_version", "findings", "summary", "meta")]
        + [f"item.{n}" for n in CONTRACT.shape(SchemaVersion(1, 0)).item.properties]
    )
    assert fields["item.line"].statuses == {"required"} and fields["item.line"].rules == {"integer, >= 1"}
    assert fields["item.confidence"].statuses == {"optional"}
    assert fields["item.severity"].enum == frozenset({"critical", "high", "medium", "low", "info"})
    assert fields["top.summary"].enum is None


@pytest.mark.parametrize("base", ["good_review_result.j2", "own_words_table.j2"])
def test_hand_written_rules_refactored_to_the_partials_is_a_patch(project: Path, base: str) -> None:
    """Release 1.0.0 states the rules by hand (in a list, or in tables and its own words); 1.0.1 renders the
    same rules through the shared partials. The rendered contract is unchanged, so the change is a patch."""
    from promptops.lint import head_lint
    from promptops.release import CutRequest, plan_cut, write_release

    cases = REPO_ROOT / "tests" / "lint_cases"
    head = project / "templates" / "review-result.j2"
    partial_head = head.read_text(encoding="utf-8")  # the fixture's head renders through the partials
    head.write_text((cases / base).read_text(encoding="utf-8"), encoding="utf-8")
    first = plan_cut(project, CutRequest("review-result", "2025-06-02T09:30:00Z", lint=head_lint()))
    assert not first.refused, first.refusals
    write_release(project, first)
    head.write_text(partial_head.replace('prompt_version = "1.0.0"', 'prompt_version = "1.0.1"'), encoding="utf-8")

    second = plan_cut(project, CutRequest("review-result", "2025-06-03T09:30:00Z", lint=head_lint()))

    assert second.prompt is not None and not second.refused, second.refusals
    assert second.prompt.computed == "patch", [d.message for d in second.prompt.comparison.differences]  # type: ignore[union-attr]
