"""One template as lint sees it: source, syntax tree, contract, pins, and a traced representative render.

Which contract a template belongs to is decided by its path, never by guessing from its text:

- ``versions/<contract>/prompts/X.Y.Z.j2`` is the frozen snapshot of release X.Y.Z of ``<contract>``;
- a file inside a ``_partials`` directory, or whose name starts with ``_``, is a partial (shared macros);
- any other template belongs to the contract its file is named after (``templates/review-result.j2``);
- a template named after no contract is *plain*: only the contract-free rules (PO000, PO010, PO900) apply,
  except in the project's ``templates/`` directory, where every non-partial must be a contract's head.

The representative render uses the standard context with sample data (two changed files, a small diff) and
records, for every chunk of output, the template line that produced it, so findings about the rendered text
point back into the template source.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from types import GeneratorType
from typing import Any, NamedTuple, cast

from jinja2 import (
    BytecodeCache,
    Template,
    TemplateError,
    TemplateSyntaxError,
    Undefined,
    UndefinedError,
    nodes,
)
from jinja2.sandbox import SandboxedEnvironment

from promptops import defaults
from promptops.core.contract import VERSIONS_DIR, Contract
from promptops.core.errors import VersionError
from promptops.core.findings import Span
from promptops.core.shape import OutputShape
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.lint import trees
from promptops.render import regexes
from promptops.render.renderer import (
    PARTIALS_DIR,
    PROMPTS_DIR,
    SAMPLE_CHANGED_FILES,
    SAMPLE_DIFF,
    TEMPLATE_SUFFIXES,
    TEMPLATES_DIR,
    describe_error,
    head_stem,
    new_environment,
    pin_declarations,
    render_context,
    snapshot_search_path,
)
from promptops.render.sandbox import RECURSION, RenderLimitError, limits_of


class Kind(StrEnum):
    HEAD = "head"  # templates/<contract>.j2: the prompt edited in pull requests
    SNAPSHOT = "snapshot"  # versions/<contract>/prompts/X.Y.Z.j2: a released prompt, frozen
    PARTIAL = "partial"  # shared macros, checked through the templates that import them
    PLAIN = "plain"  # a Jinja file that belongs to no contract


CONTRACT_KINDS = frozenset({Kind.HEAD, Kind.SNAPSHOT})
ALL_KINDS = frozenset(Kind)


class RenderFailure(NamedTuple):
    line: int | None  # in this template, when the failure passed through it
    message: str
    undefined: bool  # a StrictUndefined error (PO008) rather than anything else (PO000)


class TracedRender(NamedTuple):
    """Rendered text plus, per output chunk, the template line whose code produced it."""

    text: str
    starts: list[int]
    lines: list[int]

    def line_at(self, offset: int) -> int:
        index = bisect.bisect_right(self.starts, offset) - 1
        return self.lines[index] if index >= 0 else 1


class Subject:
    """Everything the rules read about one file; filled in by the engine and ``prepare``."""

    def __init__(self, path: Path, rel: str, source: str, kind: Kind) -> None:
        self.path = path  # absolute
        self.root: Path | None = None  # the project root, set by the engine
        self.rel = rel  # repo-relative, as findings show it
        self.source = source
        self.kind = kind
        self.lines = source.split("\n")
        self.contract: Contract | None = None
        self.tree: nodes.Template | None = None
        self.syntax_error: TemplateSyntaxError | None = None
        self.problem: str | None = None  # why a file cannot be linted at all (PO000), beyond syntax
        self.undecodable: tuple[Span, str] | None = None  # not UTF-8: where, and what (PO010)
        self.shape: OutputShape | None = None  # the pinned schema's shape (the contract's floor if unusable)
        self.render: TracedRender | None = None
        self.render_failure: RenderFailure | None = None
        self.provided: frozenset[str] = frozenset()  # variable names the render context provides
        self.undeclared: frozenset[str] = frozenset()  # names the template reads that nothing provides
        self.environment: SandboxedEnvironment | None = None

    # Positions ------------------------------------------------------------------------------------------

    def line_span(self, line: int) -> Span:
        """The whole of source line ``line`` (from its first non-blank character)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        start = len(text) - len(text.lstrip()) + 1
        return Span(line, start, line, max(len(text) + 1, start + 1))

    def span_of_offset(self, offset: int, length: int) -> Span:
        line = self.source.count("\n", 0, offset) + 1
        column = offset - (self.source.rfind("\n", 0, offset) + 1) + 1
        return Span(line, column, line, column + max(length, 1))

    def find_in_line(self, line: int, pattern: str, group: int = 0) -> Span:
        """The first match of ``pattern`` (or its ``group``) on source line ``line``, else the whole line."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        match = regexes.compile(pattern).search(text)
        if match is None:
            return self.line_span(line)
        return Span(line, match.start(group) + 1, line, max(match.end(group), match.start(group) + 1) + 1)

    def locate(self, offset: int, needle: str) -> Span:
        """Where rendered text at ``offset`` came from.

        Literal template text is found verbatim in the source (the occurrence nearest the traced line wins),
        else its longest literal prefix (a statement that ends in an expression, such as ``exactly "{{ v }}"``);
        text produced by expressions or macros points at the tag on the traced line that produced it.
        """
        assert self.render is not None
        traced = self._traced_line(offset)
        needle = needle.strip()[:60]
        for size in range(len(needle), min(len(needle), 12) - 1, -1):
            best: tuple[int, int] | None = None
            for match in re.finditer(re.escape(needle[:size]), self.source):
                span = self.span_of_offset(match.start(), size)
                distance = abs(span.line - traced)
                if best is None or distance < best[0]:
                    best = (distance, match.start())
            if best is not None:
                return self.span_of_offset(best[1], size)
        return self.find_in_line(traced, r"\{[{%].*?[}%]\}")

    def _traced_line(self, offset: int) -> int:
        """The template line of rendered ``offset``: the line of the chunk holding it, plus the line breaks
        before it inside that chunk when the chunk is literal template text."""
        assert self.render is not None
        render = self.render
        index = bisect.bisect_right(render.starts, offset) - 1
        if index < 0:
            return 1
        line = render.lines[index]
        end = render.starts[index + 1] if index + 1 < len(render.starts) else len(render.text)
        chunk = render.text[render.starts[index] : end]
        if chunk.strip() and chunk.strip()[:40] in self.source:
            line += chunk.count("\n", 0, offset - render.starts[index])
        return min(max(line, 1), len(self.lines))


def classify(root: Path, path: Path, contracts: list[str]) -> tuple[Kind, str | None]:
    """The kind of template at ``path`` and the contract it belongs to (None for partials and plain files).

    ``root`` and ``path`` are resolved (the engine resolves every path once).
    """
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    if len(parts) == 4 and parts[0] == VERSIONS_DIR and parts[2] == PROMPTS_DIR:
        return Kind.SNAPSHOT, parts[1]
    if PARTIALS_DIR in parts[:-1] or path.name.startswith("_"):
        return Kind.PARTIAL, None
    stem = head_stem(path.name)
    if stem in contracts:
        return Kind.HEAD, stem
    return Kind.PLAIN, None


def snapshot_version(subject: Subject) -> PromptVersion | None:
    """The release a snapshot file is named after (``1.2.0.j2`` -> 1.2.0), None if the name is no version."""
    try:
        return PromptVersion.parse(subject.path.name.split(".j2")[0])
    except VersionError:
        return None


def target_schema(subject: Subject) -> SchemaVersion | None:
    """The schema version the template pins, when it is one string literal that parses."""
    if subject.tree is None:
        return None
    values = [p for p in pin_declarations(subject.tree) if p.name == "schema_version"]
    if len(values) != 1 or values[0].value is None:
        return None
    try:
        return SchemaVersion.parse(values[0].value)
    except VersionError:
        return None


def prepare(
    subject: Subject,
    root: Path,
    environment: Callable[[tuple[Path, ...]], SandboxedEnvironment],
    variables: Mapping[str, Any],
) -> None:
    """Compile the template (a syntax check) and, for a contract template, parse it and render it with the
    representative context."""
    search, name = _loader_path(root, subject)
    env = environment(search)
    subject.environment = env
    reads: frozenset[str] = frozenset()
    try:
        # Through the loader, so the bytecode cache (when the caller set one) spares recompiling.
        template = env.get_template(name)
        if subject.contract is not None and subject.kind in CONTRACT_KINDS:
            subject.tree, reads = trees.parse(env, subject.source, subject.rel, str(subject.path))
    except TemplateSyntaxError as exc:
        subject.syntax_error = exc
        return
    if subject.tree is None or subject.contract is None:
        return
    contract = subject.contract
    pinned = target_schema(subject)
    subject.shape = contract.shape(
        pinned if pinned is not None and pinned in contract.shapes else contract.default_policy.schema_floor
    )
    context = render_context(contract, subject.shape, SAMPLE_CHANGED_FILES, SAMPLE_DIFF, variables)
    subject.provided = frozenset(context) | frozenset(env.globals)
    subject.undeclared = reads - subject.provided
    # Names the context lacks are PO008 findings already; bind them to lenient placeholders so the render,
    # and every rule that reads it, still runs.
    for name in subject.undeclared:
        context[name] = Undefined(name=name)
    _traced_render(subject, root, env, template, context)


def environment_factory(
    bytecode_cache: BytecodeCache | None = None,
) -> Callable[[tuple[Path, ...]], SandboxedEnvironment]:
    """One environment per search path for a lint run, so partials compile once."""
    cache: dict[tuple[Path, ...], SandboxedEnvironment] = {}

    def get(search: tuple[Path, ...]) -> SandboxedEnvironment:
        if search not in cache:
            cache[search] = new_environment(search, bytecode_cache)
        return cache[search]

    return get


def _loader_path(root: Path, subject: Subject) -> tuple[tuple[Path, ...], str]:
    """The search path to load ``subject`` with, and its name there.

    Everything under ``templates/`` loads from one environment by its path there, so a partial linted on its
    own and the same partial imported by a head are one compiled template.
    """
    own = subject.path.parent
    if subject.kind is Kind.SNAPSHOT:
        return snapshot_search_path(subject.path), subject.path.name  # a release renders from its own files only
    templates = (root / TEMPLATES_DIR).resolve()
    packaged = defaults.templates_dir()  # the shared partials a project does not override
    if subject.path.is_relative_to(templates):
        return (templates, packaged), subject.path.relative_to(templates).as_posix()
    return (own, templates, packaged), subject.path.name


def _traced_render(
    subject: Subject, root: Path, env: SandboxedEnvironment, template: Template, context: dict[str, Any]
) -> None:
    # root_render_func is a generator; its suspended frame says which compiled line yielded each chunk.
    generator = cast("GeneratorType[str, None, None]", template.root_render_func(template.new_context(context)))
    chunks: list[str] = []
    starts: list[int] = []
    lines: list[int] = []
    offset = 0
    # Template.get_corresponding_lineno re-parses the debug info on every call; map the lines once.
    debug = template.debug_info
    code_lines = [code for _, code in debug]
    try:
        with limits_of(env).active():
            for chunk in generator:
                frame = generator.gi_frame
                at = bisect.bisect_right(code_lines, frame.f_lineno) if frame is not None else 0
                line = debug[at - 1][0] if at else 1
                chunks.append(chunk)
                starts.append(offset)
                lines.append(line)
                offset += len(chunk)
                limits_of(env).output(len(chunk))
    except RecursionError:
        raise RenderLimitError(f"{subject.rel}: {RECURSION}") from None
    except RenderLimitError as exc:  # a runaway template stops the run: it is not a finding to suppress
        own, deeper = _place(subject, root, env, exc)
        raise RenderLimitError(f"{deeper or subject.rel + (f':{own}' if own else '')}: {exc}") from None
    except Exception as exc:  # a template may raise anything at render time; each is a finding, not a crash
        subject.render_failure = _failure(subject, root, env, exc)
        return
    subject.render = TracedRender("".join(chunks), starts, lines)


def _failure(subject: Subject, root: Path, env: SandboxedEnvironment, exc: Exception) -> RenderFailure:
    own, deeper = _place(subject, root, env, exc)
    message = describe_error(exc) if isinstance(exc, TemplateError) else f"{type(exc).__name__}: {exc}"
    if deeper is not None:
        message += f" (at {deeper})"
    return RenderFailure(own, message, isinstance(exc, UndefinedError))


def _place(
    subject: Subject, root: Path, env: SandboxedEnvironment, exc: BaseException
) -> tuple[int | None, str | None]:
    """Where a render failed: the line in the subject, and ``file:line`` of the template it failed in when that
    is another one (a partial). Called while ``exc`` is being handled."""
    rewritten: BaseException = exc
    try:
        env.handle_exception(subject.source)  # rewrites the traceback to template file names and lines
    except Exception as done:
        rewritten = done
    import traceback  # only on failure

    filename = str(subject.path)
    frames = [f for f in traceback.extract_tb(rewritten.__traceback__) if f.filename.endswith(TEMPLATE_SUFFIXES)]
    own = [f.lineno for f in frames if f.filename == filename]
    deeper = None
    if frames and frames[-1].filename != filename:
        deepest = Path(frames[-1].filename)
        try:
            shown = deepest.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            shown = deepest.name
        deeper = f"{shown}:{frames[-1].lineno}"
    return (own[-1] if own else None), deeper
