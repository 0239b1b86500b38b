"""One reader for the hand-kept files: YAML, TOML and JSONL into typed specs, every error naming file, line and key.

A spec is a ``msgspec.Struct`` whose fields carry their bounds; a ``Document`` is what a file parsed to and the
line of each key in it; ``Document.convert`` makes the spec or raises one ``SpecError`` written from the spec's
field type: ``rollout/x.yaml: line 7: steps[0].weight: must be a number from 0 to 1``. Custom field types
(versions, durations) are read by ``parsers``; a parser's ValueError is the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from msgspec import inspect

from promptops.core.errors import PromptopsError
from promptops.core.versioning import PromptVersion, SchemaVersion

T = TypeVar("T")
Key = tuple[str | int, ...]
Parsers = Mapping[type, Callable[[Any], Any]]

_AT = re.compile(r"\.([^.\[\]]+)|\[(\d+|\.\.\.)\]")


class SpecError(PromptopsError):
    """A hand-kept file that does not match its spec; ``line`` is 1-based when known."""

    def __init__(self, source: str, problem: str, line: int | None = None, key: str = "") -> None:
        self.source, self.problem, self.line, self.key = source, problem, line, key
        self.detail = f"{f'line {line}: ' if line else ''}{f'{key}: ' if key else ''}{problem}"
        super().__init__(f"{source}: {self.detail}")


class Document:
    """The data of one file (or one JSONL record), its name in messages and the line of each key."""

    def __init__(
        self, data: Any, source: str, locate: Callable[[Key], int | None], *, quoted_keys: bool = False
    ) -> None:
        self.data = data
        self.source = source
        self._locate = locate
        self._quoted = quoted_keys  # files whose messages read ``key 'a.b': ...`` (contracts, locks)

    def line(self, key: Key) -> int | None:
        return self._locate(key)

    def fail(self, key: Key, problem: str) -> SpecError:
        """The error for ``key`` (e.g. ``("steps", 0, "weight")``), its line found in the file."""
        name = dotted(key)
        if name and self._quoted:
            name = f"key '{name}'"
        return SpecError(self.source, problem, self.line(key), name)

    def convert(self, spec: type[T], key: Key = (), parsers: Parsers | None = None) -> T:
        """The data at ``key`` as ``spec``; SpecError naming the line and key of the first mistake."""
        data = self.data
        for part in key:
            data = data[part]
        table = dict(parsers or {})

        def hook(kind: type, value: Any) -> Any:
            if kind not in table:
                raise NotImplementedError  # msgspec's dec_hook protocol: "not a type this hook converts"
            return table[kind](value)

        try:
            return msgspec.convert(data, spec, dec_hook=hook)
        except msgspec.ValidationError as problem:
            where, message = _split(str(problem))
            raise self.fail((*key, *where), _explain(message, spec, where, data)) from None


def dotted(key: Key) -> str:
    """``("steps", 0, "weight")`` as ``steps[0].weight``."""
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _split(message: str) -> tuple[Key, str]:
    # msgspec: "Expected `int` >= 0 - at `$.steps[1].min_responses`"; "Object contains unknown field `x`"
    if " - at `key` in `$" in message:  # a key that is not a string (YAML allows 1: x)
        message = "every key must be a string - at `$" + message.partition(" - at `key` in `$")[2]
    text, _, at = message.partition(" - at `$")
    where: list[str | int] = []
    for name, index in _AT.findall(at.rstrip("`")):
        if index == "...":  # a mapping's value: msgspec does not say which key
            break
        where.append(int(index) if index else name)
    field = re.match(r"Object (?:contains unknown|missing required) field `(.*)`", text)
    if field:
        where.append(field[1])
    return tuple(where), text


def _explain(message: str, spec: type, where: Key, data: Any) -> str:
    """The user's words for msgspec's ``message`` about the value at ``where``, from the spec's field type."""
    if message.startswith("Object contains unknown field"):
        return "unknown key (check the spelling)"
    kind = _type_at(inspect.type_info(spec), where)
    if kind is None or not (message.startswith(("Expected", "Object missing", "Invalid enum", "Number out of"))):
        return message  # a parser's own words (a version, a duration)
    value = _value_at(data, where)  # None when missing
    empty = value is None or value == "" or value == []
    return f"{'required,' if empty else 'must be'} {describe(kind)}"


