"""The findings checks' shortcuts against the field-by-field checks they stand in for.

A plain finding that converts to the typed Struct with clean strings and in place must be one the quick tests
keep as written, and a typed Struct out of place must get exactly the verdict, value and coercions of the full
``_finding`` checks. The parser-level property tests cannot see these: every path uses the shortcuts.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles, Contract, Parser, SchemaVersion
from promptops.parsing.fields import Coercion
from promptops.parsing.findings import Findings
from promptops.parsing.typed import TypedShape
from tests.helpers import CHANGED
from tests.parsing.test_properties import findings

SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHANGED_VARIANTS = st.sampled_from(
    [CHANGED, [*CHANGED, "src\\auth\\login.py"], ["./src/api/users.py", "src/auth/login.py"], []]
)


def _parts(contract: Contract) -> tuple[Findings, TypedShape, Any]:
    validator = Parser(contract)._validator
    checks = validator._findings
    shape = contract.shape(SchemaVersion(1, 0))
    typed = checks._typed[shape.version]
    return checks, typed, shape


@SETTINGS
@given(findings(), CHANGED_VARIANTS)
def test_converted_findings_are_kept_as_written(contract: Contract, item: Any, changed: list[str]) -> None:
    checks, typed, shape = _parts(contract)
    compiled = checks.compiled(shape)
    assert compiled.convertible and compiled.complete
    if type(item) is not dict:
        return
    files = ChangedFiles(changed)
    if checks._converts_as_written(item, typed, files):
        assert checks._kept_as_written(item, compiled, files), item


@SETTINGS
@given(findings(), CHANGED_VARIANTS)
def test_typed_findings_out_of_place_get_the_full_checks(contract: Contract, item: Any, changed: list[str]) -> None:
    checks, typed, shape = _parts(contract)
    compiled = checks.compiled(shape)
    files = ChangedFiles(changed)
    try:
        struct = msgspec.convert(item, typed.item_type)
    except msgspec.ValidationError:
        return
    if not typed.strings_clean_one(struct) or typed.in_place_one(struct, files):
        return  # typed findings reach these checks only scan-clean, and out of place
    base = "findings[0]"
    full_applied: list[Coercion] = []
    full = checks._finding(msgspec.to_builtins(struct), base, shape, False, files, full_applied, [])
    short_applied: list[Coercion] = []
    short = checks._typed_finding(msgspec.to_builtins(struct), base, compiled, files, short_applied)
    assert short == full and short_applied == full_applied, item
    if isinstance(full, dict):
        assert list(short) == list(full)  # same member order as well


def test_shortcuts_are_used(contract: Contract) -> None:
    """Guard against the shortcuts silently switching off (the tests above would then pass vacuously)."""
    checks, typed, shape = _parts(contract)
    compiled = checks.compiled(shape)
    item = {
        "id": "F1",
        "severity": "low",
        "category": "test",
        "title": "t",
        "file": "src\\api\\users.py",
        "line": 3,
        "message": "m",
    }
    files = ChangedFiles(CHANGED)
    assert not checks._converts_as_written(copy.deepcopy(item), typed, files)  # the backslash: quick tests decide
    item["file"] = "src/api/users.py"
    assert checks._converts_as_written(item, typed, files)
    assert compiled.typed_suspects == ("file",)
