"""The README stays an introduction with the exact commands CI runs; generated reference pages cover the code."""

from __future__ import annotations

import importlib.util
import re

import yaml

from promptops.cli import cli
from promptops.lint import RULES
from tests.docs.test_self_contained import all_commands
from tests.helpers import REPO_ROOT

README = REPO_ROOT / "README.md"


def test_the_readme_is_short_and_runs_what_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in text.splitlines() if line.startswith("python3 -m venv") and "[test]" in line)
    # .ci/run installs system components (under CI only), then runs this very line; pytest runs last, so that its
    # summary closes CI's output.
    assert command in ci.splitlines(), "the README's test command is not a line of .ci/run"
    assert command.endswith("&& .venv/bin/mkdocs build --strict && .venv/bin/pytest -q")
    assert "python3 -m venv .venv && .venv/bin/pip install -q -e '.[store]' && .venv/bin/promptops demo" in text


def test_the_readme_links_only_to_pages_that_exist_and_are_in_the_docs_nav() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", text)
    assert links
    nav = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for link in links:
        assert (REPO_ROOT / link).is_file(), link
        if link.startswith("docs/"):
            assert link.removeprefix("docs/") in nav, link


def _nav_pages(items: list[object]) -> list[str]:
    pages: list[str] = []
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            pages += _nav_pages(value)
        elif isinstance(value, str):
            pages.append(value)
    return pages


def test_every_docs_page_is_in_the_nav() -> None:
    # mkdocs.yml names the python handler's tags; a plain safe_load suffices, it has none.
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    docs = REPO_ROOT / "docs"
    # docs/_*.md are sections waiting to be placed (mkdocs.yml excludes them from the site).
    on_disk = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md") if not p.name.startswith("_")}
    assert on_disk <= nav, f"pages missing from the nav: {sorted(on_disk - nav)}"


def test_the_lint_rule_reference_is_generated_from_every_rule() -> None:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO_ROOT / "scripts" / "docs_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (REPO_ROOT / "docs" / "lint-rules.md").read_text(encoding="utf-8")
    rendered: str = hooks.on_page_markdown(page, None, None, None)
    assert "<!-- lint-rules -->" not in rendered
    for rule in RULES:
        assert re.search(rf"^### {rule.code} {re.escape(rule.name)}\b", rendered, re.MULTILINE), rule.code
        assert rule.summary() in rendered
    # every example block of a docstring is a fenced block, never a dangling "::"
    assert not re.search(r"::\s*$", rendered, re.MULTILINE)
    assert rendered.count("```jinja") >= sum(rule.doc().count("::\n") for rule in RULES) > 0


def test_the_cli_reference_covers_every_command() -> None:
    """What the page's mkdocs-click block renders: a section for every command, nested groups included."""
    from mkdocs_click._docs import make_command_docs

    page = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "::: mkdocs-click" in page and ":module: promptops.cli" in page and ":command: cli" in page
    lines = list(make_command_docs("promptops", cli, style="plain", list_subcommands=True))
    sections = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
    expected = [command[-1] if command else "promptops" for command in all_commands()]
    assert sorted(sections) == sorted(expected)
