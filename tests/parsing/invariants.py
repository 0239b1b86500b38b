"""The invariants every parse outcome satisfies, whatever the input (used by property tests and the fuzzers).

The parity rule: every configuration (fast path on or off) gives the identical outcome, never an exception; in
particular, whenever the fast path accepts, the diagnostic path gives the identical outcome (result key order
included).
"""

from __future__ import annotations

import json

from jsonschema import Draft7Validator

from promptops import ChangedFiles, Code, Contract, ParseOutcome, Parser, SchemaVersion

LEVELS = {"error", "warning", "info"}


class Checker:
    def __init__(self, contract: Contract) -> None:
        schema = contract.shape(SchemaVersion(1, 0)).schema
        self.item_validator = Draft7Validator(schema["properties"]["findings"]["items"])
        self.result_validator = Draft7Validator(schema)
        self.fast = Parser(contract)
        self.slow = Parser(contract, fast_path=False)

    def check(self, raw: str | bytes, changed: list[str]) -> ParseOutcome:
        """Parse with the fast path on and off, assert every invariant, return the outcome."""
        outcome = self.fast.parse(raw, changed)
        expected = _summary(self.slow.parse(raw, changed))
        assert _summary(outcome) == expected, (raw, _summary(outcome), expected)
        check_outcome(outcome, ChangedFiles(changed), self)
        return outcome


def _summary(outcome: ParseOutcome) -> str:
    """Every field of an outcome, as text: equal summaries mean identical outcomes, key order included."""
    data = outcome.to_dict()
    data["counts"] = (
        outcome.findings_seen,
        outcome.findings_kept,
        outcome.findings_dropped,
        outcome.findings_coerced,
        outcome.extracted,
        outcome.truncated,
        outcome.schema_version,
        outcome.prompt_version,
    )
    return json.dumps(data)


def check_outcome(outcome: ParseOutcome, changed: ChangedFiles, checker: Checker) -> None:
    for diagnostic in outcome.diagnostics:
        assert diagnostic.code in set(Code) and diagnostic.level in LEVELS
        assert isinstance(diagnostic.message, str) and diagnostic.message
    json.dumps(outcome.to_dict())  # always serializable
    if not outcome.accepted:
        assert outcome.reason is not None and outcome.result is None
        errors = [d for d in outcome.diagnostics if d.level == "error"]
        assert len(errors) == 1 and outcome.diagnostics[-1] is errors[0] and errors[0].code == outcome.reason
        assert all(d.finding_index is None for d in outcome.diagnostics)  # nothing per finding after a rejection
        assert (outcome.findings_seen, outcome.findings_kept, outcome.findings_dropped) == (0, 0, 0)
        return
    result = outcome.result
    assert outcome.reason is None and isinstance(result, dict)
    assert not any(d.level == "error" for d in outcome.diagnostics)
    kept = result["findings"]
    assert len(kept) == outcome.findings_kept
    assert outcome.findings_kept + outcome.findings_dropped == outcome.findings_seen
    for item in kept:
        assert checker.item_validator.is_valid(item), item
        assert item["file"] in changed
        assert "end_line" not in item or item["end_line"] >= item["line"]
    assert checker.result_validator.is_valid(result), result
    drops = [d for d in outcome.diagnostics if d.message.startswith("finding dropped")]
    assert len(drops) == outcome.findings_dropped
    assert (outcome.findings_seen > 0 and not kept) == any(
        d.code == Code.ALL_FINDINGS_DROPPED for d in outcome.diagnostics
    )
