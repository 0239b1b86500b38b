"""The parser's C extension ``_checks`` called directly, case by case: the parity tests compare whole parses, where
a decline test that says "not sure" too often only costs speed and one that says "clean" wrongly hides behind
the many rules a response must pass at once. Here each answer is checked alone, on the inputs its scan is most
likely to get wrong (escapes, backslash runs, the 64-key and depth bounds, tables too large for the stack,
whitespace str.strip() removes), and on any bytes at all, which must never crash it or make it raise.
.ci/sanitize runs this file against a build under ASan and UBSan."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops.parsing.native import checks

pytestmark = pytest.mark.skipif(
    checks is None, reason="promptops.parsing._checks is not built (installed without a C compiler)"
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UNSET = msgspec.UNSET


def plain(text: str | bytes | bytearray | memoryview, max_depth: int = 16) -> bool:
    assert checks is not None
    answer = checks.plain_keys(text, max_depth)
    assert type(answer) is bool
    return answer


def obj(keys: list[str], value: str = "1") -> str:
    return "{" + ",".join(f'"{key}":{value}' for key in keys) + "}"


def nested_objects(levels: int, keys: int, innermost: str = "{}", last: str = "") -> str:
    """``levels`` objects each inside the last, each with ``keys`` members: ``keys - 1`` numbers and the next
    object; the outermost one ends with the member ``last`` when given."""
    text = innermost
    for level in range(levels):
        members = [*(f'"k{i}":1' for i in range(keys - 1)), f'"n":{text}']
        if last and level == levels - 1:
            members.append(last)
        text = "{" + ",".join(members) + "}"
    return text


# ---- plain_keys: (text, max_depth, expected) ----------------------------------------------------------------------

KEYS = [
    # repeated keys, at the top, nested, inside arrays, after a nested value
    ('{"a":1,"a":2}', 16, False),
    ('{ "a" : 1 ,\n "a" : 2 }', 16, False),
    ('{"a":1,"b":2,"a":3}', 16, False),
    ('{"x":{"a":1,"b":2,"a":3}}', 16, False),
    ('[1,{"a":1,"a":2}]', 16, False),
    ('[[[{"a":[],"a":{}}]]]', 16, False),
    ('{"a":{"b":1},"a":2}', 16, False),
    ('{"a":[{"a":1}],"a":2}', 16, False),
    ('{"é":1,"é":2}', 16, False),
    ('{"":1,"":2}', 16, False),
    # the same key in sibling objects, in a parent and its child, or as a value: fine
    ('[{"a":1},{"a":2}]', 16, True),
    ('{"x":{"a":1},"y":{"a":2}}', 16, True),
    ('{"a":{"a":{"a":1}}}', 16, True),
    ('{"a":"a","b":"a"}', 16, True),
    ('{"a":["a","a"]}', 16, True),
    ('{"é":1,"e":2}', 16, True),
    ('{"a":1,"A":2,"a ":3," a":4}', 16, True),
    ('{"abc":1,"axc":2,"ayc":3}', 16, True),  # the same length, first and last letters: told apart
    ('{"abc":1,"axc":2,"abc":3}', 16, False),
    ('{"ab":1,"ba":2,"ab":3}', 16, False),
    # a key written with an escape may equal another one spelled differently: not sure, even when distinct
    ('{"a":1,"\\u0061":2}', 16, False),
    ('{"a\\n":1,"b":2}', 16, False),
    ('{"\\"":1}', 16, False),
    ('{"a":"\\n"}', 16, True),  # an escape in a value is nothing to be unsure of
    # brackets, quotes and backslash runs inside strings
    ('{"a":"{[","b":"]}"}', 16, True),
    ('["{\\"a\\":1,\\"a\\":2}"]', 16, True),  # a JSON text inside a string is a string
    ('{"x":"a\\\\","x":1}', 16, False),  # "a\\" ends at its quote: the second x is a key
    ('{"x":"a\\\\","y":"}"}', 16, True),
    ('{"x":"\\"","x":1}', 16, False),  # "\"" is one quote
    ('{"x":"\\\\\\"","y":1}', 16, True),  # "\\\"" is a backslash and a quote
    ('{"x":"\\\\\\\\","x":1}', 16, False),  # "\\\\" is two backslashes
    ('{"x":"\\\\\\"]}","x":1}', 16, False),
    ('{"x":"[[[[[[","y":"{{{{{{{{"}', 2, True),  # brackets in strings do not nest
    # depth: the top value is level 1
    ("[[[]]]", 3, True),
    ("[[[[]]]]", 3, False),
    ('{"a":{"b":{}}}', 3, True),
    ('{"a":{"b":{}}}', 2, False),
    ('[{"a":[1]}]', 3, True),
    ('[{"a":[1]}]', 2, False),
    ("[[],[],[[]]]", 3, True),
    ("[[],[],[[]]]", 2, False),
    ("[]", 1, True),
    ("[]", 0, False),
    ("{}", 0, False),
    ("1", 0, True),
    ('"x"', 0, True),
    ("[]", -1, False),
    ("1", -5, True),
    ("[" * 32 + "]" * 32, 32, True),  # as deep as the stack table
    ("[" * 33 + "]" * 33, 33, True),  # one deeper: the heap tables
    ("[" * 33 + "]" * 33, 32, False),
    # garbage, truncated and unbalanced texts
    ("", 16, False),  # no JSON value at all
    ("[}", 16, False),  # a bracket closed by the other kind
    ('{"a":[1}]', 16, False),
    ('{"a":1', 16, False),
    ("[[", 16, False),
    ("]", 16, False),
    ("}{", 16, False),
    ('{"a":1}}', 16, False),
    ('"abc', 16, False),
    ('{"a":"', 16, False),
    ('{"a":"\\', 16, False),
    ('{"a":"\\"}', 16, False),
    ('["a\\\\\\"]', 16, False),
    ("\x00\x00\x00", 16, True),
]


@pytest.mark.parametrize(("text", "max_depth", "expected"), KEYS)
def test_plain_keys(text: str, max_depth: int, expected: bool) -> None:
    assert plain(text, max_depth) is expected


@pytest.mark.parametrize(("text", "max_depth", "expected"), KEYS)
def test_str_and_buffers_agree(text: str, max_depth: int, expected: bool) -> None:
    """A str is read as its UTF-8: bytes, a bytearray and memoryviews of that text give the same answer."""
    data = text.encode()
    padded = bytearray(b"[[[" + data + b"]]]")
    for source in (data, bytearray(data), memoryview(data), memoryview(padded)[3:-3], memoryview(bytes(padded))[3:-3]):
        assert plain(source, max_depth) is expected, source


@pytest.mark.parametrize("count", [1, 2, 63, 64])
@pytest.mark.parametrize("spelled", ["k{}", "a{:02d}z", "{}"])
def test_up_to_64_keys_in_one_object(count: int, spelled: str) -> None:
    keys = [spelled.format(i) for i in range(count)]
    assert plain(obj(keys))
    assert not plain(obj([*keys[:-1], keys[0]]) if count > 1 else obj([*keys, *keys]))
    assert plain("[" + obj(keys) + "," + obj(keys) + "]")  # 64 in each of two objects


def test_more_than_64_keys_are_not_looked_at() -> None:
    assert not plain(obj([f"k{i}" for i in range(65)]))  # all distinct, but not looked for
    assert not plain(obj([f"k{i}" for i in range(1000)]))
    assert plain("[" + ",".join(obj([f"k{i}" for i in range(64)]) for _ in range(100)) + "]")


@pytest.mark.parametrize(
    ("levels", "keys"),
    [
        (3, 64),  # 192 keys open at once: the stack table holds them
        (5, 64),  # 320: the heap tables
        (31, 64),  # every frame of the stack table, and more keys than it holds
        (40, 64),  # more frames and keys than the stack tables hold
        (40, 3),  # more frames only
        (5, 3),
    ],
)
def test_keys_of_open_objects_beyond_the_stack_tables(levels: int, keys: int) -> None:
    deep = levels + 1
    assert plain(nested_objects(levels, keys), deep)
    assert not plain(nested_objects(levels, keys), deep - 1)
    # repeated in the innermost object, in the outermost one after the nested value, or in one in the middle
    assert not plain(nested_objects(levels, keys, innermost='{"z":1,"z":2}'), deep)
    assert not plain(nested_objects(levels, keys - 1, last='"k0":2'), deep)
    assert plain(nested_objects(levels, keys - 1, last='"z":2'), deep)
    middle = nested_objects(levels // 2, keys - 1, last='"n":3')
    assert not plain(nested_objects(levels - levels // 2, keys, innermost=middle), deep)
    middle = nested_objects(levels // 2, keys - 1, last='"m":3')
    assert plain(nested_objects(levels - levels // 2, keys, innermost=middle), deep)


def test_large_inputs() -> None:
    """4 MiB and more: nesting far deeper than the stack table holds, and many objects (their keys forgotten as
    each one closes) under more levels than it holds: the heap tables, sized from the text."""
    deep = "[" * (1 << 21) + "]" * (1 << 21)
    assert plain(deep, 1 << 21)
    assert not plain(deep, (1 << 21) - 1)
    assert not plain(deep[:-1], 1 << 22)
    good = '{"id":"F1","line":7,"msg":"a \\" [ {","k":[]}'
    bad = '{"id":"F1","line":7,"msg":"a \\" [ {","line":[]}'
    many = '{"n":' * 40 + "[" + ",".join([good] * 100_000) + "]" + "}" * 40
    assert len(many) > 4 << 20
    depth = _depth(_read(many)[0])
    assert depth == 43
    assert plain(many, depth)
    assert plain(many.encode(), 1 << 40)
    assert not plain(many, depth - 1)
    assert not plain(many.replace(good, bad, 1), depth)
    assert not plain(many[:-41] + "," + bad + "]" + "}" * 40, depth)


def test_truncated_texts_are_never_plain() -> None:
    """Every proper prefix of an object's text leaves a bracket or a string open."""
    text = json.dumps({"a": [1, {"b": 'x\\"]}'}, None], "c": {"d": {}}, "é": "\u3000"}, ensure_ascii=False)
    for end in range(1, len(text)):
        assert not plain(text[:end]), text[:end]
        assert not plain(text.encode()[:end]), text[:end]
    assert plain(text)


