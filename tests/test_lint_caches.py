"""The caches of what lint derives from its inputs (promptops.lint.cache): keyed by content, a damaged entry is
a miss, findings never cached. The parsed-template cache is covered in test_lint_cli."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jinja2 import FileSystemBytecodeCache

from promptops.core.contract import load_contract
from promptops.core.errors import ContractError
from promptops.core.lock import LockError, load_lock
from promptops.lint import RULES_BY_CODE, LintConfig, LintConfigError, lint, parse_config
from promptops.lint import contracts as contract_cache
from promptops.lint.rules import UNSUPPRESSIBLE
from tests.conftest import REPO

CONTRACT = "versions/review-result/contract.yaml"


def _entries(directory: Path, kind: str) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.startswith(f"promptops-{kind}-"))


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_contract_cache_is_keyed_by_the_contract_files(project: Path, tmp_path: Path) -> None:
    cache_dir = tmp_path / "jinja-cache"
    cache_dir.mkdir()

    def run() -> list[str]:
        report = lint(project, [], bytecode_cache=FileSystemBytecodeCache(str(cache_dir)))
        return [f"{f.code} {f.message}" for f in report.findings]

    assert run() == []
    assert len(_entries(cache_dir, "contract")) == 1
    assert contract_cache.load(project, "review-result", str(cache_dir)) == load_contract(
        project, "review-result", check_schemas=False
    )
    assert run() == []  # a hit
    _edit(project, CONTRACT, 'prompt_version: "1.0.0"', 'prompt_version: "1.0.1"')
    assert [m.split(" ")[0] for m in run()] == ["PO001"]  # the edited contract is read, not the cached one
    assert len(_entries(cache_dir, "contract")) == 2
    schema = project / "versions/review-result/schemas/1.0.json"
    (schema.parent / "1.1.json").write_bytes(schema.read_bytes())  # a new schema file: a new entry
    assert contract_cache.load(project, "review-result", str(cache_dir)).schema_versions[-1].minor == 1
    assert len(_entries(cache_dir, "contract")) == 3


def test_contract_cache_damaged_entry_failing_contract_and_changed_loader(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = str(tmp_path)
    fresh = load_contract(project, "review-result", check_schemas=False)
    assert contract_cache.load(project, "review-result", cache_dir) == fresh
    for damage in (b"not a pickle", pickle.dumps("not a contract")):
        for entry in _entries(tmp_path, "contract"):
            entry.write_bytes(damage)
        assert contract_cache.load(project, "review-result", cache_dir) == fresh  # loaded again, never an error
    monkeypatch.setattr(contract_cache, "_loader_stamp", lambda: "an edited loader module")
    assert contract_cache.load(project, "review-result", cache_dir) == fresh
    assert len(_entries(tmp_path, "contract")) == 2  # a changed loader is a miss
    _edit(project, CONTRACT, "null_means_absent:", "null_mean_absent:")
    for _ in range(2):  # a contract that fails to load fails every run: errors are not cached
        with pytest.raises(ContractError, match="unknown key"):
            contract_cache.load(project, "review-result", cache_dir)
    assert len(_entries(tmp_path, "contract")) == 2


def test_contract_cache_loader_files_hold_every_module_load_contract_uses() -> None:
    modules = "(m for n, m in sys.modules.items() if n.startswith('promptops.'))"  # not the root package
    probe = f"import sys, promptops.core.contract; print(*(m.__file__ for m in {modules}))"
    completed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    loaded = {Path(file).resolve() for file in completed.stdout.split()}
    assert len(loaded) > 10  # promptops.core.contract and what it imports, not just the package
    assert loaded - {path.resolve() for path in contract_cache.loader_files()} == set()


def test_config_cache_is_keyed_by_the_text_and_a_damaged_entry_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "jinja-cache"
    cache_dir.mkdir()

    def read(text: str) -> LintConfig:
        return parse_config(text, "pyproject.toml", RULES_BY_CODE, UNSUPPRESSIBLE, cache_dir=str(cache_dir))

    text = "[tool.promptops.lint]\nignore = ['PO004']\nrender-context = { when = 2026-11-22T10:00:00Z }\n"
    cold = read(text)
    assert len(_entries(cache_dir, "config")) == 1
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "tomllib", None)  # a hit never parses TOML: importing it would fail here
        assert read(text) == cold
    assert read(text.replace("PO004", "PO006")).ignore == ("PO006",)  # edited text: a new entry
    assert len(_entries(cache_dir, "config")) == 2
    assert read("[project]\nname = 'x'\n") == read("[project]\nname = 'x'\n") == LintConfig()  # no table
    with pytest.raises(LintConfigError, match="unknown rule code or prefix 'PO999'"):  # a cached table is checked
        read("[tool.promptops.lint]\nignore = ['PO999']\n")
    with pytest.raises(LintConfigError, match="unknown rule code or prefix 'PO999'"):
        read("[tool.promptops.lint]\nignore = ['PO999']\n")
    for damage in (b"not a pickle", pickle.dumps("not a table entry")):
        for entry in _entries(cache_dir, "config"):
            entry.write_bytes(damage)
        assert read(text) == cold  # a damaged entry is parsed again, never an error
    with pytest.raises(LintConfigError, match="invalid TOML"):
        read("[tool.promptops.lint\n")


def test_contract_cache_holds_only_contracts_whose_sections_read_clean(project: Path, tmp_path: Path) -> None:
    cache_dir = str(tmp_path)
    _edit(project, CONTRACT, "null_means_absent:", "tiers: 5\nnull_means_absent:")  # loads; its tiers do not
    for _ in range(2):  # fails every run: such an entry would let the next run skip the check
        with pytest.raises(ContractError, match="tiers"):
            contract_cache.load(project, "review-result", cache_dir)
    assert _entries(tmp_path, "contract") == []


def test_contract_cache_hit_neither_parses_contract_yaml_nor_imports_the_feature_readers(
    project: Path, tmp_path: Path
) -> None:
    probe = (
        "import sys; from pathlib import Path; from promptops.lint import contracts; "
        f"c = contracts.load(Path({str(project)!r}), 'review-result', {str(tmp_path)!r}); "
        "print(c.name, sorted(m for m in sys.modules if m.endswith(('report_filter', 'semantics', 'tiers'))))"
    )

    readers = "['promptops.merge.report_filter', 'promptops.parsing.semantics', 'promptops.parsing.tiers']"
    assert _probe(probe) == f"review-result {readers}"  # a miss: loaded and its sections read
    assert len(_entries(tmp_path, "contract")) == 1
    assert _probe(probe) == "review-result []"  # a hit


def test_lock_cache_is_keyed_by_the_lock_bytes_and_holds_only_loaded_locks(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_file = "versions/review-result/releases.yaml"
    shutil.copy(REPO / lock_file, project / lock_file)
    cache_dir = str(tmp_path)
    fresh = load_lock(project, "review-result")
    assert fresh.exists and contract_cache.lock(project, "review-result", cache_dir) == fresh
    assert len(_entries(tmp_path, "lock")) == 1
    with monkeypatch.context() as patch:
        patch.setattr(contract_cache, "load_lock", None)  # a hit never parses the lock: calling this would fail
        assert contract_cache.lock(project, "review-result", cache_dir) == fresh
    for damage in (b"not a pickle", pickle.dumps("not a lock")):
        for entry in _entries(tmp_path, "lock"):
            entry.write_bytes(damage)
        assert contract_cache.lock(project, "review-result", cache_dir) == fresh  # parsed again, never an error
    _edit(project, lock_file, "note: ReviewResult schema 1.0", "note: The ReviewResult schema 1.0")
    edited = contract_cache.lock(project, "review-result", cache_dir)
    assert edited.releases[0].note.startswith("The ") and edited == load_lock(project, "review-result")
    assert len(_entries(tmp_path, "lock")) == 2
    _edit(project, lock_file, "lock_version: 1", "lock_version: 2")
    for _ in range(2):  # a lock that fails to load fails every run
        with pytest.raises(LockError, match="lock_version"):
            contract_cache.lock(project, "review-result", cache_dir)
    assert len(_entries(tmp_path, "lock")) == 2
    assert contract_cache.lock(project, "agent-output", cache_dir) == load_lock(project, "agent-output")  # no lock


def test_a_warm_lint_never_imports_pyyaml(project: Path, tmp_path: Path) -> None:
    # PyYAML's import is a large part of a short run: a warm run reads contracts and locks from the cache
    lock_file = "versions/review-result/releases.yaml"
    shutil.copy(REPO / lock_file, project / lock_file)
    probe = (
        "import sys; from pathlib import Path; from jinja2 import FileSystemBytecodeCache; import promptops.cli.lint; "
        "from promptops.lint import lint; "
        f"report = lint(Path({str(project)!r}), [], bytecode_cache=FileSystemBytecodeCache({str(tmp_path)!r})); "
        "print(len(report.files), 'yaml' in sys.modules)"
    )

    cold = _probe(probe)
    assert cold.endswith(" True")  # a cold run parses contract.yaml and releases.yaml
    assert _probe(probe) == cold.replace("True", "False")


def _probe(code: str) -> str:
    """What ``python -c code`` prints, run from the repository in a process of its own."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip()
