"""Writing a report: the HTML page and its JSON summary, or the Prometheus file, each replaced atomically."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from promptops.core.contract import Contract
from promptops.core.files import write_output
from promptops.report.gather import gather_report
from promptops.report.model import ContractReport
from promptops.store.source import RatesSource

_READABLE = 0o644  # reports are read by other users' processes (a web server, node_exporter), never secrets


@dataclass(frozen=True)
class ReportFiles:
    """What ``write_report`` wrote, and the report it wrote (for callers that print verdicts)."""

    html: Path
    json: Path
    report: ContractReport


def write_report(
    root: Path,
    contract: Contract,
    source: RatesSource | None,
    out_dir: Path,
    *,
    now: datetime,
    rollout_id: str | None = None,
) -> ReportFiles:
    """Write ``<contract>.html`` (self-contained, opens offline) and ``<contract>.json`` into ``out_dir``.

    ``source`` is the store (a file, a Parquet export or the Spark lake), or None when nothing has been
    ingested yet; ``now`` is the moment the gates judge (the library never reads the clock).
    """
    from promptops.report.html import render_html  # Jinja loads only for the page, not for the prom export

    report = gather_report(root, contract, source, now, rollout_id=rollout_id)
    page = render_html(report)
    summary = json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    html_path = out_dir / f"{contract.name}.html"
    json_path = out_dir / f"{contract.name}.json"
    write_output(json_path, summary.encode("utf-8"), mode=_READABLE)
    write_output(html_path, page.encode("utf-8"), mode=_READABLE)
    return ReportFiles(html_path, json_path, report)


def write_prom(
    root: Path,
    contract: Contract,
    source: RatesSource | None,
    out_dir: Path,
    *,
    now: datetime,
    rollout_id: str | None = None,
) -> tuple[Path, ContractReport]:
    """Write ``<contract>.prom`` into ``out_dir`` (a node_exporter textfile directory, typically).

    The temporary file is a dot file in the same directory, which the collector (reading ``*.prom``) ignores,
    and the rename makes the new file appear whole.
    """
    from promptops.report.prom import render_prom

    report = gather_report(root, contract, source, now, rollout_id=rollout_id, detail=False)
    path = out_dir / f"{contract.name}.prom"
    write_output(path, render_prom(report).encode("utf-8"), mode=_READABLE)
    return path, report