def test_lone_surrogates_are_not_sure() -> None:
    for text in ('{"\ud800":1}', '"\udfff"', "\ud83d", '{"a":"x\udc00y"}'):
        assert plain(text) is False


def test_arguments() -> None:
    assert checks is not None
    module = checks
    calls: list[Callable[[], object]] = [
        lambda: module.plain_keys(b"[]"),
        lambda: module.plain_keys(b"[]", 1, 1),
        lambda: module.plain_keys(b"[]", max_depth=1),  # positional only
        lambda: module.plain_keys(text=b"[]", max_depth=1),
        lambda: module.plain_keys(b"[]", 1.0),
        lambda: module.plain_keys(b"[]", "1"),
        lambda: module.plain_keys(b"[]", None),
    ]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    for source in (None, 1, ["{}"], object()):
        with pytest.raises(TypeError):
            checks.plain_keys(source, 1)
    with pytest.raises(BufferError):
        checks.plain_keys(memoryview(b"{}{}")[::2], 1)  # not contiguous
    with pytest.raises(OverflowError):
        checks.plain_keys(b"[]", 1 << 70)
    assert plain(b"[]", 1 << 62) and plain(b"[" * 100 + b"]" * 100, (1 << 63) - 1)
    assert not plain(b"[]", -(1 << 63))


