"""The sandbox's size budget: every operation a template can use to build a big value is checked BEFORE Python
builds it, so a hostile template meets one line naming its file and line, never MemoryError or a stall.

A value is bounded where it is made: a string at ``MAX_TEXT`` characters, a list at ``MAX_ITEMS`` items, an
integer at ``MAX_INT_BITS`` bits. The checks sit on every way a template makes values: the operators
(``+ - * ** %`` through ``call_binop``, ``~`` rewritten to ``CONCAT_FILTER``), calls of methods (``call``:
``center``, ``zfill``, ``replace``, ``join``, ``to_bytes``, ``extend``...), ``str.format`` (its formatter checks
each field's width and precision), every filter (wrapped: widths, counts and what stringifying a value costs),
``range``, ``lipsum`` and every ``{{ }}`` (``finalize``). What stringifying a container costs is estimated by
walking it (``text_size``), which costs no more than printing it would. Each value built is also charged to
the render's running total (``Limits.build``), which bounds what many small values add up to.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

from jinja2 import Environment, nodes, pass_eval_context
from jinja2.nodes import EvalContext
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum

from promptops.render.sandbox import (
    CONCAT_FILTER,
    MAX_TEXT,
    Limits,
    RenderLimitError,
    budget_concats,
    budget_loops,
    limits_of,
)
from promptops.render.text import (
    SEQUENCES,
    STRINGS,
    TEXTS,
    budget_str_format,
    check_bits,
    check_items,
    check_result,
    check_text,
    int_or_zero,
    percent_size,
    refusal,
    text_size,
)

_FOLD = 4096  # the largest filter result Jinja may fold into a compiled template as a constant
_LOREM_WORD = 16  # the longest lorem ipsum word with its punctuation and space, an upper bound per word

# Filters that never stringify their value (they sort, count, pick or regroup it); every other filter turns its
# value into text first, which is checked like printing it.
_NOT_TEXT = frozenset(
    {
        *("abs", "attr", "batch", "count", "d", "default", "dictsort", "first", "float", "groupby", "int"),
        *("items", "join", "last", "length", "list", "map", "max", "min", "random", "reject", "rejectattr"),
        *("reverse", "round", "select", "selectattr", "slice", "sort", "sum", "unique", "describe"),
    }
)


# --- operators ---

MAX_EXPONENT = 1000


def check_binop(limits: Limits, operator: str, left: Any, right: Any) -> None:
    """Refuse an operator whose result would exceed a bound, before Python computes it."""
    both_ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and both_ints and right > 0 and left not in (0, 1, -1):
        if right > MAX_EXPONENT:
            raise RenderLimitError(f"exponent {right} is beyond the sandbox's limit of {MAX_EXPONENT}")
        check_bits("'**'", left.bit_length() * right)
    elif operator == "*" and both_ints:
        check_bits("'*'", left.bit_length() + right.bit_length() - 1)
    elif operator == "*":
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, STRINGS) and isinstance(count, int):
                check_text(limits, "'*'", len(seq) * count)
            elif isinstance(seq, SEQUENCES) and isinstance(count, int):
                check_items(limits, "'*'", len(seq) * count)
    elif operator in "+-" and both_ints:
        check_bits(f"'{operator}'", max(left.bit_length(), right.bit_length()) + 1)
    elif operator == "+" and isinstance(left, STRINGS) and isinstance(right, STRINGS):
        check_text(limits, "'+'", len(left) + len(right))
    elif operator == "+" and isinstance(left, SEQUENCES) and isinstance(right, SEQUENCES):
        check_items(limits, "'+'", len(left) + len(right))
    elif operator == "%" and isinstance(left, STRINGS):
        check_text(limits, "'%'", percent_size(left, right))


# --- calls of methods ---


def _width(args: tuple[Any, ...], kwargs: Mapping[str, Any], name: str = "width") -> int:
    return int_or_zero(args[0] if args else kwargs.get(name, 0))


def _replace_size(text: str | bytes | bytearray, old: Any = None, new: Any = None, count: Any = -1) -> int:
    if not isinstance(old, STRINGS) or not isinstance(new, STRINGS):
        return len(text)
    found = len(text) + 1 if not old else text.count(old)  # type: ignore[arg-type]
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(len(new) - len(old), 0)


def _joined_size(separator: str | bytes | bytearray, items: list[Any]) -> int:
    return max(len(items) - 1, 0) * len(separator) + sum(text_size(item) for item in items)


def check_call(limits: Limits, obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """Refuse a method call of a built-in type whose result would exceed a bound; returns the arguments to
    call with (a generator given to ``join``/``extend`` is read once, here)."""
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__name__", "")
    what = f"{type(owner).__name__}.{name}"
    if isinstance(owner, TEXTS):
        if name in ("center", "ljust", "rjust", "zfill"):
            check_text(limits, what, max(len(owner), _width(args, kwargs)))
        elif name == "expandtabs":
            tabs = owner.count("\t" if isinstance(owner, str) else b"\t")  # type: ignore[arg-type]
            check_text(limits, what, len(owner) + tabs * max(_width(args, kwargs, "tabsize") or 8, 0))
        elif name == "replace" and len(args) >= 2:
            check_text(limits, what, _replace_size(owner, args[0], args[1], args[2] if len(args) > 2 else -1))
        elif name == "join" and args:
            items = list(args[0])
            check_text(limits, what, _joined_size(owner, items))
            return (items, *args[1:])
        elif name == "translate":
            table = args[0] if args else None
            grows = (
                max((len(v) for v in table.values() if isinstance(v, str)), default=1)
                if isinstance(table, Mapping)
                else 1
            )
            check_text(limits, what, len(owner) * max(grows, 1))
    elif isinstance(owner, int) and name == "to_bytes":
        check_text(limits, what, _width(args, kwargs, "length"))
    elif isinstance(owner, list) and name == "extend" and args:
        items = list(args[0])
        check_items(limits, what, len(owner) + len(items))
        return (items, *args[1:])
    elif isinstance(owner, list) and name in ("append", "insert"):
        check_items(limits, what, len(owner) + 1)
    return args


# --- globals ---


def budget_range(env: Environment) -> Callable[..., range]:
    def checked_range(*args: int) -> range:
        numbers = range(*args)
        try:
            size = len(numbers)
        except OverflowError:  # more than sys.maxsize numbers
            size = abs((numbers.stop - numbers.start) // numbers.step)
        check_items(limits_of(env), "range()", size)
        return numbers

    return checked_range


def budget_lipsum(env: Environment) -> Callable[..., str]:
    def checked_lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        check_text(limits_of(env), "lipsum()", int_or_zero(n) * int_or_zero(max) * _LOREM_WORD)
        return generate_lorem_ipsum(n, html, min, max)

    return checked_lipsum


# --- filters ---


def _indent_size(text: str, width: Any = 4, *_: Any, **__: Any) -> int:
    pad = len(width) if isinstance(width, str) else int_or_zero(width)
    return len(text) + (text.count("\n") + 1) * max(pad, 0)


def _wordwrap_size(
    env: Environment, text: str, width: Any = 79, _: Any = True, wrapstring: Any = None, **__: Any
) -> int:
    joint = wrapstring if isinstance(wrapstring, str) else env.newline_sequence
    spaces = sum(text.count(c) for c in " \t\n\r\x0b\x0c")  # a line ends at a space or after width characters
    return len(text) + (len(text) // max(int_or_zero(width), 1) + spaces + 1) * len(joint)


def _urlize_size(text: str, *args: Any, **kwargs: Any) -> int:
    extra = sum(len(v) for v in (*args, *kwargs.values()) if isinstance(v, str))
    spaces = sum(text.count(c) for c in " \t\n\r")
    return 2 * len(text) + (spaces + 1) * (64 + extra)


def _json_size(value: Any, indent: Any = None, *_: Any, **kwargs: Any) -> int:
    indent = kwargs.get("indent", indent)
    size = text_size(value)
    return size * (1 + max(int_or_zero(indent), 0)) if indent else size


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count_arg(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> int:
    return int_or_zero(args[0] if args else kwargs.get(name, 0))


def _check_join(env: Environment, limits: Limits, what: str, value: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
    items = list(value) if isinstance(value, Iterable) else value
    if isinstance(items, list):
        check_text(limits, what, _joined_size(str(args[0] if args else kwargs.get("d", "")), items))
    return items  # a generator is read once, here


# What a filter with amplifying arguments would build, from its value and arguments (before it runs).
_TEXT_SIZES: dict[str, Callable[[Environment, Any, tuple[Any, ...], dict[str, Any]], int]] = {
    "center": lambda env, v, a, k: max(len(_text(v)), _width(a, k)),
    "indent": lambda env, v, a, k: _indent_size(_text(v), *a, **k),
    "wordwrap": lambda env, v, a, k: _wordwrap_size(env, _text(v), *a[:3], **k),
    "replace": lambda env, v, a, k: (
        _replace_size(_text(v), a[0], a[1], a[2] if len(a) > 2 else -1) if len(a) > 1 else 0
    ),
    "format": lambda env, v, a, k: percent_size(_text(v), k or tuple(a)),
    "urlize": lambda env, v, a, k: _urlize_size(_text(v), *a, **k),
    "tojson": lambda env, v, a, k: _json_size(v, *a, **k),
    "json": lambda env, v, a, k: _json_size(v, *a, **k),
    "pprint": lambda env, v, a, k: 2 * _json_size(v),
}
_ITEM_COUNTS: dict[str, Callable[[Any, tuple[Any, ...], dict[str, Any]], int]] = {
    "slice": lambda v, a, k: _count_arg(a, k, "slices"),
    "batch": lambda v, a, k: _count_arg(a, k, "linecount") if len(a) > 1 or k.get("fill_with") is not None else 0,
    "list": lambda v, a, k: len(v) if isinstance(v, Sized) else 0,
    "sum": lambda v, a, k: (
        sum(len(x) for x in v if isinstance(x, SEQUENCES))
        if isinstance(v, SEQUENCES) and not isinstance(k.get("start", a[1] if len(a) > 1 else 0), int)
        else 0
    ),
}


def budget_filter(env: Environment, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (a filter) checked before it runs and charged for what it returns."""
    passes = getattr(func, "jinja_pass_arg", None) is not None
    what = f"the {name} filter"
    stringifies = name not in _NOT_TEXT
    text_size_of = _TEXT_SIZES.get(name)
    item_count_of = _ITEM_COUNTS.get(name)

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        limits = limits_of(env)
        lead, (value, *rest) = (args[:1], args[1:]) if passes else ((), args)
        if stringifies:  # it turns its value into text first: as costly as printing it
            check_text(limits, what, len(value) if type(value) is str else text_size(value))
        if text_size_of is not None:
            check_text(limits, what, text_size_of(env, value, tuple(rest), kwargs))
        elif item_count_of is not None:
            check_items(limits, what, item_count_of(value, tuple(rest), kwargs))
        elif name == "join":
            value = _check_join(env, limits, what, value, tuple(rest), kwargs)
        result = func(*lead, value, *rest, **kwargs)
        if limits.compiling and isinstance(result, Sized) and len(result) > _FOLD:
            # Jinja is folding a constant into the compiled code: a big one stays a call, so each render
            # builds it within its budget and no compiled template carries it.
            raise RenderLimitError("not folded")
        return check_result(limits, what, result)

    return checked


