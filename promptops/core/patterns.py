"""Schema patterns: ECMA-262 regular expressions, matched in time linear in the text by RE2.

JSON Schema's ``pattern`` and ``patternProperties`` are ECMA-262 regular expressions, and the text they are
matched against comes from a model. A backtracking engine (Python's ``re``) can take exponential time on a
pattern such as ``^(a+)+$``, so every pattern is translated to RE2 syntax here and matched by RE2 (the
``google-re2`` binding), whose automata run in time linear in the text. What RE2 cannot run in linear time
(backreferences, lookaround) and what is not ECMA-262 at all (inline flags such as ``(?i)``, possessive
quantifiers, ``\\Z``) is refused when the contract loads, with the reason.

The translation keeps ECMA-262's meaning where it differs from RE2's defaults: ``\\d`` and ``\\w`` are ASCII
(as in RE2), ``\\s`` is ECMA's whitespace and line terminators, ``.`` excludes the four line terminators, ``$``
matches only at the very end, ``[]`` matches nothing and ``[^]`` anything. A lone surrogate in the text (JSON
allows ``"\\ud800"``) is matched as U+FFFD, the one place where RE2's UTF-8 cannot hold ECMA's UTF-16.

``validator_class`` gives jsonschema validators the same engine for the ``pattern``, ``patternProperties``
and ``additionalProperties`` keywords (and linear ``uniqueItems``), so answers checked by the full validator
are matched exactly as the parser's own rules match them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from promptops.core.canonical import json_unique

__all__ = ["PatternError", "SchemaPattern", "compile_ecma", "validator_class"]


class PatternError(ValueError):
    """A pattern that is not ECMA-262 or cannot be matched in linear time (the message says why)."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# ECMA-262 WhiteSpace and LineTerminator, the members of \s, as the body of an RE2 character class.
_SPACE = r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_SYNTAX = frozenset("^$\\.*+?()[]{}|/-,:=!<>'\"`~@#%&;_ ")
_CONTROL = {"t": r"\t", "n": r"\n", "v": r"\x{0B}", "f": r"\f", "r": r"\r"}
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")


@functools.cache
def _engine() -> tuple[Any, Any, Any]:
    """RE2's pattern class, options and "search anywhere" anchor, imported when a pattern is first compiled:
    a contract restored from a pickle (lint's cache) that never matches a text never loads RE2."""
    import re2
    from re2 import _re2  # the binding's RE2 object: a match without the wrapper's per-call offset mapping

    options = re2.Options()
    options.log_errors = False  # the library never writes to stderr; errors are raised with their reason
    options.never_capture = True  # only "does it match" is asked: no submatch bookkeeping
    return _re2.RE2, options, _re2.RE2.Anchor.UNANCHORED


class SchemaPattern:
    """One compiled schema pattern: ``search(text)`` says whether it matches anywhere in ``text``."""

    __slots__ = ("_anchor", "_match", "source", "translated")

    def __init__(self, source: str, translated: str, regexp: Any | None) -> None:
        self.source = source  # the schema's own text, for messages
        self.translated = translated  # the RE2 syntax it runs as
        self._anchor: Any = _engine()[2] if regexp is not None else None
        self._match: Callable[..., list[tuple[int, int]]] = regexp.Match if regexp is not None else self._first

    def search(self, text: str) -> bool:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")
        return self._match(self._anchor, data, 0, len(data))[0][0] >= 0

    def _first(self, _anchor: Any, data: bytes, start: int, end: int) -> list[tuple[int, int]]:
        """The first match of a restored pattern: compile it (it compiled when its contract loaded)."""
        pattern_class, options, self._anchor = _engine()
        self._match = pattern_class(self.translated.encode("utf-8"), options).Match
        return self._match(self._anchor, data, start, end)

    def __reduce__(self) -> tuple[Callable[[str, str], SchemaPattern], tuple[str, str]]:
        # The RE2 object cannot be pickled (lint's cache, workers): compiled again on first use.
        return _restore, (self.source, self.translated)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaPattern) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def __repr__(self) -> str:
        return f"SchemaPattern({self.source!r})"


_COMPILED: dict[str, SchemaPattern] = {}