# ---- plain_keys: properties -------------------------------------------------------------------------------------

WHITE = st.sampled_from(["", "", " ", "\n", "\t \r\n"])
SCALARS = st.one_of(
    st.sampled_from(["null", "true", "false", "0", "-1.5e3", '"a\\\\"', '"\\""', '"{"', '"[\\"]"', '"\\\\\\""']),
    st.integers().map(str),
    st.builds(json.dumps, st.text(st.characters(codec="utf-8"), max_size=8), ensure_ascii=st.booleans()),
    st.text(alphabet='{}[]",:\\ ab', max_size=8).map(json.dumps),
)
KEY_TEXTS = st.one_of(
    st.sampled_from(["a", "b", "k", "", "é", "a b", "{", "]", ":", ","]).map(lambda key: f'"{key}"'),
    st.sampled_from(["a", "é", '"', "\\", "\n"]).map(json.dumps),
    # written with escapes on purpose: the same key spelled differently
    st.sampled_from(["a", "b", "é"]).map(lambda key: '"' + "".join(f"\\u{ord(c):04x}" for c in key) + '"'),
)


def _padded(texts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(WHITE, texts, WHITE).map("".join)


def _containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    arrays = st.lists(_padded(children), max_size=4).map(lambda items: "[" + ",".join(items) + "]")
    members = st.tuples(_padded(KEY_TEXTS), _padded(children)).map(":".join)
    objects = st.lists(members, max_size=5).map(lambda items: "{" + ",".join(items) + "}")
    return arrays | objects


JSON_TEXTS = _padded(st.recursive(SCALARS, _containers, max_leaves=25))


def _read(text: str) -> tuple[Any, bool]:
    """The value of a JSON text, and whether one of its objects repeats a key."""
    repeated = False

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        keys = [key for key, _ in members]
        repeated = repeated or len(set(keys)) != len(keys)
        return dict(members)

    return json.loads(text, object_pairs_hook=pairs), repeated


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@SETTINGS
@given(JSON_TEXTS, st.integers(-2, 7))
def test_plain_means_no_repeated_key_and_not_too_deep(text: str, max_depth: int) -> None:
    value, repeated = _read(text)
    shallow = _depth(value) <= max(max_depth, 0)
    answer = plain(text, max_depth)
    assert answer is plain(text.encode(), max_depth)
    if answer:
        assert not repeated and shallow
    if "\\" not in text:
        # no escape anywhere and never more than 64 keys in an object: nothing to be unsure of
        assert answer is (not repeated and shallow)


def _brackets(text: str) -> tuple[bool, int]:
    """For a text without quotes: whether it is not empty and every bracket is closed by its own kind, and the
    deepest nesting."""
    opened: list[str] = []
    deepest = 0
    for c in text:
        if c in "[{":
            opened.append(c)
            deepest = max(deepest, len(opened))
        elif c in "]}" and (not opened or opened.pop() != "[{"["]}".index(c)]):
            return False, deepest
    return bool(text) and not opened, deepest


@SETTINGS
@given(st.binary(max_size=400), st.integers(-3, 40))
def test_any_bytes(data: bytes, max_depth: int) -> None:
    answer = plain(data, max_depth)
    assert answer is plain(bytearray(data), max_depth) is plain(memoryview(data), max_depth)
    if b'"' not in data:
        balanced, deepest = _brackets(data.decode("latin-1"))
        assert answer is (balanced and deepest <= max(max_depth, 0))


@SETTINGS
@given(st.text(alphabet='{}[]",:\\ a\u00e9\ud800', max_size=200), st.integers(-1, 12))
def test_json_like_text(text: str, max_depth: int) -> None:
    answer = plain(text, max_depth)
    if "\ud800" in text:
        assert answer is False
    else:
        assert answer is plain(text.encode(), max_depth)
    if '"' not in text and "\ud800" not in text:
        balanced, deepest = _brackets(text)
        assert answer is (balanced and deepest <= max(max_depth, 0))


# ---- Checks.first_unclean ---------------------------------------------------------------------------------------

Item = msgspec.defstruct(
    "Item",
    [
        ("f0", str),  # a free string
        ("f1", list[str]),  # a list of free strings
        ("f2", int),  # line
        ("f3", int | msgspec.UnsetType, UNSET),  # end line
        ("f4", str | msgspec.UnsetType, UNSET),  # path
        ("f5", str | msgspec.UnsetType, UNSET),  # id
        ("f6", str | None | msgspec.UnsetType, UNSET),  # another free string, optional and nullable
    ],
    rename={"f0": "title", "f1": "tags", "f2": "line", "f3": "end_line", "f4": "file", "f5": "id", "f6": "note"},
    kw_only=True,
    forbid_unknown_fields=True,
    gc=False,
)
Other = msgspec.defstruct("Other", [("f0", str)], kw_only=True)
WRITTEN = ("src/a.py", "src/b.py")

MEMBERS: dict[str, Any] = {
    "type": Item,
    "strings": ("f0", "f6"),
    "string_lists": ("f1",),
    "line": "f2",
    "end_line": "f3",
    "path": "f4",
    "id": "f5",
    "unset": UNSET,
}

Clean = Callable[[list[Any], Collection[str] | None, bool], bool]


def make_checks(**members: Any) -> Any:
    assert checks is not None
    return checks.Checks(**{**MEMBERS, **members})


def clean_of(built: Any) -> Clean:
    """Whether every object is clean as written (first_unclean from the start finds none)."""

    def clean(objects: list[Any], written: Collection[str] | None, distinct_ids: bool) -> bool:
        found = built.first_unclean(objects, written, distinct_ids, 0)
        assert found is None or (type(found) is int and 0 <= found < len(objects))
        return found is None

    return clean


def item(**members: Any) -> Any:
    return Item(**{"f0": "title", "f1": ["tag"], "f2": 10, **members})


@pytest.fixture(scope="module")
def checks_of_items() -> Any:
    return make_checks()


@pytest.fixture(scope="module")
def clean(checks_of_items: Any) -> Clean:
    return clean_of(checks_of_items)


def _edge_cases() -> list[str]:
    """Every code point up to U+3100 (all of str.isspace() is below it) at the start and at the end of a string,
    and a few above."""
    chars = [chr(c) for c in [*range(0x3100), 0xD800, 0xFEFF, 0xFFFF, 0x10FFFF]]
    return [text for c in chars for text in (c + "x", "x" + c, c + "x" + c)]


def test_edge_whitespace_as_str_strip(clean: Clean) -> None:
    wrong = []
    for text in _edge_cases():
        expected = text.strip() == text
        for members in ({"f0": text}, {"f6": text}, {"f1": ["a", "", text]}):
            if clean([item(**members)], WRITTEN, True) is not expected:
                wrong.append((text, members))
    assert not wrong, wrong[:20]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" a", False),
        ("a ", False),
        ("\ta", False),
        ("a\n", False),
        ("\u00a0a", False),
        ("a\u00a0", False),
        ("\u2003a", False),
        ("a\u2003", False),
        ("\u3000a", False),
        ("a\u3000", False),
        ("\x1ca", False),
        ("a\x1c", False),
        ("\x85a", False),
        ("a\x85", False),
        ("a\u2028", False),
        (" ", False),
        ("\u3000", False),
        ("\u200ba", True),  # a zero-width space is not white space to str.strip()
        ("a\ufeff", True),
        ("a b", True),
        ("a\u00a0\u3000\x85\tb", True),
        ("", True),
        ("\u00e9", True),
        ("\ud800", True),
    ],
)
def test_named_whitespace(clean: Clean, text: str, expected: bool) -> None:
    assert (text.strip() == text) is expected
    assert clean([item(f0=text)], WRITTEN, True) is expected
    assert clean([item(f6=text)], WRITTEN, True) is expected
    assert clean([item(f1=["a", text])], WRITTEN, True) is expected
    assert clean([item(f1=[text, "a"])], WRITTEN, True) is expected
    assert clean([item(f5="A"), item(f1=[], f5="B", f6=None), item(f0=text, f5="C")], WRITTEN, True) is expected


