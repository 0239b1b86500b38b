"""``promptops lint`` end to end: exit codes, formats, configuration, paths, snapshots and import weight."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.lint import LintContext, lint
from tests.conftest import REPO, Cli

HEAD = "templates/review-result.j2"


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _misspell_enum(root: Path) -> None:
    """A hand-edited head whose severity enum has a typo (the partials would never produce one)."""
    _edit(
        root,
        HEAD,
        "## Changed files",
        "`severity` is one of `critcal`, `high`, `medium`, `low`, `info`.\n\n## Changed files",
    )


def test_this_repository_passes_without_suppressions(cli: Cli) -> None:
    code, out, _ = cli(REPO, "lint")
    templates = list((REPO / "templates").rglob("*.j2"))
    assert len(templates) >= 4  # every contract's head, the partials
    assert code == 0
    assert out == f"All checks passed: {len(templates)} files linted.\n"
    assert not any("promptops: noqa" in p.read_text(encoding="utf-8") for p in templates)


def test_error_finding_exits_2_with_file_line_column(project: Path, cli: Cli) -> None:
    _misspell_enum(project)
    code, out, _ = cli(project, "lint")
    line = (project / HEAD).read_text(encoding="utf-8").splitlines().index(
        "`severity` is one of `critcal`, `high`, `medium`, `low`, `info`."
    ) + 1
    assert code == 2
    assert out.splitlines()[0] == (
        f"{HEAD}:{line}:1: PO004 [error] enum set of finding field `severity` differs from the schema: "
        "missing `critical`; not allowed `critcal` (enum-sets)"
    )
    assert out.splitlines()[-1].startswith("Found 1 error and 0 warnings in 1 of 3 files.")


def test_warnings_exit_0_or_1_with_strict_warnings(project: Path, cli: Cli) -> None:
    _edit(project, HEAD, "## Versions", "{# promptops: noqa PO004 -- nothing to excuse here #}\n## Versions")
    code, out, _ = cli(project, "lint")
    assert code == 0
    assert "PO900 [warning] suppression of PO004 suppresses nothing" in out
    assert cli(project, "lint", "--strict-warnings")[0] == 1


def test_suppressions_line_and_file_level(project: Path, cli: Cli) -> None:
    _misspell_enum(project)
    _edit(
        project,
        HEAD,
        "`severity` is one of",
        "{# promptops: noqa PO004 -- legacy wording #}\n`severity` is one of",
    )
    code, out, _ = cli(project, "lint", "--format", "json")
    assert code == 0
    assert json.loads(out)["summary"] == {"files": 3, "errors": 0, "warnings": 0, "suppressed": 1}

    _edit(project, HEAD, "{# promptops: noqa PO004 -- legacy wording #}\n", "")
    _edit(
        project,
        HEAD,
        "{% set prompt_version",
        "{# promptops: noqa-file PO004 -- see PROJ-7 #}\n{% set prompt_version",
    )
    assert cli(project, "lint")[0] == 0


def test_json_github_and_sarif_formats(project: Path, cli: Cli, tmp_path: Path) -> None:
    _misspell_enum(project)
    _, out, _ = cli(project, "lint", "--format", "json")
    finding = json.loads(out)["findings"][0]
    assert {k: finding[k] for k in ("code", "name", "level", "file", "column")} == {
        "code": "PO004",
        "name": "enum-sets",
        "level": "error",
        "file": HEAD,
        "column": 1,
    }
    assert finding["end_line"] == finding["line"]

    _, out, _ = cli(project, "lint", "--format", "github")
    assert out.startswith(f"::error file={HEAD},line={finding['line']},col=1,endLine={finding['line']},")
    assert "title=PO004 enum-sets::enum set of finding field `severity`" in out

    report = tmp_path / "lint.sarif"
    code, out, _ = cli(project, "lint", "--format", "sarif", "--output", str(report))
    assert (code, out) == (2, "")
    sarif = json.loads(report.read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "promptops"
    assert [r["id"] for r in driver["rules"]] == [
        "PO000",
        "PO001",
        "PO002",
        "PO003",
        "PO004",
        "PO005",
        "PO006",
        "PO007",
        "PO008",
        "PO009",
        "PO010",
        "PO011",
        "PO012",
        "PO900",
    ]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"]
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "PO004"
    assert driver["rules"][result["ruleIndex"]]["id"] == "PO004"
    assert result["message"]["text"].startswith("enum set of finding field")
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == HEAD
    assert set(location["region"]) == {"startLine", "startColumn", "endLine", "endColumn"}
    fingerprint = result["partialFingerprints"]["primaryLocationLineHash"]
    cli(project, "lint", "--format", "sarif", "--output", str(report))
    assert (
        json.loads(report.read_text(encoding="utf-8"))["runs"][0]["results"][0]["partialFingerprints"][
            "primaryLocationLineHash"
        ]
        == fingerprint
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[tool.promptops.lint]\nignor = ['PO004']\n", "line 2: tool.promptops.lint.ignor: unknown key"),
        ("[tool.promptops.lint]\nignore = ['PO999']\n", "unknown rule code or prefix 'PO999'"),
        ("[tool.promptops.lint]\nignore = ['PO000']\n", "PO000 cannot be turned off"),
        ("[tool.promptops.lint]\nselect = 'PO'\n", "line 2: tool.promptops.lint.select: must be a list of strings"),
        ("[tool.promptops.lint\n", "pyproject.toml: invalid TOML"),
    ],
)
def test_bad_configuration_exits_3(project: Path, cli: Cli, config: str, message: str) -> None:
    (project / "pyproject.toml").write_text(config, encoding="utf-8")
    code, out, err = cli(project, "lint")
    assert (code, out) == (3, "")
    assert message in err
    assert err.count("\n") == 1


def test_ignore_select_and_per_file_ignores(project: Path, cli: Cli) -> None:
    _misspell_enum(project)
    config = project / "pyproject.toml"
    config.write_text("[tool.promptops.lint]\nignore = ['PO004']\n", encoding="utf-8")
    assert cli(project, "lint")[0] == 0
    config.write_text("[tool.promptops.lint]\nselect = ['PO00']\n", encoding="utf-8")
    assert cli(project, "lint")[0] == 2  # PO00 is a prefix of PO004
    config.write_text("[tool.promptops.lint]\nselect = ['PO01', 'PO9']\n", encoding="utf-8")
    assert cli(project, "lint")[0] == 0
    config.write_text("[tool.promptops.lint.per-file-ignores]\n'templates/review-*.j2' = ['PO004']\n", encoding="utf-8")
    assert cli(project, "lint")[0] == 0
    config.write_text("[tool.promptops.lint.per-file-ignores]\n'prompts/*.j2' = ['PO004']\n", encoding="utf-8")
    assert cli(project, "lint")[0] == 2


def test_render_context_declares_extra_variables(project: Path, cli: Cli) -> None:
    _edit(project, HEAD, "## Versions", "Pull request: {{ pr_title }}\n\n## Versions")
    code, out, _ = cli(project, "lint")
    assert code == 2
    assert "PO008 [error] variable 'pr_title' is not provided by the render context" in out
    (project / "pyproject.toml").write_text(
        "[tool.promptops.lint.render-context]\npr_title = 'Fix cache race'\n", encoding="utf-8"
    )
    assert cli(project, "lint")[0] == 0


def test_a_changed_partial_brings_in_the_head_templates(project: Path, cli: Cli) -> None:
    _edit(
        project,
        "templates/_partials/instructions.j2",
        "omit the finding rather than fabricating or guessing any part of it",
        "think twice",
    )
    code, out, _ = cli(project, "lint", str(project / "templates/_partials/instructions.j2"))
    assert code == 2
    assert f"{HEAD}:10:1: PO006 [error] no instruction to omit uncertain" in out  # the prompt's first text
    assert "in 1 of 2 files" in out


def test_a_changed_contract_file_brings_in_its_head_template(project: Path, cli: Cli) -> None:
    _edit(project, "versions/review-result/contract.yaml", 'prompt_version: "1.0.0"', 'prompt_version: "1.1.0"')
    code, out, _ = cli(project, "lint", str(project / "versions/review-result/contract.yaml"))
    assert code == 2
    assert "PO001 [error] prompt_version 1.0.0 is not what the contract's parser accepts (1.1.0" in out
    assert "in 1 of 1 file" in out


def test_partial_with_a_syntax_error(project: Path, cli: Cli) -> None:
    _edit(project, "templates/_partials/fields.j2", "{%- endmacro %}", "{%- endmacr %}")
    code, out, _ = cli(project, "lint")
    assert code == 2
    assert "templates/_partials/fields.j2:" in out
    assert "PO000 [error] syntax error: Encountered unknown tag 'endmacr'" in out
    assert f"{HEAD}:7:1: PO000 [error] the template does not render: syntax error" in out


def test_template_in_templates_dir_must_name_a_contract(project: Path, cli: Cli) -> None:
    (project / "templates" / "review.j2").write_text("Hello\n", encoding="utf-8")
    code, out, _ = cli(project, "lint")
    assert code == 2
    assert "templates/review.j2:1:1: PO000 [error] review.j2 is in templates/ but names no contract" in out


def test_plain_template_elsewhere_gets_contract_free_rules_only(project: Path, cli: Cli) -> None:
    other = project / "docs" / "page.jinja"
    other.parent.mkdir()
    other.write_text("<h1>{{ title }}</h1>\n", encoding="utf-8")
    assert cli(project, "lint", str(other)) == (0, "All checks passed: 1 file linted.\n", "")
    other.write_text("<h1>{{ title }}â€¦</h1>\n", encoding="utf-8")
    code, out, _ = cli(project, "lint", str(other))
    assert code == 2
    assert "docs/page.jinja:1:16: PO010 [error] mojibake 'â€¦'" in out


def test_not_utf8_is_an_encoding_error(project: Path, cli: Cli) -> None:
    (project / HEAD).write_bytes(b'{% set prompt_version = "1.0.0" %}\nBad byte: \xff here\n')
    code, out, _ = cli(project, "lint", str(project / HEAD))
    assert code == 2
    assert f"{HEAD}:2:11: PO010 [error] not UTF-8: byte 0xFF cannot be decoded" in out


def test_missing_path_exits_3(project: Path, cli: Cli) -> None:
    code, _, err = cli(project, "lint", str(project / "templates" / "nope.j2"))
    assert code == 3
    assert "nope.j2: no such file or directory" in err


def test_snapshots_pin_their_own_release(project: Path, cli: Cli) -> None:
    snapshots = project / "versions" / "review-result" / "prompts"
    snapshots.mkdir()
    head = (project / HEAD).read_text(encoding="utf-8")
    (snapshots / "_partials").mkdir()
    for partial in ("fields.j2", "instructions.j2"):
        (snapshots / "_partials" / partial).write_text(
            (project / "templates" / "_partials" / partial).read_text(encoding="utf-8"), encoding="utf-8"
        )
    (snapshots / "0.9.0.j2").write_text(head.replace('"1.0.0"', '"0.9.0"'), encoding="utf-8")
    assert cli(project, "lint", str(snapshots / "0.9.0.j2"))[0] == 0  # an old release need not match policy

    (snapshots / "0.9.0.j2").write_text(head.replace('"1.0.0"', '"0.9.1"'), encoding="utf-8")
    code, out, _ = cli(project, "lint", str(snapshots / "0.9.0.j2"))
    assert code == 2
    assert "PO001 [error] the snapshot of release 0.9.0 pins prompt_version 0.9.1" in out


def test_release_lock_hook_checks_the_released_schema(project: Path) -> None:
    released = {"review-result": {PromptVersion(1, 0, 0): SchemaVersion(1, 1)}}
    report = lint(project, [], context=LintContext(released=released))
    assert [(f.code, f.message) for f in report.findings] == [
        (
            "PO001",
            "prompt 1.0.0 was released with schema_version 1.1; retargeting the schema needs a new prompt_version",
        )
    ]


def test_explain_and_list_rules(cli: Cli) -> None:
    code, out, _ = cli(REPO, "lint", "--explain", "po004")
    assert code == 0
    assert out.startswith("PO004 enum-sets [error]\n\nAn enum set is not stated")
    assert "Fails::" in out
    code, out, _ = cli(REPO, "lint", "--list-rules", "--format", "json")
    assert [r["code"] for r in json.loads(out)][-1] == "PO900"
    assert cli(REPO, "lint", "--explain", "PO999")[0] == 3


def test_lint_imports_neither_duckdb_pyarrow_nor_jsonschema() -> None:
    probe = (
        "import sys; from promptops.cli import run; code = run(['lint']); "
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & {'duckdb', 'pyarrow', 'jsonschema'}))"
    )
    completed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert completed.stdout.splitlines()[-1] == "0 []"


def test_encoding_damage_reaching_the_prompt_from_the_schema(project: Path, cli: Cli) -> None:
    _edit(
        project,
        "versions/review-result/schemas/1.0.json",
        '"title": { "type": "string", "minLength": 1 }',
        '"title": { "type": "string", "minLength": 1, "description": "One line, no trailing â€¦" }',
    )
    code, out, _ = cli(project, "lint")
    line = (project / HEAD).read_text(encoding="utf-8").splitlines().index(
        '{{ fields.object_rules(schema.item, "each finding", pinned) }}'
    ) + 1
    assert code == 2
    assert out.splitlines()[0] == (
        f"{HEAD}:{line}:1: PO010 [error] the rendered prompt has mojibake 'â€¦' (UTF-8 read as cp1252; "
        "probably '…') (encoding-damage)"
    )


def test_bytecode_cache_gives_the_same_findings(project: Path, tmp_path: Path) -> None:
    from jinja2 import FileSystemBytecodeCache

    cache_dir = tmp_path / "jinja-cache"
    cache_dir.mkdir()
    _misspell_enum(project)
    cold = lint(project, [], bytecode_cache=FileSystemBytecodeCache(str(cache_dir)))
    compiled = sorted(p.name for p in cache_dir.iterdir() if p.name.startswith("__jinja2_"))
    trees = sorted(p for p in cache_dir.iterdir() if p.name.startswith("promptops-tree-"))
    assert (len(compiled), len(trees)) == (3, 1)  # head and two partials compiled; the head's tree parsed
    warm = lint(project, [], bytecode_cache=FileSystemBytecodeCache(str(cache_dir)))
    assert warm == cold
    assert [f.code for f in warm.findings] == ["PO004"]
    trees[0].write_bytes(b"not a pickle")  # a damaged entry is parsed again, never an error
    assert lint(project, [], bytecode_cache=FileSystemBytecodeCache(str(cache_dir))) == cold
    _edit(project, HEAD, "You are a senior software engineer", "You are a careful software engineer")
    lint(project, [], bytecode_cache=FileSystemBytecodeCache(str(cache_dir)))
    assert len([p for p in cache_dir.iterdir() if p.name.startswith("promptops-tree-")]) == 2  # keyed by source


@pytest.mark.parametrize("templates", ["empty", "absent"])
def test_a_contract_without_a_head_template_is_reported(project: Path, cli: Cli, templates: str) -> None:
    """Was "All checks passed: 0 files linted" (empty templates/) or "templates: no such file" (none)."""
    import shutil

    shutil.rmtree(project / "templates")
    if templates == "empty":
        (project / "templates").mkdir()
    code, out, err = cli(project, "lint")
    assert code == 0, err
    assert out.startswith(
        "versions/review-result/contract.yaml:2:1: PO011 [warning] contract review-result has no head template "
        "templates/review-result.j2"
    )
    assert "All checks passed" not in out
    assert cli(project, "lint", "--strict-warnings")[0] == 1
    code, out, _ = cli(project, "lint", str(project / "versions/review-result/contract.yaml"), "--format", "json")
    assert [f["code"] for f in json.loads(out)["findings"]] == ["PO011"]
