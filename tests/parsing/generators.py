"""Adversarial inputs for the parser over every shipped contract, from a seed.

``inputs(rng, contract)`` yields (raw, changed files, request versions) triples: valid responses built from the
contract's own field rules, then damaged in the ways models and transports damage them: lone surrogates (in a str
and escaped), numbers beyond float range and integers beyond 4,300 digits, invalid UTF-8 in keys, values and
wrappers, repeated keys, think tags, fences (also inside strings), several objects, deep nesting, truncation at
every offset, whitespace at string edges, paths with backslashes; as str and as bytes. ``huge(kind)`` builds the
4 MiB shapes. The small seeded slice runs in the test suite (test_adversarial.py); benchmarks/fuzz_parse.py runs
a million and more.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import rstr

from promptops import Contract, load_contract
from promptops.core.shape import FieldRule

ROOT = Path(__file__).resolve().parents[2]
CONTRACTS = sorted(p.name for p in (ROOT / "versions").iterdir() if (p / "contract.yaml").is_file())
CHANGED = ["src/api/users.py", "src/auth/login.py", "tests/test_login.py", "docs/a b.md"]
MIB4 = 4 * 1024 * 1024
HUGE_KINDS = [
    "objects", "members", "brackets", "strings", "findings", "think", "deep_cut", "prose", "numbers_cut",
    "escapes_cut", "objects_under_limit", "valid",
]  # fmt: skip

Case = tuple[str | bytes, list[str], tuple[str, str] | None]


def contracts() -> list[Contract]:
    return [load_contract(ROOT, name) for name in CONTRACTS]


def _value(rng: random.Random, rule: FieldRule, name: str, contract: Contract) -> Any:
    roles = contract.roles
    if name == roles.path:
        return rng.choice(CHANGED)
    if name in (roles.line, roles.end_line):
        return rng.randint(1, 400)
    if rule.enum:
        return rng.choice(rule.enum) if rng.random() < 0.9 else rng.choice(_HOSTILE_VALUES)
    kinds = sorted(rule.types - {"null"}) or ["string"]
    kind = rng.choice(kinds)
    if kind == "string":
        if rule.pattern is not None:
            if rng.random() < 0.3:  # what backtracks, and what ECMA and Python's re read differently
                return rng.choice(_HOSTILE_STRINGS)() if rng.random() < 0.5 else rng.choice(_HOSTILE_VALUES)
            try:
                return rstr.Rstr(rng).xeger(rule.pattern.source)  # seeded: the same cases in every process
            except Exception:  # a pattern rstr cannot read (it parses with Python's re)
                return "a"
        return rng.choice(["SQL built from user input", "x", "Use a bound parameter: it is safe.", "naïve"])
    if kind == "integer":
        low = int(rule.minimum) if rule.minimum is not None and rule.minimum > -(2**70) else 0
        if rng.random() < 0.1:
            return rng.choice([2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 10**30, 2**53 + 1, -(2**70)])
        return rng.randint(low, low + 50)
    if kind == "number":
        return rng.choice([0.5, 1, 0.75])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        if rule.unique_items and rng.random() < 0.3:  # long arrays, equal under JSON's equality or not
            many = [rng.choice([1, 1.0, True, "1", [1], {"a": 1}, None]) for _ in range(rng.randint(0, 8))]
            return many + list(range(rng.choice([10, 3000])))
        return [_value(rng, rule.items, "", contract) for _ in range(rng.randint(0, 2))] if rule.items else []
    if kind == "object":
        if rule.fallback is not None and rng.random() < 0.5:  # patternProperties names that backtrack
            return {rng.choice(_HOSTILE_STRINGS)(): rng.choice([1, "x"]) for _ in range(rng.randint(1, 3))}
        return {"k": [1, {"v": "a:b"}]}
    return None


# Strings that make a backtracking engine explode on patterns like ^(a+)+$, and the ones where ECMA-262 and
# Python's re disagree (\d on Arabic-Indic digits, $ before a final newline, \s on U+0085, . on U+2028).
_HOSTILE_STRINGS: list[Callable[[], str]] = [
    lambda: "a" * 30 + "!",
    lambda: "a" * 40 + "b",
    lambda: "\u0661\u0662\u0663",
    lambda: "12\n",
    lambda: "x\u0085",
    lambda: "\u2028",
    lambda: "a" * 2000,
]
_HOSTILE_VALUES = ["", "ab", 2**63, 1e308, None, [1, 1.0], {"a": "a" * 30 + "!"}]


def hostile_contracts(root: Path) -> list[Contract]:
    """Contracts (written under ``root``) whose schemas a user can write and that once hung or crashed the parser:
    backtracking and non-ECMA patterns, bounds outside int64, huge lengths, uniqueItems, patternProperties,
    deep nesting, a 100,000-value enum. Each is review-result with fields added to its findings."""
    base = json.loads((ROOT / "versions" / "review-result" / "schemas" / "1.0.json").read_text(encoding="utf-8"))
    config = (ROOT / "versions" / "review-result" / "contract.yaml").read_text(encoding="utf-8")
    deep: dict[str, Any] = {"type": "string", "pattern": "^(a|aa)+$"}
    for _ in range(25):
        deep = {"type": "array", "items": deep, "maxItems": 2}
    variants: dict[str, dict[str, Any]] = {
        "hostile-patterns": {
            "tag": {"type": "string", "pattern": "^(a+)+$"},
            "digits": {"type": "string", "pattern": "^\\d+$"},
            "word": {"type": "string", "pattern": "^\\w*\\s?$"},
            "dot": {"type": "string", "pattern": "^.{0,3}$"},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^(a|aa)+$"}},
            "choice": {"type": "string", "enum": ["aaa", "aa!", "b"], "pattern": "^(a+)+$"},
        },
        "hostile-bounds": {
            "big": {"type": "integer", "maximum": 2**63, "minimum": -(2**70)},
            "huge": {"type": "number", "maximum": 10**400, "exclusiveMinimum": -(2**63) - 1},
            "near": {"type": "number", "minimum": 2**53 + 1},
            "long": {"type": "string", "maxLength": 2**63},
            "never": {"type": "string", "minLength": 10**30},
            "many": {"type": "array", "items": {"type": "integer"}, "maxItems": 2**64},
            "wide": {"type": "integer", "enum": [2**64, 1, -(2**63) - 1]},
        },
        "hostile-unique": {
            "set": {"type": "array", "uniqueItems": True},
            "ints": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        },
        "hostile-nested": {
            "names": {
                "type": "object",
                "patternProperties": {"^(a+)+$": {"type": "integer"}, "^\\d+$": {"type": "string"}},
                "additionalProperties": False,
            },
            "deep": deep,
        },
        "hostile-enum": {"code": {"type": "string", "enum": [f"C{i}" for i in range(100_000)]}},
    }
    contracts = []
    for name, fields in variants.items():
        schema = json.loads(json.dumps(base))
        schema["properties"]["findings"]["items"]["properties"].update(fields)
        directory = root / "versions" / name
        (directory / "schemas").mkdir(parents=True, exist_ok=True)
        for version in ("1.0", "1.1"):  # the generators declare both
            (directory / "schemas" / f"{version}.json").write_text(json.dumps(schema), encoding="utf-8")
        (directory / "contract.yaml").write_text(
            config.replace("contract: review-result", f"contract: {name}"), encoding="utf-8"
        )
        contracts.append(load_contract(root, name))
    return contracts


def valid(rng: random.Random, contract: Contract) -> tuple[dict[str, Any], tuple[str, str] | None]:
    """A response every rule of the contract's floor schema accepts, and the request versions it needs."""
    policy = contract.default_policy
    shape = contract.shape(policy.schema_floor)
    findings = []
    for index in range(rng.randint(0, 4)):
        item = {}
        for name, rule in shape.item.properties.items():
            if name in shape.item.required or rng.random() < 0.5:
                item[name] = _value(rng, rule, name, contract)
        if contract.roles.id in item:
            item[contract.roles.id] = f"F{index + 1}"
        line, end = contract.roles.line, contract.roles.end_line
        if end in item and line in item:
            item[end] = item[line] + rng.randint(0, 5)
        findings.append(item)
    body: dict[str, Any] = {}
    for name, rule in shape.top.properties.items():
        if name == contract.items:
            body[name] = findings
        elif name in shape.top.required or rng.random() < 0.5:
            body[name] = _value(rng, rule, name, contract)
    fields = contract.versions
    if fields.schema is not None:
        body[fields.schema] = rng.choice([str(policy.schema_floor), "1.1", "2.0", "1.0"])
    if fields.prompt is not None:
        body[fields.prompt] = rng.choice([str(policy.prompt_version), "1.0.1", "1.0.0"])
    request = None
    if fields.schema is None or fields.prompt is None:
        request = (str(policy.schema_floor), rng.choice([str(policy.prompt_version), "2.0.0"]))
    return body, request


