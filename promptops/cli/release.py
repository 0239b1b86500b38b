"""``promptops release``: cut, verify and list releases (thin shell over promptops.release)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click

from promptops.cli import exits
from promptops.cli.project import Project, format_option, pass_project
from promptops.contract import list_contracts
from promptops.errors import PromptopsError
from promptops.lint import RULES_BY_CODE, LintConfig, parse_config
from promptops.lint.rules import UNSUPPRESSIBLE
from promptops.release import CutPlan, CutRequest, check_artifacts, load_lock, plan_cut, write_release
from promptops.release.lock import LOCK_FILE, ReleaseLock

CONFIG_FILE = "pyproject.toml"


@click.group()
def release() -> None:
    """Releases: cut a contract's head prompt as a locked release, verify the lock, list the history."""


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

    Exit codes: 0 released (or, with --dry-run, would be), 2 refused, 3 tool failure.
    """
    stamp = date or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    request = CutRequest(contract_name, stamp, note, _lint_config(project))
    plan = plan_cut(project.root, request)
    written: tuple[str, ...] = ()
    if not plan.refused and not dry_run:
        written = write_release(project.root, plan)
    if output_format == "json":
        body = {"dry_run": dry_run, **plan.to_json(), "written": list(written)}
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        click.echo(_cut_text(plan, dry_run, written), nl=False)
    return exits.FAILED if plan.refused else exits.OK


@release.command("verify")
@click.option("--contract", "contract_name", help="Verify one contract (default: every contract with a lock).")
@format_option()
@pass_project
def verify(project: Project, contract_name: str | None, output_format: str) -> int:
    """Check every locked artifact's sha256 against releases.yaml.

    Fails naming each modified or missing artifact, and each file under prompts/ that no release locks.
    Exit codes: 0 every artifact verifies, 2 any problem, 3 tool failure (unreadable or malformed lock).
    """
    locks = _locks(project, contract_name)
    results = [(lock, check_artifacts(project.root, lock)) for lock in locks]
    problems = [p for _, found in results for p in found]
    if output_format == "json":
        body = {
            "ok": not problems,
            "contracts": [
                {
                    "contract": lock.contract,
                    "lock": lock.source,
                    "releases": len(lock.releases),
                    "artifacts": len(lock.artifacts()),
                    "problems": [p.to_json() for p in found],
                }
                for lock, found in results
            ],
        }
        click.echo(json.dumps(body, indent=2))
    else:
        for lock, found in results:
            verdict = "ok" if not found else f"{len(found)} problem{'s' if len(found) != 1 else ''}"
            click.echo(f"{lock.source}: {len(lock.releases)} releases, {len(lock.artifacts())} artifacts: {verdict}")
            for problem in found:
                click.echo(f"  {problem.kind:<9} {problem.file}: {problem.message}")
        if not results:
            click.echo("no release locks (versions/<contract>/releases.yaml) to verify")
    return exits.FAILED if problems else exits.OK


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
                "releases": [r.to_json(lock.directory) for r in lock.releases],
            }
            for lock in locks
        ]
        click.echo(json.dumps(body, indent=2, ensure_ascii=False))
        return exits.OK
    for lock in locks:
        click.echo(f"{lock.contract} ({lock.source})")
        if not lock.releases:
            click.echo("  no releases")
        for r in lock.releases:
            click.echo(
                f"  {r.version!s:<8} schema {r.schema_version!s:<5} prompt {r.prompt_class:<7} "
                f"schema {r.schema_class:<9} {r.date}  {r.status:<9} {r.note}".rstrip()
            )
    if not locks:
        click.echo("no release locks (versions/<contract>/releases.yaml)")
    return exits.OK


def _locks(project: Project, contract_name: str | None) -> list[ReleaseLock]:
    names = list_contracts(project.root)
    if contract_name is not None:
        if contract_name not in names:  # the contract itself is not loaded: a tampered schema must not stop verify
            known = ", ".join(names) or "none"
            raise PromptopsError(
                f"versions/{contract_name}/contract.yaml: no such contract {contract_name!r} (known: {known})"
            )
        return [load_lock(project.root, contract_name)]
    locks = [load_lock(project.root, name) for name in names]
    return [lock for lock in locks if lock.exists]


def _lint_config(project: Project) -> LintConfig:
    path = project.root / CONFIG_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
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
    return "\n".join(lines) + "\n"


def _writes(plan: CutPlan) -> list[str]:
    return [*sorted(f"{plan.directory}/{p}" for p in plan.files), f"{plan.directory}/{LOCK_FILE}"]
