"""The report in a real browser: headless Chromium, driven over the DevTools protocol by Playwright.

Uses the system's Chromium (``/usr/bin/chromium`` on Debian; the ``chromium`` fixture installs Debian's package
when it is missing), never a downloaded one. Skips only when no Chromium can be found or installed. A screenshot
is kept under the test's temporary directory and, when ``PROMPTOPS_ARTIFACTS`` names a directory, copied there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Error, sync_playwright

from tests.conftest import Cli
from tests.report.conftest import ENUM, IMG, KEY, NOW, SCRIPT, STORE

pytestmark = pytest.mark.slow  # headless Chromium

CONTRACT = "review-result"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

# Per <svg>: how many shapes drew something with a nonzero size (lines count by length).
_DRAWN = """() => Array.from(document.querySelectorAll('svg')).map(svg => {
    const shapes = Array.from(svg.querySelectorAll('path, rect, polygon, circle, line'));
    const drawn = shapes.filter(el => {
        const box = el.getBBox();
        return el.tagName === 'line' ? box.width + box.height > 0 : box.width > 0 && box.height > 0;
    });
    const data = Array.from(svg.querySelectorAll('path, polygon, circle')).filter(el => {
        const box = el.getBBox(); return box.width > 0 || box.height > 0;
    });
    const rect = svg.getBoundingClientRect();
    return {label: svg.getAttribute('aria-label'), drawn: drawn.length, data: data.length,
            width: rect.width, height: rect.height};
})"""


def _on_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """The system Chromium. When it is missing, Debian's package is installed first (as root, with apt-get, as on
    CI's fresh machine); the test skips, saying why, only when that cannot be done."""
    found = _on_path()
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        quiet = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
            done = subprocess.run(command, env=quiet, stdin=subprocess.DEVNULL, capture_output=True, timeout=900)
            if done.returncode != 0:
                print(f"{' '.join(command)} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
                break
        found = _on_path()
    if found is None:
        pytest.skip("no chromium on PATH, and Debian's package could not be installed (needs root and apt-get)")
    return found


def test_the_report_renders_offline_with_every_chart_drawn_and_no_payload_run(
    cli: Cli, report_project: Path, tmp_path: Path, chromium: str
) -> None:
    out = report_project / "reports"
    code, _, err = cli(
        report_project, "report", "--contract", CONTRACT, "--store", str(report_project / STORE),
        "--now", NOW.isoformat(), "--out", str(out),
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads((out / f"{CONTRACT}.json").read_text(encoding="utf-8"))
    gate = summary["rollouts"][0]["gate"]

    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})

            def console(message: ConsoleMessage) -> None:
                if message.type in ("error", "warning"):
                    problems.append(f"console {message.type}: {message.text}")

            def page_error(error: Error) -> None:
                problems.append(f"page error: {error}")

            page.on("console", console)
            page.on("pageerror", page_error)
            page.on("request", lambda request: requests.append(request.url))
            page.goto((out / f"{CONTRACT}.html").as_uri(), wait_until="load")
            page.wait_for_timeout(300)  # give a payload that slipped through its chance to run

            charts: list[dict[str, Any]] = page.evaluate(_DRAWN)
            pwned = page.evaluate("typeof window.__pwned")
            markup = page.evaluate(
                "() => ({img: document.querySelectorAll('img').length,"
                " handlers: document.querySelectorAll('[onerror],[onload]').length,"
                " scripts: Array.from(document.scripts).map(s => s.type)})"
            )
            body = page.inner_text("body")
            drops = page.inner_text("#recent-drops")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()

    artifacts = os.environ.get("PROMPTOPS_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shot = Path(shutil.copy(shot, Path(artifacts) / "report.png"))
    print(f"screenshot: {shot}")

    assert problems == []
    assert requests == [(out / f"{CONTRACT}.html").as_uri()]  # nothing else was fetched
    assert pwned == "undefined"
    assert markup == {"img": 0, "handlers": 0, "scripts": ["application/json"]}
    for payload in (SCRIPT, IMG, ENUM, KEY):
        assert payload in drops
    assert gate["verdict"] in body and gate["sentence"] in body

    rate_charts = [c for c in charts if " rate per " in (c["label"] or "")]
    assert len(rate_charts) == len(summary["rollouts"][0]["series"]) == 5
    assert len(charts) > len(rate_charts)  # progress bars and reason bars too
    for chart in charts:
        assert chart["drawn"] > 0 and chart["width"] > 0 and chart["height"] > 0, chart
    for chart in rate_charts:
        assert chart["data"] >= 2 * 25, chart  # each arm's points, line and band
