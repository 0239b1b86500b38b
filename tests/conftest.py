from __future__ import annotations

import pytest

from promptops import Contract, Parser, load_contract
from tests.helpers import REPO_ROOT


@pytest.fixture(scope="session")
def contract() -> Contract:
    return load_contract(REPO_ROOT, "review-result")


@pytest.fixture(scope="session")
def parser(contract: Contract) -> Parser:
    return Parser(contract)


@pytest.fixture(scope="session")
def slow_parser(contract: Contract) -> Parser:
    return Parser(contract, fast_path=False)


@pytest.fixture(scope="session")
def python_gate_parser(contract: Contract) -> Parser:
    return Parser(contract, speedups=False)


@pytest.fixture(params=["fast", "fast-python-gate", "slow"])
def both(request: pytest.FixtureRequest, parser: Parser, python_gate_parser: Parser, slow_parser: Parser) -> Parser:
    """Each rule test runs through every path: their outcomes must be the same."""
    return {"fast": parser, "fast-python-gate": python_gate_parser, "slow": slow_parser}[request.param]
