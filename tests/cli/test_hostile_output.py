"""Hostile names and values through every command that reads a file or a record, and hostile output paths.

A pull request writes the files CI reads, and a service writes the records ingest reads. Whatever they hold
(newlines, workflow commands such as ``::error``, ANSI escapes, line separators), what a command prints is one
line per value that no CI runner takes for a command and no terminal for a control sequence: every line of
stdout and stderr is checked. Outputs (``--output``, ``--out``, reports) never follow a symlink and never write
to a FIFO or a device.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import CHANGED, REPO_ROOT, empty_store, finding, log_record, response, text
from tests.merge.builders import document, rf

# What a hostile name or value holds: a new line that is a workflow command, the runner's older command prefix,
# a line of its own for $GITHUB_OUTPUT, ANSI colour, a carriage return, a Unicode line separator and NEL.
PAYLOADS = (
    "x\n::error title=INJ::forged\n",
    "::warning::forged",
    "  ::add-mask::forged",
    "a ##[error]forged",
    "verdict=Passed\nexit-code=0",
    "\x1b[31mforged\x1b[0m\r",
    "u\u2028::error::forged\x85v",
)
PLAN = "rollout/review-result/review-1.1.yaml"


def assert_clean(*outputs: str, ours: tuple[str, ...] = ()) -> None:
    """Every line is printable text that a CI runner does not read as a command (but for the commands ``ours``
    that a line may start with: the annotations of ``--format github``)."""
    for output in outputs:
        for line in output.split("\n"):
            line = next((line.removeprefix(command) for command in ours if line.startswith(command)), line)
            assert not line.lstrip().startswith("::"), line
            assert "##[" not in line, line
            assert all(ch.isprintable() or ch == "\t" for ch in line), repr(line)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of this repository's contracts, templates, release locks and rollout plans."""
    root = tmp_path / "repo"
    root.mkdir()
    for part in ("versions", "templates", "rollout"):
        shutil.copytree(REPO_ROOT / part, root / part)
    return root


def _name(payload: str) -> str:
    return payload.replace("/", "_")  # a file name cannot hold "/"; everything else goes


# ---- values from files and records ---------------------------------------------------------------------


@pytest.mark.parametrize("output_format", ["text", "github"])
def test_lint_template_names(cli: Cli, repo: Path, output_format: str) -> None:
    for payload in PAYLOADS:
        shutil.copy(repo / "templates" / "review-result.j2", repo / "templates" / f"{_name(payload)}.j2")
    code, out, err = cli(repo, "lint", "--format", output_format)
    assert code == 2 and out.count("PO000") == len(PAYLOADS)
    assert_clean(out, err, ours=("::error ",))
    if output_format == "github":  # the annotations themselves: one per finding, each a command of ours
        assert [line.split(" ", 1)[0] for line in out.splitlines()] == ["::error"] * len(PAYLOADS)


def test_release_check_and_verify_and_list(cli: Cli, repo: Path) -> None:
    prompts = repo / "versions" / "review-result" / "prompts"
    for payload in PAYLOADS:
        (prompts / _name(payload)).write_text("stray\n")
    lock = repo / "versions" / "review-result" / "releases.yaml"
    lock.write_text(lock.read_text().replace("note: ", f"note: {json.dumps(PAYLOADS[0])} # ", 1))
    for args in (["release", "verify"], ["release", "check"], ["release", "list"]):
        code, out, err = cli(repo, *args)
        assert code in (0, 2), (args, err)
        assert_clean(out, err)
    code, out, _ = cli(repo, "release", "verify")
    assert code == 2 and out.count("unlocked") >= len(PAYLOADS)


def test_render_and_validate_refusals(cli: Cli, repo: Path) -> None:
    for payload in PAYLOADS:
        for args in (
            ["render", "--contract", payload],
            ["render", "--contract", "review-result", "--var", f"{payload}=1"],
            ["validate", "--contract", payload, "-"],
        ):
            _, out, err = cli(repo, *args)
            assert_clean(out, err)


