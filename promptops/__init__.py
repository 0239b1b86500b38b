"""promptops: a release toolchain for LLM code reviewers.

The public library API. The command line (``promptops ...``) is a thin shell over these objects.

Names load lazily (module ``__getattr__``): ``import promptops.lint`` in a pre-commit hook must not pay for
the parser's msgspec/jsonschema machinery just because the package's ``__init__`` ran.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core import DISTRIBUTION as DISTRIBUTION  # install hints name it (promptops.DISTRIBUTION)
from promptops.core.lazy import by_module, lazy_names

if TYPE_CHECKING:
    from promptops.core.contract import Contract, list_contracts, load_contract
    from promptops.core.errors import ContractError, PolicyError, PromptopsError, VersionError
    from promptops.core.policy import Limits, ParserPolicy
    from promptops.core.versioning import PromptVersion, SchemaVersion
    from promptops.parsing import ChangedFiles, Code, Diagnostic, ParseOutcome, Parser

__version__ = "0.1.0"

_EXPORTS = by_module(
    {
        "promptops.parsing": ("ChangedFiles", "Code", "Diagnostic", "ParseOutcome", "Parser"),
        "promptops.core.contract": ("Contract", "list_contracts", "load_contract"),
        "promptops.core.errors": ("ContractError", "PolicyError", "PromptopsError", "VersionError"),
        "promptops.core.policy": ("Limits", "ParserPolicy"),
        "promptops.core.versioning": ("PromptVersion", "SchemaVersion"),
    }
)

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
