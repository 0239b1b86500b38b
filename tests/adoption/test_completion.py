"""Shell completion through click's real protocol: the installed ``promptops`` script, run with
``_PROMPTOPS_COMPLETE`` and the words typed so far, as bash, zsh and fish call it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SCRIPT = Path(sys.executable).with_name("promptops")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(REPO_ROOT / "versions" / "review-result", tmp_path / "versions" / "review-result")
    plan = tmp_path / "rollout" / "review-result"
    plan.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "rollout" / "review-result" / "review-1.1.yaml", plan / "review-1.1.yaml")
    return tmp_path


def _complete(root: Path, shell: str, words: str) -> list[str]:
    """The completions of the last word of ``words`` (empty when it ends with a space)."""
    parts = words.split(" ")
    env = {**os.environ, "_PROMPTOPS_COMPLETE": f"{shell}_complete", "COMP_WORDS": words}
    # bash and zsh give the index of the word being completed; fish gives the partial word itself.
    env["COMP_CWORD"] = parts[-1] if shell == "fish" else str(len(parts) - 1)
    done = subprocess.run([str(SCRIPT)], cwd=root, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    if shell == "zsh":  # type, value, help: three lines per item
        lines = done.stdout.split("\n")
        return [lines[i + 1] for i in range(0, len(lines) - 2, 3)]
    return [line.split(",", 1)[1].split("\t")[0] for line in done.stdout.splitlines()]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_contract_names_complete_with_the_packaged_ones(root: Path, shell: str) -> None:
    everything = ["agent-output", "code-review-findings", "review-result", "reviewer-finding"]
    assert _complete(root, shell, "promptops render --contract ") == everything
    assert _complete(root, shell, "promptops validate --contract rev") == ["review-result", "reviewer-finding"]
    assert _complete(root, shell, "promptops rollout new re") == ["review-result", "reviewer-finding"]


@pytest.mark.parametrize("shell", ["bash", "fish"])
def test_rollout_plans_and_rule_codes_complete(root: Path, shell: str) -> None:
    assert _complete(root, shell, "promptops rollout gate ") == ["rollout/review-result/review-1.1.yaml"]
    assert _complete(root, shell, "promptops rollout status roll") == ["rollout/review-result/review-1.1.yaml"]
    assert _complete(root, shell, "promptops lint --explain PO00") == [f"PO00{n}" for n in range(10)]
    assert _complete(root, shell, "promptops contract new x --from code") == ["code-review-findings"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_its_script(shell: str) -> None:
    env = {**os.environ, "_PROMPTOPS_COMPLETE": f"{shell}_source"}
    done = subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, check=True)
    assert "_PROMPTOPS_COMPLETE" in done.stdout
