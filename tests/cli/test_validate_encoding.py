"""``validate --batch --format json`` encodes outcomes straight from Structs: the bytes are exactly those of
``ParseOutcome.to_dict()`` encoded as before; and metaschema verdicts are kept across runs by content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from promptops import ChangedFiles, Parser, load_contract
from tests.helpers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
import corpus  # the benchmark corpus: clean answers, defects, wrapped and malformed ones


def _validate(root: Path, contract: str, batch: Path, cache: Path, *python: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("PROMPTOPS_NO_TEMPLATE_CACHE", None)
    command = [sys.executable, *python, "-m", "promptops", "--root", str(root), "validate", "--contract", contract]
    return subprocess.run([*command, "--batch", str(batch), "--format", "json"], capture_output=True, env=env)


def test_batch_json_lines_are_the_bytes_of_to_dict(tmp_path: Path) -> None:
    responses = list(corpus.stream(1_500, 17))
    # Clean answers, defects (diagnostics, drops, rejections), malformed and wrapped ones: every outcome kind.
    assert {r.kind for r in responses} == {"clean", "defect", "malformed"}
    records: list[dict[str, Any]] = [
        {"response_id": f"r-{i}" if i % 7 else i, "raw": r.raw.decode(), "changed_files": r.changed_files}
        for i, r in enumerate(responses)
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(record) + "\n" for record in records))
    parser = Parser(load_contract(REPO_ROOT, "review-result"))
    expected = b"".join(
        msgspec.json.encode(
            {"response_id": r["response_id"], **parser.parse(r["raw"], ChangedFiles(r["changed_files"])).to_dict()}
        )
        + b"\n"
        for r in records
    )
    done = _validate(REPO_ROOT, "review-result", batch, tmp_path / "cache")
    assert done.returncode in (0, 2), done.stderr
    assert done.stdout == expected


def test_a_schema_found_valid_is_not_checked_again_and_an_edit_is(tmp_path: Path) -> None:
    root = tmp_path / "project"
    contract = root / "versions" / "review-result"
    contract.parent.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(REPO_ROOT / "versions" / "review-result"), str(contract)], check=True)
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"raw": "{}", "changed_files": []}) + "\n")
    cache = tmp_path / "cache"
    assert _validate(root, "review-result", batch, cache).returncode == 2  # a response without findings
    entries = sorted((cache / "promptops").iterdir())
    assert entries and all(p.name.startswith("promptops-metaschema-valid-") for p in entries)
    assert oct((cache / "promptops").stat().st_mode & 0o777) == "0o700"
    again = _validate(root, "review-result", batch, cache, "-X", "importtime")
    assert again.returncode == 2
    assert b"jsonschema" not in again.stderr  # the validator was not even imported
    # An edit that breaks the metaschema has no verdict: it is checked, and refused, on every run.
    schema = contract / "schemas" / "1.1.json"
    broken = json.loads(schema.read_text())
    broken["type"] = 12
    schema.write_text(json.dumps(broken))
    for _ in range(2):
        done = _validate(root, "review-result", batch, cache)
        assert done.returncode == 3
        assert b"not a valid JSON Schema" in done.stderr
    assert sorted((cache / "promptops").iterdir()) == entries
