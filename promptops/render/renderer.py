"""Rendering prompt templates: strict, sandboxed, cached and deterministic.

A contract's head template is ``templates/<contract>.j2`` (``.jinja`` and ``.jinja2`` also work); a released
prompt is frozen as ``versions/<contract>/prompts/X.Y.Z.j2`` with the partials it imports under
``prompts/X.Y.Z/`` (written by ``release cut``) and renders with a loader rooted in those only, so nothing
outside the release can change it.

A template pins its versions in one declared place, two top-level string assignments::

    {% set prompt_version = "1.0.0" %}
    {% set schema_version = "1.0" %}

The renderer reads them from the template's syntax tree (never by running it), picks the schema they name and
hands the template its context: ``schema`` (the compiled OutputShape of that schema version), ``contract``,
``changed_files``, ``diff`` and any extra variables. Context values are data: Jinja never evaluates the text
of a value, so a diff holding ``{{ 7*7 }}`` renders as those characters. A name the context lacks is an error
naming it and the template line (StrictUndefined), and the sandbox blocks attribute tricks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from jinja2 import (
    BytecodeCache,
    StrictUndefined,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
    UndefinedError,
    meta,
    nodes,
)
from jinja2.sandbox import SandboxedEnvironment

from promptops import defaults
from promptops.core.contract import VERSIONS_DIR, Contract
from promptops.core.errors import PromptopsError, VersionError
from promptops.core.shape import OutputShape
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.render import filters
from promptops.render.sandbox import (
    RECURSION,
    RenderLimitError,
    SafeLoader,
    TemplateRefused,
    install,
    limits_of,
)
from promptops.render.sizes import PromptEnvironment, install_sizes

TEMPLATES_DIR = "templates"
PARTIALS_DIR = "_partials"
PROMPTS_DIR = "prompts"  # versions/<contract>/prompts/X.Y.Z.j2: frozen snapshots
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")
PIN_NAMES = ("prompt_version", "schema_version")
# Names the renderer always provides; extra variables may not shadow them.
CONTEXT_NAMES = ("changed_files", "contract", "diff", "schema")
# The sample context lint renders with (and release cut, comparing renders): representative, never a real change.
SAMPLE_CHANGED_FILES = ("lint-sample/alpha.py", "lint-sample/beta/gamma.ts")
SAMPLE_DIFF = "@@ -1,2 +1,2 @@\n-old = 1\n+new = 2\n"


def head_stem(filename: str) -> str:
    """The contract a head template file would belong to: its name without the template suffix, so a
    contract whose name holds a '.' (``acme.security``) has its head ``templates/acme.security.j2``."""
    for suffix in TEMPLATE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)]
    return filename


class RenderError(PromptopsError):
    """A template could not be rendered; names the template (repo-relative) and line when known."""

    def __init__(self, source: str, line: int | None, problem: str) -> None:
        self.source = source
        self.line = line
        self.problem = problem
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class PinDeclaration(NamedTuple):
    """A top-level ``{% set prompt_version|schema_version = ... %}``; value None unless a string literal."""

    name: str
    value: str | None
    line: int


class Pins(NamedTuple):
    prompt_version: PromptVersion
    schema_version: SchemaVersion
    prompt_text: str  # the literal as written ("1.0" stays "1.0")
    schema_text: str


class RenderedPrompt(NamedTuple):
    contract: str
    template: str  # repo-relative path of the template that was rendered
    pins: Pins
    changed_files: tuple[str, ...]
    text: str
    sources: tuple[dict[str, str], ...] = ()  # every template file loaded and where it came from

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "template": self.template,
            "prompt_version": self.pins.prompt_text,
            "schema_version": self.pins.schema_text,
            "changed_files": list(self.changed_files),
            "text": self.text,
            "sources": list(self.sources),
        }


def pin_declarations(tree: nodes.Template) -> list[PinDeclaration]:
    """The pin assignments at the top level of ``tree``, in source order (duplicates included)."""
    found: list[PinDeclaration] = []
    for node in tree.body:
        if isinstance(node, nodes.Assign) and isinstance(node.target, nodes.Name) and node.target.name in PIN_NAMES:
            value = node.node.value if isinstance(node.node, nodes.Const) else None
            found.append(PinDeclaration(node.target.name, value if isinstance(value, str) else None, node.lineno))
    return found


def read_pins(tree: nodes.Template, source: str) -> Pins:
    """The template's pins, or RenderError naming what is missing or malformed."""
    values: dict[str, tuple[str, int]] = {}
    for pin in pin_declarations(tree):
        if pin.name in values:
            raise RenderError(source, pin.line, f"{pin.name} is pinned twice (first on line {values[pin.name][1]})")
        if pin.value is None:
            raise RenderError(source, pin.line, f"{pin.name} must be pinned to a quoted string literal")
        values[pin.name] = (pin.value, pin.line)
    for name in PIN_NAMES:
        if name not in values:
            example = "1.0.0" if name == "prompt_version" else "1.0"
            raise RenderError(source, None, f'no {name} pin: declare {{% set {name} = "{example}" %}} at the top level')
    (prompt_text, prompt_line), (schema_text, schema_line) = (
        values["prompt_version"],
        values["schema_version"],
    )
    try:
        prompt = PromptVersion.parse(prompt_text)
    except VersionError as exc:
        raise RenderError(source, prompt_line, str(exc)) from None
    try:
        schema = SchemaVersion.parse(schema_text)
    except VersionError as exc:
        raise RenderError(source, schema_line, str(exc)) from None
    return Pins(prompt, schema, prompt_text, schema_text)


