"""The packaged defaults and this repository's own copies say the same thing.

This repository is itself a promptops project whose review-result contract has releases (their locks pin its
schema files byte for byte), so it keeps its own versions/ and templates/ (the project's files win). These
tests keep the two from drifting apart: same contracts, and heads that render the same with either partials.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from promptops import defaults
from promptops.core.contract import load_contract, project_contracts
from promptops.merge.report_filter import report_filter
from promptops.parsing.semantics import merge_semantics
from promptops.parsing.tiers import tiers
from promptops.render.renderer import Renderer
from tests.helpers import REPO_ROOT


def test_every_builtin_is_a_contract_of_this_repository() -> None:
    assert defaults.builtin_contracts() == project_contracts(REPO_ROOT)


@pytest.mark.parametrize("name", defaults.builtin_contracts())
def test_the_packaged_contract_equals_the_repository_copy(name: str, tmp_path: Path) -> None:
    ours = load_contract(REPO_ROOT, name)
    packaged = load_contract(tmp_path, name)  # an empty project: the packaged contract
    assert packaged.directory == f"<promptops>/versions/{name}"
    for field in ("items", "roles", "versions", "null_means_absent", "coercions", "default_policy"):
        assert getattr(packaged, field) == getattr(ours, field), field
    for section in (tiers, report_filter, merge_semantics):
        assert section(packaged) == section(ours), section.__name__
    for version, rel in ours.schema_files.items():
        mine = json.loads((REPO_ROOT / rel).read_text(encoding="utf-8"))
        shipped = json.loads((defaults.contracts_dir() / name / "schemas" / f"{version}.json").read_text("utf-8"))
        mine.pop("$comment", None)
        shipped.pop("$comment", None)
        assert shipped == mine


@pytest.mark.parametrize("name", defaults.builtin_contracts())
def test_heads_render_the_same_with_the_packaged_partials(name: str, tmp_path: Path) -> None:
    shutil.copytree(REPO_ROOT / "versions", tmp_path / "versions")
    (tmp_path / "templates").mkdir()
    shutil.copy(REPO_ROOT / "templates" / f"{name}.j2", tmp_path / "templates" / f"{name}.j2")
    contract = load_contract(REPO_ROOT, name)
    ours = Renderer(REPO_ROOT).render(contract, changed_files=["a.py"], diff="+x\n")
    packaged = Renderer(tmp_path).render(contract, changed_files=["a.py"], diff="+x\n")
    assert {s["origin"] for s in packaged.sources[1:]} == {"package"}
    assert packaged.text == ours.text
    shipped_head = (defaults.heads_dir() / f"{name}.j2").read_text(encoding="utf-8")
    (tmp_path / "templates" / f"{name}.j2").write_text(shipped_head, encoding="utf-8")
    assert Renderer(tmp_path).render(contract, changed_files=["a.py"], diff="+x\n").text == ours.text