def _type_at(kind: inspect.Type, where: Key) -> inspect.Type | None:
    for part in where:
        kind = _unwrap(kind)
        if isinstance(kind, inspect.StructType) and isinstance(part, str):
            match = next((f.type for f in kind.fields if f.encode_name == part), None)
            if match is None:
                return None
            kind = match
        elif isinstance(kind, inspect.ListType | inspect.TupleType | inspect.VarTupleType) and isinstance(part, int):
            kind = kind.item_type if not isinstance(kind, inspect.TupleType) else kind.item_types[part]
        elif isinstance(kind, inspect.DictType):
            kind = kind.value_type
        else:
            return None
    return kind


def _unwrap(kind: inspect.Type) -> inspect.Type:
    if isinstance(kind, inspect.UnionType):
        rest = [t for t in kind.types if not isinstance(t, inspect.NoneType)]
        if len(rest) == 1:
            return rest[0]
    return kind


def _value_at(data: Any, where: Key) -> Any:
    for part in where:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


class _Read:
    __slots__ = ("version",)

    def __init__(self, version: Any) -> None:
        self.version = version


class PromptText(_Read):
    """A prompt version written as text (msgspec reads a NamedTuple as an array): ``.version`` once read."""

    version: PromptVersion


class SchemaText(_Read):
    """A schema version written as text: ``.version`` once read."""

    version: SchemaVersion