def snapshot_search_path(snapshot: Path) -> tuple[Path, ...]:
    """Where a snapshot ``prompts/X.Y.Z.j2`` loads from: its frozen folder ``prompts/X.Y.Z/`` first (the
    partials ``release cut`` froze with it, under the names the template imports them by), then ``prompts/``
    itself for the snapshot file. Nothing outside the contract's ``prompts/`` directory is ever read."""
    return (snapshot.parent / snapshot.name.removesuffix(".j2"), snapshot.parent)


def template_search_path(root: Path) -> tuple[Path, ...]:
    """Where a project's templates load from: its ``templates/``, then the packaged defaults (the project's
    file wins: that is how a project overrides a partial or ``_reask.j2``)."""
    return (root / TEMPLATES_DIR, defaults.templates_dir())


def find_template(root: Path, name: str) -> Path | None:
    """The file template ``name`` loads from in the project at ``root`` (its own, else the packaged one)."""
    for directory in template_search_path(root):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def show_path(root: Path | None, path: Path) -> str:
    """How outputs name a template file: repo-relative, ``<promptops>/...`` for a packaged default."""
    if path.is_relative_to(defaults.location()):
        return defaults.display(path)
    if root is not None:
        for base in (root, root.resolve()):
            if path.is_relative_to(base):
                return path.relative_to(base).as_posix()
    return path.as_posix()


def new_environment(
    search_path: Sequence[Path], bytecode_cache: BytecodeCache | None = None, root: Path | None = None
) -> SandboxedEnvironment:
    """The one environment configuration every render and lint uses.

    Plain text (no autoescape), StrictUndefined, block tags that leave no blank lines behind, trailing newline
    kept, templates never re-read from disk once compiled (the environment is the cache). ``bytecode_cache``
    (a Jinja BytecodeCache, chosen by the caller) keeps compiled templates across processes, keyed by the
    template source, so a short-lived ``promptops lint`` does not recompile unchanged partials. Templates load
    through SafeLoader: a directory under ``root`` may not lead outside ``root``, any other (the packaged
    defaults, a release's frozen folder) not outside itself.
    """
    places = [(p, root if root is not None and p.is_relative_to(root) else p) for p in search_path]
    env = PromptEnvironment(
        bytecode_cache=bytecode_cache,
        loader=SafeLoader(places, lambda path: show_path(root, path)),
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
        cache_size=-1,
    )
    install(env)
    filters.install(env)
    install_sizes(env)
    return env


