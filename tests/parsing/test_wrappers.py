"""Think blocks, fences and prose are stripped; exactly one object is extracted."""

from __future__ import annotations

import pytest

from promptops import Code, Parser
from tests.helpers import CHANGED, response, text

BODY = text(response())


@pytest.mark.parametrize(
    "raw",
    [
        f"```json\n{BODY}\n```",
        f"Here is my review:\n```json\n{BODY}\n```\nLet me know if you need more.",
        f'<think>Maybe output {{"draft": true}} first?</think>\n{BODY}',
        f"<THINK>\nreasoning\n</THINK>```\n{BODY}\n```",
        f'The reasoning the API left without its opening tag {{"x": 1}}</think>{BODY}',
        f"Use a dict like {{x}} or {{ y }}. Result: {BODY}",
        f"{BODY}\n\nNote: the braces in {{this}} are prose.",
        f"\u00a0{BODY}\u00a0",
    ],
    ids=[
        "fence",
        "prose-and-fence",
        "think",
        "think-upper-fence",
        "orphan-close-tag",
        "braces-in-prose",
        "prose-after",
        "nbsp",
    ],
)
def test_one_object_is_extracted_unchanged(both: Parser, raw: str) -> None:
    direct = both.parse(BODY, CHANGED)
    outcome = both.parse(raw, CHANGED)
    assert outcome.accepted
    assert outcome.result == direct.result  # extraction changes no value
    codes = [d.code for d in outcome.diagnostics]
    if raw.strip() != BODY:
        assert codes == [Code.EXTRACTED_FROM_WRAPPER] or (raw.startswith("\u00a0") and codes == [])
    assert all(d.level == "info" for d in outcome.diagnostics)


@pytest.mark.parametrize(
    "raw",
    [
        f"{BODY}\n{BODY}",
        f"```json\n{BODY}\n```\n```json\n{text(response(findings=[]))}\n```",
        f'Example: {{"a": 1}}\n{BODY}',
        f'{BODY}\nand then {{"schema_version": "1.0", "find',
    ],
    ids=["two-bodies", "two-fences", "example-object-in-prose", "second-cut-off"],
)
def test_two_or_more_objects_are_ambiguous(both: Parser, raw: str) -> None:
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.MULTIPLE_JSON_VALUES
    assert outcome.result is None


def test_unclosed_think_block_hides_everything_after_it(both: Parser) -> None:
    assert both.parse(f"<think>still thinking {BODY}", CHANGED).reason == Code.INVALID_JSON


def test_broken_object_in_a_fence_is_invalid_json_not_its_parts(both: Parser) -> None:
    broken = BODY[:-2] + ",]}"  # trailing comma: no repair, and the findings inside are not candidates
    assert both.parse(f"```json\n{broken}\n```", CHANGED).reason == Code.INVALID_JSON


def test_extracted_object_still_gets_duplicate_key_checks(both: Parser) -> None:
    dup = BODY[:-1] + ', "summary": "again"}'
    outcome = both.parse(f"```json\n{dup}\n```", CHANGED)
    assert outcome.reason == Code.DUPLICATE_KEY
    assert [d.code for d in outcome.diagnostics] == [Code.EXTRACTED_FROM_WRAPPER, Code.DUPLICATE_KEY]
