"""No token repair. Anything that is not JSON is invalid_json, never guessed at."""

from __future__ import annotations

import json

import pytest

from promptops import Code, Parser
from tests.helpers import CHANGED, response

BODY = json.dumps(response())

BROKEN = {
    "trailing-comma-object": BODY[:-1] + ",}",
    "trailing-comma-array": BODY.replace('"}]', '"},]', 1),
    "single-quotes": BODY.replace('"summary"', "'summary'", 1),
    "line-comment": BODY.replace('"summary"', '// a comment\n"summary"', 1),
    "block-comment": BODY.replace('"summary"', '/* c */ "summary"', 1),
    "python-literals": BODY.replace('"Reviewed the change."', "None", 1),
    "python-true": BODY[:-1] + ', "meta": {"x": True}}',
    "unquoted-key": BODY.replace('"summary"', "summary", 1),
    "hex-number": BODY.replace('"line": 41', '"line": 0x29', 1),
    "leading-zero": BODY.replace('"line": 41', '"line": 041', 1),
    "leading-plus": BODY.replace('"line": 41', '"line": +41', 1),
    "missing-comma": BODY.replace('", "prompt_version"', '" "prompt_version"', 1),
}


@pytest.mark.parametrize("raw", list(BROKEN.values()), ids=list(BROKEN))
def test_broken_json_is_rejected_without_repair(both: Parser, raw: str) -> None:
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.INVALID_JSON
    assert outcome.result is None
    assert [d.code for d in outcome.diagnostics] == [Code.INVALID_JSON]