def test_strings_of_other_members_and_types(clean: Clean) -> None:
    assert clean([item(f4=" src/a.py")], None, True)  # paths, ids and lines are not free strings
    assert clean([item(f5=" F1 ")], WRITTEN, False)
    assert not clean([item(f5=" F1 ")], WRITTEN, True)  # ids are compared trimmed: not sure
    assert clean([item(f6=None)], WRITTEN, True)  # not a str: passed over
    assert clean([item(f1=[" x"])], WRITTEN, True) is False
    assert clean_of(make_checks(strings=(), string_lists=()))([item(f0=" x", f1=[" y"])], WRITTEN, True)


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ({}, True),
        ({"f1": []}, True),
        ({"f1": ["", ""]}, True),
        ({"f6": None}, True),
        ({"f3": 9}, False),  # end line before line
        ({"f3": 10}, True),
        ({"f3": 11}, True),
        ({"f2": 1, "f3": 0}, False),
        ({"f4": "src/a.py"}, True),
        ({"f4": "src/c.py"}, False),
        ({"f4": "src/a.py "}, False),
        ({"f4": "./src/a.py"}, False),
        ({"f5": "F1"}, True),
    ],
)
def test_members(clean: Clean, members: dict[str, Any], expected: bool) -> None:
    assert clean([item(**members)], WRITTEN, True) is expected
    assert clean([item(**members)], frozenset(WRITTEN), False) is expected
    assert clean([item(), item(**members), item()], list(WRITTEN), False) is expected


