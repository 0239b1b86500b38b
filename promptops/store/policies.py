"""Which parser policy reads each logged response: the resolver extension point, and the parser cache.

A response is parsed under the policy its release had: the contract's default today, and per rollout arm once
rollouts pin different prompt versions for baseline and candidate. Ingest asks a ``PolicyResolver`` for every
distinct (contract, rollout_id, arm) it meets and never reads the environment or files itself, so a rollout
feature plugs in by passing its own resolver object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from promptops.contract import Contract
from promptops.parsing import Parser
from promptops.policy import ParserPolicy


class PolicyResolver(Protocol):
    """``(contract_name, rollout_id, arm) -> ParserPolicy``.

    Called once per distinct triple in an ingest run (results are cached), so it must be a pure function of
    its arguments for the run's duration. It may raise PromptopsError for a configuration it cannot
    resolve; ingest then stops with that one-line message (exit 3), keeping the batches already written.
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
    that a record naming an unknown contract is a bad record rather than a failure of the run.
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
        self._by_slot: dict[tuple[str, str | None, str | None], Parser | None] = {}

    def parser(self, contract_name: str, rollout_id: str | None, arm: str | None) -> Parser | None:
        """The parser for this slot, or None when the contract is unknown."""
        key = (contract_name, rollout_id, arm)
        try:
            return self._by_slot[key]
        except KeyError:
            pass
        parser: Parser | None = None
        if self._known(contract_name):
            contract = self._contracts(contract_name)
            policy = self._resolver(contract_name, rollout_id, arm)
            parser = self._by_policy.get((contract_name, policy))
            if parser is None:
                parser = self._by_policy[(contract_name, policy)] = Parser(contract, policy)
        self._by_slot[key] = parser
        return parser
