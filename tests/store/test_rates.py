"""Rates match counts computed independently in Python, and a Parquet export gives identical rates."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from promptops import ChangedFiles, Contract, Parser
from promptops.parsing.diagnostics import COERCION_CODES, DROP_CODES, WARNING
from promptops.store import ParserCache, RatesQuery, Store, export_parquet, ingest_logs, open_parquet, rates
from tests.store.conftest import relative_to


def _expected(
    contract: Contract, log: Path, by: tuple[str, ...], rollout: str | None, since: datetime | None
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The rates computed in Python from the parser's outcomes, record by record, without SQL."""
    parser = Parser(contract)
    groups: dict[tuple[Any, ...], dict[str, Any]] = defaultdict(
        lambda: {
            "n": 0,
            "accepted": 0,
            "x": Counter(),
            "f": Counter(),
            "drops": Counter(),
            "fields": Counter(),
            "rejects": Counter(),
        }
    )
    for line in log.read_text().splitlines():
        record = json.loads(line)
        ts = datetime.fromisoformat(record["ts"]).replace(tzinfo=None)
        if (rollout is not None and record["rollout_id"] != rollout) or (since is not None and ts < since):
            continue
        outcome = parser.parse(record["raw"], ChangedFiles(record["changed_files"]))
        values = {
            "arm": record["arm"],
            "day": ts.date().isoformat(),
            "prompt_version": outcome.prompt_version,
            "schema_version": outcome.schema_version,
            "rollout": record["rollout_id"],
        }
        group = groups[tuple(values[name] for name in by)]
        diagnostics = outcome.diagnostics
        drops = [d for d in diagnostics if d.level == WARNING and d.code in DROP_CODES]
        coercions = [d for d in diagnostics if d.code in COERCION_CODES]
        group["n"] += 1
        group["accepted"] += outcome.accepted
        group["x"].update(
            {
                "any_drop": bool(drops),
                "any_coercion": bool(coercions),
                "incompatible_version": outcome.reason == "incompatible_version",
                "rejected": not outcome.accepted,
                "all_findings_dropped": outcome.accepted and outcome.findings_seen > 0 and outcome.findings_kept == 0,
                "extracted": outcome.extracted,
                "truncated": outcome.truncated,
            }
        )
        group["f"].update(
            {
                "seen": outcome.findings_seen,
                "dropped": len(drops),
                "coerced": len({d.finding_index for d in coercions if d.finding_index is not None}),
            }
        )
        group["drops"].update(str(d.code) for d in drops)
        group["fields"].update(re.sub(r"\[[0-9]+\]", "[]", d.path or "") for d in coercions)
        if outcome.reason is not None:
            group["rejects"].update([str(outcome.reason)])
    return groups


def _top(counter: Counter[str], top: int) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:top]


@pytest.mark.parametrize(
    ("by", "rollout", "since"),
    [
        ((), None, None),
        (("arm", "day"), "review-v7", None),
        (("prompt_version", "schema_version", "day"), None, datetime(2025, 5, 3, 12)),
        (("rollout",), None, None),
    ],
)
def test_rates_match_counts_computed_in_python(
    project: Path,
    store: Store,
    parsers: ParserCache,
    contract: Contract,
    write_log: Callable[..., Path],
    by: tuple[str, ...],
    rollout: str | None,
    since: datetime | None,
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 1200, pool=1200)
    ingest_logs([log], store, parsers, relative=relative_to(project), batch_size=300)
    report = rates(store.connection, RatesQuery("review-result", by=by, rollout_id=rollout, since=since, top=3))
    expected = _expected(contract, log, by, rollout, since)
    assert [tuple(g.key.values()) for g in report.groups] == sorted(
        expected, key=lambda k: [(v is not None, v) for v in k]
    )
    for group in report.groups:
        want = expected[tuple(group.key.values())]
        assert (group.responses, group.accepted) == (want["n"], want["accepted"])
        assert {name: rate.count for name, rate in group.per_response.items()} == {
            name: want["x"][name] for name in group.per_response
        }
        assert all(rate.total == want["n"] for rate in group.per_response.values())
        assert {name: (rate.count, rate.total) for name, rate in group.per_finding.items()} == {
            "dropped": (want["f"]["dropped"], want["f"]["seen"]),
            "coerced": (want["f"]["coerced"], want["f"]["seen"]),
        }
        assert group.top_drop_reasons == _top(want["drops"], 3)
        assert group.top_coerced_fields == _top(want["fields"], 3)
        assert group.top_reject_reasons == _top(want["rejects"], 3)
        rate = group.per_response["any_drop"]
        assert rate.rate == pytest.approx(rate.count / rate.total)
    assert sum(g.responses for g in report.groups) > 0


def test_no_matching_responses_gives_no_groups(store: Store) -> None:
    report = rates(store.connection, RatesQuery("review-result", by=("arm",)))
    assert report.groups == []
    assert rates(store.connection, RatesQuery("review-result")).groups == []


def test_unknown_grouping_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot group by 'week'"):
        RatesQuery("review-result", by=("week",))


def test_parquet_export_gives_identical_rates_and_replaces_only_its_own_files(
    project: Path, parsers: ParserCache, write_log: Callable[..., Path]
) -> None:
    lake = project / "lake"
    reports = []
    for name, seed in (("a", 1), ("b", 2)):
        log = write_log(project / "logs" / f"{name}.jsonl", 600, seed=seed, days=3)
        with Store.open(project / f"{name}.duckdb") as store:
            ingest_logs([log], store, parsers, relative=relative_to(project))
            export_parquet(store, lake, display="lake")
            export_parquet(store, lake, display="lake")  # again: replaces its own files, adds nothing
            queries = [
                RatesQuery("review-result", by=by, rollout_id=r)
                for by, r in [((), None), (("arm", "day"), "review-v7"), (("prompt_version", "schema_version"), None)]
            ]
            reports.append([rates(store.connection, q).to_dict() for q in queries])
            if name == "a":
                lake_a = open_parquet(lake, display="lake")
                assert [rates(lake_a, q).to_dict() for q in queries] == reports[0]
                lake_a.close()
    files = sorted(p.name.split("_")[0] for p in lake.rglob("*.parquet"))
    assert len(set(files)) == 2  # one file set per store
    with Store.open(project / "a.duckdb", read_only=True) as a, Store.open(project / "b.duckdb", read_only=True) as b:
        total = a.count("responses") + b.count("responses")
        diagnostics = a.count("diagnostics") + b.count("diagnostics")
    lake_con = open_parquet(lake, display="lake")
    assert lake_con.execute("SELECT count(*) FROM responses").fetchall()[0][0] == total
    assert lake_con.execute("SELECT count(*) FROM diagnostics").fetchall()[0][0] == diagnostics
    whole = rates(lake_con, RatesQuery("review-result")).groups[0]
    assert whole.responses == total == 1200
    lake_con.close()


def test_an_empty_export_reads_as_an_empty_store(project: Path, store: Store) -> None:
    export_parquet(store, project / "lake", display="lake")
    con = open_parquet(project / "lake", display="lake")
    assert rates(con, RatesQuery("review-result")).groups == []
    con.close()