def test_paths(clean: Clean) -> None:
    assert clean([item(f4="src/c.py")], None, True)  # written=None: paths are not looked at
    assert clean([item(f4="src/c.py")], None, False)
    assert not clean([item(f4="src/c.py")], (), False)
    assert clean([item()], (), False)  # no path: nothing to place
    assert not clean([item(f4="src/a.py"), item(f4="src/c.py")], WRITTEN, False)
    assert clean([item(f4="src/a.py"), item(f4="src/b.py")], frozenset(WRITTEN), False)
    assert clean_of(make_checks(path=None))([item(f4="src/c.py")], WRITTEN, False)


def test_lines(clean: Clean) -> None:
    assert clean_of(make_checks(line=None))([item(f3=1)], WRITTEN, False)
    assert clean_of(make_checks(end_line=None))([item(f3=1)], WRITTEN, False)
    assert not clean([item(f3=11), item(f3=9)], WRITTEN, False)


def test_distinct_ids(clean: Clean) -> None:
    same = [item(f5="F1"), item(f5="F2"), item(f5="F1")]
    assert not clean(same, WRITTEN, True)
    assert clean(same, WRITTEN, False)
    assert clean([item(f5="F1"), item(f5="F2"), item(f5="f1"), item()], WRITTEN, True)
    assert clean_of(make_checks(id=None))(same, WRITTEN, True)
    # each call starts afresh
    assert clean([item(f5="F1")], WRITTEN, True) and clean([item(f5="F1")], WRITTEN, True)


