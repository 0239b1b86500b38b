"""Contracts as lint reads them (``load_contract(..., check_schemas=False)``), kept across runs by content.

A loaded contract depends only on its own files (contract.yaml and schemas/*.json) and on the code that compiles
them. An entry's key is the exact bytes of the contract's files, the size and modification time of each loader
module and of PyYAML's package file (what Python's own bytecode cache checks; PyYAML itself is not imported on a
hit) and the Python version, so an edited contract, an added or removed schema file, a changed loader or PyYAML is a
miss and is loaded afresh (see ``promptops.lint.cache`` for where entries live). Only contracts that load and whose
features' sections of contract.yaml read clean (``_sections``) are cached, and the feature modules that read them
are part of the key: a contract that fails either way raises on every run, and a hit needs neither those modules nor
a parse of contract.yaml. Release locks (``lock``) are kept the same way, keyed by the bytes of releases.yaml: a hit
spares the YAML composer and the lock's checks.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Callable
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TypeVar, cast

from promptops import core, defaults, merge, parsing
from promptops.core import errors, strict_yaml
from promptops.core.contract import CONTRACT_FILE, Contract, load_contract, locate_contract
from promptops.core.lock import ReleaseLock, load_lock, lock_path
from promptops.lint import cache

_FORMAT = "2"  # 2: an entry holds a contract whose sections read clean
T = TypeVar("T")


def load(root: Path, name: str, cache_dir: str | None) -> Contract:
    """``load_contract(root, name, check_schemas=False)``, from the cache when nothing it reads has changed."""
    key = _key(root, name) if cache_dir is not None else None
    if cache_dir is None or key is None:
        return _sections(load_contract(root, name, check_schemas=False))
    return _kept(  # stored only once its sections read clean, by the modules the key names
        cache_dir,
        "contract",
        name,
        key,
        lambda: _key(root, name),
        lambda: _sections(load_contract(root, name, check_schemas=False)),
        lambda cached: isinstance(cached, Contract) and cached.name == name,
    )


def lock(root: Path, name: str, cache_dir: str | None) -> ReleaseLock:
    """``load_lock(root, name)``, from the cache when the lock file's bytes and the loader are unchanged (a
    lock that fails to load raises on every run: only loaded locks are kept)."""
    path = lock_path(root, name)
    key = _digests([path]) if cache_dir is not None and os.path.lexists(path) else None
    if cache_dir is None or key is None:
        return load_lock(root, name)  # which names the problem, if there is one
    return _kept(
        cache_dir,
        "lock",
        name,
        key,
        lambda: _digests([path]),
        lambda: load_lock(root, name),
        lambda cached: isinstance(cached, ReleaseLock) and cached.contract == name,
    )


def _kept(
    cache_dir: str,
    kind: str,
    name: str,
    key: list[str],
    key_now: Callable[[], list[str] | None],
    produce: Callable[[], T],
    is_entry: Callable[[object], bool],
) -> T:
    """What ``produce`` returns, from the cache entry of ``key`` when it holds one (``is_entry``); a fresh
    result is stored only when ``key_now`` still gives ``key`` (the files were not edited while it loaded)."""
    entry = cache.entry(cache_dir, kind, _FORMAT, sys.version, _loader_stamp(), name, *key)
    cached = cache.load(entry)
    if is_entry(cached):
        return cast(T, cached)
    loaded = produce()
    if key_now() == key:
        cache.store(entry, loaded)
    return loaded


def _sections(contract: Contract) -> Contract:
    """``contract`` once its tiers, report filter and merge semantics read clean: ContractError otherwise."""
    from promptops.merge import report_filter  # light modules: core and parsing.tiers only
    from promptops.parsing import semantics, tiers

    for read in (tiers.tiers, report_filter.report_filter, semantics.merge_semantics):
        read(contract)
    return contract


def _key(root: Path, name: str) -> list[str] | None:
    """Digests of the contract's files; None when one cannot be read (no caching: ``load_contract`` reports
    the problem)."""
    try:
        directory = locate_contract(root, name)[0]  # the project's, else the packaged one
    except errors.ContractError:
        return None
    schemas = directory / "schemas"
    files = [directory / CONTRACT_FILE, *(sorted(_ending(schemas, ".json")) if schemas.is_dir() else [])]
    return _digests(files)


def _digests(files: list[Path]) -> list[str] | None:
    """Each file's name and the sha256 of its bytes; None when one cannot be read (no caching: the loader
    reports the problem)."""
    try:
        return [f"{path.name}:{hashlib.sha256(strict_yaml.read_bytes(path)).hexdigest()}" for path in files]
    except strict_yaml.YamlProblem:
        return None


def loader_files() -> list[Path]:
    """The code that decides what load_contract returns: the foundation's modules (the loader imports nothing
    above them, tests/test_layers.py) and the packaged defaults' index; and the modules ``_sections`` reads with."""
    features = [Path(merge.__file__ or ""), Path(merge.__file__ or "").parent / "report_filter.py"]
    features += [Path(parsing.__file__ or "")]
    features += [Path(parsing.__file__ or "").parent / f"{name}.py" for name in ("semantics", "tiers")]
    return [*sorted(_ending(Path(core.__file__ or "").parent, ".py")), Path(defaults.__file__ or ""), *features]


def _ending(directory: Path, suffix: str) -> list[Path]:
    """``directory.glob("*" + suffix)`` without compiling a pattern for it."""
    return [path for path in directory.iterdir() if path.name.endswith(suffix)]


def _pyyaml() -> list[Path]:
    """PyYAML's package file, found without importing PyYAML: an upgrade rewrites it."""
    spec = PathFinder.find_spec("yaml")
    return [Path(spec.origin)] if spec is not None and spec.origin else []


@functools.cache
def _loader_stamp() -> str:
    stats = [os.stat(path) for path in [*loader_files(), *_pyyaml()]]
    return " ".join(f"{stat.st_size}:{stat.st_mtime_ns}" for stat in stats)
