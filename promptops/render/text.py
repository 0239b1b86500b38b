"""What building a value costs, and the checks that refuse it before it is built (promptops.render.sizes
puts them on every way a template makes a value).

``text_size`` estimates what printing a value takes by walking it, which costs no more than printing it would;
``check_text``, ``check_items`` and ``check_bits`` refuse a string, list or integer over its bound and charge
the render's running total; ``percent_size`` and the budgeted ``str.format`` bound string formatting from its
widths, precisions and arguments.
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import Environment
from jinja2.sandbox import SandboxedFormatter
from jinja2.utils import Namespace
from markupsafe import EscapeFormatter, Markup

from promptops.render import regexes
from promptops.render.sandbox import MAX_INT_BITS, MAX_ITEMS, MAX_TEXT, Limits, RenderLimitError

MAX_DEPTH = 256  # nesting of a value the template prints (Python's repr and json recurse)
_SCALAR = 24  # len(repr()) of a float, bool or None is at most this

# isinstance() tuples, built once (an ``X | Y`` union would be built at every call on these hot paths)
_SCALARS = (bool, float)
_BYTES = (bytes, bytearray)
STRINGS = (str, bytes)
TEXTS = (str, bytes, bytearray)
SEQUENCES = (list, tuple)
_COLLECTIONS = (list, tuple, set, frozenset)
_CONTAINERS = (list, tuple, dict, set, frozenset)
_METHODS = (types.MethodType, types.BuiltinMethodType)
_NESTED = (Mapping, *_COLLECTIONS)
_NESTED_OR_NAMESPACE = (*_NESTED, Namespace)


def text_size(value: Any, limit: int = MAX_TEXT) -> int:
    """An upper estimate of ``len(str(value))`` (of ``repr`` for what a container holds); the walk stops once
    past ``limit``, so it never costs more than printing the value would. A value nested deeper than
    ``MAX_DEPTH`` is refused: printing it would end in Python's RecursionError."""
    if type(value) is str:
        return len(value)
    total = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    reprs: dict[int, int] = {}
    while pending and total <= limit:
        item, depth = pending.pop()
        if isinstance(item, Namespace):
            item = item._Namespace__attrs  # its repr is its dict's
        if not isinstance(item, _NESTED):
            total += _leaf_size(item, reprs) - (2 if depth == 0 and isinstance(item, str) else 0)
            continue
        if depth >= MAX_DEPTH:
            raise RenderLimitError(f"a value nested more than {MAX_DEPTH} deep (the sandbox's limit)")
        total += 2 + (4 if isinstance(item, Mapping) else 2) * len(item)
        for member in [*item.keys(), *item.values()] if isinstance(item, Mapping) else item:
            if isinstance(member, _NESTED_OR_NAMESPACE):
                pending.append((member, depth + 1))
            else:
                total += _leaf_size(member, reprs)
                if total > limit:
                    break
    return total


def _leaf_size(item: Any, reprs: dict[int, int]) -> int:
    """``len(repr(item))`` at most, for anything but a container."""
    if isinstance(item, str):
        return len(item) + 2
    if isinstance(item, _SCALARS) or item is None:
        return _SCALAR
    if isinstance(item, int):
        return item.bit_length() * 30103 // 100000 + 2
    if isinstance(item, _BYTES):
        return 4 * len(item) + 3
    key = id(item)  # an object of the renderer's (a contract, a shape): bounded by what it was made from
    if key not in reprs:
        try:
            reprs[key] = len(repr(item))
        except Exception:
            reprs[key] = _SCALAR
    return reprs[key]


def refusal(what: str, size: int, limit: int, unit: str) -> RenderLimitError:
    return RenderLimitError(f"{what} would build {size:,} {unit} (the sandbox's limit is {limit:,})")


def check_text(limits: Limits, what: str, size: int) -> None:
    if size > MAX_TEXT:
        raise refusal(what, size, MAX_TEXT, "characters")
    limits.build(size)


