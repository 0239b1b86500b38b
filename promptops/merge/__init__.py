"""Merging reviewer outputs (the reviewer-finding synthesizer, the agent-output aggregator): validate each
output with its contract, hold back what report filters suppress, dedupe, rank by severity x confidence, group by
file, and write one result that is itself a contract document (see ``promptops.merge.engine`` for the rules).

Names load lazily, so reading a contract's report filter (lint) does not load the merge machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core.lazy import by_module, lazy_names

if TYPE_CHECKING:
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

_EXPORTS = by_module(
    {
        "promptops.merge.engine": ("merge",),
        "promptops.merge.formats": ("FORMATS", "summary", "to_markdown", "to_result", "to_sarif"),
        "promptops.merge.model": (
            "MergedFinding",
            "MergedReport",
            "MergeOptions",
            "ReviewerOutput",
            "SourceFinding",
            "SourceReport",
            "SuppressedFinding",
        ),
    }
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

__getattr__ = lazy_names(__name__, _EXPORTS)
