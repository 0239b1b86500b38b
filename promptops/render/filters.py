"""The filters a prompt template has besides Jinja's own: ``json`` (a value as JSON text), ``fenced`` (a code
fence no data can close), ``describe`` (a field's type and bounds as prompt text) and ``constraints`` (what a
value must meet beyond them)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from jinja2 import Environment

from promptops.core.shape import FieldRule
from promptops.render import regexes


def install(env: Environment) -> None:
    """Add the filters to ``env``."""
    env.filters["json"] = _to_json
    env.filters["fenced"] = _fenced
    env.filters["describe"] = describe_rule
    env.filters["constraints"] = describe_constraints


def describe_rule(rule: FieldRule) -> str:
    """A field's type and bounds as prompt text: "string, non-empty", "integer, >= 1", "array of string"."""
    if rule.items is not None:
        parts = [f"array of {describe_rule(rule.items)}"]
    else:
        parts = [" or ".join(sorted(rule.types)) if rule.types else "any JSON value"]
    if rule.min_length == 1:
        parts.append("non-empty")
    elif rule.min_length:
        parts.append(f"at least {rule.min_length} characters")
    bounds = (
        (rule.max_length, "at most {} characters"),
        (rule.minimum, ">= {}"),
        (rule.exclusive_minimum, "> {}"),
        (rule.maximum, "<= {}"),
        (rule.exclusive_maximum, "< {}"),
        (rule.min_items, "at least {} items"),
        (rule.max_items, "at most {} items"),
    )
    parts += [text.format(value) for value, text in bounds if value is not None]
    return ", ".join(parts)


def describe_constraints(rule: FieldRule) -> list[str]:
    """What a value must meet beyond ``describe``'s type and bounds, as phrases that follow "must": ["match the
    regular expression `^G[0-9]+$`", "be in uri format, such as https://example.com/docs/page"]. Empty when
    the rule has no pattern, format or multipleOf (nor its array items a pattern)."""
    phrases = []
    if rule.multiple_of is not None:
        phrases.append(f"be a multiple of {rule.multiple_of}")
    if rule.pattern is not None:
        phrases.append(f"match the regular expression {_inline_code(rule.pattern.source)}")
    if rule.format is not None:
        example = _FORMAT_EXAMPLES.get(rule.format)
        phrases.append(f"be in {rule.format} format" + (f", such as {example}" if example else ""))
    if rule.items is not None and rule.items.pattern is not None:
        phrases.append(f"hold items that each match the regular expression {_inline_code(rule.items.pattern.source)}")
    return phrases


# What a value of a common JSON Schema format looks like, for the prompt (the parser does not check formats).
_FORMAT_EXAMPLES = {
    "uri": "https://example.com/docs/page",
    "uri-reference": "/docs/page",
    "email": "dev@example.com",
    "date": "2026-01-31",
    "date-time": "2026-01-31T12:00:00Z",
    "time": "12:00:00Z",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "hostname": "api.example.com",
}


def _inline_code(text: str) -> str:
    """``text`` as markdown inline code, delimited by a backtick run longer than any inside it."""
    longest = _longest_backtick_run(text)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _to_json(value: Any) -> str:
    """JSON text of a value, non-ASCII kept as is (file names show exactly as the model must write them)."""
    return json.dumps(_plain(value), ensure_ascii=False)


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [_plain(v) for v in value]
    return str(value)


_BACKTICK_RUN = regexes.lazy(r"`+")


def _longest_backtick_run(text: str) -> int:
    if "`" not in text:  # most values: no pattern to run
        return 0
    return max(len(m) for m in _BACKTICK_RUN.findall(text))


def _fenced(value: str, info: str = "") -> str:
    """``value`` in a markdown code fence longer than any backtick run inside it, so data cannot close it."""
    longest = _longest_backtick_run(value)
    fence = "`" * max(3, longest + 1)
    body = value[:-1] if value.endswith("\n") else value
    return f"{fence}{info}\n{body}\n{fence}"
