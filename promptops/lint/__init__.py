"""Contract-aware prompt template lint (``promptops lint``).

Each rule is one class in ``promptops.lint.rules`` with its code, name and a docstring showing a failing and a
passing template. Rules read the template source and a representative render of it (``subject.py``), hold it
to the contract's schema, and report findings with repo-relative file, line and column of the template
source. Suppressions live in ``suppressions.py``, configuration in ``config.py``, output formats in
``formatters.py``.
"""

from promptops.core.findings import Finding, Level, Span
from promptops.lint.config import LintConfig, LintConfigError, parse_config
from promptops.lint.engine import LintReport, expand, head_lint, lint
from promptops.lint.model import LintContext, Rule
from promptops.lint.rules import RULES, RULES_BY_CODE

__all__ = [
    "RULES",
    "RULES_BY_CODE",
    "Finding",
    "Level",
    "LintConfig",
    "LintConfigError",
    "LintContext",
    "LintReport",
    "Rule",
    "Span",
    "expand",
    "head_lint",
    "lint",
    "parse_config",
]
