"""Read a schema file for comparison: strict JSON, checked against its metaschema, then normalized.

Every failure is a SchemaInputError whose one-line message starts with the file name: JSON syntax errors
give the line and column, metaschema violations the JSON path of the offending keyword.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, exceptions
from jsonschema.validators import validator_for

from promptops.compat.errors import SchemaInputError
from promptops.compat.normalize import Schema, normalize


def load_schema(path: Path | str, *, name: str | None = None) -> Schema:
    """Read, check and normalize the schema in ``path``; ``name`` is how messages call it (default: path)."""
    source = name if name is not None else str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise SchemaInputError(source, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SchemaInputError(source, f"not UTF-8 text (byte {exc.start})") from None
    schema = parse_json(text, source)
    check_metaschema(schema, source)
    return normalize(schema, source=source)


def parse_json(text: str, source: str) -> Any:
    """Strict RFC 8259: no NaN/Infinity, and a key repeated in one object is an error, not last-wins."""

    def reject_constant(name: str) -> Any:
        raise SchemaInputError(source, f"invalid JSON: {name} is not a JSON value")

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise SchemaInputError(source, f"invalid JSON: key {key!r} appears twice in one object")
            out[key] = value
        return out

    try:
        return json.loads(text, parse_constant=reject_constant, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise SchemaInputError(source, f"invalid JSON at {where}: {exc.msg}") from None


def check_metaschema(schema: Any, source: str) -> None:
    """Check ``schema`` against the metaschema its ``$schema`` names (draft 7 when it names none)."""
    if not isinstance(schema, dict | bool):
        kind = type(schema).__name__
        raise SchemaInputError(source, f"a schema must be a JSON object or boolean, not {kind}")
    validator = validator_for(schema, default=Draft7Validator)
    try:
        validator.check_schema(schema)  # type: ignore[arg-type]  # booleans are valid schemas (draft 6+)
    except exceptions.SchemaError as exc:
        error = exceptions.best_match([exc]) or exc  # type: ignore[list-item]  # accepts any ValidationError
        draft = getattr(validator, "__name__", "JSON Schema").removesuffix("Validator")
        problem = " ".join(error.message.split())[:200]
        where = error.json_path
        raise SchemaInputError(source, f"not a valid {draft} schema at {where}: {problem}") from None
