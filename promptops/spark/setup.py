"""The parser setup as data: what the executors need to rebuild the driver's ParserCache, without a path.

The driver loads every contract (so a broken one fails the job before any task runs, with the loader's
one-line message), then packs the project files the loaders read (``versions/`` and the rollout plans under
``rollout/``) as a JSON object of repo-relative path -> text. An executor unpacks it once per Python worker
into a private temporary root and builds ``ParserCache.for_project`` with the rollout policy resolver there,
so the parser, the contracts and the per-arm policies are exactly the driver's, loaded by the same code.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from promptops.core.contract import VERSIONS_DIR, list_contracts
from promptops.core.errors import PromptopsError
from promptops.rollout.plan import ROLLOUT_DIR
from promptops.store.policies import ParserCache, ingest_contract

_TEXT_SUFFIXES = (".yaml", ".yml", ".json", ".j2", ".md", ".txt")


@dataclass(frozen=True)
class ParserSetup:
    """Project files (repo-relative path -> text) the contract and rollout-plan loaders read."""

    files: tuple[tuple[str, str], ...]

    @classmethod
    def from_project(cls, root: Path) -> ParserSetup:
        for name in list_contracts(root):
            ingest_contract(root, name)  # fail here, on the driver, for a broken contract
        found: list[tuple[str, str]] = []
        for top in (VERSIONS_DIR, ROLLOUT_DIR):
            base = root / top
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*")):
                if path.is_file() and path.suffix in _TEXT_SUFFIXES:
                    relative = path.relative_to(root).as_posix()
                    try:
                        found.append((relative, path.read_text(encoding="utf-8")))
                    except (OSError, UnicodeDecodeError) as problem:
                        raise PromptopsError(f"{relative}: cannot read: {problem}") from None
        return cls(tuple(found))

    def dumps(self) -> str:
        return json.dumps(dict(self.files), sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> ParserSetup:
        data = json.loads(text)
        return cls(tuple(sorted((str(k), str(v)) for k, v in data.items())))

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.dumps().encode()).hexdigest()[:16]


# Per Python worker: the unpacked roots and their caches, by setup digest (a worker runs many tasks).
_CACHES: dict[str, ParserCache] = {}
_ROOTS: list[tempfile.TemporaryDirectory[str]] = []


def parser_cache(setup_json: str) -> ParserCache:
    """The ParserCache for a packed setup, built once per worker process."""
    from promptops.rollout.policies import RolloutPolicies  # loaded on the executor only when parsing

    setup = ParserSetup.loads(setup_json)
    digest = setup.digest
    cache = _CACHES.get(digest)
    if cache is None:
        holder = tempfile.TemporaryDirectory(prefix="promptops-setup-")
        _ROOTS.append(holder)  # kept for the worker's life: contracts load lazily from it
        root = Path(holder.name)
        for relative, text in setup.files:
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        cache = _CACHES[digest] = ParserCache.for_project(root, RolloutPolicies(root))
    return cache
