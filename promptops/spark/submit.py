"""Entry point for spark-submit: ingest response logs (local paths or object-storage URLs) into a lake.

    spark-submit --master yarn ... $(python -c 'import promptops.spark.submit as s; print(s.__file__)') \
        --root /path/to/project --store s3a://bucket/promptops/lake s3a://bucket/logs/2026-11-25/

Unlike ``promptops ingest --engine spark``, the logs and the lake may be URLs (s3a://, gs://, abfss://,
hdfs://); the project root (its versions/ and rollout/) is read on the driver and sent to the executors as
data. Prints the ingest's JSON report; exit codes are the ingest command's (0, 2 bad records, 3 failure).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line
from promptops.core.outcomes import ExitCode


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(prog="promptops.spark.submit", description=__doc__.splitlines()[0])
    options.add_argument("--root", type=Path, required=True, help="the project root (versions/, rollout/)")
    options.add_argument("--store", required=True, help="the lake: a directory or an object-storage URL")
    options.add_argument("logs", nargs="+", help="log segments or directories of them (paths or URLs)")
    args = options.parse_args(argv)
    try:
        from promptops.spark.ingest import ingest_to_lake
        from promptops.spark.session import job_errors, spark_session
        from promptops.spark.setup import ParserSetup

        root = args.root.resolve()
        setup = ParserSetup.from_project(root)
        spark = spark_session()
        bad: list[str] = []

        def relative(path: Path) -> str:
            resolved = path.resolve()
            return resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else resolved.as_posix()

        store = args.store if "://" in args.store else Path(args.store).resolve().as_posix()
        with job_errors("ingest"):
            report = ingest_to_lake(
                spark, args.logs, store, setup, relative=relative, on_bad=lambda b: bad.append(str(b))
            )
    except PromptopsError as problem:
        print(f"promptops: error: {one_line(problem)}", file=sys.stderr)
        return ExitCode.TOOL_FAILURE
    for line in bad:
        print(f"promptops: {one_line(line)}", file=sys.stderr)
    for failed in report.failed:
        print(f"promptops: error: {one_line(failed.error)}", file=sys.stderr)
    code = ExitCode.TOOL_FAILURE if report.failed else ExitCode.FAILED if report.bad_records else ExitCode.OK
    print(json.dumps({"store": args.store, **report.to_dict(), "exit_code": code}, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main())
