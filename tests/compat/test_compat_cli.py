"""``promptops compat diff``: the JSON of docs/compat.md, readable text, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptops.cli import run
from promptops.core.outcomes import ExitCode

REPO = Path(__file__).resolve().parents[2]
REVIEW_RESULT = REPO / "versions" / "review-result" / "schemas" / "1.0.json"


def _write(path: Path, schema: Any) -> Path:
    path.write_text(json.dumps(schema, indent=2), encoding="utf-8")
    return path


def _with_finding_property(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REVIEW_RESULT.read_text(encoding="utf-8"))
    data["properties"]["findings"]["items"]["properties"][name] = schema
    return data


def test_json_output_is_exactly_the_design_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _write(tmp_path / "new.json", _with_finding_property("fix_hint", {"type": "string"}))
    assert run(["compat", "diff", str(REVIEW_RESULT), str(new), "--format", "json"]) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["change", "backward_compatible", "forward_compatible", "differences"]
    assert out["change"] == "minor"
    assert out["backward_compatible"] is True
    assert out["forward_compatible"] is False  # strict: the old schema rejects the new property
    [difference] = out["differences"]
    assert difference["kind"] == "property_added"
    assert difference["path"] == "$.findings[*].fix_hint"
    assert difference["forward_compatible_tolerant"] is True


def test_major_change_still_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(REVIEW_RESULT.read_text(encoding="utf-8"))
    data["properties"]["findings"]["items"]["required"].append("suggestion")
    new = _write(tmp_path / "new.json", data)
    assert run(["compat", "diff", str(REVIEW_RESULT), str(new), "--format", "json"]) == ExitCode.OK
    out = json.loads(capsys.readouterr().out)
    assert out["change"] == "major"
    assert [d["kind"] for d in out["differences"]] == ["required_added"]


def test_text_output_explains_each_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _with_finding_property("fix_hint", {"type": "string"})
    data["properties"]["findings"]["items"]["properties"]["severity"]["enum"].append("trivial")
    new = _write(tmp_path / "new.json", data)
    assert run(["compat", "diff", str(REVIEW_RESULT), str(new)]) == ExitCode.OK
    text = capsys.readouterr().out
    assert text.splitlines()[0].endswith(": major")
    assert "$.findings[*].severity  enum_extended" in text
    assert "forces major: old parsers reject documents the new schema allows" in text
    assert "alone would force minor" in text


def test_annotation_only_change_is_patch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(REVIEW_RESULT.read_text(encoding="utf-8"))
    data["properties"]["summary"]["description"] = "One paragraph."
    data["title"] = "Review result"
    new = _write(tmp_path / "new.json", data)
    assert run(["compat", "diff", str(REVIEW_RESULT), str(new), "--format", "json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out) == {
        "change": "patch",
        "backward_compatible": True,
        "forward_compatible": True,
        "differences": [],
    }


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(
            '{"type": "object",\n  "properties": {"a": 1,}}', "invalid JSON at line 2, column 25", id="syntax"
        ),
        pytest.param('{"type": "strin"}', "not a valid Draft7 schema at $.type", id="metaschema"),
        pytest.param('{"type": "number", "minimum": NaN}', "NaN is not a JSON value", id="nan"),
        pytest.param('{"type": "string", "type": "number"}', "key 'type' appears twice", id="duplicate-key"),
        pytest.param('{"items": {"$ref": "#/definitions/missing"}}', "points nowhere", id="dangling-ref"),
        pytest.param("[1, 2]", "must be a JSON object or boolean", id="not-a-schema"),
    ],
)
def test_bad_schema_file_is_one_line_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert run(["compat", "diff", str(REVIEW_RESULT), str(bad)]) == ExitCode.TOOL_FAILURE
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith(f"promptops: error: {bad}: ")
    assert message in line


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert run(["compat", "diff", str(missing), str(REVIEW_RESULT)]) == ExitCode.TOOL_FAILURE
    expected = f"promptops: error: {missing}: cannot read: No such file or directory"
    assert capsys.readouterr().err.strip() == expected


def test_draft04_schema_is_checked_against_its_own_metaschema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft04 = "http://json-schema.org/draft-04/schema#"
    old_schema = {"$schema": draft04, "type": "number", "minimum": 0, "exclusiveMinimum": True}
    old = _write(tmp_path / "old.json", old_schema)
    new = _write(tmp_path / "new.json", {"type": "number", "exclusiveMinimum": 0})
    assert run(["compat", "diff", str(old), str(new), "--format", "json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["change"] == "patch"