def _restore(source: str, translated: str) -> SchemaPattern:
    """A pickled pattern: the one compiled in this process, else one compiled on its first search."""
    return _COMPILED.get(source) or SchemaPattern(source, translated, None)


def compile_ecma(source: str) -> SchemaPattern:
    """The compiled pattern, or PatternError saying why ``source`` is refused."""
    known = _COMPILED.get(source)
    if known is not None:
        return known
    translated = _translate(source)
    pattern_class, options, _ = _engine()
    try:
        regexp = pattern_class(translated.encode("utf-8"), options)
    except UnicodeEncodeError:
        raise PatternError("it holds a lone surrogate, which RE2 cannot match") from None
    if not regexp.ok():
        raise PatternError(regexp.error().decode("utf-8", "replace"))
    compiled = SchemaPattern(source, translated, regexp)
    if len(_COMPILED) >= 4096:  # patterns come from schema files: few, but keep the cache bounded
        _COMPILED.clear()
    _COMPILED[source] = compiled
    return compiled


def _translate(source: str) -> str:
    out: list[str] = []
    at, end = 0, len(source)
    while at < end:
        char = source[at]
        if char == "\\":
            text, at = _escape(source, at + 1, in_class=False)
            out.append(text)
        elif char == "[":
            text, at = _char_class(source, at + 1)
            out.append(text)
        elif char == "(":
            text, at = _group(source, at + 1)
            out.append(text)
        elif char == ".":
            out.append(_DOT)
            at += 1
        elif char == "$":
            out.append(r"\z")
            at += 1
        elif char == "{":
            quantifier = _QUANTIFIER.match(source, at)
            if quantifier is None:  # not a quantifier: ECMA reads a literal brace
                out.append(r"\{")
                at += 1
            else:
                out.append(quantifier[0])
                at = quantifier.end()
            if at < end and source[at] == "+":
                raise PatternError("possessive quantifiers are not ECMA-262")
        elif char in "]}":
            out.append("\\" + char)
            at += 1
        elif char in "*+?":
            out.append(char)
            at += 1
            if at < end and source[at] == "+":
                raise PatternError("possessive quantifiers are not ECMA-262")
        else:
            out.append(char)
            at += 1
    return "".join(out)


def _group(source: str, at: int) -> tuple[str, int]:
    """The opening of a group whose "(" ends before ``at``."""
    if not source.startswith("?", at):
        return "(", at
    rest = source[at + 1 : at + 4]
    if rest.startswith(":"):
        return "(?:", at + 2
    if rest.startswith(("=", "!", "<=", "<!")):
        raise PatternError("lookaround cannot be matched in linear time")
    if rest.startswith("<"):
        close = source.find(">", at + 2)
        name = source[at + 2 : close] if close > 0 else ""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise PatternError("a named group needs a name of letters, digits and _")
        return f"(?P<{name}>", close + 1
    raise PatternError("inline flags and '(?' groups other than (?:...) and (?<name>...) are not ECMA-262")


def _char_class(source: str, at: int) -> tuple[str, int]:
    """A character class whose "[" ends before ``at``: its RE2 text and where it ends."""
    negated = source.startswith("^", at)
    if negated:
        at += 1
    if source.startswith("]", at):  # ECMA: [] matches nothing, [^] any character
        return (r"[\x{0}-\x{10FFFF}]" if negated else r"[^\x{0}-\x{10FFFF}]"), at + 1
    out = ["[^" if negated else "["]
    while True:
        if at >= len(source):
            raise PatternError("a character class is not closed")
        char = source[at]
        if char == "]":
            out.append("]")
            return "".join(out), at + 1
        if char == "\\":
            text, at = _escape(source, at + 1, in_class=True)
            out.append(text)
        else:
            out.append("\\[" if char == "[" else char)  # RE2 would read "[:" as a POSIX class
            at += 1


