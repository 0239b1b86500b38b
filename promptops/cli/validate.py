"""``promptops validate``: run model responses through a contract's parser (docs/parser.md)."""

from __future__ import annotations

import os
import stat
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Any

import click
import msgspec

from promptops.cli.changes import NO_CHANGED_FILES, changed_files_options, gather_changed_files, repo_option
from promptops.cli.project import Project, format_option, pass_project
from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line, unreadable
from promptops.core.files import STDIN, iter_lines, line_limit_problem, open_input, read_input
from promptops.core.outcomes import ExitCode, exit_code, verdict_of
from promptops.core.specs import decode_line
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.core.wording import count
from promptops.parsing import ChangedFiles, ParseOutcome, Parser, tiers
from promptops.parsing.diagnostics import ERROR, WARNING
from promptops.store.logs import BATCH_DECODER, BatchRecord


@click.command()
@click.option("--contract", "contract_name", required=True, help="Contract name (a directory under versions/).")
@click.option(
    "--tier",
    metavar="NAME",
    help="Validate with one of the contract's tiers (e.g. merge or detail); default: the full schema.",
)
@changed_files_options()
@repo_option
@click.option("--schema-version", "schema_floor", metavar="X.Y", help="Required schema version (the floor).")
@click.option("--prompt-version", "prompt_pin", metavar="X.Y.Z", help="Pinned prompt version.")
@click.option("--allow-prompt-patch-drift", is_flag=True, default=None, help="Accept any patch of the pinned prompt.")
@click.option(
    "--batch",
    type=click.Path(dir_okay=False, allow_dash=True),
    metavar="FILE.jsonl",
    help="Validate JSONL records instead of one response (- for standard input).",
)
@click.option("--strict-warnings", is_flag=True, help="Exit 1 when an accepted response has warnings.")
@format_option()
@click.argument("response", type=click.Path(dir_okay=False, allow_dash=True), default="-", required=False)
@pass_project
def validate(
    project: Project,
    contract_name: str,
    tier: str | None,
    changed: tuple[str, ...],
    changed_files_from: IO[str] | None,
    git_range: str | None,
    repo: Path,
    schema_floor: str | None,
    prompt_pin: str | None,
    allow_prompt_patch_drift: bool | None,
    batch: str | None,
    strict_warnings: bool,
    output_format: str,
    response: str,
) -> int:
    """Validate a model RESPONSE (a file, or - for stdin) against a contract.

    Exit codes: 0 accepted (1 with --strict-warnings when warnings exist), 2 rejected, 3 tool failure.
    """
    contract = project.contract(contract_name)
    if tier is not None:
        contract = tiers.tier(contract, tier)
    policy = contract.default_policy.with_overrides(
        schema_floor=_parse_version(schema_floor, SchemaVersion.parse),
        prompt_version=_parse_version(prompt_pin, PromptVersion.parse),
        allow_prompt_patch_drift=allow_prompt_patch_drift,
    )
    parser = Parser(contract, policy)
    sources = gather_changed_files(repo, changed, changed_files_from, git_range)
    request_versions = (str(policy.schema_floor), str(policy.prompt_version))
    if batch is not None:
        stream = open_input(batch)
        out = _JsonLines(sys.stdout.buffer, hold=_regular(stream)) if output_format == "json" else None
        default_changed = None if sources is None else ChangedFiles(sources)
        try:
            return _validate_records(
                parser, stream, batch, default_changed, request_versions, out, strict_warnings, output_format
            )
        finally:
            if out is not None:
                out.flush()
            if batch != STDIN:
                stream.close()
    if sources is None:
        raise click.UsageError(NO_CHANGED_FILES)
    outcome = _parse(parser, read_input(response), ChangedFiles(sources), request_versions)

    if output_format == "json":
        sys.stdout.buffer.write(msgspec.json.encode(outcome.to_dict()) + b"\n")
    else:
        click.echo("\n".join(describe(outcome)))
    return _exit_code(outcome, strict_warnings)


