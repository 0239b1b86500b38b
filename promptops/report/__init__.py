"""Dashboards and exports of a contract's rollouts and diagnostics (README "Dashboard and exports").

``write_report`` writes one self-contained HTML page (inline SVG charts, no script, a strict
Content-Security-Policy) and its JSON summary; ``write_prom`` writes a Prometheus textfile. Modules, one concept
each: ``model`` (what a report holds), ``gather`` (plans, gates and store queries), ``charts`` (SVG), ``html``
(the page), ``prom`` (the exposition format), ``write`` (atomic files). The library never reads the
environment or the clock, prints or exits: the store (a RatesSource) and the time come in as values.

Names load lazily, so the Prometheus path never imports Jinja.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core.lazy import by_module, lazy_names

if TYPE_CHECKING:
    from promptops.report.gather import ReportError, gather_report
    from promptops.report.html import render_html
    from promptops.report.model import ContractReport
    from promptops.report.prom import render_prom
    from promptops.report.write import ReportFiles, write_prom, write_report

_EXPORTS = by_module(
    {
        "promptops.report.gather": ("ReportError", "gather_report"),
        "promptops.report.html": ("render_html",),
        "promptops.report.model": ("ContractReport",),
        "promptops.report.prom": ("render_prom",),
        "promptops.report.write": ("ReportFiles", "write_prom", "write_report"),
    }
)

__all__ = [
    "ContractReport",
    "ReportError",
    "ReportFiles",
    "gather_report",
    "render_html",
    "render_prom",
    "write_prom",
    "write_report",
]


__getattr__ = lazy_names(__name__, _EXPORTS)
