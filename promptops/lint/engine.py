"""Running the rules: which files to lint, one subject per file, suppressions, and the report."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from jinja2 import BytecodeCache
from jinja2.sandbox import SandboxedEnvironment

from promptops.core.contract import CONTRACT_FILE, VERSIONS_DIR, Contract, list_contracts
from promptops.core.errors import PromptopsError
from promptops.core.findings import Finding, Level, Span
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.lint import cache, contracts, suppressions
from promptops.lint.config import LintConfig
from promptops.lint.model import LintContext
from promptops.lint.rules import RULES, RULES_BY_CODE, UNSUPPRESSIBLE, UnusedSuppression
from promptops.lint.rules.project import NoHeadTemplate
from promptops.lint.rules.release import ReleasedArtifactModified
from promptops.lint.subject import Kind, Subject, classify, environment_factory, prepare
from promptops.render.renderer import TEMPLATE_SUFFIXES, TEMPLATES_DIR, head_stem, new_environment
from promptops.render.sandbox import MAX_TEMPLATE_BYTES


class LintReport(NamedTuple):
    files: tuple[str, ...]  # repo-relative, in the order linted
    findings: tuple[Finding, ...]  # sorted by file, position, code
    suppressed: int

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.level is Level.ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.level is Level.WARNING)


class _Run:
    def __init__(
        self,
        root: Path,
        config: LintConfig,
        context: LintContext,
        contract_names: list[str],
        environment: Callable[[tuple[Path, ...]], SandboxedEnvironment],
        cache_dir: str | None,
    ) -> None:
        self.root = root
        self.config = config
        self.context = context
        self.contract_names = contract_names
        self.environment = environment
        self.contracts: dict[str, Contract] = {}
        self.cache_dir = cache_dir

    def contract(self, name: str) -> Contract:
        if name not in self.contracts:
            self.contracts[name] = contracts.load(self.root, name, self.cache_dir)
        return self.contracts[name]


def lint(
    root: Path,
    paths: Sequence[Path] = (),
    config: LintConfig | None = None,
    context: LintContext | None = None,
    bytecode_cache: BytecodeCache | None = None,
) -> LintReport:
    """Lint ``paths`` (files or directories; default: the project's ``templates/``) of the project ``root``.

    A partial brings in the project's head templates (they render it), and a contract file under
    ``versions/<contract>/`` (contract.yaml, a schema) brings in that contract's head template, so a commit
    that changes only the schema is still checked against the prompt. The release locks
    (``versions/<contract>/releases.yaml``) are read here: PO001 holds heads to them, and PO009 checks the
    locked artifacts of every contract the run touches.
    """
    root = root.resolve()
    config = config or LintConfig()
    given = context or LintContext()
    names = list_contracts(root)
    cache_dir = cache.directory(bytecode_cache)
    locks = {name: contracts.lock(root, name, cache_dir) for name in names}
    locks = {name: lock for name, lock in locks.items() if lock.exists} | dict(given.locks)
    released: dict[str, dict[PromptVersion, SchemaVersion]] = {
        name: {r.version: r.schema_version for r in lock.releases} for name, lock in locks.items()
    }
    for name, versions in given.released.items():
        released[name] = {**released.get(name, {}), **versions}
    merged = LintContext(released=released, variables={**config.render_context, **given.variables}, locks=locks)
    run = _Run(root, config, merged, names, environment_factory(bytecode_cache), cache_dir)
    whole = not paths
    targets = paths or [root / TEMPLATES_DIR]
    if whole and names and not (root / TEMPLATES_DIR).is_dir():
        targets = []  # contracts but no templates yet: PO011 says so for each
    files = expand(root, targets, run.contract_names)
    findings: list[Finding] = []
    suppressed = 0
    rels: list[str] = []
    for path in files:
        rel = _relative(root, path)
        found, hidden = _lint_file(run, path, rel)
        rels.append(rel)
        findings += found
        suppressed += hidden
    scope = _contracts_in_scope(run, targets, files)
    headless = _check_heads(run, names if whole else _contracts_named(root, targets, names))
    rels += [f.file for f in headless if f.file not in rels]
    findings += headless
    locked = _check_locks(run, scope)
    rels += sorted({f.file for f in locked} - set(rels))  # the artifacts checked against a lock count as linted
    findings += locked
    return LintReport(tuple(rels), tuple(sorted(set(findings), key=Finding.sort_key)), suppressed)


def head_lint(config: LintConfig | None = None) -> Callable[[Path, Path], tuple[Finding, ...]]:
    """Lint as ``release cut`` runs it on one head, ``(root, head) -> findings``. PO009 (a released artifact
    modified) is left out: the cut checks the lock and its artifacts itself, first."""
    config = config or LintConfig()
    config = config._replace(ignore=(*config.ignore, "PO009"))
    return lambda root, head: tuple(lint(root, [head], config).findings)


def _contracts_in_scope(run: _Run, targets: Sequence[Path], files: Sequence[Path]) -> list[str]:
    """Contracts whose head, snapshot or partial is linted, or any of whose files was named."""
    scope: dict[str, None] = {}
    named = [(path if path.is_absolute() else run.root / path).resolve() for path in targets]
    for absolute in [*named, *files]:  # files: resolved by expand
        try:
            parts = absolute.relative_to(run.root).parts
        except ValueError:
            continue
        if len(parts) >= 2 and parts[0] == VERSIONS_DIR and parts[1] in run.contract_names:
            scope[parts[1]] = None
        elif absolute.is_file():
            contract = classify(run.root, absolute, run.contract_names)[1]
            if contract is not None:
                scope[contract] = None
    return list(scope)


def _check_locks(run: _Run, contracts: Sequence[str]) -> list[Finding]:
    rule = RULES_BY_CODE.get(ReleasedArtifactModified.code)
    if not isinstance(rule, ReleasedArtifactModified):
        return []
    out: list[Finding] = []
    for name in contracts:
        lock = run.context.locks.get(name)
        if lock is not None and lock.exists:
            out += rule.check_lock(run.root, lock, lambda rel: run.config.enabled(rule.code, rel))
    return out


def _contracts_named(root: Path, targets: Sequence[Path], names: Sequence[str]) -> list[str]:
    """Contracts one of whose own files (not a prompt snapshot) or whose directory was named."""
    out: dict[str, None] = {}
    for given in targets:
        path = (given if given.is_absolute() else root / given).resolve()
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            continue
        in_contract = len(parts) >= 2 and parts[0] == VERSIONS_DIR and parts[1] in names
        if in_contract and not path.name.endswith(TEMPLATE_SUFFIXES) and "prompts" not in parts[2:3]:
            out[parts[1]] = None
    return list(out)


def _check_heads(run: _Run, contracts: Sequence[str]) -> list[Finding]:
    rule = RULES_BY_CODE.get(NoHeadTemplate.code)
    if not isinstance(rule, NoHeadTemplate):
        return []
    out: list[Finding] = []
    for name in contracts:
        source = f"{VERSIONS_DIR}/{name}/{CONTRACT_FILE}"
        if run.config.enabled(rule.code, source):
            out += rule.check_contract(run.root, name, source)
    return out


def expand(root: Path, paths: Sequence[Path], contract_names: Sequence[str]) -> list[Path]:
    """The template files to lint for ``paths`` (relative ones are under ``root``), once each, in order."""
    heads = _heads(root, contract_names)
    pending = _pending_heads(root)
    out: dict[Path, None] = {}
    for given in paths:
        path = given if given.is_absolute() else root / given  # the CLI passes absolute paths
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in found.relative_to(path).parts)
                if found.is_file() and found.name.endswith(TEMPLATE_SUFFIXES) and not hidden:
                    if pending and (found.stat().st_dev, found.stat().st_ino) in pending:
                        continue  # a head `contract new` has not committed yet: not part of the project
                    out[_inside(root, found)] = None
            continue
        if not path.is_file():
            raise PromptopsError(f"{_relative(root, path.resolve())}: no such file or directory")
        path = _inside(root, path)
        kind, contract = _contract_file(root, path)
        if kind == "contract-file":
            out.update(dict.fromkeys(h for h in heads if head_stem(h.name) == contract))
            continue
        out[path] = None
        if classify(root, path, list(contract_names))[0] is Kind.PARTIAL:
            out.update(dict.fromkeys(heads))
    return list(out)


def _pending_heads(root: Path) -> set[tuple[int, int]]:
    try:  # a staging directory is a hidden entry of versions/: without one, nothing is pending
        if not any(entry.name.startswith(".") for entry in os.scandir(root / VERSIONS_DIR)):
            return set()
    except OSError:
        return set()
    from promptops.scaffold.write import pending_heads  # the writer of heads knows its staging layout

    return pending_heads(root)


def _inside(root: Path, path: Path) -> Path:
    """``path`` resolved, unless a link takes it outside the project (never linted nor rendered)."""
    real = path.resolve()
    if path.is_relative_to(root) and not real.is_relative_to(root):
        raise PromptopsError(f"{_relative(root, path)} leads outside the project (a link to {real}): refused")
    if real.stat().st_size > MAX_TEMPLATE_BYTES:
        raise PromptopsError(f"{_relative(root, path)} is larger than {MAX_TEMPLATE_BYTES:,} bytes: refused")
    return real


def _heads(root: Path, contract_names: Sequence[str]) -> list[Path]:
    directory = root / TEMPLATES_DIR
    if not directory.is_dir():
        return []
    return sorted(
        p.resolve()
        for p in directory.iterdir()
        if p.is_file() and p.name.endswith(TEMPLATE_SUFFIXES) and head_stem(p.name) in contract_names
    )


def _contract_file(root: Path, path: Path) -> tuple[str, str | None]:
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return "other", None
    if len(parts) >= 3 and parts[0] == VERSIONS_DIR and not path.name.endswith(TEMPLATE_SUFFIXES):
        return "contract-file", parts[1]
    return "other", None


def _lint_file(run: _Run, path: Path, rel: str) -> tuple[list[Finding], int]:
    kind, contract_name = classify(run.root, path, run.contract_names)
    raw = path.read_bytes()
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        subject = Subject(path, rel, raw.decode("utf-8", "replace"), kind)
        good = raw[: exc.start].decode("utf-8", "replace")
        line = good.count("\n") + 1
        column = len(good) - (good.rfind("\n") + 1) + 1
        problem = f"not UTF-8: byte 0x{raw[exc.start]:02X} cannot be decoded"
        subject.undecodable = (Span.point(line, column), problem)
        return _run_rules(run, subject, only=("PO010",)), 0
    subject = Subject(path, rel, source, kind)
    subject.root = run.root
    if contract_name is not None:
        subject.contract = run.contract(contract_name)
    elif kind is Kind.PLAIN and path.parent == (run.root / TEMPLATES_DIR).resolve():
        subject.problem = (
            f"{path.name} is in {TEMPLATES_DIR}/ but names no contract (known: "
            f"{', '.join(run.contract_names) or 'none'}): name a head template <contract>.j2, "
            f"or move shared macros into {TEMPLATES_DIR}/_partials/"
        )
    prepare(subject, run.root, run.environment, run.context.variables)
    findings = _run_rules(run, subject)
    env = subject.environment or new_environment([])
    found, problems = suppressions.read(source, env, RULES_BY_CODE, UNSUPPRESSIBLE)
    kept, suppressed = suppressions.apply(findings, found)
    if run.config.enabled(UnusedSuppression.code, rel):
        unused = UnusedSuppression()
        kept += [unused.finding(subject, p.span, p.message) for p in problems]
        complete = subject.syntax_error is None and subject.render_failure is None
        for suppression in found if complete else ():
            for code in suppression.codes:
                if code not in suppression.used:
                    why = "" if run.config.enabled(code, rel) else f" ({code} is not enabled for this file)"
                    kept.append(
                        unused.finding(subject, suppression.span, f"suppression of {code} suppresses nothing{why}")
                    )
    return kept, suppressed


def _run_rules(run: _Run, subject: Subject, only: Sequence[str] = ()) -> list[Finding]:
    findings: list[Finding] = []
    for rule in RULES:
        if only and rule.code not in only:
            continue
        if subject.kind in rule.kinds and run.config.enabled(rule.code, subject.rel):
            findings += rule.check(subject, run.context)
    return findings


def _relative(root: Path, path: Path) -> str:
    """The resolved ``path`` relative to the resolved ``root`` when inside it, else as given."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()
