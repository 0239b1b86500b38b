"""promptops: a release toolchain for LLM code reviewers.

The public library API. The command line (``promptops ...``) is a thin shell over these objects.
"""

from promptops.contract import Contract, list_contracts, load_contract
from promptops.errors import ContractError, PolicyError, PromptopsError, VersionError
from promptops.parsing import ChangedFiles, Code, Diagnostic, ParseOutcome, Parser
from promptops.policy import Limits, ParserPolicy
from promptops.versioning import PromptVersion, SchemaVersion

__version__ = "0.1.0"

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
