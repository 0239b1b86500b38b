"""Data-driven rule tests (sqlfluff style): tests/lint_cases/POxxx.yml lists templates that must fail with
the given findings and templates that must pass. Cases edit a hand-written base prompt that passes every
rule, so each case shows exactly which change a rule catches, near misses included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from promptops.lint import RULES, LintConfig, lint

CASES = Path(__file__).parent / "lint_cases"
BASE = (CASES / "good_review_result.j2").read_text(encoding="utf-8")


def _cases() -> Iterator[Any]:
    for file in sorted(CASES.glob("PO*.yml")):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        for name, case in data["cases"].items():
            yield pytest.param(data["rule"], case or {}, id=f"{data['rule']}-{name}")


def _template(case: dict[str, Any]) -> str:
    text: str = case.get("template", BASE)
    for old, new in case.get("replace", []):
        assert old in text, f"replace target not in the template: {old!r}"
        text = text.replace(old, new, 1)
    return text


@pytest.mark.parametrize(("rule", "case"), list(_cases()))
def test_rule_case(project: Path, rule: str, case: dict[str, Any]) -> None:
    (project / "templates" / "review-result.j2").unlink()  # only the case's template is a head here
    path = project / case.get("path", "templates/review-result.j2")
    path.write_text(_template(case), encoding="utf-8")
    config = LintConfig(select=tuple(case.get("select", [rule])), render_context=case.get("render_context", {}))

    report = lint(project, [path], config)

    remaining = [(f.code, f.span.line, f.message) for f in report.findings]
    for expected in case.get("fail", []):
        code, line, fragment = expected if len(expected) == 3 else (rule, *expected)
        match = next((f for f in remaining if f[0] == code and f[1] == line and fragment in f[2]), None)
        assert match is not None, f"expected {code} on line {line} with {fragment!r}; got {remaining}"
        remaining.remove(match)
    assert remaining == [], "unexpected findings"


def test_base_template_passes_every_rule(project: Path) -> None:
    path = project / "templates" / "review-result.j2"
    path.write_text(BASE, encoding="utf-8")
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
