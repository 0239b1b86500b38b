"""OpenTelemetry ingestion end to end: spans from the real SDK, encoded by the SDK's own OTLP encoder, written
as OTLP/JSON lines, ingested by the real CLI into a real DuckDB file, against the same responses as JSONL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from promptops.cli import run
from tests.helpers import REPO_ROOT
from tests.otlp.sdk import demo_records, emit, responses, span_id, write_otlp

# Stored columns that name where a response came from: they differ between the two inputs by design.
PROVENANCE = {"source", "source_line", "batch_id"}


def _cli(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> tuple[int, str, str]:
    # paths in the arguments are relative to the project root, as a user in it would type them
    code = run(
        [
            "--root",
            str(project),
            *(str(project / a) if a.startswith("logs") or a.endswith(".duckdb") else a for a in args),
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _stored(path: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(path), read_only=True) as db:
        columns = [row[0] for row in db.execute("describe responses").fetchall() if row[0] not in PROVENANCE]
        return db.execute(f"select {', '.join(columns)} from responses order by response_id").fetchall()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (tmp_path / "rollout").symlink_to(REPO_ROOT / "rollout", target_is_directory=True)  # the plan of review-1.1
    (tmp_path / "logs").mkdir()
    return tmp_path


def test_otlp_spans_store_what_the_same_jsonl_stores(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = responses()
    (project / "logs" / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    spans = emit(records)
    model_calls = len(records) + 1
    assert len(spans) == 3 * len(records) + 1
    write_otlp(project / "logs" / "traces.json", spans, per_request=25)

    jsonl_store, otlp_store = "jsonl.duckdb", "otlp.duckdb"
    code, out, err = _cli(capsys, project, "ingest", "logs/responses.jsonl", "--store", jsonl_store, "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["inserted"] == len(records)

    code, out, err = _cli(
        capsys,
        project,
        "ingest",
        "logs/traces.json",
        "--input-format",
        "otlp-json",
        "--store",
        otlp_store,
        "--format",
        "json",
    )
    summary = json.loads(out)
    assert code == 2  # the span without its output is a bad record, and every other one is stored
    assert summary["inserted"] == len(records) and summary["bad_records"] == 1
    assert summary["spans"] == len(spans) and summary["spans_skipped"] == len(spans) - model_calls
    assert summary["records"] == model_calls
    # the lost span: its request line and its place in that line, counted from 1
    lost_line, lost_index = divmod(len(spans) - 1, 25)
    assert err == (
        f"promptops: logs/traces.json:{lost_line + 1}: span {lost_index + 1} (id {span_id(spans[-1])}): missing the "
        "output text ('gen_ai.output.messages' or 'gen_ai.completion')\n"
    )

    assert _stored(project / otlp_store) == _stored(project / jsonl_store)
    for by in ("arm", "model,day", "prompt_version,schema_version"):
        rates = []
        for store in (jsonl_store, otlp_store):
            code, out, _ = _cli(
                capsys,
                project,
                "rates",
                "--contract",
                "review-result",
                "--store",
                store,
                "--by",
                by,
                "--format",
                "json",
            )
            assert code == 0
            rates.append({k: v for k, v in json.loads(out).items() if k != "store"})
        assert rates[0] == rates[1] and rates[0]["groups"]

    # where an OTLP response came from: the file, and its span's ordinal among the file's spans
    with duckdb.connect(str(project / otlp_store), read_only=True) as db:
        sources = db.execute("select distinct source from responses").fetchall()
        ordinals = [row[0] for row in db.execute("select source_line from responses order by source_line").fetchall()]
    assert sources == [("logs/traces.json",)]
    assert ordinals == sorted(set(ordinals)) and max(ordinals) <= len(spans)

    # idempotent: the file is remembered (and skipped unread, its bad records not reported again), and --rescan
    # stores nothing twice
    code, out, _ = _cli(capsys, project, "ingest", "logs/traces.json", "--format", "otlp-json", "--store", otlp_store)
    assert code == 0 and "0 responses stored" in out and "1 already ingested" in out  # as a JSONL segment
    code, out, _ = _cli(
        capsys, project, "ingest", "logs/traces.json", "--input-format", "otlp-json", "--rescan", "--store", otlp_store
    )
    assert "0 responses stored" in out


def test_unknown_contracts_and_broken_lines_are_bad_records_with_their_place(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = responses()[0]
    spans = emit([{**record, "contract": "no-such-contract"}, {**responses()[1]}])
    path = project / "logs" / "t.jsonl"
    write_otlp(path, spans, per_request=len(spans))
    with path.open("a") as log:
        log.write("not json\n[1, 2]\n")
    code, out, err = _cli(capsys, project, "ingest", "logs/t.jsonl", "--input-format", "otlp-json", "--format", "json")
    assert code == 2
    # Spans come in the order they ended: per record the model call, the embeddings call, the request; then
    # the model call that lost its output (span 7). Bad records are reported in file order.
    assert err.splitlines() == [
        f"promptops: logs/t.jsonl:1: span 1 (id {span_id(spans[0])}): unknown contract 'no-such-contract' "
        "(no versions/no-such-contract/)",
        f"promptops: logs/t.jsonl:1: span 7 (id {span_id(spans[6])}): missing the output text "
        "('gen_ai.output.messages' or 'gen_ai.completion')",
        "promptops: logs/t.jsonl:2: not valid JSON (JSON is malformed: invalid character (byte 4))",
        "promptops: logs/t.jsonl:3: not an OTLP ExportTraceServiceRequest (no resourceSpans list)",
        "promptops: warning: 1 record name contract 'no-such-contract', which has no versions/no-such-contract/: "
        "not stored (bad records)",
    ]
    summary = json.loads(out)
    assert summary["inserted"] == 1 and summary["bad_records"] == 4
    # where the JSON output carries a sample of the bad records, it names the same places as stderr
    for sample in summary.get("bad_records_sample", []):
        assert f"promptops: {sample['source']}:{sample['line']}: {sample['problem']}" in err.splitlines()


def test_a_missing_file_is_a_tool_failure(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, project, "ingest", "logs/none.json", "--input-format", "otlp-json")
    assert code == 3 and err.count("\n") == 1 and "none.json" in err


def test_the_documented_instrumentation_example_is_ingested(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ten-line example of docs/integrations.md, run as written with the real SDK, gives a stored response."""
    page = (REPO_ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    example = next(block for block in page.split("```python\n")[1:] if "start_as_current_span" in block)
    example = example.split("```")[0]
    assert len(example.strip().splitlines()) <= 12
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    demo = demo_records()[0]

    class Reply:
        text = demo["raw"]

    class Client:
        def chat(self, messages: list[dict[str, str]]) -> Reply:
            assert messages
            return Reply()

    namespace: dict[str, Any] = {
        "request_id": "doc-example-1",
        "arm": "candidate",
        "changed_files": demo["changed_files"],
        "client": Client(),
        "messages": [{"role": "user", "content": "review this"}],
    }
    # the example asks the global API for its tracer, as a service does; the SDK lets a process set it once
    trace.set_tracer_provider(provider)
    assert trace.get_tracer_provider() is provider, "another test set the global tracer provider"
    exec(compile(example, "integrations.md", "exec"), namespace)
    provider.shutdown()
    write_otlp(project / "logs" / "example.json", list(exporter.get_finished_spans()), per_request=10)
    code, out, err = _cli(
        capsys, project, "ingest", "logs/example.json", "--input-format", "otlp-json", "--format", "json"
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["inserted"] == 1
    with duckdb.connect(str(project / ".promptops" / "diagnostics.duckdb"), read_only=True) as db:
        row = db.execute("select response_id, rollout_id, arm, unit, model from responses").fetchone()
    assert row == ("doc-example-1", "review-1.1", "candidate", "acme/api#42", "gpt-4.1")
