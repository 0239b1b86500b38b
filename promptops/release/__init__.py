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

from promptops.core.lazy import by_module, lazy_names

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

_EXPORTS = by_module(
    {
        "promptops.core.artifacts": ("ArtifactProblem", "FreezeError", "check_artifacts", "template_sources"),
        "promptops.release.check": ("CHECK_RULES", "ReleaseCheck", "check_release"),
        "promptops.release.cut": (
            "CutPlan",
            "CutRequest",
            "PromptCheck",
            "SchemaCheck",
            "plan_cut",
            "smallest_passing",
        ),
        "promptops.core.lock": ("LOCK_FILE", "LockError", "Release", "ReleaseLock", "load_lock"),
        "promptops.release.matrix": ("Matrix", "compat_matrix"),
        "promptops.release.prompt_class": (
            "PromptComparison",
            "RenderedContract",
            "classify_prompt",
            "rendered_contract",
        ),
        "promptops.release.write": ("contract_lock", "write_release"),
    }
)

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