_DAMAGE = [
    '"\\ud800"', '"\\udc00x"', "1e999", "-1e400", "1" * 4400, "0." + "1" * 5000, "1e-999", "NaN", "Infinity",
    '"a\\u003ab"', "null", "true", "[]", "{}", '" padded "', '"src\\\\api\\\\users.py"', '"\\u2028x"', '"x\\u00a0"',
]  # fmt: skip
_INSERTS = [
    "<think>", "</think>", "<THINK>plan</Think>", "```json\n", "\n```", "```", "Here is the review:\n", "{", "}",
    "[", "]", ",", ":", '"', "\\", "\ufeff", " ", "\n", "\xa0", "é", "\ud800", "\udfff", "{}", '{"x":1}',
]  # fmt: skip
_BAD_BYTES = [b"\xff", b"\xed\xa0\x80", b"\xc3", b"\xe9", b"\xf4\x90\x80\x80", b"\x80", b"\xc0\xaf"]


def _text(rng: random.Random, body: dict[str, Any]) -> str:
    return json.dumps(body, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.3)


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randint(1, 16))
        op = rng.randrange(9)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:i] + rng.choice(_INSERTS) + text[i:]
        elif op == 2:  # repeat a member or a span: repeated keys, repeated objects
            text = text[:j] + text[i:j] + text[j:]
        elif op == 3:  # replace a value
            colon = text.find(":", i)
            if colon >= 0:
                end = min((k for k in (text.find(",", colon), text.find("}", colon)) if k >= 0), default=len(text))
                text = text[: colon + 1] + rng.choice(_DAMAGE) + text[end:]
        elif op == 4:
            text = text[:i]
        elif op == 5:  # a key repeated on purpose
            key_end = text.find('":', i)
            key_start = text.rfind('"', 0, key_end) if key_end > 0 else -1
            if key_start >= 0:
                member = text[key_start : key_end + 2] + rng.choice(["1", '"x"', "null", "[]"]) + ","
                brace = text.rfind("{", 0, key_start)
                if brace >= 0:
                    text = text[: brace + 1] + member + text[brace + 1 :]
        elif op == 6:  # fences inside strings
            quote = text.find('"', i)
            if quote >= 0:
                text = (
                    text[: quote + 1] + rng.choice(["```json\\n{}\\n```", '{\\"a\\":1}', "<think>"]) + text[quote + 1 :]
                )
        elif op == 7:  # wrappers
            text = (
                rng.choice(["<think>x</think>", "Sure!\n```json\n", "", "{} "])
                + text
                + rng.choice(["", "\n```", " {}", " done"])
            )
        else:  # deep nesting
            depth = rng.choice([8, 255, 256, 257, 300, 5000])
            text = text[:i] + "[" * depth + "]" * rng.choice([0, depth]) + text[i:]
    return text