def _parse(parser: Parser, raw: bytes | str, changed: ChangedFiles, request_versions: tuple[str, str]) -> ParseOutcome:
    schema, prompt = request_versions
    return parser.parse(raw, changed, schema_version=schema, prompt_version=prompt)


def _validate_records(
    parser: Parser,
    source: IO[bytes],
    name: str,
    default_changed: ChangedFiles | None,
    request_versions: tuple[str, str],
    out: _JsonLines | None,
    strict_warnings: bool,
    output_format: str,
) -> int:
    # The loop runs once per record (millions a day): no per-record helper calls or tallies it does not need.
    summary = output_format == "text"  # the tallies feed the text summary only
    tally: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    drops: Counter[str] = Counter()
    seen = kept = 0
    codes = {  # the exit code of each (rejected, warned): four cases, computed once
        (failed, warned): exit_code(verdict_of(failed=failed, warned=warned), strict_warnings=strict_warnings)
        for failed in (False, True)
        for warned in (False, True)
    }
    code: int = ExitCode.OK
    parse, decode = parser.parse, BATCH_DECODER.decode
    schema_default, prompt_default = request_versions
    for line_number, line in iter_lines(source, name):
        record: BatchRecord | str
        if line is None:
            record = line_limit_problem()
        else:
            try:
                record = decode(line)
            except (msgspec.MsgspecError, RecursionError, UnicodeDecodeError):
                if not line.strip():  # a blank line: skipped
                    continue
                record = decode_line(BATCH_DECODER, line)  # decodes again, to describe the problem
        if isinstance(record, str):
            click.echo(one_line(f"promptops: {name}:{line_number}: {record}"), err=True)
            tally["bad records"] += 1
            code = ExitCode.TOOL_FAILURE
            continue
        if record.changed_files is not None:
            changed_files = ChangedFiles(record.changed_files)
        elif default_changed is not None:
            changed_files = default_changed
        else:
            click.echo(
                one_line(f"promptops: {name}:{line_number}: record has no changed_files and none were given"), err=True
            )
            tally["bad records"] += 1
            code = ExitCode.TOOL_FAILURE
            continue
        try:
            outcome = parse(
                record.raw,
                changed_files,
                schema_version=record.schema_version or schema_default,
                prompt_version=record.prompt_version or prompt_default,
            )
        except Exception as problem:  # whatever fails on one record makes it bad; the others go on
            if isinstance(problem, MemoryError):
                raise
            click.echo(one_line(f"promptops: {name}:{line_number}: {unreadable(problem)}"), err=True)
            tally["bad records"] += 1
            code = ExitCode.TOOL_FAILURE
            continue
        diagnostics = outcome.diagnostics
        if code < ExitCode.FAILED:  # past that, no outcome raises it (bad records set it directly)
            code = max(code, codes[not outcome.accepted, any(d.level == WARNING for d in diagnostics)])
        if out is not None:
            out.write(record.response_id, outcome)
        else:
            rid = record.response_id
            click.echo(one_line(f"{rid if rid is not None else f'line {line_number}'}: {describe(outcome)[0]}"))
        if summary:
            tally[outcome.outcome] += 1
            if outcome.reason is not None:
                reasons[str(outcome.reason)] += 1
            for d in diagnostics:
                if d.level == WARNING:
                    drops[str(d.code)] += 1
            seen += outcome.findings_seen
            kept += outcome.findings_kept
    if summary:
        tally["findings seen"] += seen
        tally["findings kept"] += kept
        click.echo(_batch_summary(tally, reasons, drops))
    return code


class _DiagnosticLine(msgspec.Struct):
    """``Diagnostic.to_dict()``, field for field in its order: encoded without building a dict."""

    code: str
    level: str
    path: str | None
    finding_index: int | None
    finding_id: str | None
    message: str


class _OutcomeLine(msgspec.Struct):
    """One line of ``validate --batch --format json``: the response id, then ``ParseOutcome.to_dict()``."""

    response_id: Any
    outcome: str
    reason: str | None
    result: Any  # the parser's typed result (msgspec Structs) as it is, or its dict
    diagnostics: list[_DiagnosticLine]