def check_items(limits: Limits, what: str, size: int) -> None:
    if size > MAX_ITEMS:
        raise refusal(what, size, MAX_ITEMS, "items")
    limits.build(size * 8)  # a list item is a pointer


def check_bits(what: str, bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise RenderLimitError(f"{what} would build a {bits:,}-bit integer (the sandbox's limit is {MAX_INT_BITS:,})")


def check_result(limits: Limits, what: str, value: Any) -> Any:
    """Charge what an operation built (its inputs were checked; this bounds what small steps add up to)."""
    if isinstance(value, TEXTS):
        check_text(limits, what, len(value))
    elif isinstance(value, _CONTAINERS):
        check_items(limits, what, len(value))
    return value


def int_or_zero(value: Any) -> int:
    return value if isinstance(value, int) else 0


# printf-style conversions: %(key)flags width .precision length type
_PERCENT = regexes.lazy(r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.)", re.DOTALL)


def _number(digits: str) -> int:
    return int(digits) if len(digits) <= 18 else 10**18  # Python refuses ints of over 4,300 digits from text


def percent_size(template: str | bytes, args: Any) -> int:
    """An upper estimate of the length of ``template % args``."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    positional = list(args) if isinstance(args, tuple) else [args]
    size, index = len(text), 0
    for match in _PERCENT.finditer(text):
        key, width, precision, kind = match.groups()
        if kind == "%":
            continue
        pads = 0
        for part in (width, precision):
            if part == "*":
                pads += abs(int_or_zero(positional[index] if index < len(positional) else 0))
                index += 1
            elif part:
                pads += _number(part)
        if key is not None and isinstance(args, Mapping):
            shown = text_size(args.get(key))
        else:
            shown = text_size(positional[index]) if index < len(positional) else 0
            index += 1
        size += pads + shown + 2  # repr's quotes for %r
        if size > MAX_TEXT:
            break
    return size


# str.format's spec: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_FORMAT_SPEC = regexes.lazy(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[,_]?(?:\.(\d*))?", re.DOTALL)


class _BudgetedFormatter(SandboxedFormatter):
    """``str.format`` in the sandbox, with each field's width and precision and the whole result bounded."""

    def __init__(self, env: Environment, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self._size = 0

    def format_field(self, value: Any, format_spec: str) -> Any:
        match = _FORMAT_SPEC.match(format_spec)
        pads = sum(_number(part) for part in match.groups() if part) if match else 0
        estimate = self._size + pads + text_size(value)
        if estimate > MAX_TEXT:
            raise refusal("str.format", estimate, MAX_TEXT, "characters")
        out = super().format_field(value, format_spec)
        self._size += len(out)
        return out


class _BudgetedEscapeFormatter(_BudgetedFormatter, EscapeFormatter):
    pass


def budget_str_format(env: Environment, value: Any) -> Callable[..., str] | None:
    """Jinja's sandboxing of ``str.format``/``format_map`` (see ``SandboxedEnvironment.wrap_str_format``), with
    the budgeted formatter."""
    if not isinstance(value, _METHODS) or value.__name__ not in (
        "format",
        "format_map",
    ):
        return None
    owner = value.__self__
    if not isinstance(owner, str):
        return None
    is_map = value.__name__ == "format_map"

    def run(*args: Any, **kwargs: Any) -> str:
        if is_map and (kwargs or len(args) != 1):
            raise TypeError("format_map() takes exactly one argument and no keyword arguments")
        positional, named = ((), args[0]) if is_map else (args, kwargs)
        formatter: SandboxedFormatter
        if isinstance(owner, Markup):
            formatter = _BudgetedEscapeFormatter(env, escape=owner.escape)
        else:
            formatter = _BudgetedFormatter(env)
        return type(owner)(formatter.vformat(owner, positional, named))

    return functools.update_wrapper(run, value)