def _encode(rng: random.Random, text: str) -> str | bytes:
    roll = rng.random()
    if roll < 0.5:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if roll < 0.7 and data:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice(_BAD_BYTES) + data[i:]
    return data


def inputs(rng: random.Random, contract: Contract, count: int) -> Iterator[Case]:
    """``count`` damaged responses for ``contract`` (a tenth of them: every prefix of one response)."""
    produced = 0
    while produced < count:
        body, request = valid(rng, contract)
        text = _text(rng, body)
        changed = CHANGED if rng.random() < 0.9 else [rng.choice(CHANGED), "./src/api/users.py", "a\\b.py"]
        if rng.random() < 0.02:  # truncation at every offset
            for cut in range(len(text)):
                if produced >= count:
                    return
                produced += 1
                yield _encode(rng, text[:cut]), changed, request
            continue
        produced += 1
        yield _encode(rng, text if rng.random() < 0.1 else _mutate(rng, text)), changed, request


def huge(kind: str, contract: Contract) -> str:
    """A 4 MiB input of one pathological shape (valid: one response with as many findings as fit)."""
    unit = {
        "objects": "{}",
        "members": '{"x":1}',
        "brackets": "[",
        "strings": '"a",',
        "findings": "{},",
        "think": "<think>",
        "deep_cut": '{"a":[',
        "prose": "lorem ipsum dolor ",
    }.get(kind)
    if unit is not None:
        return (unit * (MIB4 // len(unit) + 1))[: MIB4 - 2]
    if kind == "numbers_cut":
        return '{"' + contract.items + '":[' + "1," * (MIB4 // 2 - 20)
    if kind == "escapes_cut":
        return '{"' + contract.items + '":[{"x":"' + "\\n" * (MIB4 // 2 - 20)
    if kind == "objects_under_limit":
        return "{}" * 65_000
    rng = random.Random(4)
    body, _ = valid(rng, contract)
    item = {"id": "F1", "title": "t" * 1000}
    fields = contract.versions
    if fields.schema is not None and fields.prompt is not None:
        body[fields.schema], body[fields.prompt] = "1.0", "1.0.0"
    body[contract.items] = [item] * (MIB4 // 1100)
    return json.dumps(body)