class _JsonLines:
    """Outcomes as JSON lines, encoded from Structs into one buffer; written about a MiB at a time when
    ``hold`` (the input is a file), else each at once (a pipe's reader sees each outcome as its record goes in)."""

    def __init__(self, out: IO[bytes], *, hold: bool) -> None:
        self._out = out
        self._limit = 1 << 20 if hold else 0
        self._buffer = bytearray()
        self._encode_into = msgspec.json.Encoder().encode_into

    def write(self, response_id: Any, outcome: ParseOutcome) -> None:
        # A clean accepted outcome still holds the parser's typed result: encoding it directly gives the bytes
        # msgspec.to_builtins + encode would (the same encoder rules), without the intermediate dicts.
        typed = outcome._typed
        reason = outcome.reason
        diagnostics = outcome.diagnostics
        line = _OutcomeLine(
            response_id,
            outcome.outcome,
            None if reason is None else str(reason),
            typed if typed is not None else outcome.result,
            [
                _DiagnosticLine(str(d.code), d.level, d.path, d.finding_index, d.finding_id, d.message)
                for d in diagnostics
            ]
            if diagnostics
            else [],  # most outcomes are clean: no comprehension to run
        )
        buffer = self._buffer
        self._encode_into(line, buffer, -1)
        buffer.extend(b"\n")
        if len(buffer) > self._limit:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._out.write(self._buffer)
            self._buffer.clear()
        self._out.flush()


def _regular(source: IO[bytes]) -> bool:
    try:
        return stat.S_ISREG(os.fstat(source.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test's BytesIO): stream it
        return False


def describe(outcome: ParseOutcome) -> list[str]:
    """Readable lines: the verdict first, then what was dropped, coerced or noted, and why."""
    if not outcome.accepted:
        error = next((d for d in outcome.diagnostics if d.level == ERROR), None)
        lines = [f"rejected: {outcome.reason}: {error.message if error else ''}"]
    else:
        # An answer whose every finding was dropped says nothing usable: the verdict line says so itself
        verdict = (
            "accepted, but every finding was dropped"
            if outcome.findings_seen and not outcome.findings_kept
            else "accepted"
        )
        lines = [
            f"{verdict}: {outcome.findings_kept} of {outcome.findings_seen} findings kept "
            f"(schema {outcome.schema_version}, prompt {outcome.prompt_version})"
        ]
    for diagnostic in outcome.diagnostics:
        if diagnostic.level == ERROR:
            continue
        kind = diagnostic.disposition or diagnostic.level
        who = f" ({diagnostic.finding_id})" if diagnostic.finding_id else ""
        lines.append(f"  {kind} {diagnostic.path or '-'}{who}: {diagnostic.code}: {diagnostic.detail}")
    return [one_line(line) for line in lines]  # messages quote the model's text


def _batch_summary(tally: Counter[str], reasons: Counter[str], drops: Counter[str]) -> str:
    total = tally["accepted"] + tally["rejected"]
    lines = [
        f"{count(total, 'response')}: {tally['accepted']} accepted, {tally['rejected']} rejected"
        + (f", {count(tally['bad records'], 'unreadable record')}" if tally["bad records"] else ""),
        f"findings: {tally['findings kept']} of {tally['findings seen']} kept",
    ]
    if reasons:
        lines.append("rejections: " + ", ".join(f"{code} {n}" for code, n in reasons.most_common()))
    if drops:
        lines.append("drops and warnings: " + ", ".join(f"{code} {n}" for code, n in drops.most_common()))
    return "\n".join(lines)


def _exit_code(outcome: ParseOutcome, strict_warnings: bool) -> int:
    verdict = verdict_of(failed=not outcome.accepted, warned=outcome.has_warnings)
    return exit_code(verdict, strict_warnings=strict_warnings)


def _parse_version(text: str | None, parse: Any) -> Any:
    if text is None:
        return None
    try:
        return parse(text)
    except PromptopsError as exc:
        raise click.BadParameter(str(exc)) from None
