"""Per-arm parser policies for ingesting rollout traffic (the store's policy-resolver extension point).

Baseline and candidate pin different prompt versions; a response is read with the pin of its arm, under the
contract's schema floor and drift. Responses outside a rollout, or of an arm the plan does not name, keep the
contract's default policy. Picklable (a root path and a cache), so parallel ingest can use it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from promptops.contract import load_contract
from promptops.policy import ParserPolicy
from promptops.rollout.plan import load_plan, plan_path


class RolloutPolicies:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, str | None, str | None], ParserPolicy] = {}

    def __call__(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        key = (contract_name, rollout_id, arm)
        if key not in self._cache:
            self._cache[key] = self._resolve(*key)
        return self._cache[key]

    def _resolve(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        default = load_contract(self.root, contract_name, check_schemas=False).default_policy
        if rollout_id is None or arm not in ("baseline", "candidate"):
            return default
        path = plan_path(self.root, contract_name, rollout_id)
        if not path.is_file():
            return default
        plan = load_plan(path, path.relative_to(self.root).as_posix())
        versions = plan.candidate if arm == "candidate" else plan.baseline
        return replace(default, prompt_version=versions.prompt_version)