def _text(value: Any, example: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be a quoted version string such as {example}")
    return value


VERSIONS: Parsers = {
    PromptText: lambda value: PromptText(PromptVersion.parse(_text(value, '"1.2.0"'))),
    SchemaText: lambda value: SchemaText(SchemaVersion.parse(_text(value, '"1.0"'))),
}
# custom types by what messages call them
DESCRIPTIONS: dict[type, str] = {
    PromptText: 'a quoted version string such as "1.2.0"',
    SchemaText: 'a quoted version string such as "1.0"',
}


def describe(kind: inspect.Type) -> str:
    """What a value of ``kind`` is, in the words of the messages: ``a number from 0 to 1``."""
    kind = _unwrap(kind)
    if isinstance(kind, inspect.FloatType | inspect.IntType):
        noun = "a whole number" if isinstance(kind, inspect.IntType) else "a number"
        low = kind.ge if kind.ge is not None else kind.gt
        high = kind.le if kind.le is not None else kind.lt
        if low is None and high is None:
            return noun
        if high is None:
            positive = (kind.ge, kind.gt) in ((1, None), (None, 0))
            return (
                f"a positive {'integer' if isinstance(kind, inspect.IntType) else 'number'}"
                if positive
                else f"{noun} of at least {low:,}"
            )
        upper = f"up to, not including, {high:g}" if kind.lt is not None else f"to {_number(high)}"
        return f"{noun} from {_number(low or 0)} {upper}"
    if isinstance(kind, inspect.StrType):
        return "a non-empty string" if kind.min_length or kind.pattern else "a string"
    if isinstance(kind, inspect.BoolType):
        return "true or false"
    if isinstance(kind, inspect.LiteralType):
        return f"one of {', '.join(map(str, kind.values))}"
    if isinstance(kind, inspect.ListType | inspect.VarTupleType):
        item = f" of {describe(kind.item_type)[2:]}s" if isinstance(kind.item_type, inspect.StrType) else ""
        return f"a non-empty list{item}" if kind.min_length else f"a list{item}"
    if isinstance(kind, inspect.DictType):
        value = _unwrap(kind.value_type)
        plain = isinstance(value, inspect.AnyType | inspect.StructType)
        return "a mapping" if plain else f"a mapping whose values are each {describe(value)}"
    if isinstance(kind, inspect.StructType):
        required = [f.encode_name for f in kind.fields if f.required]
        names = " and ".join([", ".join(required[:-1]), required[-1]] if len(required) > 1 else required)
        return f"a mapping with {names}" if names else "a mapping"
    if isinstance(kind, inspect.CustomType):
        return DESCRIPTIONS.get(kind.cls, f"a {kind.cls.__name__}")
    return "a value"


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def read_yaml(path: Path, source: str, limit: int | None = None, *, quoted_keys: bool = False) -> Document:
    """The YAML file at ``path`` (duplicate keys refused) as a Document; SpecError naming the line otherwise."""
    from promptops.core import strict_yaml  # YAML is imported by the commands that read YAML only

    try:
        text = strict_yaml.read_text(path, limit or strict_yaml.MAX_BYTES)
    except strict_yaml.YamlProblem as problem:
        raise SpecError(source, problem.message, problem.line) from None
    return parse_yaml(text, source, quoted_keys=quoted_keys)


def parse_yaml(text: str, source: str, *, quoted_keys: bool = False) -> Document:
    """YAML ``text`` as a Document: the data, and the lines from the composed nodes."""
    from promptops.core import strict_yaml

    try:
        data, node = strict_yaml.compose(text)
    except strict_yaml.YamlProblem as problem:
        raise SpecError(source, problem.message, problem.line) from None
    return Document(data, source, lambda key: _yaml_line(node, key), quoted_keys=quoted_keys)


def _yaml_line(node: Any, key: Key) -> int | None:
    import yaml

    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in key:
        if isinstance(node, yaml.MappingNode):
            pair = next(
                ((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None
            )
            if pair is None:
                return line  # a missing key: its mapping's line
            node, line = pair[1], pair[0].start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def parse_toml(text: str, source: str) -> Document:
    """TOML ``text`` as a Document; tomllib keeps no positions, so a key's line is found in the text."""
    import tomllib  # imported when a TOML file is read: most commands never read one

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as problem:
        raise SpecError(source, f"invalid TOML: {problem}") from None
    return Document(data, source, lambda key: toml_line(text, key))


_HEADER = re.compile(r"\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?\Z")


def toml_line(text: str, key: Key) -> int | None:
    """The line of ``key`` under its nearest ``[table]`` header, or of that header; None when not found."""
    lines = text.splitlines()
    names = [str(part) for part in key]
    for cut in range(len(names), 0, -1):
        wanted = names[:cut]
        for number, line in enumerate(lines, 1):
            header = _HEADER.match(line)
            if header and [p.strip().strip("\"'") for p in header[1].split(".")] == wanted:
                if cut == len(names):
                    return number
                assign = re.compile(rf"\s*[\"']?{re.escape(names[cut])}[\"']?\s*=")
                for offset, below in enumerate(lines[number:], number + 1):
                    if _HEADER.match(below):
                        break
                    if assign.match(below):
                        return offset
                return number
    return None


def decode_line(decoder: msgspec.json.Decoder[T], line: bytes | memoryview) -> T | str:
    """The JSONL record on ``line`` as the decoder's spec, or a one-line description of what is wrong with it."""
    try:
        return decoder.decode(line)
    except msgspec.ValidationError as problem:
        return record_problem(str(problem))
    except msgspec.DecodeError as problem:
        return f"not valid JSON ({problem})"
    except RecursionError:
        return "not valid JSON (nested too deeply)"
    except UnicodeDecodeError:  # msgspec checks UTF-8 inside strings only, and names a position in the string
        try:
            bytes(line).decode("utf-8")
        except UnicodeDecodeError as problem:
            return f"not valid UTF-8 (byte {problem.start + 1} of the line)"
        return "not valid UTF-8"


def record_problem(message: str) -> str:
    # msgspec says "Object missing required field `ts`" or "Expected `str`, got `int` - at `$.arm`".
    if message.startswith("Expected `object`") and " - at " not in message:
        return "not a JSON object"
    problem, _, where = message.partition(" - at `$.")
    problem = problem.replace("Object missing", "missing").replace("`", "")
    if not where:
        return problem.replace("missing required field ", "missing required field '") + (
            "'" if problem.startswith("missing required field ") else ""
        )
    return f"field '{where.rstrip('`')}': {problem[:1].lower()}{problem[1:]}"
