"""The SVG charts as markup: well-formed XML in every shape of data, labels escaped, something always drawn."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from promptops.report import charts
from promptops.report.model import Count, MetricSeries, Point
from promptops.rollout.stats import wilson, z_one_sided
from tests.helpers import REPO_ROOT, empty_store

SVG = "{http://www.w3.org/2000/svg}"
T = datetime(2026, 11, 2, tzinfo=UTC)
Z = z_one_sided(0.05)


def _point(hour: int, x: int, n: int) -> Point:
    bounds = wilson(x, n, Z)
    return Point(T + timedelta(hours=hour), n, x, bounds.low, bounds.high)


@pytest.mark.parametrize(
    ("arms", "paths", "circles"),
    [
        ({}, 0, 0),  # no responses yet: the frame, the grid and the SLO line only
        ({"candidate": (_point(0, 1, 10),)}, 0, 1),  # one bucket: a band bar and a point
        ({"candidate": (_point(0, 0, 50), _point(1, 2, 40)), "baseline": (_point(0, 3, 900), _point(1, 5, 800))}, 2, 4),
        ({"candidate": (_point(0, 0, 50), _point(1, 2, 40), _point(5, 1, 30), _point(6, 0, 20))}, 2, 4),  # a gap
        ({"candidate": (_point(0, 10, 10), _point(1, 0, 1))}, 1, 2),  # rates of 100% and 0%
    ],
)
def test_rate_charts_are_well_formed_and_draw_what_they_have(
    arms: dict[str, tuple[Point, ...]], paths: int, circles: int
) -> None:
    series = MetricSeries("dropped_finding", "critical", 0.03, 0.02, arms)
    marks = [(T + timedelta(minutes=30), "promote → step 1"), (T - timedelta(days=3), "outside the range")]
    svg = ET.fromstring(charts.rate_chart(series, bucket="hour", versions={"candidate": "1.1.0"}, marks=marks))
    assert svg.tag == f"{SVG}svg" and svg.get("aria-label") == "dropped finding rate per hour, SLO 3.00%"
    assert len(svg.findall(f"{SVG}path")) == paths and len(svg.findall(f"{SVG}circle")) == circles
    frame = svg.find(f"{SVG}rect")
    assert frame is not None and float(frame.get("width", 0)) > 0 and float(frame.get("height", 0)) > 0
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "SLO 3.00%" in texts and "candidate 1.1.0" in texts
    assert ("promote → step 1" in texts) == bool(arms) and "outside the range" not in texts
    for circle in svg.iter(f"{SVG}circle"):
        tip = circle.find(f"{SVG}title")
        assert tip is not None and tip.text is not None and " of " in tip.text
    for y in [float(c.get("cy", -1)) for c in svg.iter(f"{SVG}circle")]:
        assert 0 <= y <= 250  # inside the drawing, even at 100%


def test_labels_that_look_like_markup_stay_text() -> None:
    label = '<script>alert(1)</script> & "quotes"'
    svg = ET.fromstring(charts.bars([Count(label, 3), Count("b" * 80, 1)], label))
    assert [t.text for t in svg.iter(f"{SVG}title")][:2] == [label, label]
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert texts[0] == label and texts[2] == "b" * 47 + "…"
    assert not list(svg.iter(f"{SVG}script")) and not list(svg.iter("script"))


@pytest.mark.parametrize(("n", "needed", "fraction"), [(0, 299, 0.0), (150, 300, 0.5), (900, 299, 1.0)])
def test_progress_bars_fill_to_the_share_reached(n: int, needed: int, fraction: float) -> None:
    svg = ET.fromstring(charts.progress(n, needed, "candidate"))
    track, fill = svg.findall(f"{SVG}rect")
    assert float(fill.get("width", -1)) == pytest.approx(float(track.get("width", 0)) * fraction)
    assert fill.get("class") == ("done" if n >= needed else "fill")


@pytest.mark.parametrize(("status", "tone"), [("fail", "bad"), ("warn", "fill"), ("pass", "done"), (None, "done")])
def test_a_full_bar_on_a_failing_metric_is_not_green(status: str | None, tone: str) -> None:
    svg = ET.fromstring(charts.progress(900, 299, "candidate", status))
    assert svg.findall(f"{SVG}rect")[1].get("class") == tone


def test_progress_needing_nothing_says_so() -> None:
    svg = ET.fromstring(charts.progress(0, 0, "baseline"))
    assert [t.text for t in svg.iter(f"{SVG}text")] == ["0 (none needed)"]


def _mark_labels(svg: ET.Element) -> list[tuple[float, float, str]]:
    return [
        (float(t.get("x", 0)), float(t.get("y", 0)), t.text or "")
        for t in svg.iter(f"{SVG}text")
        if t.get("class") == "mark-label"
    ]


def test_mark_labels_close_together_take_separate_rows_and_far_ones_share_one() -> None:
    series = MetricSeries(
        "dropped_finding", "critical", 0.03, None, {"candidate": (_point(0, 1, 99), _point(47, 1, 99))}
    )
    close = [(T + timedelta(hours=h), f"promote → step {i}") for i, h in enumerate((20, 24, 26), start=1)]
    labels = _mark_labels(ET.fromstring(charts.rate_chart(series, bucket="hour", versions={}, marks=close)))
    assert len({y for _, y, _ in labels}) == 3  # each would overlap the one before: three rows
    far = [(T + timedelta(hours=h), f"promote → step {i}") for i, h in enumerate((2, 40), start=1)]
    labels = _mark_labels(ET.fromstring(charts.rate_chart(series, bucket="hour", versions={}, marks=far)))
    assert len({y for _, y, _ in labels}) == 1


@pytest.mark.parametrize("slo", [0.005, 0.01, 0.02, 0.03, 0.05, 0.2, 0.5, 0.9])
def test_the_empty_chart_note_never_sits_on_the_slo_line(slo: float) -> None:
    svg = ET.fromstring(
        charts.rate_chart(MetricSeries("coercion", "warning", slo, None, {}), bucket="day", versions={})
    )
    line = next(e for e in svg.iter(f"{SVG}line") if e.get("class") == "slo")
    note = next(e for e in svg.iter(f"{SVG}text") if e.get("class") == "empty")
    assert abs(float(note.get("y", 0)) - 4 - float(line.get("y1", 0))) > 30  # 13px text, well clear of the line


@pytest.mark.parametrize(
    ("command", "loaded"),
    [
        ("['rollout', 'gate', 'rollout/review-result/review-1.1.yaml', '--store', STORE]", "[]"),
        (
            "['report', '--contract', 'review-result', '--store', STORE, '--format', 'prom', '--out', OUT]",
            "['promptops.report', 'promptops.report.gather', 'promptops.report.model', 'promptops.report.prom', "
            "'promptops.report.write']",
        ),
    ],
)
def test_the_gate_never_loads_the_report_and_the_prom_export_never_loads_jinja(
    command: str, loaded: str, tmp_path: Path
) -> None:
    store = empty_store(tmp_path / "empty.duckdb")  # an empty store: the gate and the report judge no data
    probe = (
        f"import sys; from promptops.cli import run; OUT = {str(tmp_path)!r}; STORE = {store!r}; "
        f"code = run({command}); "
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('jinja2', 'markupsafe') "
        "or m.split('.')[:2] == ['promptops', 'report']))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == f"0 {loaded}"
