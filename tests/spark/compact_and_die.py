"""Compact a lake and SIGKILL this process right after the named step: no ``finally``, no lock release, no
flush runs, as when a machine or a scheduler kills the job (tests/spark/test_compaction.py runs it).

Usage: python compact_and_die.py LAKE BEFORE TARGET_BYTES STEP
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import date

from promptops.spark.compact import compact
from promptops.spark.session import spark_session

# One core, no UI, one shuffle partition, no code generation or adaptive planning, and a JVM that starts
# quickly (C1 only, serial GC): the lake is a few hundred kB, so a run costs its start and its planning
# (6 s to a session here instead of 9).
CONFIG = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "512m",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto",
}


def main(lake: str, before: str, target_bytes: str, name: str) -> int:
    def step(current: str) -> None:
        if current == name:
            os.kill(os.getpid(), signal.SIGKILL)

    spark = spark_session("local[1]", app_name="promptops-kill-test", config=CONFIG)
    compact(spark, lake, before=date.fromisoformat(before), target_bytes=int(target_bytes), step=step)
    return 0  # the step never came: the test sees exit code 0, not death by SIGKILL


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