def test_validate_answers_and_batches(cli: Cli, repo: Path, tmp_path: Path) -> None:
    records: list[dict[str, object]] = []
    for number, payload in enumerate(PAYLOADS):
        answer = response([finding(1, id=payload, file=payload, title=payload, message=payload)], summary=payload)
        records.append({"response_id": payload, "raw": text(answer), "changed_files": CHANGED})
        records.append({"response_id": number, "raw": payload, "changed_files": CHANGED})
        single = tmp_path / f"answer-{number}.json"
        single.write_text(text(answer))
        code, out, err = cli(repo, "validate", "--contract", "review-result", "--changed-file", CHANGED[0], str(single))
        assert code in (0, 2) and out
        assert_clean(out, err)
    batch = tmp_path / f"{_name(PAYLOADS[0])}.jsonl"
    batch.write_text("\n".join(json.dumps(r) for r in records) + "\n" + PAYLOADS[0] + "\n")
    code, out, err = cli(repo, "validate", "--contract", "review-result", "--batch", str(batch))
    assert code == 3 and "not valid JSON" in err  # the last line
    assert_clean(out, err)


def test_ingest_and_the_store_commands(cli: Cli, repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    records = []
    for number, payload in enumerate(PAYLOADS):
        records.append(log_record(f"c{number}", contract=payload))
        records.append(log_record(f"r{number}", rollout_id=payload))
        records.append(log_record(f"a{number}", rollout_id="review-1.1", arm=payload))
        records.append(log_record(payload, raw=payload, unit=payload, model=payload))
    log = tmp_path / f"{_name(PAYLOADS[0])}.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    code, out, err = cli(repo, "ingest", str(log), "--store", str(store))
    assert code == 2 and "unknown contract" in err and "name rollout" in err
    assert_clean(out, err)
    for args in (
        ["rates", "--contract", "review-result"],
        ["rollout", "status", PLAN],
        ["rollout", "gate", PLAN],
        ["report", "--contract", "review-result", "--out", str(tmp_path / "reports")],
        ["export", str(tmp_path / "lake")],
    ):
        code, out, err = cli(repo, *args, "--store", str(store))
        assert code in (0, 2), (args, err)
        assert_clean(out, err)


def test_rollout_plan_values(cli: Cli, repo: Path, tmp_path: Path) -> None:
    plan = repo / PLAN
    source = plan.read_text()
    for payload in PAYLOADS:
        hostile = source.replace("{name: canary,", f"{{name: {json.dumps(payload)},", 1)
        hostile += (
            f"history:\n- {{at: '2026-11-02T09:00:00Z', by: {json.dumps(payload)}, action: promote, from_step: 0,"
            f" to_step: 1, verdict: Passed, reason: {json.dumps(payload)}}}\n"
        )
        plan.write_text(hostile)
        for args in (
            ["rollout", "plan", PLAN],
            ["rollout", "assign", PLAN, payload],
            ["rollout", "status", PLAN, "--store", str(tmp_path / "none.duckdb")],
            ["rollout", "gate", PLAN, "--store", str(tmp_path / "none.duckdb")],
        ):
            _, out, err = cli(repo, *args)
            assert_clean(out, err)
    plan.write_text(source.replace("rollout: review-1.1", f"rollout: {json.dumps(PAYLOADS[0])}"))
    _, out, err = cli(repo, "rollout", "status", PLAN, "--store", str(tmp_path / "none.duckdb"))
    assert_clean(out, err)


def test_compat_diff_property_names(cli: Cli, repo: Path, tmp_path: Path) -> None:
    old = json.loads((repo / "versions" / "review-result" / "schemas" / "1.0.json").read_text())
    new = json.loads(json.dumps(old))
    new["properties"].update({payload: {"type": "string"} for payload in PAYLOADS})
    new.setdefault("required", []).extend(PAYLOADS)
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    code, out, err = cli(repo, "compat", "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert code == 0 and "major" in out
    assert_clean(out, err)


def test_merge_markdown(cli: Cli, tmp_path: Path) -> None:
    findings = [rf(f"h-{n}", "high", 0.9, payload, 3, payload) for n, payload in enumerate(PAYLOADS)]
    path = tmp_path / "out.json"
    path.write_text(json.dumps(document("reviewer-finding", findings)))
    changed = [arg for payload in PAYLOADS for arg in ("--changed-file", payload)]
    code, out, err = cli(REPO_ROOT, "merge", f"reviewer-finding={path}", *changed)
    assert code == 0 and "4 findings from 1 reviewer output" in out and out.count("forged") >= 4, out + err
    assert_clean(out, err)


def test_review_gate_evidence(cli: Cli, tmp_path: Path) -> None:
    from tests.review_gate.cases import SPEC

    evidence = tmp_path / "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus" / SPEC
    evidence.mkdir(parents=True)
    (evidence / "spec-plan_a.json").write_text(json.dumps({"consensus": {"conflicts": list(PAYLOADS)}}))
    code, out, err = cli(tmp_path, "review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(tmp_path))
    assert code == 2
    assert_clean(out, err)


# ---- outputs never follow a symlink or write to a FIFO or a device -------------------------------------


def _promptops(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command in a process of its own: a write that blocks on a FIFO would hang the test run, so
    the timeout (far above the command's run time) turns a hang into a failure; nothing is timed."""
    return subprocess.run(
        [sys.executable, "-m", "promptops", "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1"},
    )


def _hostile_targets(tmp_path: Path, name: str) -> list[tuple[Path, Path | None]]:
    """(output path, the file it must leave alone): a link to a file, a dangling link, a FIFO, /dev/null."""
    victim = tmp_path / f"{name}-victim.txt"
    victim.write_text("precious\n")
    link, dangling, fifo = tmp_path / f"{name}-link", tmp_path / f"{name}-dangling", tmp_path / f"{name}-fifo"
    link.symlink_to(victim)
    dangling.symlink_to(tmp_path / f"{name}-created-outside")
    os.mkfifo(fifo)
    return [(link, victim), (dangling, tmp_path / f"{name}-created-outside"), (fifo, None), (Path(os.devnull), None)]


def _assert_refused(done: subprocess.CompletedProcess[str], path: Path, spared: Path | None) -> None:
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1 and "refusing to" in done.stderr, done.stderr
    if spared is not None and spared.name.endswith("victim.txt"):
        assert spared.read_text() == "precious\n"
    elif spared is not None:
        assert not os.path.lexists(spared)
    if path == Path(os.devnull):
        assert Path(os.devnull).is_char_device()


@pytest.mark.parametrize("output_format", ["sarif", "text"])
def test_lint_output_is_never_written_through(repo: Path, tmp_path: Path, output_format: str) -> None:
    for path, spared in _hostile_targets(tmp_path, "lint"):
        done = _promptops(repo, "lint", "--format", output_format, "--output", str(path))
        _assert_refused(done, path, spared)
    fine = tmp_path / "report.sarif"
    done = _promptops(repo, "lint", "--format", output_format, "--output", str(fine))
    assert done.returncode == 0 and fine.is_file() and not fine.is_symlink()


def test_simulate_out_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    for path, spared in _hostile_targets(tmp_path, "simulate"):
        done = _promptops(repo, "rollout", "simulate", PLAN, "--responses", "5", "--out", str(path))
        assert done.returncode == 3 and done.stderr.count("\n") == 1, done.stderr
        if spared is not None and spared.name.endswith("victim.txt"):
            assert spared.read_text() == "precious\n"
        elif spared is not None:
            assert not os.path.lexists(spared)


def test_report_files_are_never_written_through(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "review-result.json").symlink_to(victim)
    empty_store(repo / ".promptops" / "diagnostics.duckdb")  # a missing store would be refused first
    done = _promptops(repo, "report", "--contract", "review-result", "--out", str(out))
    assert done.returncode == 3 and "symbolic link" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert victim.read_text() == "precious\n"
