"""``[tool.promptops]`` in pyproject.toml: one typed settings object for all its tables.

``[tool.promptops.lint]`` configures ``promptops lint`` (its rule codes are checked by promptops.lint.config);
``[tool.promptops.review-gate]`` moves the review gate's evidence (promptops.review_gate.topology checks the
paths). A key or table promptops does not know is refused by name, with its line, rather than ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from promptops.core import specs

TABLE: specs.Key = ("tool", "promptops")


class LintTable(msgspec.Struct, forbid_unknown_fields=True, rename="kebab", frozen=True):
    select: list[str] = msgspec.field(default_factory=lambda: ["PO"])  # codes or prefixes to run
    ignore: list[str] = []
    per_file_ignores: dict[str, list[str]] = {}  # repo-relative fnmatch pattern -> codes
    render_context: dict[str, Any] = {}  # template variables and sample values


class ReviewGateTable(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    spec_packet_root: str | None = None  # None: the documented default
    evidence_root: str | None = None
    consensus_dir: str | None = None
    commands_dir: str | None = None


class Settings(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    lint: LintTable | None = None
    review_gate: ReviewGateTable | None = msgspec.field(default=None, name="review-gate")


def parse(text: str, source: str) -> tuple[Settings, specs.Document]:
    """The settings in the TOML ``text`` (the defaults when it has no ``[tool.promptops]``), and the document
    that names the line of any key in them; SpecError naming the line and key otherwise."""
    document = specs.parse_toml(text, source)
    tool = document.data.get("tool")
    return from_table(tool.get("promptops") if isinstance(tool, Mapping) else tool, text, source)


def from_table(table: Any, text: str, source: str) -> tuple[Settings, specs.Document]:
    """``parse`` from the ``[tool.promptops]`` table already read from ``text`` (lint caches it)."""
    document = specs.Document({"tool": {"promptops": table}}, source, lambda key: specs.toml_line(text, key))
    if table is None:
        return Settings(), document
    if not isinstance(table, Mapping):
        raise document.fail(TABLE, "must be a table")
    return document.convert(Settings, TABLE), document
