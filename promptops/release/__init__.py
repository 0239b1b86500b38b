"""Releases: computed semver classes, bump enforcement and the locked, verifiable release history.

``plan_cut`` reads a contract's head template, computes the schema class (transitively, against every
released schema of its major line) and the prompt class (its schema target and rendered contract against
the latest release), and refuses a declared bump smaller than either; ``write_release`` commits a plan
atomically (the lock is replaced last). ``load_lock``/``check_artifacts`` read and verify the lock,
``compat_matrix`` shows which parser floors accept which releases; ``check_release`` runs the cut's class
computations on the head without cutting (``release check``).

Names load lazily: lint imports ``promptops.core.lock`` in pre-commit hooks and must not pay for (or
cycle through) the cut machinery, which itself runs lint.

>>> from promptops.release import smallest_passing
>>> from promptops.core.versioning import PromptVersion
>>> str(smallest_passing(PromptVersion(1, 0, 0), "minor"))
'1.1.0'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core.lazy import lazy_names

if TYPE_CHECKING:
    from promptops.core.artifacts import ArtifactProblem, FreezeError, check_artifacts, template_sources
    from promptops.core.lock import LOCK_FILE, LockError, Release, ReleaseLock, load_lock
    from promptops.release.check import CHECK_RULES, ReleaseCheck, check_release
    from promptops.release.cut import CutPlan, CutRequest, PromptCheck, SchemaCheck, plan_cut, smallest_passing
    from promptops.release.matrix import Matrix, compat_matrix
    from promptops.release.prompt_class import (
        PromptComparison,
        RenderedContract,
        classify_prompt,
        rendered_contract,
    )
    from promptops.release.write import contract_lock, write_release

_EXPORTS: dict[str, str] = {
    "ArtifactProblem": "promptops.core.artifacts",
    "FreezeError": "promptops.core.artifacts",
    "check_artifacts": "promptops.core.artifacts",
    "template_sources": "promptops.core.artifacts",
    "CHECK_RULES": "promptops.release.check",
    "ReleaseCheck": "promptops.release.check",
    "check_release": "promptops.release.check",
    "CutPlan": "promptops.release.cut",
    "CutRequest": "promptops.release.cut",
    "PromptCheck": "promptops.release.cut",
    "SchemaCheck": "promptops.release.cut",
    "plan_cut": "promptops.release.cut",
    "smallest_passing": "promptops.release.cut",
    "LOCK_FILE": "promptops.core.lock",
    "LockError": "promptops.core.lock",
    "Release": "promptops.core.lock",
    "ReleaseLock": "promptops.core.lock",
    "load_lock": "promptops.core.lock",
    "Matrix": "promptops.release.matrix",
    "compat_matrix": "promptops.release.matrix",
    "PromptComparison": "promptops.release.prompt_class",
    "RenderedContract": "promptops.release.prompt_class",
    "classify_prompt": "promptops.release.prompt_class",
    "rendered_contract": "promptops.release.prompt_class",
    "contract_lock": "promptops.release.write",
    "write_release": "promptops.release.write",
}

__all__ = [
    "CHECK_RULES",
    "LOCK_FILE",
    "ArtifactProblem",
    "CutPlan",
    "CutRequest",
    "FreezeError",
    "LockError",
    "Matrix",
    "PromptCheck",
    "PromptComparison",
    "Release",
    "ReleaseCheck",
    "ReleaseLock",
    "RenderedContract",
    "SchemaCheck",
    "check_artifacts",
    "check_release",
    "classify_prompt",
    "compat_matrix",
    "contract_lock",
    "load_lock",
    "plan_cut",
    "rendered_contract",
    "smallest_passing",
    "template_sources",
    "write_release",
]


__getattr__ = lazy_names(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
