"""The Spark engine against the embedded store on the same logs: the ingest's counts and bad records, the rates
group by group (on Spark, and by the DuckDB reader of the Spark-written lake), the gate's verdict and the
dashboard's JSON summary."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli
from tests.spark.conftest import NOW, OTHER, PLAN

pytestmark = pytest.mark.slow  # real Spark on a JVM

CONTRACTS = ("review-result", OTHER)
GROUPINGS = ("", "arm", "arm,day,prompt_version", "rollout,model,schema_version", "schema_floor,prompt_pin")


def _json(out: str) -> Any:
    data = json.loads(out)
    if isinstance(data, dict):
        data.pop("store", None)  # the store's name is the one thing allowed to differ
    return data


def test_spark_ingest_counts_and_lists_what_the_embedded_ingest_does(cli: Cli, built: Path, spark: Any) -> None:
    fresh = built / "lake-report"
    code, out, err = cli(built, "ingest", str(built / "logs"), "--engine", "spark", "--store", str(fresh),
                         "--format", "json")  # fmt: skip
    embedded_code, embedded_out, embedded_err = cli(
        built, "ingest", str(built / "logs"), "--store", str(built / "report.duckdb"), "--format", "json"
    )
    assert code == embedded_code == 2  # bad records: exit 2, the good ones stored
    spark_report, embedded_report = _json(out), _json(embedded_out)
    assert spark_report == embedded_report
    assert spark_report["bad_records"] == 4 and spark_report["duplicates"] == 50
    bad_lines = sorted(line for line in err.splitlines() if line.startswith("promptops: logs/"))
    assert bad_lines == sorted(line for line in embedded_err.splitlines() if line.startswith("promptops: logs/"))
    assert "promptops: logs/a/part-0.jsonl:501: not valid JSON" in err


@pytest.mark.parametrize("contract", CONTRACTS)
def test_rates_are_the_embedded_stores_group_by_group(
    cli: Cli, built: Path, embedded: Path, lake: Path, contract: str
) -> None:
    for by in GROUPINGS:
        args = ("rates", "--contract", contract, "--by", by, "--format", "json")
        expected = _json(cli(built, *args, "--store", str(embedded))[1])
        assert expected["groups"], f"no groups for {contract} by {by!r}"
        on_spark = _json(cli(built, *args, "--store", str(lake), "--engine", "spark")[1])
        assert on_spark == expected, f"{contract} by {by!r} on Spark"
        read_by_duckdb = _json(cli(built, *args, "--store", str(lake))[1])
        assert read_by_duckdb == expected, f"{contract} by {by!r}, the lake read by DuckDB"


def test_rates_of_a_rollout_since_a_time(cli: Cli, built: Path, embedded: Path, lake: Path) -> None:
    args = ("rates", "--contract", "review-result", "--rollout", "review-1.1", "--since", "2026-11-02T20:00:00+01:00",
            "--by", "arm", "--top", "2", "--format", "json")  # fmt: skip
    expected = _json(cli(built, *args, "--store", str(embedded))[1])
    assert sum(group["responses"] for group in expected["groups"]) > 0
    assert _json(cli(built, *args, "--store", str(lake), "--engine", "spark")[1]) == expected


def test_the_gate_verdict_is_the_same(cli: Cli, built: Path, embedded: Path, lake: Path) -> None:
    args = ("rollout", "gate", str(built / PLAN), "--now", NOW.isoformat(), "--format", "json")
    code, out, _ = cli(built, *args, "--store", str(embedded))
    spark_code, spark_out, _ = cli(built, *args, "--store", str(lake), "--engine", "spark")
    assert (spark_code, json.loads(spark_out)) == (code, json.loads(out))
    assert json.loads(out)["metrics"], "the gate judged no metric"


def test_the_dashboard_summary_is_the_same(cli: Cli, built: Path, embedded: Path, lake: Path) -> None:
    summaries = []
    for name, store, engine in (("duckdb", embedded, "duckdb"), ("spark", lake, "spark")):
        out_dir = built / f"reports-{name}"
        code, _, err = cli(built, "report", "--contract", "review-result", "--store", str(store), "--engine", engine,
                           "--now", NOW.isoformat(), "--out", str(out_dir))  # fmt: skip
        assert code == 0, err
        summaries.append(json.loads((out_dir / "review-result.json").read_text(encoding="utf-8")))
    assert summaries[0] == summaries[1]
    assert summaries[0]["rollouts"][0]["arms"], "the summary shows no arm"


def test_every_question_of_the_store_interface_gets_the_same_answer(embedded: Path, lake: Path, spark: Any) -> None:
    """Each RatesSource question, asked of the DuckDB store and of the Spark lake (the adapter the CLI uses)."""
    from promptops.spark.options import lake_source
    from promptops.store import RatesQuery, Store
    from promptops.store.source import RatesSource, Window

    until = NOW.replace(tzinfo=None)
    windows = (
        Window("review-result"),
        Window("review-result", "review-1.1", since=until - timedelta(hours=20), until=until),
        Window(OTHER, until=until - timedelta(hours=12)),
        Window("no-such-contract"),
    )

    def answers(source: RatesSource) -> list[Any]:
        found: list[Any] = [source.holds("contract", OTHER), source.holds("rollout_id", "no-such-rollout")]
        for window in windows:
            found += [source.counts(window), source.traffic(window), source.examples(window, 12)]
            found += [[(str(start), arm, n) for start, arm, n in source.series(window, b)] for b in ("hour", "day")]
            query = RatesQuery(window.contract, ("arm", "day"), window.since, window.until, window.rollout_id, 3)
            found.append(source.rates(query).to_dict())
        return found

    with Store.open(embedded, read_only=True) as store:
        expected = answers(store.source)
    with lake_source(lake, "lake", None) as on_spark:
        assert answers(on_spark) == expected
    assert expected[0] is True and expected[1] is False
    assert all(expected[2 + 6 * i] for i in range(3)), "a window without responses"


def test_parse_records_takes_a_dataframe_of_log_records(spark: Any, built: Path) -> None:
    from promptops.spark.ingest import parse_records
    from promptops.spark.setup import ParserSetup

    lines = (built / "logs" / "b" / "other.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    rows = [("svc/log", i + 1, line) for i, line in enumerate([*lines, "{oops"])]
    records = spark.createDataFrame(rows, "source string, line int, value string")
    parsed = parse_records(records, ParserSetup.from_project(built)).collect()
    kinds = [row.kind for row in parsed]
    assert (kinds.count("response"), kinds.count("bad")) == (3, 1)
    assert sum(row.records for row in parsed if row.kind == "count") == 4  # one count row per parsed chunk
    (bad,) = [row for row in parsed if row.kind == "bad"]
    assert (bad.source, bad.source_line) == ("svc/log", 4) and bad.problem.startswith("not valid JSON")
    assert {row.response_id for row in parsed if row.kind == "response"} == {
        json.loads(line)["response_id"] for line in lines
    }
