"""Which parser policy reads each logged response: the resolver extension point, and the parser cache.

A response is parsed under the policy its release had: the contract's default today, and per rollout arm once
rollouts pin different prompt versions for baseline and candidate. Ingest asks a ``PolicyResolver`` for every
distinct (contract, rollout_id, arm) it meets and never reads the environment or files itself, so a rollout
feature plugs in by passing its own resolver object.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from promptops.core.contract import Contract, list_contracts, load_contract
from promptops.core.policy import ParserPolicy
from promptops.core.schema_verdicts import SchemaVerdicts
from promptops.parsing import Parser
from promptops.parsing.semantics import merge_semantics

# A slot's parser and the request versions its policy implies (for contracts whose output declares none).
Slot = tuple[Parser, str, str]


def ingest_contract(root: Path, name: str, verdicts: SchemaVerdicts | None = None) -> Contract:
    """Contract ``name`` as ingest reads it: loaded, and its merge section read (the finding ids and the severity
    column use it), so a bad section stops ingest here, not in the middle of a batch."""
    contract = load_contract(root, name, verdicts=verdicts)
    merge_semantics(contract)
    return contract


class PolicyResolver(Protocol):
    """``(contract_name, rollout_id, arm) -> ParserPolicy``.

    Called once per distinct triple in an ingest run (results are cached, per worker process when parsing
    runs in several), so it must be a pure function of its arguments for the run's duration, and picklable
    for parallel ingest. It may raise PromptopsError for a configuration it cannot resolve; ingest then stops
    with that one-line message (exit 3), keeping the batches already written.
    """

    def __call__(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy: ...


class DefaultPolicyResolver:
    """Every response of a contract is read with the contract's default policy (``contract.yaml``)."""

    def __init__(self, contracts: Callable[[str], Contract]) -> None:
        self._contracts = contracts

    def __call__(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        return self._contracts(contract_name).default_policy


class ParserCache:
    """One Parser per (contract, policy), looked up per (contract, rollout_id, arm).

    ``contracts`` loads a contract by name (raising for a broken one); ``known`` says which names exist, so
    that a record naming an unknown contract is a bad record rather than a failure of the run. A cache made
    by ``for_project`` can be sent to worker processes (it travels as its project root and resolver).
    """

    def __init__(
        self,
        contracts: Callable[[str], Contract],
        known: Callable[[str], bool],
        resolver: PolicyResolver | None = None,
    ) -> None:
        self._contracts = contracts
        self._known = known
        self._resolver: PolicyResolver = resolver or DefaultPolicyResolver(contracts)
        self._by_policy: dict[tuple[str, ParserPolicy], Parser] = {}
        self._slots: dict[tuple[str, str | None, str | None], Slot | None] = {}
        self._recipe: tuple[Path, PolicyResolver | None, SchemaVerdicts | None] | None = None

    @classmethod
    def for_project(
        cls, root: Path, resolver: PolicyResolver | None = None, verdicts: SchemaVerdicts | None = None
    ) -> ParserCache:
        """Contracts from ``root/versions`` (each loaded once, when first needed; ``verdicts``: load_contract's)."""
        loaded: dict[str, Contract] = {}
        names = frozenset(list_contracts(root))

        def contract(name: str) -> Contract:
            if name not in loaded:
                loaded[name] = ingest_contract(root, name, verdicts)
            return loaded[name]

        cache = cls(contract, names.__contains__, resolver)
        cache._recipe = (root, resolver, verdicts)
        return cache

    def __reduce__(self) -> tuple[Any, ...]:
        if self._recipe is None:
            raise TypeError("only a ParserCache.for_project(...) can be sent to worker processes")
        return (ParserCache.for_project, self._recipe)

    def parser(self, contract_name: str, rollout_id: str | None, arm: str | None) -> Parser | None:
        """The parser for this slot, or None when the contract is unknown."""
        slot = self.slot(contract_name, rollout_id, arm)
        return None if slot is None else slot[0]

    def slot(self, contract_name: str, rollout_id: str | None, arm: str | None) -> Slot | None:
        key = (contract_name, rollout_id, arm)
        try:
            return self._slots[key]
        except KeyError:
            pass
        slot: Slot | None = None
        if self._known(contract_name):
            contract = self._contracts(contract_name)
            policy = self._resolver(contract_name, rollout_id, arm)
            parser = self._by_policy.get((contract_name, policy))
            if parser is None:
                parser = self._by_policy[(contract_name, policy)] = Parser(contract, policy)
            slot = (parser, str(policy.schema_floor), str(policy.prompt_version))
        self._slots[key] = slot
        return slot
