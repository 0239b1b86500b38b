"""The template sandbox's limits: where templates may be loaded from, and how much a render may do.

Jinja's sandbox blocks attribute tricks but not exhaustion: nested ``range(100000)`` loops run for hours, a
macro calling itself ends in Python's RecursionError, and a file loader follows a symlink anywhere. Here:

- ``SafeLoader`` loads by name from an ordered list of directories (the first holding the name wins, which is
  how a project's file overrides a packaged default), refuses names with ``..``, files whose real path leaves
  their boundary (the project root, or the directory itself), anything but a regular file, and files over
  ``MAX_TEMPLATE_BYTES``.
- ``Limits`` is a render's budget: every ``{% for %}`` iteration counts (the loop's iterable is wrapped by
  ``budget_loops``), the clock is checked every few hundred iterations or values built and at every big value,
  the output is bounded, and so is every value the template builds (promptops.render.sizes checks each before
  it is made and charges it here). Exceeding any raises RenderLimitError, which the renderer and lint report as
  one line with the template's file and line.
- ``BudgetedBytecodeCache`` keeps compiled templates across processes, keyed by the code that compiled them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import (
    BaseLoader,
    Environment,
    FileSystemBytecodeCache,
    TemplateError,
    TemplateNotFound,
    nodes,
    pass_environment,
)
from jinja2.loaders import split_template_path
from jinja2.visitor import NodeTransformer

from promptops.core.errors import PromptopsError

MAX_TEMPLATE_BYTES = 1 << 20  # a prompt template is text a person edits; 1 MiB is far beyond any real one
MAX_SECONDS = 10.0  # wall time of one render
MAX_STEPS = 2_000_000  # loop iterations in one render
MAX_OUTPUT = 10 << 20  # characters of rendered text
MAX_TEXT = MAX_OUTPUT  # characters of one string a template builds
MAX_ITEMS = 1_000_000  # items of one list a template builds (range() included)
MAX_INT_BITS = 4096  # bits of one integer a template computes (1,233 decimal digits)
MAX_BUILT = 128 << 20  # all a render builds, in bytes as estimated: a character 1, a list item 8
_CLOCK_EVERY = 512  # iterations (and values built) between clock checks
_BIG = 1 << 16  # a value this large checks the clock as it is built
BUDGET_FILTER = "_promptops_budget"
CONCAT_FILTER = "_promptops_concat"  # a ~ b, checked (promptops.render.sizes.budget_concat)
RECURSION = (
    "template recursion too deep: a macro that calls itself without end, or a template that imports or includes itself"
)


class RenderLimitError(PromptopsError):
    """A render exceeded the sandbox's budget (time, loop iterations, output size or recursion)."""


class TemplateRefused(TemplateError):
    """A template file the loader will not read (outside the project, not a regular file, too large)."""


class Limits:
    """One render's budget; inactive (no checks) outside ``active()``."""

    def __init__(
        self, seconds: float = MAX_SECONDS, steps: int = MAX_STEPS, output: int = MAX_OUTPUT, built: int = MAX_BUILT
    ) -> None:
        self.seconds = seconds
        self.max_steps = steps
        self.max_output = output
        self.max_built = built
        self.deadline: float | None = None
        self.steps = 0
        self.written = 0
        self.built = self.builds = 0
        self.compiling = False  # Jinja folds constant filter calls while it compiles

    @contextmanager
    def active(self) -> Iterator[Limits]:
        """Budget the renders inside; nested use keeps the outer budget. RecursionError becomes one line."""
        if self.deadline is not None:
            yield self
            return
        self.deadline = time.monotonic() + self.seconds
        self.steps = self.written = self.built = self.builds = 0
        try:
            yield self
        except RecursionError:
            raise RenderLimitError(RECURSION) from None
        finally:
            self.deadline = None

    def step(self) -> None:
        if self.deadline is None:
            return
        self.steps += 1
        if self.steps > self.max_steps:
            raise RenderLimitError(
                f"the template ran more than {self.max_steps:,} loop iterations (the sandbox's limit)"
            )
        if self.steps % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
            raise RenderLimitError(f"the template ran longer than {self.seconds:g} s (the sandbox's time limit)")

    def output(self, size: int) -> None:
        if self.deadline is None:
            return
        self.written += size
        if self.written > self.max_output:
            raise RenderLimitError(
                f"the rendered text exceeds {self.max_output:,} characters (the sandbox's output limit)"
            )
        if time.monotonic() > self.deadline:
            raise RenderLimitError(f"the template ran longer than {self.seconds:g} s (the sandbox's time limit)")

    def build(self, size: int) -> None:
        """Charge a value the template builds (each is bounded on its own before it is made)."""
        if self.deadline is None:
            return
        self.built += size
        if self.built > self.max_built:
            raise RenderLimitError(
                f"the template built more than {self.max_built:,} bytes of values in all (the sandbox's limit)"
            )
        # The clock at every big value, and every few hundred small ones (each takes microseconds).
        self.builds += 1
        if (size > _BIG or self.builds % _CLOCK_EVERY == 0) and time.monotonic() > self.deadline:
            raise RenderLimitError(f"the template ran longer than {self.seconds:g} s (the sandbox's time limit)")


