"""Data-driven rule tests (sqlfluff style): tests/lint_cases/POxxx.yml lists templates that must fail with
the given findings and templates that must pass. Cases edit a hand-written base prompt that passes every
rule, so each case shows exactly which change a rule catches, near misses included; ``template_file`` starts
from another base (``own_words_*.j2``: the same rules in a template's own words and layout).

Release-lock cases add ``release: {replace: [...]}``: the base (so edited) is first cut as release 1.0.0 by
the real ``promptops.release`` library, then the case's template is written, then ``copy`` ([from, to]), ``edit``
([file, old, new]), ``delete`` ([file]) and ``write`` ({file: text}) change the project, and ``lint`` names what to lint
(default: the case's path).
An expected finding is [line, fragment], [code, line, fragment] or [code, file, line, fragment]."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptops.lint import RULES, LintConfig, head_lint, lint
from promptops.release import CutRequest, plan_cut, write_release

CASES = Path(__file__).parent / "lint_cases"
BASE = (CASES / "good_review_result.j2").read_text(encoding="utf-8")


def _cases() -> Iterator[Any]:
    for file in sorted(CASES.glob("PO*.yml")):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        for name, case in data["cases"].items():
            yield pytest.param(data["rule"], case or {}, id=f"{data['rule']}-{name}")


def _template(case: dict[str, Any]) -> str:
    text: str = case.get("template", BASE)
    if "template_file" in case:  # another base, e.g. one in its own words and layout
        text = (CASES / case["template_file"]).read_text(encoding="utf-8")
    for old, new in case.get("replace", []):
        assert old in text, f"replace target not in the template: {old!r}"
        text = text.replace(old, new, 1)
    return text


def _release(project: Path, case: dict[str, Any]) -> None:
    """Cut the base template (with the release's own replacements) as release 1.0.0."""
    head = project / "templates" / "review-result.j2"
    head.write_text(_template({"replace": case.get("replace", [])}), encoding="utf-8")
    plan = plan_cut(project, CutRequest("review-result", "2025-06-02T09:30:00Z", lint=head_lint()))
    assert not plan.refused, plan.refusals
    write_release(project, plan)


def _change(project: Path, case: dict[str, Any]) -> None:
    for source, target in case.get("copy", []):
        (project / target).write_bytes((project / source).read_bytes())
    for file, old, new in case.get("edit", []):
        target = project / file
        text = target.read_text(encoding="utf-8")
        assert old in text, f"edit target not in {file}: {old!r}"
        target.write_text(text.replace(old, new, 1), encoding="utf-8")
    for file in case.get("delete", []):
        (project / file).unlink()
    for file, text in case.get("write", {}).items():
        (project / file).write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("rule", "case"), list(_cases()))
def test_rule_case(project: Path, rule: str, case: dict[str, Any]) -> None:
    (project / "templates" / "review-result.j2").unlink()  # only the case's template is a head here
    if "release" in case:
        _release(project, case["release"] or {})
    path = project / case.get("path", "templates/review-result.j2")
    path.write_text(_template(case), encoding="utf-8")
    _change(project, case)
    config = LintConfig(select=tuple(case.get("select", [rule])), render_context=case.get("render_context", {}))

    report = lint(project, [project / p for p in case.get("lint", [])] or [path], config)

    remaining = [(f.code, f.file, f.span.line, f.message) for f in report.findings]
    for expected in case.get("fail", []):
        if len(expected) == 4:
            code, file, line, fragment = expected
        else:
            code, line, fragment = expected if len(expected) == 3 else (rule, *expected)
            file = None
        match = next(
            (f for f in remaining if f[0] == code and f[2] == line and fragment in f[3] and file in (None, f[1])),
            None,
        )
        assert match is not None, f"expected {code} on {file or ''} line {line} with {fragment!r}; got {remaining}"
        remaining.remove(match)
    assert remaining == [], "unexpected findings"


@pytest.mark.parametrize("base", ["good_review_result.j2", *sorted(p.name for p in CASES.glob("own_words_*.j2"))])
def test_base_templates_pass_every_rule(project: Path, base: str) -> None:
    """The hand-written base and the templates that state the same rules in their own words and layout."""
    path = project / "templates" / "review-result.j2"
    path.write_text((CASES / base).read_text(encoding="utf-8"), encoding="utf-8")
    assert lint(project, [path]).findings == ()


def test_every_rule_has_passing_and_failing_cases_and_documents_both() -> None:
    for rule in RULES:
        data = yaml.safe_load((CASES / f"{rule.code}.yml").read_text(encoding="utf-8"))
        names = list(data["cases"])
        assert any(n.startswith("pass") for n in names), rule.code
        assert any(n.startswith("fail") for n in names), rule.code
        doc = rule.doc()
        assert "Fails" in doc, f"{rule.code} docstring needs a failing example"
        assert "Passes" in doc, f"{rule.code} docstring needs a passing example"
    assert len({r.code for r in RULES}) == len(RULES)
