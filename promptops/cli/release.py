"""``promptops release``: cut, verify and list releases (thin shell over promptops.release)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from promptops import __version__
from promptops.cli.project import Project, format_option, pass_project
from promptops.core import strict_yaml
from promptops.core.artifacts import ArtifactProblem
from promptops.core.contract import list_contracts
from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line
from promptops.core.lock import LOCK_FILE, ReleaseLock
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count
from promptops.lint import RULES_BY_CODE, Finding, LintConfig, LintReport, head_lint, parse_config
from promptops.lint.formatters import FORMATS, render_report
from promptops.lint.rules import UNSUPPRESSIBLE
from promptops.release import (
    CHECK_RULES,
    CutPlan,
    CutRequest,
    ReleaseCheck,
    check_artifacts,
    check_release,
    contract_lock,
    load_lock,
    plan_cut,
    write_release,
)

CONFIG_FILE = "pyproject.toml"


@click.group()
def release() -> None:
    """Releases: cut a contract's head prompt as a locked release, check a head before cutting, verify the lock, list
    the history."""


@release.command("cut")
@click.option("--contract", "contract_name", required=True, help="Contract name (a directory under versions/).")
@click.option("--note", default="", help="A note recorded with the release.")
@click.option("--dry-run", is_flag=True, help="Compute and check everything, write nothing.")
@click.option(
    "--date",
    metavar="YYYY-MM-DDTHH:MM:SSZ",
    help="Record this UTC timestamp instead of the current time (reproducible cuts).",
)
@format_option()
@pass_project
def cut(project: Project, contract_name: str, note: str, dry_run: bool, date: str | None, output_format: str) -> int:
    """Cut the head template of a contract as a release.

    Reads the pinned prompt_version and schema_version of templates/<contract>.j2, computes the schema class
    (against every released schema of its major line) and the prompt class (against the latest release),
    refuses a declared bump smaller than either (naming the smallest version that would pass), refuses a
    released version, a head that fails lint and a lock that does not verify; then writes the prompt
    snapshot, the partials it imports and the releases.yaml entry atomically (the lock last).

    One cut of a contract runs at a time: another one started meanwhile stops at once (exit 3, nothing
    written), and a cut started after one released its version is refused (exit 2).

    Exit codes: 0 released (or, with --dry-run, would be), 2 refused, 3 tool failure (also: another cut or
    contract write of this contract is running).
    """
    stamp = date or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    config = _lint_config(project)
    request = CutRequest(contract_name, stamp, note, lint=head_lint(config), render_context=config.render_context)
    written: tuple[str, ...] = ()
    if dry_run:
        plan = plan_cut(project.root, request)
    else:
        with contract_lock(project.root, contract_name):  # planned and committed by one cut at a time
            plan = plan_cut(project.root, request)
            if not plan.refused:
                written = write_release(project.root, plan)
    steps = _major_steps(project, plan)
    if output_format == "json":
        body = {"dry_run": dry_run, **plan.to_dict(), "written": list(written), "next": list(steps)}
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        text = _cut_text(plan, dry_run, written)
        if steps:
            text += "Next, for the new major line:\n" + "".join(f"{one_line(f'  - {step}')}\n" for step in steps)
        click.echo(text, nl=False)
    return ExitCode.FAILED if plan.refused else ExitCode.OK


def _major_steps(project: Project, plan: CutPlan) -> tuple[str, ...]:
    """What else must change when the cut starts a new major line (empty otherwise)."""
    if plan.refused or plan.release is None:
        return ()
    from promptops.core.contract import load_contract
    from promptops.release.major import major_next_steps

    return major_next_steps(load_contract(project.root, plan.contract), plan.release)


@release.command("check")
@click.option("--contract", "contract_name", help="Check one contract (default: every contract with a head template).")
@format_option(*FORMATS, help="Output format: text, json, github (workflow annotations) or sarif (SARIF 2.1.0).")
@click.argument("ignored", nargs=-1, type=click.UNPROCESSED, metavar="[FILES]...")
@pass_project
def check(project: Project, contract_name: str | None, output_format: str, ignored: tuple[str, ...]) -> int:
    """Check that each head template's pins would pass release cut, without cutting.

    Computes the schema and prompt classes of templates/<contract>.j2 against the release lock exactly as
    release cut does, and fails when a pinned version claims a smaller change than the head makes (naming
    the smallest version that passes), reuses a released version for different content, is older than the
    latest release, or when a released artifact was modified. Lint is not run (that is promptops lint).
    FILES (as pre-commit may pass them) are ignored: every contract is checked whole.

    Exit codes: 0 every head would pass, 2 any problem, 3 tool failure (unreadable contract or lock).
    """
    names = [contract_name] if contract_name is not None else list_contracts(project.root)
    variables = dict(_lint_config(project).render_context)
    results: list[ReleaseCheck] = []
    for name in names:
        if contract_name is not None and name not in list_contracts(project.root):
            known = ", ".join(list_contracts(project.root)) or "none"
            raise PromptopsError(f"versions/{name}/contract.yaml: no such contract {name!r} (known: {known})")
        result = check_release(project.root, name, variables)
        if result is None and contract_name is not None:
            raise PromptopsError(f"templates/{name}.j2: no head template for contract {name} (nothing to check)")
        if result is not None:
            results.append(result)
    findings = tuple(sorted((f for r in results for f in r.findings), key=Finding.sort_key))
    if output_format == "json":
        body = {"ok": not findings, "contracts": [r.to_dict() for r in results]}
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
    elif output_format == "text":
        click.echo(_check_text(results), nl=False)
    else:
        report = LintReport(tuple(r.head for r in results), findings, 0)
        sources = {f.file: _lines(project, f.file) for f in findings} if output_format == "sarif" else {}
        rules = list(CHECK_RULES)
        click.echo(
            render_report(report, output_format, rules, sources, __version__, "promptops-release-check/"), nl=False
        )
    return ExitCode.FAILED if findings else ExitCode.OK


def _check_text(results: list[ReleaseCheck]) -> str:
    if not results:
        return "no contract has a head template (templates/<contract>.j2): nothing to check\n"
    lines: list[str] = []
    for r in results:
        verdict = "ok" if not r.findings else count(len(r.findings), "problem")
        pins = "" if r.pins is None else f" (prompt {r.pins.prompt_text}, schema {r.pins.schema_text})"
        lines.append(f"{r.contract}: {r.head}{pins}: {verdict}")
        if r.prompt is not None and r.prompt.previous is not None:
            p = r.prompt
            lines.append(f"  prompt {p.previous} -> {p.version}: declared {p.declared}, computed {p.computed}")
        if r.schema is not None and r.schema.previous is not None:
            s = r.schema
            lines.append(f"  schema {s.previous} -> {s.version}: declared {s.declared}, computed {s.computed}")
        for f in r.findings:
            lines.append(f"  {f.file}:{f.span.line}:{f.span.column}: {f.code} {f.message} ({f.name})")
    return "\n".join(map(one_line, lines)) + "\n"


def _lines(project: Project, rel: str) -> list[str]:
    path = project.root / rel
    return path.read_text(encoding="utf-8", errors="replace").split("\n") if path.is_file() else []


@release.command("verify")
@click.option("--contract", "contract_name", help="Verify one contract (default: every contract).")
@format_option()
@pass_project
def verify(project: Project, contract_name: str | None, output_format: str) -> int:
    """Check every locked artifact's sha256 against releases.yaml.

    Fails naming each modified or missing artifact, and each file under prompts/ that no release locks; a
    releases.yaml that is missing or lists no releases while prompts/ still holds released files fails too.
    Exit codes: 0 every artifact verifies, 2 any problem, 3 tool failure (a lock that is malformed, not a
    regular file, too large or unreadable).
    """
    results = []
    for lock in _locks(project, contract_name, every=True):
        found = check_artifacts(project.root, lock)
        if lock.exists or found or contract_name is not None:
            results.append((lock, found))
    problems = [p for _, found in results for p in found]
    if output_format == "json":
        body = {
            "ok": not problems,
            "contracts": [
                {
                    "contract": lock.contract,
                    "lock": lock.source,
                    "lock_exists": lock.exists,
                    "releases": len(lock.releases),
                    "artifacts": len(lock.artifacts()),
                    "problems": [p.to_dict() for p in found],
                }
                for lock, found in results
            ],
        }
        click.echo(json.dumps(body, indent=2))
    else:
        for lock, found in results:
            click.echo(_verify_text(lock, found))
        if not results:
            click.echo("no release locks (versions/<contract>/releases.yaml) to verify")
    return ExitCode.FAILED if problems else ExitCode.OK


def _verify_text(lock: ReleaseLock, found: list[ArtifactProblem]) -> str:
    strays = [p for p in found if p.kind == "unlocked"]
    if not lock.releases and strays:  # the lock itself is gone or emptied: one line, not one per file
        state = "is missing" if not lock.exists else "lists no releases"
        return one_line(
            f"{lock.source}: {state}, but {count(len(strays), 'released file')} remain under "
            f"{lock.directory}/prompts/: restore {LOCK_FILE} from version control"
        )
    verdict = "ok" if not found else count(len(found), "problem")
    counts = f"{count(len(lock.releases), 'release')}, {count(len(lock.artifacts()), 'artifact')}"
    lines = [f"{lock.source}: {counts}: {verdict}"]
    lines += [f"  {problem.kind:<9} {problem.file}: {problem.message}" for problem in found]
    return "\n".join(map(one_line, lines))


@release.command("list")
@click.option("--contract", "contract_name", help="List one contract (default: every contract with a lock).")
@format_option()
@pass_project
def list_releases(project: Project, contract_name: str | None, output_format: str) -> int:
    """Print the release history: version, schema, classes, date, status and note."""
    locks = _locks(project, contract_name)
    if output_format == "json":
        body = [
            {
                "contract": lock.contract,
                "lock": lock.source,
                "releases": [r.to_dict(lock.directory) for r in lock.releases],
            }
            for lock in locks
        ]
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
        return ExitCode.OK
    for lock in locks:
        click.echo(one_line(f"{lock.contract} ({lock.source})"))
        if not lock.releases:
            click.echo("  no releases")
        for r in lock.releases:
            click.echo(
                one_line(
                    f"  {r.version!s:<8} schema {r.schema_version!s:<5} prompt {r.prompt_class:<7} "
                    f"schema {r.schema_class:<9} {r.date}  {r.status:<9} {r.note}".rstrip()
                )
            )
    if not locks:
        click.echo("no release locks (versions/<contract>/releases.yaml)")
    return ExitCode.OK


def _locks(project: Project, contract_name: str | None, *, every: bool = False) -> list[ReleaseLock]:
    """The lock of ``contract_name``, else of every contract (``every``) or every contract with a lock."""
    names = list_contracts(project.root)
    if contract_name is not None:
        if contract_name not in names:  # the contract itself is not loaded: a tampered schema must not stop verify
            known = ", ".join(names) or "none"
            raise PromptopsError(
                f"versions/{contract_name}/contract.yaml: no such contract {contract_name!r} (known: {known})"
            )
        return [load_lock(project.root, contract_name)]
    locks = [load_lock(project.root, name) for name in names]
    return locks if every else [lock for lock in locks if lock.exists]


def _lint_config(project: Project) -> LintConfig:
    path = project.root / CONFIG_FILE
    try:
        text = strict_yaml.read_text(path) if path.is_file() else ""
    except strict_yaml.YamlProblem as exc:
        raise PromptopsError(f"{CONFIG_FILE}: {exc}") from None
    return parse_config(text, CONFIG_FILE, RULES_BY_CODE, UNSUPPRESSIBLE)


def _cut_text(plan: CutPlan, dry_run: bool, written: tuple[str, ...]) -> str:
    lines: list[str] = []
    if plan.refused:
        lines.append(f"{plan.contract}: release cut refused ({plan.head})")
    elif plan.release is not None:
        release = plan.release
        verb = "would release" if dry_run else "released"
        lines.append(
            f"{plan.contract}: {verb} prompt {release.version} ({release.prompt_class}) with schema "
            f"{release.schema_version} ({release.schema_class})"
        )
    if plan.prompt is not None:
        p = plan.prompt
        since = f"{p.previous} -> {p.version}" if p.previous is not None else f"{p.version} (first release)"
        lines.append(f"  prompt {since}: declared {p.declared}, computed {p.computed}")
        for d in [] if p.comparison is None else p.comparison.differences:
            lines.append(f"    {d.change:<6} {d.kind}: {d.message}")
    if plan.schema is not None:
        s = plan.schema
        since = f"{s.previous} -> {s.version}" if s.previous is not None else str(s.version)
        lines.append(f"  schema {since}: declared {s.declared}, computed {s.computed}")
        for version, comparison in [] if s.comparison is None else s.comparison.comparisons:
            for sd in comparison.differences:
                lines.append(f"    {sd.change:<6} against {version}: {sd.path} {sd.kind}: {sd.message}")
    for refusal in plan.refusals:
        first, *rest = refusal.split("\n")
        lines.append(f"  refused: {first}")
        lines += [f"  {line}" for line in rest]
    for path in written:
        lines.append(f"  wrote {path}")
    if dry_run and not plan.refused:
        lines += [f"  would write {path}" for path in _writes(plan)]
    return "\n".join(map(one_line, lines)) + "\n"


def _writes(plan: CutPlan) -> list[str]:
    return [*sorted(f"{plan.directory}/{p}" for p in plan.files), f"{plan.directory}/{LOCK_FILE}"]
