"""Merging reviewer outputs (the reviewer-finding synthesizer, the agent-output aggregator): validate each
output with its contract, hold back what report filters suppress, dedupe, rank by severity x confidence, group by
file, and write one result that is itself a contract document (see ``promptops.merge.engine`` for the rules)."""

from promptops.merge.engine import merge
from promptops.merge.formats import FORMATS, summary, to_markdown, to_result, to_sarif
from promptops.merge.model import (
    MergedFinding,
    MergedReport,
    MergeOptions,
    ReviewerOutput,
    SourceFinding,
    SourceReport,
    SuppressedFinding,
)

__all__ = [
    "FORMATS",
    "MergeOptions",
    "MergedFinding",
    "MergedReport",
    "ReviewerOutput",
    "SourceFinding",
    "SourceReport",
    "SuppressedFinding",
    "merge",
    "summary",
    "to_markdown",
    "to_result",
    "to_sarif",
]
