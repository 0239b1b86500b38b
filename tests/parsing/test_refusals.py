"""Version refusals read alike with the fast path on or off, in every order and from threads sharing a parser."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

import pytest

from promptops import Code, Contract, Limits, Parser
from tests.helpers import CHANGED, finding, response
from tests.parsing.invariants import _summary


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"k": value}
    return value


def _variants() -> list[str]:
    pretty = json.dumps(response(schema_version="2.0"), indent=2)
    return [
        json.dumps(response(schema_version="2.0")),
        pretty,
        " \n" + pretty + "\n ",
        pretty.replace('"summary"', '"summary": "x", "summary"', 1),  # a repeated key is reported first
        json.dumps(response(schema_version="2.0", meta=_deep(12))),  # too deep for the small parser
        json.dumps(response(schema_version="2.0", summary=" padded ")),
        json.dumps(response(schema_version="2.0", extra=1)),
        json.dumps(response([finding(1, file="elsewhere.py")], schema_version="2.0")),
        "```json\n" + json.dumps(response(schema_version="2.0")) + "\n```",
        json.dumps(response(schema_version="2.0"))[:-5],
        json.dumps(response(prompt_version="9.9.9")),
        json.dumps(response(schema_version="0.9")),
        json.dumps(response(schema_version="1.1", prompt_version="2.0.0")),
        json.dumps(response(schema_version="2.0")),
        json.dumps(response(schema_version="2.0", prompt_version="1.0.1")),
        json.dumps(response(schema_version="1.0")),
    ]


@pytest.mark.parametrize("max_depth", [8, 256])
@pytest.mark.parametrize("as_bytes", [False, True])
def test_refusal_memo_matches_the_diagnostic_path(contract: Contract, max_depth: int, as_bytes: bool) -> None:
    policy = contract.default_policy
    limited = type(policy)(policy.schema_floor, policy.prompt_version, limits=Limits(max_depth=max_depth))
    parsers = [Parser(contract, limited), Parser(contract, limited, fast_path=False)]
    slow = Parser(contract, limited, fast_path=False)
    texts = _variants()
    for _ in range(2):  # the second round is answered from the memo where it applies
        for text in texts + texts[::-1]:
            raw: Any = text.encode() if as_bytes else text
            expected = _summary(slow.parse(raw, CHANGED))
            for parser in parsers:
                assert _summary(parser.parse(raw, CHANGED)) == expected, text
    reasons = {slow.parse(t, CHANGED).reason for t in texts}
    assert {Code.INCOMPATIBLE_VERSION, Code.DUPLICATE_KEY} <= reasons
    assert (Code.TOO_DEEP in reasons) is (max_depth == 8)


def test_a_refusal_inside_a_wrapper_is_not_taken_for_the_next_response(contract: Contract) -> None:
    parser, slow = Parser(contract), Parser(contract, fast_path=False)
    refused = json.dumps(response(prompt_version="9.0.0"))
    texts = [
        refused,
        "Here:\n```json\n" + refused + "\n```",  # the guessed fast path declines the span for its versions
        json.dumps(response([{"id": "F1"}])),  # the guess declines for its decoding: a different reason
        refused,
        json.dumps(response([{"id": "F1"}])),
    ]
    for text in texts + texts:
        assert _summary(parser.parse(text, CHANGED)) == _summary(slow.parse(text, CHANGED)), text


def test_threads_sharing_a_parser_get_their_own_outcomes(contract: Contract) -> None:
    """What a fast path declined for travels back with its answer, not on the (shared) fast path."""
    parser, slow = Parser(contract), Parser(contract, fast_path=False)
    texts = [
        json.dumps(response(prompt_version="9.0.0")),
        json.dumps(response(schema_version="2.0")),
        json.dumps(response([finding(1)])),
        json.dumps(response([{"id": "F1"}])),
        json.dumps(response(schema_version="2.0"))[:-5],
    ]
    expected = [_summary(slow.parse(text, CHANGED)) for text in texts]
    wrong: list[str] = []

    def run(offset: int) -> None:
        for i in range(3000):
            k = (i + offset) % len(texts)
            try:
                if _summary(parser.parse(texts[k], CHANGED)) != expected[k]:
                    wrong.append(texts[k])
            except Exception as exc:  # an exception in a thread would otherwise pass unnoticed
                wrong.append(f"{texts[k]}: {exc!r}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=run, args=(offset,)) for offset in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not wrong, wrong[:3]
