"""The response parser: strict JSON, version acceptance, per-finding validation, reconciliation."""

from promptops.parsing.diagnostics import Code, Diagnostic, ParseOutcome
from promptops.parsing.parser import Parser
from promptops.parsing.reconcile import ChangedFiles, normalize_repo_path

__all__ = ["ChangedFiles", "Code", "Diagnostic", "ParseOutcome", "Parser", "normalize_repo_path"]