def test_objects_of_another_type(clean: Clean) -> None:
    assert clean([], WRITTEN, True)
    for stranger in (Other(f0="x"), {"f0": "title", "f1": [], "f2": 10}, None, "x", msgspec.UNSET):
        assert not clean([stranger], WRITTEN, True)
        assert not clean([item(), stranger], None, False)
        assert not clean([stranger, item()], None, False)
    Sub = msgspec.defstruct("Sub", [], bases=(Item,), kw_only=True)
    assert not clean([Sub(f0="t", f1=[], f2=1)], None, False)


def _raise(_: Any) -> Any:
    raise LookupError("a member that cannot be read")


Odd = msgspec.defstruct(
    "Odd",
    [("f0", str), ("f1", Any), ("f2", Any)],
    namespace={"broken": property(_raise)},
    kw_only=True,
)
_NO_MEMBERS = {"type": Odd, "strings": (), "string_lists": (), "line": None, "end_line": None, "path": None, "id": None}


@pytest.mark.parametrize(
    "members",
    [{"strings": ("broken",)}, {"string_lists": ("broken",)}, {"end_line": "broken"}, {"path": "broken"}],
)
def test_only_struct_members_are_read(members: dict[str, Any]) -> None:
    """Members are read through the Struct's member descriptors: a name that is anything else (here a property
    that would run code) is refused when the Checks is built."""
    with pytest.raises(TypeError, match="has no member"):
        make_checks(**{**_NO_MEMBERS, **members})


@pytest.mark.parametrize(
    ("members", "f1", "f2", "expected"),
    [
        ({"id": "f1"}, [], None, None),  # an id that is not a str is not compared (the duplicate-id rule skips it)
        ({"id": "f1"}, "", None, None),  # nor is an empty one
        ({"id": "f1"}, " F1", None, 0),  # the rule compares ids trimmed: one with whitespace at an edge is not sure
        ({"line": "f1", "end_line": "f2"}, "a", 1, 0),  # lines that do not compare: not sure, no exception
        ({"path": "f1"}, [], None, 0),  # a path that cannot be looked up: not sure
    ],
)
def test_values_that_do_not_compare_are_not_sure(
    members: dict[str, Any], f1: Any, f2: Any, expected: int | None
) -> None:
    built = make_checks(**{**_NO_MEMBERS, **members})
    objects = [Odd(f0="x", f1=f1, f2=f2), Odd(f0="y", f1=f1, f2=f2)]
    assert built.first_unclean(objects, frozenset({"a"}), True, 0) == expected


def test_ids_repeated_once_trimmed_are_not_clean() -> None:
    """With trimming off, "F1" and " F1" are the same id to the duplicate-id rule: the fast path must not
    accept them (it declines on the id with whitespace at an edge)."""
    built = make_checks(**{**_NO_MEMBERS, "id": "f1"})
    objects = [Odd(f0="x", f1="F1", f2=None), Odd(f0="y", f1=" F1", f2=None)]
    assert built.first_unclean(objects, None, True, 0) == 1
    assert built.first_unclean(objects, None, False, 0) is None


def test_an_uninitialised_checks_finds_nothing_clean() -> None:
    assert checks is not None
    bare = checks.Checks.__new__(checks.Checks)
    assert bare.first_unclean([None], None, True, 0) == 0
    assert bare.first_unclean([], None, True, 0) is None


def test_first_unclean_index(checks_of_items: Any) -> None:
    first = checks_of_items.first_unclean
    items = [item(), item(f0=" x"), item(), item(f3=1), item(f5="F1"), item(f5="F1"), None, item()]
    assert first(items, WRITTEN, True, 0) == 1
    assert first(items, WRITTEN, True, 1) == 1
    assert first(items, WRITTEN, True, 2) == 3
    assert first(items, WRITTEN, True, 4) == 5  # F1 again
    assert first(items, WRITTEN, True, 5) == 6  # ids are told apart from ``start`` on
    assert first(items, WRITTEN, False, 4) == 6
    assert first(items, WRITTEN, True, 7) is None
    assert first(items, WRITTEN, True, 8) is None
    assert first(items, WRITTEN, True, 1 << 40) is None
    assert first(items, WRITTEN, True, -5) == 1  # before the start: from the start
    assert first([item(f4="src/c.py"), item()], WRITTEN, False, 0) == 0
    assert first([item(f4="src/c.py"), item()], None, False, 0) is None
    # every unclean one, as the fast path's callers walk them
    found, index = [], first(items, WRITTEN, False, 0)
    while index is not None:
        found.append(index)
        index = first(items, WRITTEN, False, index + 1)
    assert found == [1, 3, 6]


