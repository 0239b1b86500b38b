"""The report as Prometheus text exposition (format 0.0.4), for node_exporter's textfile collector.

Counters come from the store (they only grow as responses are ingested): responses by outcome, rejections by
reason, findings kept and dropped, findings coerced and coercions, per contract, rollout, arm and the versions
the responses declared. Gauges describe each rollout's latest gate (purpose monitor): the verdict as a
labelled 0/1 gauge plus the exit code, step, weight, and per metric the rates and one-sided bounds (by the
plan's statistics) of both arms, the SLO and the responses needed. Every family has ``# HELP`` and ``# TYPE``
lines; label values are escaped as the format requires (versions declared by a model are model text).

Every ``promptops_gate_metric_*`` family is present for every rollout, every metric of its plan and (for the
per-arm families) both arms, whatever the data: an alert reads a value instead of going absent. The per-arm
samples carry ``has_data``: ``"true"`` when the arm has responses in the step's window, else ``"false"`` with
the value NaN (the rate of nothing is undefined; 0 would read as a perfect candidate). ``responses`` is 0 then.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from promptops.core.outcomes import Verdict
from promptops.report.model import ContractReport, RolloutView, TrafficRow
from promptops.rollout.gate import ARMS
from promptops.rollout.stats import zero_failure_need
from promptops.store import catalogue

_VERDICTS = tuple(v.value for v in Verdict if v is not Verdict.NOT_APPLICABLE)  # a rollout gate's verdicts
_STATUSES = ("pass", "fail", "inconclusive", "warn")
_SLICE = ("contract", "rollout", "arm", "prompt_version", "schema_version")

Labels = tuple[tuple[str, str], ...]


@dataclass
class _Family:
    name: str
    kind: str  # counter or gauge
    help: str
    samples: dict[Labels, float | int] = field(default_factory=dict)

    def add(self, labels: Iterable[tuple[str, str | None]], value: float | int | None) -> None:
        if value is None:
            return  # no estimate (no responses): leave the series out rather than write NaN
        key = tuple((name, "" if text is None else str(text)) for name, text in labels)
        # Slices that differ only by NULL vs "" become one series: add them up (a repeated series is invalid).
        self.samples[key] = (self.samples.get(key, 0) + value) if self.kind == "counter" else value

    def lines(self) -> list[str]:
        out = [f"# HELP {self.name} {_help(self.help)}", f"# TYPE {self.name} {self.kind}"]
        for labels, value in sorted(self.samples.items()):
            inner = ",".join(f'{name}="{_label(text)}"' for name, text in labels)
            out.append(f"{self.name}{{{inner}}} {_number(value)}")
        return out


def _counter(name: str, help: str) -> _Family:
    return _Family(name, "counter", help)


def _gauge(name: str, help: str) -> _Family:
    return _Family(name, "gauge", help)


def render_prom(report: ContractReport) -> str:
    """The exposition text of ``report`` (ends with a newline, as the textfile collector expects)."""
    families = _counters(report.contract, report.traffic) + _gauges(report)
    timestamp = _gauge("promptops_report_timestamp_seconds", "When the report was generated (its --now), Unix time.")
    timestamp.add((("contract", report.contract),), report.now.timestamp())
    families.append(timestamp)
    lines = [line for family in families if family.samples for line in family.lines()]
    return "\n".join(lines) + "\n"


def _counters(contract: str, traffic: Iterable[TrafficRow]) -> list[_Family]:
    responses = _counter("promptops_responses_total", "Responses stored, by outcome (accepted, rejected).")
    rejections = _counter("promptops_rejections_total", "Rejected responses, by reject reason.")
    findings = _counter("promptops_findings_total", "Findings the responses held, by outcome (kept, dropped).")
    coerced = _counter("promptops_findings_coerced_total", "Kept findings with at least one coercion applied.")
    coercions = _counter("promptops_coercions_total", "Coercion diagnostics (top-level fields included).")
    for row in traffic:
        labels = list(
            zip(_SLICE, (contract, row.rollout, row.arm, row.prompt_version, row.schema_version), strict=True)
        )
        responses.add([*labels, ("outcome", "accepted")], row.accepted)
        responses.add([*labels, ("outcome", "rejected")], row.rejected)
        for reason, count in row.rejects.items():
            rejections.add([*labels, ("reason", reason)], count)
        findings.add([*labels, ("outcome", "kept")], row.findings_seen - row.findings_dropped)
        findings.add([*labels, ("outcome", "dropped")], row.findings_dropped)
        coerced.add(labels, row.findings_coerced)
        coercions.add(labels, row.coercions)
    return [responses, rejections, findings, coerced, coercions]


def _gauges(report: ContractReport) -> list[_Family]:
    verdict = _gauge(
        "promptops_gate_verdict", "Latest gate verdict of the rollout (1 for the current verdict, else 0)."
    )
    exit_code = _gauge("promptops_gate_exit_code", "Exit code of the latest gate (0 pass or warn, 2 fail or hold).")
    step = _gauge("promptops_rollout_step", "Index of the rollout's current step (0 is the first).")
    weight = _gauge("promptops_rollout_candidate_weight", "Share of units the candidate serves now (0 to 1).")
    window = _gauge("promptops_gate_window_responses", "Responses per arm in the current step's window.")
    rate = _gauge("promptops_gate_metric_rate", "Rate of the metric's indicator per arm in the step's window.")
    lower = _gauge(
        "promptops_gate_metric_rate_lower",
        "One-sided lower bound of the rate at the plan's alpha, by the plan's statistics.",
    )
    upper = _gauge(
        "promptops_gate_metric_rate_upper",
        "One-sided upper bound of the rate at the plan's alpha, by the plan's statistics.",
    )
    slo = _gauge("promptops_gate_metric_slo", "The metric's SLO: the highest acceptable rate.")
    needed = _gauge("promptops_gate_metric_responses_needed", "Candidate responses needed to judge the metric's SLO.")
    responses = _gauge(
        "promptops_gate_metric_responses", "Responses of the arm in the step's window the metric is judged on."
    )
    pending = _gauge(
        "promptops_gate_metric_findings_pending",
        "Findings of the arm with no feedback yet: a usefulness metric judges decided findings only.",
    )
    status = _gauge(
        "promptops_gate_metric_status", "The metric's status in the latest gate (1 for the current, else 0)."
    )
    for rollout in report.rollouts:
        gate = rollout.gate
        base = [("contract", report.contract), ("rollout", rollout.rollout)]
        for name in _VERDICTS:
            verdict.add([*base, ("verdict", name)], int(gate["verdict"] == name))
        exit_code.add(base, gate["exit_code"])
        step.add(base, rollout.step)
        weight.add(base, rollout.weight)
        for arm, n in gate.get("window", {}).get("responses", {}).items():
            window.add([*base, ("arm", arm)], n)
        for metric in _plan_metrics(rollout):
            labels = [*base, ("metric", metric["metric"])]
            slo.add(labels, metric["slo"])
            needed.add(labels, metric["n_needed"])
            for name in _STATUSES:
                status.add([*labels, ("status", name)], int(metric["status"] == name))
            for arm in ARMS:
                estimate = metric["arms"].get(arm)
                has_data = estimate is not None and estimate["n"] > 0
                arm_labels = [*labels, ("arm", arm), ("has_data", "true" if has_data else "false")]
                responses.add(arm_labels, estimate["n"] if has_data else 0)
                rate.add(arm_labels, estimate["rate"] if has_data else math.nan)
                lower.add(arm_labels, estimate["lower"] if has_data else math.nan)
                upper.add(arm_labels, estimate["upper"] if has_data else math.nan)
                if not _rate(metric["metric"]):  # NaN until a gate judged it
                    waiting = metric["pending"].get(arm, 0) if "pending" in metric else math.nan
                    pending.add([*labels, ("arm", arm)], waiting)
    return [verdict, exit_code, step, weight, window, responses, rate, lower, upper, slo, needed, pending, status]


def _plan_metrics(rollout: RolloutView) -> list[dict[str, Any]]:
    """Every metric of the rollout's plan: the gate's result where it judged one, else the SLO alone (a gate
    that skipped or stopped at the parser stage judges no metric, and its families must not vanish)."""
    judged = {m["metric"]: m for m in rollout.gate.get("metrics", [])}
    return [
        judged.get(series.metric)
        or {
            "metric": series.metric,
            "slo": series.slo,
            "n_needed": zero_failure_need(rollout.statistics, series.slo, rollout.alpha) if _rate(series.metric) else 0,
            "status": None,
            "arms": {},
        }
        for series in rollout.series
    ]


def _rate(metric: str) -> bool:
    """A per-response metric (else a usefulness one: findings, not responses, and no zero-failure need)."""
    return catalogue.metric(metric).unit == "response"


def _label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float | int) -> str:
    if isinstance(value, int):  # bool included
        return str(int(value))
    if math.isnan(value):
        return "NaN"  # the exposition format's spelling (Python's repr says nan)
    return repr(float(value))
