"""promptops: a release toolchain for LLM code reviewers.

The public library API. The command line (``promptops ...``) is a thin shell over these objects.

Names load lazily (module ``__getattr__``): ``import promptops.lint`` in a pre-commit hook must not pay for
the parser's msgspec/jsonschema machinery just because the package's ``__init__`` ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops._lazy import lazy_names

if TYPE_CHECKING:
    from promptops.contract import Contract, list_contracts, load_contract
    from promptops.errors import ContractError, PolicyError, PromptopsError, VersionError
    from promptops.parsing import ChangedFiles, Code, Diagnostic, ParseOutcome, Parser
    from promptops.policy import Limits, ParserPolicy
    from promptops.versioning import PromptVersion, SchemaVersion

__version__ = "0.1.0"
# The distribution that installs this package (pyproject's [project] name): what install hints name.
DISTRIBUTION = "promptops-toolchain"

_EXPORTS: dict[str, str] = {
    "ChangedFiles": "promptops.parsing",
    "Code": "promptops.parsing",
    "Contract": "promptops.contract",
    "ContractError": "promptops.errors",
    "Diagnostic": "promptops.parsing",
    "Limits": "promptops.policy",
    "ParseOutcome": "promptops.parsing",
    "Parser": "promptops.parsing",
    "ParserPolicy": "promptops.policy",
    "PolicyError": "promptops.errors",
    "PromptVersion": "promptops.versioning",
    "PromptopsError": "promptops.errors",
    "SchemaVersion": "promptops.versioning",
    "VersionError": "promptops.errors",
    "list_contracts": "promptops.contract",
    "load_contract": "promptops.contract",
}

__all__ = [
    "ChangedFiles",
    "Code",
    "Contract",
    "ContractError",
    "Diagnostic",
    "Limits",
    "ParseOutcome",
    "Parser",
    "ParserPolicy",
    "PolicyError",
    "PromptVersion",
    "PromptopsError",
    "SchemaVersion",
    "VersionError",
    "list_contracts",
    "load_contract",
]


__getattr__ = lazy_names(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