def test_first_unclean_arguments(checks_of_items: Any) -> None:
    first = checks_of_items.first_unclean
    calls: list[Callable[[], object]] = [
        lambda: first((item(),), WRITTEN, True, 0),  # a list only
        lambda: first([item()], WRITTEN, True),
        lambda: first([item()], WRITTEN, True, 0, 0),
        lambda: first([item()], WRITTEN, True, 0.0),
        lambda: first([item()], WRITTEN, True, None),
        lambda: first([item()], WRITTEN, True, start=0),
        lambda: first(objects=[item()], written=WRITTEN, distinct_ids=True, start=0),
    ]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    with pytest.raises(OverflowError):
        first([item()], WRITTEN, True, 1 << 70)
    assert first([item()], WRITTEN, 1, 0) is None
    assert first([item(f5="a"), item(f5="a")], WRITTEN, [0], 0) == 1  # any truth value


@pytest.mark.parametrize(
    "members",
    [
        {"strings": ("nope",)},  # no such member
        {"string_lists": ("f1", "nope")},
        {"line": "nope"},
        {"end_line": "F3"},
        {"path": "file"},  # the JSON name, not the attribute
        {"id": "nope"},
        {"strings": (1,)},  # not a str
        {"string_lists": (None,)},
        {"line": 2},
        {"id": b"f5"},
        {"strings": ["f0"]},  # not a tuple
        {"string_lists": "f1"},
        {"strings": None},
        {"type": "Item"},  # not a type
        {"type": Item(f0="", f1=[], f2=1)},
    ],
)
def test_bad_members(members: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        make_checks(**members)


def test_bad_constructor_calls() -> None:
    assert checks is not None
    with pytest.raises(TypeError):
        checks.Checks(*MEMBERS.values())  # keywords only
    with pytest.raises(TypeError):
        checks.Checks(**{k: v for k, v in MEMBERS.items() if k != "unset"})
    with pytest.raises(TypeError):
        checks.Checks(**MEMBERS, extra=None)
    # a failed re-initialisation leaves the checks as they were
    built = make_checks()
    with pytest.raises(TypeError):
        built.__init__(**{**MEMBERS, "strings": ("nope",)})
    assert not clean_of(built)([item(f0=" x")], WRITTEN, True)
    assert clean_of(built)([item()], WRITTEN, True)


# ---- Members.plain: repeated keys and depth from the decoded value ------------------------------------------------

Top = msgspec.defstruct(
    "Top",
    [
        ("f0", list.__class_getitem__(Item)),
        ("f1", str | msgspec.UnsetType, UNSET),
        ("f2", dict[str, Any] | msgspec.UnsetType, UNSET),
    ],
    rename={"f0": "items", "f1": "a:b", "f2": "meta"},  # a member name with a colon in it
    kw_only=True,
    forbid_unknown_fields=True,
    gc=False,
)
_decode_top = msgspec.json.Decoder(Top).decode


def members_plain(text: str, value: Any, max_depth: int = 16, types: tuple[type, ...] = (Top, Item)) -> bool:
    assert checks is not None
    answer = checks.Members(types=types, unset=UNSET).plain(text.encode(), value, max_depth)
    assert type(answer) is bool
    return answer


def _reference(text: str, max_depth: int) -> bool:
    value, repeated = _read(text)
    return not repeated and _depth(value) <= max(max_depth, 0)


@pytest.mark.parametrize(("text", "max_depth", "expected"), KEYS)
def test_members_of_any_json(text: str, max_depth: int, expected: bool) -> None:
    """Decoded without Struct types (dicts, lists, scalars), every text msgspec reads gets the exact answer: keys
    written with escapes are compared as decoded, and there is no bound on keys per object."""
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return  # not JSON: plain_keys' cases only
    assert members_plain(text, value, max_depth) is _reference(text, max_depth)


@pytest.mark.parametrize("count", [1, 64, 65, 1000])
def test_members_without_a_bound_on_keys(count: int) -> None:
    keys = [f"k{i}" for i in range(count)]
    assert members_plain(obj(keys), msgspec.json.decode(obj(keys)))
    repeated = obj([*keys, keys[0]])
    assert not members_plain(repeated, msgspec.json.decode(repeated))


def _top(items: str = '{"title":"t","tags":["x"],"line":1}', rest: str = "") -> str:
    return '{"items":[' + items + "]" + rest + "}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_top(), True),
        (_top(rest=', "a:b": "c:d"'), True),  # the colon of a member's name and of a value: counted
        (_top(rest=', "meta": {"x:y": {"z": [1, ":"]}}'), True),
        (_top('{"title":"a:b","tags":["c:d",":"],"line":1,"note":"é:日本:\U0001f600:"}'), True),
        (_top('{"title":"t","tags":[],"line":1,"\\u0066ile":"a"}'), True),  # an escaped name is its text
        (_top('{"title":"t","tags":[],"line":1,"title":"u"}'), False),
        (_top('{"title":"t","tags":[],"line":1,"\\u0074itle":"u"}'), False),
        (_top(rest=', "a:b": "c", "a:b": "d"'), False),
        (_top(rest=', "meta": {"x": 1, "x": 2}'), False),
        (_top(rest=', "meta": {"x": {"y": 1, "\\u0079": 2}}'), False),
        (_top('{"title":"t","tags":[],"line":1},{"title":"t","tags":[],"line":1,"line":2}'), False),
        (_top(rest=', "a:b": "\\u003a"'), False),  # a colon written as an escape: not sure
        (_top(rest=', "a:b": "\\u003A"'), False),
        (_top(rest=', "a:b": "\\\\u003a"'), False),  # a backslash and u003a: not sure either
        (_top(rest=', "a:b": "\\u0030"'), True),  # any other escape: decided
        (_top(rest=', "a:b": "\\u003b\\\\"'), True),
    ],
)
def test_members_of_structs(text: str, expected: bool) -> None:
    value = _decode_top(text)
    if expected is False and "u003" not in text:
        assert _read(text)[1]  # a repeated key indeed
    assert members_plain(text, value) is expected


