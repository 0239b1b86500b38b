"""An object taken out of a wrapper reads alike with the fast path on or off (the fast path never takes one):
every path must still reach the outcome of the generic reader."""

from __future__ import annotations

import json

import pytest

from promptops import Code, Contract, Limits, Parser
from tests.helpers import CHANGED, finding, response
from tests.parsing.invariants import _summary


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"k": value}
    return value


_OBJECTS = [
    json.dumps(response()),
    json.dumps(response(meta=_deep(8))),
    json.dumps(response([finding(1, severity="High")])),
    json.dumps(response())[:-1] + ",}",
    '{"a": 1}',
    json.dumps(response(summary=" padded ")),
    json.dumps(response([finding(1), finding(1)])),
    '{"a": 1e400}',
]


@pytest.mark.parametrize("max_depth", [6, 256])
@pytest.mark.parametrize("obj", _OBJECTS)
@pytest.mark.parametrize(
    "wrap", ["Here is my review:\n```json\n{}\n```\n", "<think>{{x}}</think>\n{}", "{} ", "use {{braces}} {}"]
)
def test_a_wrapped_object_reads_alike_on_every_path(contract: Contract, max_depth: int, obj: str, wrap: str) -> None:
    policy = contract.default_policy
    limited = type(policy)(policy.schema_floor, policy.prompt_version, limits=Limits(max_depth=max_depth))
    text = wrap.format(obj)
    slow = _summary(Parser(contract, limited, fast_path=False).parse(text, CHANGED))
    for parser in (Parser(contract, limited), Parser(contract, limited, fast_path=False)):
        assert _summary(parser.parse(text, CHANGED)) == slow
        assert _summary(parser.parse(text.encode(), CHANGED)) == slow


def test_a_broken_wrapped_object_is_invalid_json_saying_where_it_breaks(contract: Contract) -> None:
    body = json.dumps(response())[:-1]
    text = "Here:\n```json\n" + body + ",}\n```"
    for parser in (Parser(contract), Parser(contract, fast_path=False)):
        outcome = parser.parse(text, CHANGED)
        assert outcome.reason == Code.INVALID_JSON
        message = outcome.diagnostics[0].message
        assert message == f"response is not valid JSON: a trailing comma in an object at line 3, column {len(body) + 1}"


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(response()) + "\n" + json.dumps(response()),
        json.dumps(response()) + "\n" + json.dumps(response())[:-1] + ",}",
        json.dumps(response()) + ' {"a": [1, 2',
        json.dumps(response()) + " and {not json}",
        json.dumps(response()) + "\n```",
        json.dumps(response(meta=_deep(8))) + " {}",
        '{"a": 1,} ' + json.dumps(response()),
        json.dumps(response([finding(1, severity="High")])) + " trailing words",
        json.dumps(response([finding(1, severity="High")]))[:-40],
    ],
)
def test_an_object_followed_by_more_reads_alike_on_every_path(contract: Contract, text: str) -> None:
    policy = contract.default_policy
    for limits in (Limits(max_depth=6), policy.limits):
        limited = type(policy)(policy.schema_floor, policy.prompt_version, limits=limits)
        slow = _summary(Parser(contract, limited, fast_path=False).parse(text, CHANGED))
        for parser in (Parser(contract, limited), Parser(contract, limited, fast_path=False)):
            assert _summary(parser.parse(text, CHANGED)) == slow
