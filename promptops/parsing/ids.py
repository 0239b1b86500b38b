"""Stable finding ids, and the marker a bot embeds in the comment it posts for a finding.

Feedback (what developers did with a finding) arrives long after the response was parsed, from another
system; the finding id is what joins the two. It is the finding's own id (the contract's ``fields.id`` role)
where it has one, else ``"f-"`` and the first 24 hex digits of the sha256 of::

    "\\x1f".join([contract, response_id, path, str(line or ""), normalised_title])

where ``normalised_title`` is the title (the contract's ``merge.title`` field, empty when there is none)
with runs of whitespace made one space and case folded. So the id survives a re-render of the comment and
changes when the finding is about something else. Ids are computed on a parsed outcome, outside the parser's
paths, so parsing costs nothing more for a service that does not want them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from promptops.core.contract import Contract
from promptops.parsing.diagnostics import ParseOutcome
from promptops.parsing.semantics import merge_semantics

MARKER_PREFIX = "<!-- promptops:finding "
# The marker as rendered by ``marker``; ids hold no whitespace and no "-->" (checked when rendering).
_MARKER = re.compile(r"<!-- promptops:finding (\S+) response=(\S+) -->")


class FindingRow(NamedTuple):
    """One kept finding of a response as the store keeps it."""

    position: int  # its place among the response's kept findings
    finding_id: str
    severity: str | None  # the common severity (merge.severity) or the contract's own value; None if neither
    path: str | None
    line: int | None


def hashed_id(contract: str, response_id: str, path: str | None, line: int | None, title: str | None) -> str:
    """The documented hash id of a finding that carries no id of its own."""
    normalised = " ".join((title or "").split()).casefold()
    text = "\x1f".join([contract, response_id, path or "", str(line or ""), normalised])
    return "f-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class _Fields(NamedTuple):
    """What finding_rows reads of a contract, looked up once per contract (it runs per response at ingest)."""

    items: str
    id: str | None
    path: str | None
    line: str | None
    title: str | None
    severity: str | None  # the field; with ``severity_map`` (merge) its value maps to the common severity
    severity_map: Mapping[str, str] | None


_FIELDS: dict[int, tuple[Contract, _Fields]] = {}  # by identity, holding the contract so the id is not reused


def _fields(contract: Contract) -> _Fields:
    cached = _FIELDS.get(id(contract))
    if cached is not None and cached[0] is contract:
        return cached[1]
    roles, merge = contract.roles, merge_semantics(contract)
    fields = _Fields(
        contract.items,
        roles.id,
        roles.path,
        roles.line,
        merge.title if merge is not None else None,
        merge.severity_field if merge is not None else "severity",
        merge.severity_map if merge is not None else None,
    )
    if len(_FIELDS) > 256:  # contracts are few; a process that loads many keeps only the recent ones
        _FIELDS.clear()
    _FIELDS[id(contract)] = (contract, fields)
    return fields


class FindingColumns:
    """Kept findings as columns (one list per field, plus the row of each finding's response), which ingest
    fills for a whole batch: appending to lists costs less than a tuple per finding."""

    __slots__ = ("finding_id", "line", "path", "position", "response", "severity")

    def __init__(self) -> None:
        self.response: list[int] = []
        self.position: list[int] = []
        self.finding_id: list[str] = []
        self.severity: list[str | None] = []
        self.path: list[str | None] = []
        self.line: list[int | None] = []

    def __len__(self) -> int:
        return len(self.finding_id)

    def add(self, contract: Contract, response_id: str, outcome: ParseOutcome, response: int) -> int:
        """Append the kept findings of ``outcome`` (none for a rejected one); how many were appended."""
        if not outcome.accepted or not outcome.findings_kept:
            return 0
        result = outcome.result
        fields = _fields(contract)
        findings = result.get(fields.items) if result is not None else None
        if not isinstance(findings, list):
            return 0
        ids, severities, paths, lines = self.finding_id, self.severity, self.path, self.line
        try:
            self._append(contract, response_id, findings, fields)
        except BaseException:  # keep the columns aligned: nothing of this response stays
            for column in (ids, severities, paths, lines, self.position):
                del column[len(self.response) :]
            raise
        added = len(ids) - len(self.response)
        self.response.extend([response] * added)
        return added

    def _append(self, contract: Contract, response_id: str, findings: list[Any], fields: _Fields) -> None:
        id_field, path_field, line_field, title_field = fields.id, fields.path, fields.line, fields.title
        severity_field, severity_map = fields.severity, fields.severity_map
        ids, severities, paths, lines = self.finding_id, self.severity, self.path, self.line
        for index, finding in enumerate(findings):
            if type(finding) is not dict:
                continue
            path = finding.get(path_field) if path_field is not None else None
            if type(path) is not str:
                path = None
            line = finding.get(line_field) if line_field is not None else None
            if type(line) is not int:  # a bool is no line
                line = None
            own = finding.get(id_field) if id_field is not None else None
            if type(own) is int:
                own = str(own)
            if type(own) is str and own:  # the parser trims strings: a blank id is empty here
                ids.append(own)
            else:
                title = finding.get(title_field) if title_field is not None else None
                ids.append(hashed_id(contract.name, response_id, path, line, title if type(title) is str else None))
            severity = finding.get(severity_field) if severity_field is not None else None
            if severity_map is not None:
                severity = severity_map.get(str(severity), "info")  # as MergeSemantics.severity
            elif type(severity) is not str:
                severity = None
            severities.append(severity)
            paths.append(path)
            lines.append(line)
            self.position.append(index)


def finding_rows(contract: Contract, response_id: str, outcome: ParseOutcome) -> list[FindingRow]:
    """The kept findings of an accepted outcome with their ids; empty for a rejected one."""
    columns = FindingColumns()
    columns.add(contract, response_id, outcome, 0)
    return [
        FindingRow(*row)
        for row in zip(columns.position, columns.finding_id, columns.severity, columns.path, columns.line, strict=True)
    ]


def finding_ids(contract: Contract, response_id: str, outcome: ParseOutcome) -> list[str]:
    """The ids of an outcome's kept findings, in order."""
    return [row.finding_id for row in finding_rows(contract, response_id, outcome)]


def marker(finding_id: str, response_id: str) -> str:
    """The HTML comment (invisible on GitHub) that ties a posted comment to its finding and response."""
    for name, value in (("finding id", finding_id), ("response id", response_id)):
        if not value or any(c.isspace() for c in value) or "-->" in value:
            raise ValueError(f"{name} {value!r} cannot go in a marker: it must be non-empty, without spaces or '-->'")
    return f"{MARKER_PREFIX}{finding_id} response={response_id} -->"


def read_marker(text: str) -> tuple[str, str] | None:
    """(finding_id, response_id) of the last marker in ``text`` (a comment body), or None."""
    found = _MARKER.findall(text)
    return (found[-1][0], found[-1][1]) if found else None
