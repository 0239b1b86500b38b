"""A rule about the project rather than one template: a contract with no head template (PO011)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from promptops.core.findings import Finding, Level, Span
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import Subject
from promptops.render.renderer import TEMPLATE_SUFFIXES, TEMPLATES_DIR


class NoHeadTemplate(Rule):
    """A contract has no head template, so lint has no prompt to check it against.

    Every contract under ``versions/<contract>/`` is served by the head template ``templates/<contract>.j2``
    (or ``.jinja``, ``.jinja2``); without one, ``lint`` would check nothing for it and ``release cut`` has
    nothing to release. Reported on the contract's ``contract.yaml`` when lint runs on the whole project or
    is given one of the contract's files. A warning: a contract used only to parse another tool's output
    needs no prompt (ignore PO011 for it in the configuration).

    Fails::

        versions/review-result/contract.yaml   (and no templates/review-result.j2)

    Passes::

        versions/review-result/contract.yaml
        templates/review-result.j2
    """

    code = "PO011"
    name = "no-head-template"
    level = Level.WARNING
    kinds = frozenset()  # not per template: the engine calls ``check_contract`` per contract in scope

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        return iter(())

    def check_contract(self, root: Path, contract: str, source: str) -> Iterator[Finding]:
        if not (root / source).is_file():
            return  # not the project's own contract (a packaged one): nothing for this project to serve
        if any((root / TEMPLATES_DIR / f"{contract}{suffix}").is_file() for suffix in TEMPLATE_SUFFIXES):
            return
        try:
            lines = (root / source).read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError):
            lines = []
        line = next((n for n, text in enumerate(lines, start=1) if text.startswith("contract:")), 1)
        length = len(lines[line - 1]) if lines else 1
        yield Finding(
            self.code,
            self.name,
            self.level,
            source,
            Span(line, 1, line, length + 1),
            f"contract {contract} has no head template {TEMPLATES_DIR}/{contract}.j2: nothing checks its prompt",
        )
