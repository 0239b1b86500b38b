"""Telemetry files: optional enrichment that never changes the resolution.

Nothing here can fail the review: a missing directory means no telemetry, and an unreadable or malformed
file is listed with its status and reason. Telemetry produces no signals either, because an advisory signal
would turn Passed into PassedWithWarnings (and exit 1 under ``--strict-warnings``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

TELEMETRY_PATTERN = "*_telemetry_*.json"

# Scalar top-level fields surfaced as metadata. A fixed list keeps the result small and free of run-specific
# values such as timestamps or durations.
SURFACED_FIELDS = ("agent", "command", "model", "schemaVersion", "schema_version", "stage", "status")

OK = "ok"
MALFORMED = "malformed"
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class TelemetryFile:
    path: str  # repo-relative
    status: str  # ok | malformed | unreadable
    detail: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "detail": self.detail, "fields": dict(self.fields)}


@dataclass(frozen=True)
class Telemetry:
    directory: str  # repo-relative
    files: tuple[TelemetryFile, ...] = ()
    detail: str | None = None  # why the directory itself could not be listed, if so

    def to_dict(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "detail": self.detail,
            "files": [item.to_dict() for item in self.files],
        }


def read_telemetry(repo_root: Path, directory: str) -> Telemetry:
    """Every ``*_telemetry_*.json`` directly in ``directory`` (repo-relative), in name order."""
    try:
        with os.scandir(repo_root / directory) as entries:
            names = sorted(e.name for e in entries if fnmatchcase(e.name, TELEMETRY_PATTERN) and e.is_file())
    except FileNotFoundError:
        return Telemetry(directory)
    except OSError as problem:
        return Telemetry(directory, detail=f"cannot list directory: {problem.strerror or problem}")
    return Telemetry(directory, tuple(_read_one(repo_root, f"{directory}/{name}") for name in names))


def _read_one(repo_root: Path, path: str) -> TelemetryFile:
    try:
        data = (repo_root / path).read_bytes()
    except OSError as problem:
        return TelemetryFile(path, UNREADABLE, f"cannot read: {problem.strerror or problem}")
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as problem:
        return TelemetryFile(path, MALFORMED, f"invalid UTF-8 at byte {problem.start}")
    except json.JSONDecodeError as problem:
        return TelemetryFile(
            path, MALFORMED, f"invalid JSON: {problem.msg} at line {problem.lineno} column {problem.colno}"
        )
    except RecursionError:
        return TelemetryFile(path, MALFORMED, "invalid JSON: nesting too deep")
    except ValueError as problem:
        return TelemetryFile(path, MALFORMED, f"invalid JSON: {problem}")
    if not isinstance(document, dict):
        return TelemetryFile(path, MALFORMED, "expected a JSON object at the top level")
    surfaced = {
        name: document[name]
        for name in SURFACED_FIELDS
        if isinstance(document.get(name), str | int)  # bool is an int; floats left out (1e400 is inf)
    }
    return TelemetryFile(path, OK, None, surfaced)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
