"""The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched.

The page is rendered by Jinja2 with autoescaping on, so every string from the store (finding ids, paths,
diagnostic messages, reasons: model text among them) is escaped; charts are ``Svg`` values that
``promptops.report.charts`` escaped itself. A Content-Security-Policy meta tag forbids scripts, frames,
fetches and external images as defence in depth: even markup that slipped through could not run or load.
The summary (the JSON written beside the page) is embedded as an inert ``application/json`` block, escaped
by Jinja's ``tojson`` so it cannot close its element.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from promptops.report import charts
from promptops.report.model import ContractReport, RolloutView
from promptops.store import catalogue

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_TEMPLATE = "report.html.j2"


def render_html(report: ContractReport) -> str:
    """The page for ``report``."""
    environment = Environment(
        loader=FileSystemLoader(Path(__file__).parent),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(pct=charts.pct, num=_num, when=_when, signed=_signed, duration=_duration)
    template = environment.get_template(_TEMPLATE)
    return template.render(
        report=report,
        summary=report.to_dict(),
        csp=CSP,
        rollouts=[_rollout_context(r) for r in report.rollouts],
    )


def _rollout_context(rollout: RolloutView) -> dict[str, Any]:
    """Charts and the gate's metrics of one rollout, matched by metric name."""
    versions = {"candidate": rollout.candidate["prompt_version"], "baseline": rollout.baseline["prompt_version"]}
    marks = [
        (
            datetime.fromisoformat(t["at"]),
            f"{t['action']} → step {t['to_step']}" if t["action"] in ("promote", "retarget") else str(t["action"]),
        )
        for t in rollout.history
    ]
    gate_metrics = {m["metric"]: m for m in rollout.gate.get("metrics", [])}
    window = rollout.gate.get("window", {}).get("responses", {})
    step = next((s for s in rollout.steps if s["index"] == rollout.step), None)
    # What each arm needs at this step is the plan's figure (as `rollout plan` and `status` say), never less
    # than what this metric needs to pass on the candidate with no failure
    step_needs = {
        "candidate": step["candidate_needed"] if step else 0,
        "baseline": step["baseline_needed"] if step else 0,
    }
    metrics = []
    for series in rollout.series:
        if catalogue.metric(series.metric).unit != "response":
            continue  # a usefulness metric: its own table below (``useful``)
        gate = gate_metrics.get(series.metric)
        progress = []
        if gate is not None:
            for arm in ("candidate", "baseline"):
                n = int(window.get(arm, 0))
                needed = step_needs[arm]
                if arm == "candidate" and rollout.weight > 0:
                    needed = max(needed, int(gate["n_needed"]))
                bar = charts.progress(n, needed, f"{arm} responses in this step", gate.get("status"))
                progress.append((arm, Markup(bar)))
        metrics.append(
            {
                "series": series,
                "gate": gate,
                "progress": progress,
                "chart": Markup(charts.rate_chart(series, bucket=rollout.bucket, versions=versions, marks=marks)),
            }
        )
    arms = []
    for arm, summary in rollout.arms.items():
        color = charts.COLORS.get(arm, "#5c677d")
        arms.append(
            {
                "arm": arm,
                "summary": summary,
                "drops": Markup(charts.bars(summary.top_drop_reasons, f"{arm}: top drop reasons", color))
                if summary.top_drop_reasons
                else None,
                "coerced": Markup(charts.bars(summary.top_coerced_fields, f"{arm}: top coerced fields", color))
                if summary.top_coerced_fields
                else None,
                "rejects": Markup(charts.bars(summary.top_reject_reasons, f"{arm}: top reject reasons", color))
                if summary.top_reject_reasons
                else None,
            }
        )
    # Usefulness metrics (the gate's, per arm on decided findings; no series: feedback has no hourly looks).
    useful = [m for m in rollout.gate.get("metrics", []) if "pending" in m]
    return {"view": rollout, "gate": rollout.gate, "metrics": metrics, "useful": useful, "arms": arms}


def _num(value: int | float | None) -> str:
    return charts.NONE if value is None else f"{value:,}"


def _signed(value: float | None) -> str:
    return charts.NONE if value is None else f"{value * 100:+.2f} pp"


def _when(value: str | datetime | None) -> str:
    if value is None:
        return charts.NONE
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return charts.NONE
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 60:.0f} minutes"
