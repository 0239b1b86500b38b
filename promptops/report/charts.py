"""Charts as inline SVG strings: drawn by the browser with no script, no font or file to fetch.

Every element goes through ``_el``, which escapes each attribute value and text node; a chart can only embed
other ``Svg`` values as children, so no string reaches the markup unescaped (labels may be model text, such as
a field path). Every chart has a frame rectangle, so even an empty one draws something.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import NewType

from promptops.report.model import Count, MetricSeries, Point

Svg = NewType("Svg", str)  # markup built by this module only: escaped throughout

NONE = "\u2013"  # an en dash: no value
COLORS = {"candidate": "#d9480f", "baseline": "#1c6fc2"}
_WIDTH, _HEIGHT = 720, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 14, 26, 40
_NOMINAL = {
    "hour": timedelta(hours=1),
    "day": timedelta(days=1),
    "week": timedelta(days=7),
    "month": timedelta(days=31),
}


def _el(tag: str, attrs: Mapping[str, object], *children: Svg, text: str | None = None) -> Svg:
    """One element; attribute names use ``_`` for ``-``; None values are left out."""
    attributes = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{html.escape(_attr(value), quote=True)}"'
        for name, value in attrs.items()
        if value is not None
    )
    inner = (html.escape(text, quote=False) if text is not None else "") + "".join(children)
    return Svg(f"<{tag}{attributes}>{inner}</{tag}>")


def _text(x: float, y: float, css: str, text: str, anchor: str | None = None, *children: Svg) -> Svg:
    """A text element at (``x``, ``y``) of class ``css``; ``anchor`` is its text-anchor (None: the start)."""
    return _el("text", {"x": x, "y": y, "text_anchor": anchor, "class": css}, *children, text=text)


def _attr(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".")
    return str(value)


def _svg(width: int, height: int, label: str, *children: Svg) -> Svg:
    return _el(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "width": width,
            "height": height,
            "viewBox": f"0 0 {width} {height}",
            "role": "img",
            "aria_label": label,
            "class": "chart",
        },
        _el("title", {}, text=label),
        *children,
    )


def pct(value: float | None, digits: int = 2) -> str:
    return NONE if value is None else f"{value * 100:.{digits}f}%"


def rate_chart(
    series: MetricSeries,
    *,
    bucket: str,
    versions: Mapping[str, str],
    marks: Sequence[tuple[datetime, str]] = (),
) -> Svg:
    """The metric's rate per bucket for each arm, its one-sided Wilson band, the SLO line and step changes.

    ``versions`` labels the arms in the legend (arm -> prompt version); ``marks`` are (time, label) lines.
    """
    label = f"{series.metric.replace('_', ' ')} rate per {bucket}, SLO {pct(series.slo)}"
    inner_w, inner_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM
    points = [p for arm in series.arms.values() for p in arm]
    width = _NOMINAL.get(bucket, timedelta(days=1))
    parts: list[Svg] = [
        _el("rect", {"x": _LEFT, "y": _TOP, "width": inner_w, "height": inner_h, "class": "frame"}),
    ]
    top = _nice_ceiling(
        max([series.slo * 1.6] + [p.x / p.n * 1.25 for p in points if p.n] + [p.lower * 1.1 for p in points])
    )

    def y(rate: float) -> float:
        return _TOP + inner_h * (1 - min(rate, top) / top)

    for i in range(5):
        tick = top * i / 4
        parts.append(_el("line", {"x1": _LEFT, "x2": _LEFT + inner_w, "y1": y(tick), "y2": y(tick), "class": "grid"}))
        parts.append(_text(_LEFT - 6, y(tick) + 4, "tick", _tick(tick), "end"))
    if points:
        start = min(p.start for p in points)
        end = max(p.start for p in points) + width
        span = (end - start).total_seconds()

        def x(moment: datetime) -> float:
            return _LEFT + inner_w * min(max((moment - start).total_seconds() / span, 0.0), 1.0)

        rows: list[list[tuple[float, float]]] = []  # the spans of the labels already placed, row by row
        for moment, text in marks:
            if start <= moment <= end:
                parts.append(
                    _el("line", {"x1": x(moment), "x2": x(moment), "y1": _TOP, "y2": _TOP + inner_h, "class": "mark"})
                )
                # Labels in the right half read leftwards, so a late mark's label stays inside the plot.
                right = x(moment) > _LEFT + inner_w / 2
                at = x(moment) + (-3 if right else 3)
                reach = _MARK_CHAR * len(text)
                row = _free_row(rows, (at - reach, at) if right else (at, at + reach))
                parts.append(_text(at, _TOP + 11 + _MARK_ROW * row, "mark-label", text, "end" if right else None))
        for arm in ("baseline", "candidate"):
            for run in _runs(series.arms.get(arm, ()), width):
                parts += _arm_run(run, arm, x, y, width)
        for moment, anchor in ((start, "start"), (start + (end - start) / 2, "middle"), (end, "end")):
            parts.append(_text(x(moment), _HEIGHT - _BOTTOM + 16, "tick", _when(moment, bucket), anchor))
    slo_y = y(series.slo)
    if not points:
        # In the half of the plot the SLO line does not cross, so the two never overlap
        empty_y = _TOP + inner_h * (0.75 if slo_y < _TOP + inner_h / 2 else 0.25) + 4
        empty = "no responses of this rollout in the store yet"
        parts.append(_text(_LEFT + inner_w / 2, empty_y, "empty", empty, "middle"))
    parts.append(_el("line", {"x1": _LEFT, "x2": _LEFT + inner_w, "y1": slo_y, "y2": slo_y, "class": "slo"}))
    parts.append(_text(_LEFT + inner_w - 4, slo_y - 4, "slo-label", f"SLO {pct(series.slo)}", "end"))
    legend_x = _LEFT
    for arm in ("candidate", "baseline"):
        text = f"{arm} {versions.get(arm, '')}".strip()
        parts.append(_el("rect", {"x": legend_x, "y": 8, "width": 12, "height": 10, "fill": COLORS[arm]}))
        parts.append(_text(legend_x + 16, 17, "legend", text))
        legend_x += 24 + 7 * len(text)
    note = f"per {bucket} (UTC); bands: one-sided Wilson bounds"
    parts.append(_text(_LEFT + inner_w, _HEIGHT - 6, "note", note, "end"))
    return _svg(_WIDTH, _HEIGHT, label, *parts)


_MARK_CHAR, _MARK_ROW = 6.2, 12  # a mark label's width per character (10.5px sans-serif) and its row height


def _free_row(rows: list[list[tuple[float, float]]], span: tuple[float, float]) -> int:
    """The first row where ``span`` overlaps no label already placed; the span is recorded there."""
    for index, taken in enumerate(rows):
        if all(span[1] + 4 <= left or right + 4 <= span[0] for left, right in taken):
            taken.append(span)
            return index
    rows.append([span])
    return len(rows) - 1


def _runs(points: Sequence[Point], width: timedelta) -> list[list[Point]]:
    """Consecutive buckets together: a gap (no responses of that arm) breaks the line and the band."""
    runs: list[list[Point]] = []
    for point in points:
        if runs and point.start - runs[-1][-1].start <= width * 1.5:
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


def _arm_run(
    run: list[Point], arm: str, x: Callable[[datetime], float], y: Callable[[float], float], width: timedelta
) -> list[Svg]:
    color = COLORS[arm]
    mids = [x(p.start + width / 2) for p in run]
    upper = [f"{mx:.1f},{y(p.upper):.1f}" for mx, p in zip(mids, run, strict=True)]
    lower = [f"{mx:.1f},{y(p.lower):.1f}" for mx, p in zip(mids, run, strict=True)]
    parts: list[Svg] = []
    if len(run) == 1:
        half = max(2.0, (x(run[0].start + width) - x(run[0].start)) / 4)
        top, bottom = y(run[0].upper), y(run[0].lower)
        parts.append(
            _el(
                "rect",
                {
                    "x": mids[0] - half,
                    "y": top,
                    "width": 2 * half,
                    "height": max(bottom - top, 1.0),
                    "fill": color,
                    "class": "band",
                },
            )
        )
    else:
        parts.append(_el("polygon", {"points": " ".join(upper + lower[::-1]), "fill": color, "class": "band"}))
        line = " ".join(
            f"{'M' if i == 0 else 'L'}{mx:.1f},{y(p.x / p.n):.1f}"
            for i, (mx, p) in enumerate(zip(mids, run, strict=True))
        )
        parts.append(_el("path", {"d": line, "stroke": color, "class": "line"}))
    for mx, point in zip(mids, run, strict=True):
        tip = (
            f"{arm} {point.start:%Y-%m-%d %H:%M}: {point.x:,} of {point.n:,} = {pct(point.rate)} "
            f"[{pct(point.lower)}, {pct(point.upper)}]"
        )
        parts.append(
            _el("circle", {"cx": mx, "cy": y(point.x / point.n), "r": 2.6, "fill": color}, _el("title", {}, text=tip))
        )
    return parts


def progress(n: int, needed: int, label: str, status: str | None = None) -> Svg:
    """A bar of ``n`` against the ``needed`` responses (full once reached). Its colour is the metric's
    ``status`` where that is bad news: a full bar on a failing metric must not read as a good sign."""
    width, height = 260, 16
    done = 1.0 if needed <= 0 else min(n / needed, 1.0)
    if needed <= 0:
        text = f"{n:,} (none needed)"
    else:
        text = f"{n:,} of {needed:,} needed" if n < needed else f"{n:,} (needed {needed:,})"
    tone = {"fail": "bad", "warn": "fill"}.get(status or "", "done" if n >= needed else "fill")
    return _svg(
        width + 170,
        height,
        f"{label}: {text}",
        _el("rect", {"x": 0, "y": 0, "width": width, "height": height, "class": "track"}),
        _el(
            "rect",
            {"x": 0, "y": 0, "width": width * done, "height": height, "class": tone},
        ),
        _text(width + 6, 12, "legend", text),
    )


def bars(counts: Sequence[Count], label: str, color: str = "#5c677d") -> Svg:
    """Horizontal bars, one per count, longest first as given; labels are cut to 48 characters."""
    row, label_w, bar_w = 20, 260, 220
    height = row * len(counts) + 4
    most = max((c.count for c in counts), default=1) or 1
    parts: list[Svg] = [
        _el("rect", {"x": 0, "y": 0, "width": label_w + bar_w + 80, "height": height, "class": "frame"})
    ]
    for i, count in enumerate(counts):
        top = 2 + i * row
        name = count.label if len(count.label) <= 48 else count.label[:47] + "…"
        parts.append(_text(label_w - 6, top + 14, "legend", name, "end", _el("title", {}, text=count.label)))
        parts.append(
            _el(
                "rect",
                {
                    "x": label_w,
                    "y": top + 3,
                    "width": max(bar_w * count.count / most, 1.0),
                    "height": row - 6,
                    "fill": color,
                },
            )
        )
        parts.append(_text(label_w + bar_w * count.count / most + 6, top + 14, "legend", f"{count.count:,}"))
    return _svg(label_w + bar_w + 80, height, label, *parts)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above ``value`` (capped at 100%)."""
    if value <= 0:
        return 0.01
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value * (1 - 1e-9):
            return min(step * power, 1.0)
    return 1.0  # pragma: no cover - the loop always returns


def _tick(rate: float) -> str:
    """A percentage with no trailing zeros: 0%, 1.25%, 2.5%, 10%."""
    return f"{rate * 100:.3f}".rstrip("0").rstrip(".") + "%"


def _when(moment: datetime, bucket: str) -> str:
    return f"{moment:%m-%d %H:%M}" if bucket == "hour" else f"{moment:%Y-%m-%d}"
