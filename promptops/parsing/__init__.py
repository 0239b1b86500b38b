"""The response parser: strict JSON, version acceptance, per-finding validation, reconciliation.

Names load lazily, so a module that needs only the diagnostic codes (the store's views) does not load the
parser machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core.lazy import lazy_names

if TYPE_CHECKING:
    from promptops.parsing.diagnostics import Code, Diagnostic, ParseOutcome
    from promptops.parsing.parser import Parser
    from promptops.parsing.reconcile import ChangedFiles, normalize_repo_path

_EXPORTS: dict[str, str] = {
    "Code": "promptops.parsing.diagnostics",
    "Diagnostic": "promptops.parsing.diagnostics",
    "ParseOutcome": "promptops.parsing.diagnostics",
    "Parser": "promptops.parsing.parser",
    "ChangedFiles": "promptops.parsing.reconcile",
    "normalize_repo_path": "promptops.parsing.reconcile",
}

__all__ = ["ChangedFiles", "Code", "Diagnostic", "ParseOutcome", "Parser", "normalize_repo_path"]


__getattr__ = lazy_names(__name__, _EXPORTS)
