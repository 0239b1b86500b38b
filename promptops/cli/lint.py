"""``promptops lint``: check prompt templates against their contracts (thin shell over promptops.lint)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from promptops import __version__
from promptops.cli.project import Project, jinja_bytecode_cache, pass_project
from promptops.core import strict_yaml
from promptops.core.errors import PromptopsError
from promptops.core.outcomes import ExitCode, exit_code, verdict_of
from promptops.lint import RULES, RULES_BY_CODE, LintReport, cache, lint, parse_config
from promptops.lint.formatters import FORMATS, render_report
from promptops.lint.rules import UNSUPPRESSIBLE

CONFIG_FILE = "pyproject.toml"


class _Path(click.Path):
    """click.Path refusing a name the operating system cannot take (a NUL byte) as a usage error."""

    def convert(
        self, value: str | os.PathLike[str], param: click.Parameter | None, ctx: click.Context | None
    ) -> str | bytes | os.PathLike[str]:
        if "\x00" in os.fspath(value):
            self.fail(f"{value!r}: a path cannot contain a NUL byte", param, ctx)
        return super().convert(value, param, ctx)


@click.command()
@click.argument("paths", nargs=-1, type=_Path(path_type=Path, resolve_path=True))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="Output format: text, json, github (workflow annotations) or sarif (SARIF 2.1.0).",
)
@click.option(
    "--output",
    type=_Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write the report to FILE instead of standard output.",
)
@click.option("--strict-warnings", is_flag=True, help="Exit 1 when there are warnings but no errors.")
@click.option(
    "--config",
    "config_path",
    type=_Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help=f"Read [tool.promptops.lint] from FILE (default: {CONFIG_FILE} at the project root).",
)
@click.option("--explain", metavar="CODE", help="Print the documentation of one rule and exit.")
@click.option("--list-rules", is_flag=True, help="List every rule (code, name, level, summary) and exit.")
@pass_project
def lint_command(
    project: Project,
    paths: tuple[Path, ...],
    output_format: str,
    output: Path | None,
    strict_warnings: bool,
    config_path: Path | None,
    explain: str | None,
    list_rules: bool,
) -> int:
    """Lint prompt templates (default: templates/) against their contracts.

    PATHS are template files or directories. A partial brings in the head templates that render it; a file
    under versions/<contract>/ brings in that contract's head template.

    Exit codes: 0 clean or warnings only (1 with --strict-warnings), 2 any error finding (including a
    template that cannot be linted), 3 bad configuration or internal failure.
    """
    if explain is not None:
        rule = RULES_BY_CODE.get(explain.upper())
        if rule is None:
            raise click.UsageError(f"--explain: unknown rule code {explain!r} (see --list-rules)")
        click.echo(f"{rule.code} {rule.name} [{rule.level}]\n\n{rule.doc()}")
        return ExitCode.OK
    if list_rules:
        if output_format == "json":
            rows = [{"code": r.code, "name": r.name, "level": str(r.level), "summary": r.summary()} for r in RULES]
            click.echo(json.dumps(rows, indent=2))
        else:
            for r in RULES:
                click.echo(f"{r.code}  {r.name:<20} {r.level:<8} {r.summary()}")
        return ExitCode.OK
    config_file = config_path or project.root / CONFIG_FILE
    config_text = _read_config(project, config_file) if config_path or config_file.is_file() else ""
    bytecode_cache = jinja_bytecode_cache()
    config = parse_config(
        config_text,
        project.relative(config_file),
        RULES_BY_CODE,
        UNSUPPRESSIBLE,
        cache_dir=cache.directory(bytecode_cache),
    )
    report = lint(project.root, paths, config, bytecode_cache=bytecode_cache)
    sources = _sources(project, report) if output_format == "sarif" else {}
    text = render_report(report, output_format, RULES, sources, __version__)
    if output_format == "json":  # which file each template and contract was read from (project or packaged)
        from promptops.render.renderer import file_sources

        text = json.dumps({**json.loads(text), "sources": file_sources(project.root, report.files)}, indent=2) + "\n"
    if output is not None:
        from promptops.core.files import write_output  # only for --output: standard output needs none of it

        write_output(output, text.encode("utf-8"))
    else:
        click.echo(text, nl=False)
    verdict = verdict_of(failed=bool(report.errors), warned=bool(report.warnings))
    return exit_code(verdict, strict_warnings=strict_warnings)


def _read_config(project: Project, path: Path) -> str:
    try:
        return strict_yaml.read_text(path)
    except strict_yaml.YamlProblem as exc:
        raise PromptopsError(f"{project.relative(path)}: {exc}") from None


def _sources(project: Project, report: LintReport) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rel in {f.file for f in report.findings}:
        path = project.root / rel
        out[rel] = path.read_text(encoding="utf-8", errors="replace").split("\n") if path.is_file() else []
    return out