def render_context(
    contract: Contract,
    shape: OutputShape,
    changed_files: Sequence[str],
    diff: str,
    variables: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The variables a template sees. Extra variables may not shadow the standard ones or the pins."""
    extra = dict(variables or {})
    clash = sorted(set(extra) & {*CONTEXT_NAMES, *PIN_NAMES})
    if clash:
        raise PromptopsError(f"variable {clash[0]!r} is reserved (the renderer provides it)")
    return {
        **extra,
        "changed_files": list(changed_files),
        "contract": contract,
        "diff": diff,
        "schema": shape,
    }


def describe_error(exc: TemplateError) -> str:
    """A one-line problem statement for a Jinja error (no absolute paths: outputs are repo-relative)."""
    if isinstance(exc, UndefinedError):
        return f"undefined variable: {exc.message}"
    if isinstance(exc, TemplateSyntaxError):
        return f"syntax error: {exc.message}"
    if isinstance(exc, TemplateRefused):
        return exc.message or "template refused"
    if isinstance(exc, TemplateNotFound):
        return f"TemplateNotFound: no template {exc.name!r} in the template search path"
    return f"{type(exc).__name__}: {exc.message or exc}"


class Renderer:
    """Renders the templates of the project at ``root``; compiled templates are cached for its lifetime."""

    def __init__(self, root: Path, bytecode_cache: BytecodeCache | None = None) -> None:
        self.root = root
        self._bytecode_cache = bytecode_cache
        self._envs: dict[tuple[Path, ...], SandboxedEnvironment] = {}
        self._pins: dict[Path, Pins] = {}
        self._sources: dict[Path, list[dict[str, str]]] = {}

    def head_template(self, contract_name: str) -> Path | None:
        """``templates/<contract>.j2`` (or .jinja/.jinja2) when it exists."""
        for suffix in TEMPLATE_SUFFIXES:
            path = self.root / TEMPLATES_DIR / f"{contract_name}{suffix}"
            if path.is_file():
                return path
        return None

    def snapshot_template(self, contract_name: str, version: PromptVersion) -> Path:
        return self.root / VERSIONS_DIR / contract_name / PROMPTS_DIR / f"{version}.j2"

    def resolve(self, contract: Contract, version: PromptVersion | None = None) -> Path:
        """The template to render: the frozen snapshot of ``version``, else the head if it pins it."""
        if version is not None:
            snapshot = self.snapshot_template(contract.name, version)
            if snapshot.is_file():
                return snapshot
        head = self.head_template(contract.name)
        if head is None:
            raise RenderError(f"{TEMPLATES_DIR}/{contract.name}.j2", None, "no head template for this contract")
        if version is not None and self.pins(head).prompt_version != version:
            snapshots = self.root / VERSIONS_DIR / contract.name / PROMPTS_DIR
            released = sorted(p.stem for p in snapshots.glob("*.j2")) if snapshots.is_dir() else []
            problem = (
                f"no prompt {version} for contract {contract.name}: the head template pins "
                f"{self.pins(head).prompt_text} and {self._relative(snapshots)}/ holds "
                f"{', '.join(released) or 'no snapshots'}"
            )
            raise RenderError(self._relative(head), None, problem)
        return head

    def pins(self, path: Path) -> Pins:
        if path not in self._pins:
            env = self._environment(path)
            name = self._template_name(path)
            assert env.loader is not None
            try:
                source, _, _ = env.loader.get_source(env, name)
                tree = env.parse(source, name, str(path))
            except TemplateSyntaxError as exc:
                raise RenderError(self._relative(path), exc.lineno, f"syntax error: {exc.message}") from None
            except TemplateError as exc:
                raise RenderError(self._relative(path), None, describe_error(exc)) from None
            except RecursionError:
                raise RenderError(self._relative(path), None, "syntax error: nested too deeply") from None
            self._pins[path] = read_pins(tree, self._relative(path))
        return self._pins[path]

    def render(
        self,
        contract: Contract,
        *,
        version: PromptVersion | None = None,
        changed_files: Sequence[str] = (),
        diff: str = "",
        variables: Mapping[str, Any] | None = None,
    ) -> RenderedPrompt:
        path = self.resolve(contract, version)
        rel = self._relative(path)
        pins = self.pins(path)
        if pins.schema_version not in contract.shapes:
            raise RenderError(
                rel, None, f"schema_version {pins.schema_text} has no schema file in {contract.directory}"
            )
        context = render_context(contract, contract.shape(pins.schema_version), changed_files, diff, variables)
        text = self._run(path, self._template_name(path), context)
        return RenderedPrompt(contract.name, rel, pins, tuple(changed_files), text, tuple(self.sources(path)))

    def render_file(self, name: str, context: Mapping[str, Any]) -> str:
        """Render ``templates/<name>`` with exactly ``context``: strict and sandboxed like every prompt.

        For templates that are not a contract's head, such as the re-ask prompt (``_reask.j2``), whose
        caller decides what they see. The project's file wins; else the packaged default of that name.
        """
        env = self._environment(self.root / TEMPLATES_DIR / name)
        assert isinstance(env.loader, SafeLoader)
        try:
            path = env.loader.locate(name)
        except TemplateError:
            raise RenderError(
                f"{TEMPLATES_DIR}/{name}", None, "no such template (in the project or packaged)"
            ) from None
        return self._run(path, name, dict(context))

    def sources(self, path: Path) -> list[dict[str, str]]:
        """Every template file a render of ``path`` loads (itself and its imports, transitively), with where
        each came from: ``project``, ``package`` (a packaged default) or ``release`` (a frozen snapshot).
        Kept for the renderer's lifetime, like the compiled templates."""
        if path not in self._sources:
            self._sources[path] = self._find_sources(path)
        return list(self._sources[path])

    def _find_sources(self, path: Path) -> list[dict[str, str]]:
        env = self._environment(path)
        assert isinstance(env.loader, SafeLoader)
        out: list[dict[str, str]] = []
        pending, seen = [self._template_name(path)], set()
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.add(name)
            try:
                found = env.loader.locate(name)
                source, _, _ = env.loader.get_source(env, name)
                referenced = list(meta.find_referenced_templates(env.parse(source)))
            except (TemplateError, RecursionError):
                continue  # the render itself reports it
            origin = "package" if found.is_relative_to(defaults.location()) else "project"
            if path.parent.name == PROMPTS_DIR:
                origin = "release"
            out.append({"name": name, "file": self._relative(found), "origin": origin})
            pending += [r for r in referenced if r is not None]
        return out

    def _run(self, path: Path, name: str, context: dict[str, Any]) -> str:
        """Render ``name`` within the sandbox's budget; every failure is a RenderError with its place."""
        env = self._environment(path)
        limits = limits_of(env)
        chunks: list[str] = []
        try:
            with limits.active():
                for chunk in env.get_template(name).generate(context):
                    limits.output(len(chunk))
                    chunks.append(chunk)
        except TemplateError as exc:
            raise RenderError(*self._locate(exc, path), describe_error(exc)) from None
        except RenderLimitError as exc:
            raise RenderError(*self._locate(exc, path), str(exc)) from None
        except RecursionError:
            raise RenderError(self._relative(path), None, RECURSION) from None
        except Exception as exc:  # a template may raise anything at render time (1 / 0, a float overflow)
            raise RenderError(*self._locate(exc, path), f"{type(exc).__name__}: {exc}") from None
        return "".join(chunks)

    def _environment(self, path: Path) -> SandboxedEnvironment:
        search = snapshot_search_path(path) if path.parent.name == PROMPTS_DIR else template_search_path(self.root)
        if search not in self._envs:
            self._envs[search] = new_environment(search, self._bytecode_cache, self.root)
        return self._envs[search]

    def _template_name(self, path: Path) -> str:
        base = path.parent if path.parent.name == PROMPTS_DIR else self.root / TEMPLATES_DIR
        return path.relative_to(base).as_posix()

    def _locate(self, exc: BaseException, path: Path) -> tuple[str, int | None]:
        """Where a render failed: the deepest template frame, else the template being rendered."""
        import traceback  # only on failure: keeps a successful render's import cost down

        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(TEMPLATE_SUFFIXES)]
        if isinstance(exc, TemplateSyntaxError) and exc.filename:
            return self._relative(Path(exc.filename)), exc.lineno
        if frames:
            return self._relative(Path(frames[-1].filename)), frames[-1].lineno
        return self._relative(path), None

    def _relative(self, path: Path) -> str:
        shown = show_path(self.root, path)
        return show_path(self.root, path.resolve()) if shown.startswith("/") else shown


def file_sources(root: Path, rels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """For each template ``rels`` names (repo-relative): the contract it is checked against and where that
    contract came from, and every template file it loads with its origin (see ``Renderer.sources``)."""
    from promptops.core.contract import list_contracts, locate_contract  # only when a report asks for sources

    renderer = Renderer(root)
    names = set(list_contracts(root))
    out: dict[str, dict[str, Any]] = {}
    for rel in rels:
        path = root / rel
        if not rel.endswith(TEMPLATE_SUFFIXES) or not path.is_file():
            continue
        stem = head_stem(path.name)
        contract = None
        if path.parent == root / TEMPLATES_DIR and stem in names:
            contract = locate_contract(root, stem)[1]
        elif path.parent.name == PROMPTS_DIR and path.parent.parent.name in names:
            contract = locate_contract(root, path.parent.parent.name)[1]
        out[rel] = {"contract": contract, "templates": renderer.sources(path)}
    return out
