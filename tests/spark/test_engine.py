"""Parts of the Spark engine that need no Spark: the store's hashes computed in Python as DuckDB computes them,
the generated Spark SQL, the parser setup as data, and the one-line error without pyspark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from promptops.spark.lake import md5_lower, slice_key
from promptops.spark.setup import ParserSetup, parser_cache
from promptops.spark.views import to_spark
from promptops.store import ddl
from tests.helpers import REPO_ROOT

SLICES = [
    ("review-result", "review-1.1", "candidate", "model-a", "1.1.0", "1.1", "1.0", "1.1.0"),
    ("code-review-findings", None, None, None, None, None, "1.0", "1.0.0"),
    ("naïve/contract", 'r"1', "arm\\x", "ü", "1", "2", "3", "4"),
]


@pytest.mark.parametrize("values", SLICES)
def test_the_slice_key_is_duckdbs(values: tuple[str | None, ...]) -> None:
    con = duckdb.connect()
    columns = ", ".join(f"$v{i} AS {name}" for i, name in enumerate(ddl.SLICE_COLUMNS))
    params = {f"v{i}": value for i, value in enumerate(values)}
    expected = con.execute(f"SELECT {ddl.SLICE_KEY} FROM (SELECT {columns})", params).fetchone()
    assert expected is not None and slice_key(values) == expected[0]


def test_the_id_hash_is_duckdbs() -> None:
    con = duckdb.connect()
    for text in ("resp-7-000000001", "x", "é"):
        expected = con.execute(f"SELECT {ddl.md5_lower('$t')}", {"t": text}).fetchone()
        assert expected is not None and md5_lower(text) == expected[0]


def test_queries_become_spark_sql_with_bound_parameters() -> None:
    sql = to_spark(
        "SELECT arm, count(*) FILTER (WHERE rejected) FROM response_indicators "
        "WHERE contract = $contract AND ts >= $since GROUP BY ALL ORDER BY ALL NULLS FIRST",
        {"contract": "it's", "since": __import__("datetime").datetime(2026, 1, 2, 3, 4, 5)},
    )
    assert "$" not in sql and "'it\\'s'" in sql and "CAST('2026-01-02 03:04:05' AS TIMESTAMP_NTZ)" in sql
    assert sql.endswith("GROUP BY ALL ORDER BY ALL")  # Spark sorts nulls first by default, as asked
    for statement in ddl.VIEWS:
        assert to_spark(statement).startswith("CREATE OR REPLACE TEMPORARY VIEW")


def test_the_parser_setup_travels_as_json_and_rebuilds_the_parsers(tmp_path: Path) -> None:
    setup = ParserSetup.from_project(REPO_ROOT)
    names = {path for path, _ in setup.files}
    assert "versions/review-result/contract.yaml" in names and any(n.startswith("rollout/") for n in names)
    cache = parser_cache(setup.dumps())
    assert cache.parser("review-result", None, None) is not None
    assert cache.parser("no-such-contract", None, None) is None


def test_without_pyspark_the_spark_engine_says_how_to_install_it(tmp_path: Path) -> None:
    # pyspark hidden from the import system, as on a machine without the spark extra
    program = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "import promptops.cli\n"
        "sys.exit(promptops.cli.run(sys.argv[1:]))\n"
    )
    (tmp_path / "logs.jsonl").write_text("", encoding="utf-8")
    for args in (
        ["ingest", str(tmp_path / "logs.jsonl"), "--engine", "spark", "--store", str(tmp_path / "lake")],
        ["rates", "--contract", "review-result", "--engine", "spark", "--store", str(tmp_path / "lake")],
    ):
        done = subprocess.run(
            [sys.executable, "-c", program, "--root", str(REPO_ROOT), *args], capture_output=True, text=True
        )
        assert done.returncode == 3, done.stderr
        assert done.stderr.strip().splitlines() == [
            "promptops: error: the Spark engine needs pyspark and Java 17+: pip install 'promptops-toolchain[spark]'"
        ]