def _escape(source: str, at: int, in_class: bool) -> tuple[str, int]:
    """An escape whose backslash ends before ``at``: its RE2 text and where it ends."""
    if at >= len(source):
        raise PatternError("it ends with a lone backslash")
    char = source[at]
    if char in "dDwW":
        return "\\" + char, at + 1
    if char == "s":
        return (_SPACE if in_class else f"[{_SPACE}]"), at + 1
    if char == "S":
        if in_class:
            raise PatternError(r"\S inside a character class is not supported")
        return f"[^{_SPACE}]", at + 1
    if char in "bB":
        if in_class:
            return (r"\x{8}" if char == "b" else "B"), at + 1
        return "\\" + char, at + 1
    if char in _CONTROL:
        return _CONTROL[char], at + 1
    if char == "0" and not source[at + 1 : at + 2].isdigit():
        return r"\x{0}", at + 1
    if char.isdigit() or char == "k":
        raise PatternError("backreferences cannot be matched in linear time")
    if char == "c" and at + 1 < len(source) and source[at + 1].isascii() and source[at + 1].isalpha():
        return _code_point(ord(source[at + 1]) % 32), at + 2
    if char == "x":
        digits = source[at + 1 : at + 3]
        if len(digits) == 2 and _is_hex(digits):
            return _code_point(int(digits, 16)), at + 3
        raise PatternError(r"\x needs two hex digits")
    if char == "u":
        return _unicode_escape(source, at + 1)
    if char in "pP":
        close = source.find("}", at)
        if not source.startswith("{", at + 1) or close < 0:
            raise PatternError(rf"\{char} needs a property in braces")
        name = source[at + 2 : close]
        name = name.split("=", 1)[1] if name.startswith(("Script=", "sc=", "General_Category=", "gc=")) else name
        return rf"\{char}{{{name}}}", close + 1
    if char in _SYNTAX or not char.isascii():
        return _literal(char), at + 1
    raise PatternError(f"\\{char} is not an ECMA-262 escape")


def _unicode_escape(source: str, at: int) -> tuple[str, int]:
    if source.startswith("{", at):
        close = source.find("}", at)
        digits = source[at + 1 : close] if close > 0 else ""
        if digits and _is_hex(digits) and int(digits, 16) <= 0x10FFFF:
            return _code_point(int(digits, 16)), close + 1
        raise PatternError(r"\u{...} needs a code point in hex")
    digits = source[at : at + 4]
    if len(digits) != 4 or not _is_hex(digits):
        raise PatternError(r"\u needs four hex digits")
    value, at = int(digits, 16), at + 4
    low = source[at + 2 : at + 6] if source.startswith("\\u", at) else ""
    if 0xD800 <= value < 0xDC00 and len(low) == 4 and _is_hex(low) and 0xDC00 <= int(low, 16) < 0xE000:
        return _code_point(0x10000 + ((value - 0xD800) << 10) + int(low, 16) - 0xDC00), at + 6
    if 0xD800 <= value < 0xE000:
        raise PatternError("a lone surrogate escape cannot be matched in UTF-8")
    return _code_point(value), at


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def _code_point(value: int) -> str:
    return rf"\x{{{value:X}}}"


def _literal(char: str) -> str:
    return _code_point(ord(char))  # RE2 takes any code point this way, where a backslash before "_" fails


# ---- jsonschema: the same engine for answers checked by the full validator ------------------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not compile_ecma(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        compiled = compile_ecma(pattern)
        for key, value in instance.items():
            if compiled.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [compile_ecma(p) for p in schema.get("patternProperties", {})]
    extras = [k for k in instance if k not in properties and not any(p.search(k) for p in patterns)]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        # jsonschema's own wording, so messages do not depend on which engine matched
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")
        else:
            names = sorted(extras, key=str)
            verb = "was" if len(names) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({', '.join(repr(n) for n in names)} {verb} unexpected)"
            )


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array") and not json_unique(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


_CLASSES: dict[Any, Any] = {}


def validator_class(base: Any) -> Any:
    """``base`` (a jsonschema validator class) with this module's engine for patterns, and linear uniqueItems."""
    extended = _CLASSES.get(base)
    if extended is None:
        from jsonschema import validators

        keywords = {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "uniqueItems": _unique_items,
        }
        extended = _CLASSES[base] = validators.extend(base, keywords)  # type: ignore[no-untyped-call]
    return extended