def limits_of(env: Environment) -> Limits:
    found = getattr(env, "promptops_limits", None)
    if not isinstance(found, Limits):
        found = Limits()
        env.promptops_limits = found  # type: ignore[attr-defined]
    return found


@pass_environment
def _budgeted(env: Environment, iterable: Iterable[Any]) -> Iterator[Any]:
    limits = limits_of(env)
    for item in iterable:
        limits.step()
        yield item


def budget_loops(tree: nodes.Template) -> nodes.Template:
    """Wrap every ``{% for %}``'s iterable in the budget filter (once: compiling twice does not double it)."""
    for loop in tree.find_all(nodes.For):
        it = loop.iter
        if isinstance(it, nodes.Filter) and it.name == BUDGET_FILTER:
            continue
        loop.iter = nodes.Filter(it, BUDGET_FILTER, [], [], None, None, lineno=loop.lineno)
    return tree


class _Concats(NodeTransformer):
    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        parts = nodes.Tuple(node.nodes, "load", lineno=node.lineno)
        return nodes.Filter(parts, CONCAT_FILTER, [], [], None, None, lineno=node.lineno)


def budget_concats(tree: nodes.Template) -> nodes.Template:
    """Rewrite every ``a ~ b`` to the checked join (compiling twice finds no Concat left to rewrite)."""
    _Concats().visit(tree)
    return tree


def install(env: Environment) -> None:
    """Give ``env`` its budget and the loop filter."""
    limits_of(env)
    env.filters[BUDGET_FILTER] = _budgeted


class SafeLoader(BaseLoader):
    """Loads templates by name from ``places`` (directory, boundary), first match wins; see the module doc."""

    def __init__(self, places: Sequence[tuple[Path, Path]], display: Callable[[Path], str]) -> None:
        self.places = [(directory, boundary.resolve()) for directory, boundary in places]
        self.display = display  # how messages name a file (repo-relative, or the packaged name)

    def locate(self, template: str) -> Path:
        """The file ``template`` names (not yet checked), or TemplateNotFound."""
        pieces = split_template_path(template)  # refuses "..": names stay inside each directory
        for directory, _ in self.places:
            candidate = directory.joinpath(*pieces)
            if os.path.lexists(candidate):
                return candidate
        raise TemplateNotFound(template)

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        path = self.locate(template)
        boundary = next(b for d, b in self.places if path.is_relative_to(d))
        shown = self.display(path)
        real = path.resolve()
        if not real.is_relative_to(boundary):
            raise TemplateRefused(f"{shown} leads outside the project (a link to {real}): refused")
        try:
            info = real.stat()
        except OSError as exc:
            raise TemplateRefused(f"{shown}: cannot read: {exc.strerror}") from None
        if not stat.S_ISREG(info.st_mode):
            raise TemplateRefused(f"{shown} is not a regular file: refused")
        if info.st_size > MAX_TEMPLATE_BYTES:
            raise TemplateRefused(f"{shown} is larger than {MAX_TEMPLATE_BYTES:,} bytes: refused")
        try:
            with open(real, "rb") as handle:
                data = handle.read(MAX_TEMPLATE_BYTES + 1)
        except OSError as exc:
            raise TemplateRefused(f"{shown}: cannot read: {exc.strerror}") from None
        if len(data) > MAX_TEMPLATE_BYTES:
            raise TemplateRefused(f"{shown} is larger than {MAX_TEMPLATE_BYTES:,} bytes: refused")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TemplateRefused(f"{shown}: not UTF-8 text (byte {exc.start})") from None
        return text, str(path), lambda: True


class BudgetedBytecodeCache(FileSystemBytecodeCache):
    """Jinja's file cache of compiled templates, keyed also by the code that compiles them (the sandbox, the
    size checks, the renderer's environment, Jinja's version): Jinja keys an entry by the template alone, so code an
    earlier promptops compiled without today's budget would otherwise be loaded and run unchecked."""

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        key = super().get_cache_key(name, filename)
        return hashlib.sha1(f"{key} {compiler_stamp()}".encode()).hexdigest()


@functools.cache
def compiler_stamp() -> str:
    """The size and modification time of each module that decides what a template compiles to."""
    here = os.path.dirname(__file__)
    names = ("sandbox.py", "sizes.py", "text.py", "renderer.py")
    stats = [os.stat(os.path.join(here, name)) for name in names]
    return " ".join([jinja2.__version__, *(f"{s.st_size}:{s.st_mtime_ns}" for s in stats)])
