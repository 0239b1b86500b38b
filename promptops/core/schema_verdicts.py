"""Metaschema verdicts kept across runs, keyed by content: a schema found valid once is not checked again.

Checking a contract's schemas against their JSON Schema metaschema costs more than the rest of a command's
start-up (importing jsonschema alone takes about 45 ms). Only "valid" is remembered: an invalid schema is
checked, and its error reported, every time. An entry is an empty file whose name is a hash of the schema's
canonical JSON and of what decides the verdict (this code's version, the installed jsonschema), so an edited
schema or an upgraded validator simply has no entry yet. The directory is given by the caller (the CLI: see
docs/performance.md); a missing, unreadable or unwritable directory is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

# Raise when the checks behind a verdict change (shape.check_nesting, check_patterns, the metaschema call).
_FORMAT = "1"


class SchemaVerdicts:
    """Schemas known to be valid under their metaschema, as files in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._validator = _validator_stamp()

    def _entry(self, schema: Any) -> Path:
        # The stdlib encoder: lint loads contracts too, and keeps msgspec out of its start-up.
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hashlib.sha256(b"\0".join([_FORMAT.encode(), self._validator.encode(), text])).hexdigest()
        return self.directory / f"promptops-metaschema-valid-{digest}"

    def known_valid(self, schema: Any) -> bool:
        try:
            return self._entry(schema).is_file()
        except (OSError, TypeError, ValueError, RecursionError):  # a schema json cannot encode: check it
            return False

    def remember_valid(self, schema: Any) -> None:
        """Record that ``schema`` passed its metaschema check (an empty file: never half-written)."""
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.close(os.open(self._entry(schema), os.O_WRONLY | os.O_CREAT, 0o600))
        except (OSError, TypeError, ValueError, RecursionError):
            return


def _validator_stamp() -> str:
    """Which jsonschema is installed, without importing it: its package file's path, size and time."""
    spec = importlib.util.find_spec("jsonschema")
    origin = spec.origin if spec is not None else None
    if origin is None:
        return "none"
    try:
        found = os.stat(origin)
    except OSError:
        return origin
    return f"{origin}:{found.st_size}:{found.st_mtime_ns}"