@pass_eval_context
def budget_concat(eval_ctx: EvalContext, parts: tuple[Any, ...]) -> str:
    """``a ~ b``: Jinja's join of the parts, once their text is known to fit."""
    limits = limits_of(eval_ctx.environment)
    check_text(limits, "'~'", sum(text_size(part) for part in parts))
    return markup_join(parts) if eval_ctx.autoescape else str_join(parts)


def budget_finalize(env: Environment) -> Callable[[Any], Any]:
    """Checks what each ``{{ }}`` will print before Jinja turns it into text."""

    def finalize(value: Any) -> Any:
        # Charged even for a string: a macro's output is all it printed, joined.
        size = len(value) if type(value) is str else text_size(value)
        if size > MAX_TEXT:
            raise refusal("printing a value", size, MAX_TEXT, "characters")
        limits_of(env).build(size)
        return value

    return finalize


def install_sizes(env: Environment) -> None:
    """Bound what ``env``'s templates build: its filters (call once they are all registered), ``range``,
    ``lipsum``, ``~`` and what ``{{ }}`` prints. Operators, method calls and ``str.format`` are checked by the
    environment's ``call_binop``, ``call`` and ``wrap_str_format`` (PromptEnvironment, below)."""
    for name, func in list(env.filters.items()):
        if not name.startswith("_promptops"):
            env.filters[name] = budget_filter(env, name, func)
    env.filters[CONCAT_FILTER] = budget_concat
    env.globals["range"] = budget_range(env)
    env.globals["lipsum"] = budget_lipsum(env)
    env.finalize = budget_finalize(env)


class PromptEnvironment(SandboxedEnvironment):
    """The sandbox with a budget: loops counted, and every value a template builds bounded before it is made
    (operators, method calls, ``str.format``, ``~``; see promptops.render.sandbox and promptops.render.sizes)."""

    intercepted_binops = frozenset({"+", "-", "*", "**", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        limits = limits_of(self)
        check_binop(limits, operator, left, right)
        return check_result(limits, f"'{operator}'", super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # Jinja's names
        limits = limits_of(__self)
        args = check_call(limits, __obj, args, kwargs)
        result = SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)
        return check_result(limits, getattr(__obj, "__name__", "a call") + "()", result)

    def wrap_str_format(self, value: Any) -> Any:
        return budget_str_format(self, value)

    def _generate(
        self, source: nodes.Template, name: str | None, filename: str | None, defer_init: bool = False
    ) -> str:
        limits = limits_of(self)
        limits.compiling = True
        try:
            return super()._generate(budget_concats(budget_loops(source)), name, filename, defer_init)
        finally:
            limits.compiling = False
