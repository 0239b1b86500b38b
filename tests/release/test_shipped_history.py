"""The review-result history this repository ships, cut with ``promptops release cut`` itself: it verifies,
its recorded classes are what the checker computes, and contract.yaml's policy relates to it as documented."""

from __future__ import annotations

import json
from pathlib import Path

from promptops import load_contract
from promptops.release import classify_prompt, load_lock, rendered_contract
from promptops.render.renderer import SAMPLE_CHANGED_FILES, SAMPLE_DIFF, Renderer
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.release.conftest import cut


def test_the_shipped_lock_verifies_and_lints(cli: Cli) -> None:
    assert cli(REPO_ROOT, "release", "verify") == (
        0,
        "versions/review-result/releases.yaml: 4 releases, 14 artifacts: ok\n",
        "",
    )
    code, out, _ = cli(REPO_ROOT, "lint", str(REPO_ROOT / "templates"), str(REPO_ROOT / "versions"))
    assert code == 0, out


def test_the_history_has_a_patch_and_a_minor_over_schema_1_0_and_1_1() -> None:
    lock = load_lock(REPO_ROOT, "review-result")
    assert [(str(r.version), str(r.schema_version), r.prompt_class, r.schema_class) for r in lock.releases] == [
        ("1.0.0", "1.0", "initial", "initial"),
        ("1.0.1", "1.0", "patch", "unchanged"),
        ("1.1.0", "1.1", "minor", "minor"),
        ("1.1.1", "1.1", "patch", "unchanged"),
    ]


def test_recorded_prompt_classes_are_what_the_checker_computes() -> None:
    contract = load_contract(REPO_ROOT, "review-result")
    renderer = Renderer(REPO_ROOT)
    lock = load_lock(REPO_ROOT, "review-result")
    contracts = [
        rendered_contract(
            renderer.render(contract, version=r.version, changed_files=SAMPLE_CHANGED_FILES, diff=SAMPLE_DIFF).text,
            contract.shape(r.schema_version),
        )
        for r in lock.releases
    ]
    for previous, current, release in zip(contracts, contracts[1:], lock.releases[1:], strict=False):
        assert classify_prompt(previous, current).change == release.prompt_class, release.version


def test_policy_pins_a_served_release_and_the_head_pins_the_latest() -> None:
    contract = load_contract(REPO_ROOT, "review-result")
    lock = load_lock(REPO_ROOT, "review-result")
    latest = lock.latest
    assert latest is not None
    policy = contract.default_policy
    assert lock.get(policy.prompt_version) is not None  # the default parser serves a released prompt
    assert policy.schema_floor == min(r.schema_version for r in lock.releases)  # both schemas still served
    pins = Renderer(REPO_ROOT).pins(REPO_ROOT / "templates" / "review-result.j2")
    assert (pins.prompt_version, pins.schema_version) == (latest.version, latest.schema_version)


def test_cutting_the_shipped_head_again_is_refused(full_project: Path, cli: Cli) -> None:
    code, out, _ = cut(cli, full_project, "--format", "json")
    assert code == 2
    assert json.loads(out)["refusals"] == [
        f"prompt 1.1.1 is already released ({load_lock(REPO_ROOT, 'review-result').releases[3].date}): pin a new "
        "prompt_version in templates/review-result.j2 (released versions are immutable)"
    ]


def test_the_shipped_matrix(cli: Cli) -> None:
    code, out, _ = cli(REPO_ROOT, "compat", "matrix", "--contract", "review-result", "--format", "json")
    assert code == 0
    accepted = {(c["floor"], c["prompt_version"]): c["reading"] for c in json.loads(out)["cells"]}
    assert accepted == {
        ("1.0", "1.0.0"): "exact",
        ("1.0", "1.0.1"): "exact",
        ("1.0", "1.1.0"): "tolerant",
        ("1.0", "1.1.1"): "tolerant",
        ("1.1", "1.0.0"): "rejected",
        ("1.1", "1.0.1"): "rejected",
        ("1.1", "1.1.0"): "exact",
        ("1.1", "1.1.1"): "exact",
    }