def test_members_depth() -> None:
    text = _top(rest=', "meta": {"x": [[{}]]}')
    value = _decode_top(text)  # Top 1, meta 2, x 3, [4, {} 5
    assert members_plain(text, value, 5)
    assert not members_plain(text, value, 4)
    assert not members_plain(_top(), _decode_top(_top()), 3)  # Top, items, an Item, its tags: 4 levels
    assert members_plain(_top(), _decode_top(_top()), 4)
    assert members_plain('"x"', "x", 0) and members_plain("1", 1, -1)


def test_members_of_other_types_are_not_sure() -> None:
    text = _top()
    value = _decode_top(text)
    assert not members_plain(text, value, types=(Top,))  # an Item it was not given
    assert not members_plain(text, value, types=())
    assert not members_plain('{"f0":"x"}', Other(f0="x"))
    assert not members_plain("[1]", (1,))
    assert not members_plain('"x"', b"x")
    assert not members_plain('{"items":[]}', Top(f0=[], f1=msgspec.Raw(b"1")))
    assert checks is not None
    bare = checks.Members.__new__(checks.Members)
    assert bare.plain(b"1", 1, 1) is False


def test_members_with_the_wrong_text_says_not_sure() -> None:
    text = _top(rest=', "a:b": "c"')
    assert not members_plain(text.replace('"c"', '"c:"'), _decode_top(text))
    assert not members_plain(text.replace('"c"', '"c", "meta": {}'), _decode_top(text))


def test_members_arguments() -> None:
    assert checks is not None
    built = checks.Members(types=(Top, Item), unset=UNSET)
    module = checks
    calls: list[Callable[[], object]] = [
        lambda: built.plain(b"1", 1),
        lambda: built.plain(b"1", 1, 1.0),
        lambda: built.plain("1", 1, 1),  # bytes only
        lambda: built.plain(b"1", 1, max_depth=1),
        lambda: module.Members(types=[Top], unset=UNSET),
        lambda: module.Members(types=(Top(f0=[]),), unset=UNSET),
        lambda: module.Members(types=(int,), unset=UNSET),
        lambda: module.Members((Top,), UNSET),  # keywords only
    ]
    for call in calls:
        with pytest.raises(TypeError):
            call()
    with pytest.raises(OverflowError):
        built.plain(b"1", 1, 1 << 70)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@SETTINGS
@given(JSON_TEXTS, st.integers(-2, 7))
def test_members_exact_on_any_json(text: str, max_depth: int) -> None:
    try:
        value = msgspec.json.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return  # integers beyond what msgspec reads
    expected = "\\u003a" not in text.lower() and _reference(text, max_depth)
    assert members_plain(text, value, max_depth) is expected
