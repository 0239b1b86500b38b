"""A team's own reviewer, from a wheel, in a new repository: a schema that is nothing like the built-in ones.

A test-gap reviewer answers with an array named `gaps`, ids `G1`, `G2`..., a `format: uri` link and a line
range. From the wheel (the ``installed`` fixture of test_new_project) the team runs: ``init``, ``contract new``
(the head states the id pattern, the link format and the line range, and names `gaps`; the merge section is
inferred), release 1.0.0, a compatible prompt 1.0.1 rehearsed with ``rollout simulate`` + ``ingest`` + ``gate``
to full traffic, then a major change (schema 2.0 drops the severity ``medium``) through the documented path to
full traffic and the retirement of 1.x. At every step a service builds its parsers from the repository with
``promptops.serving.load_serving`` and every answer of every arm it assigns is accepted, and no unit goes to a
candidate the parser cannot read. Last, ``promptops merge`` merges a `gaps` answer with the built-in
agent-output contract's.

The steps depend on each other: one test per stage over one module-scoped repository, in order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.adoption.test_new_project import Env, installed

__all__ = ["installed"]

pytestmark = pytest.mark.slow  # a wheel and a fresh venv

C = "gaps"
SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "prompt_version", "gaps"],
    "properties": {
        "schema_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
        "prompt_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
        "gaps": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "file", "line", "severity", "what"],
                "properties": {
                    "id": {"type": "string", "pattern": "^G[0-9]+$"},
                    "file": {"type": "string", "minLength": 1},
                    "line": {"type": "integer", "minimum": 1, "maximum": 100000},
                    "severity": {"type": "string", "enum": ["high", "medium", "low"]},
                    "what": {"type": "string", "minLength": 1},
                    "link": {"type": "string", "format": "uri"},
                },
            },
        },
    },
}

# The service: assign UNITS units, answer as each arm's prompt asks, parse with the arm's parser. It fails on a
# rejected answer, a dropped gap, and a unit sent to a candidate the parser cannot read.
SERVICE = """
import json, sys
from pathlib import Path
from promptops.serving import load_serving

units, tag = int(sys.argv[1]), sys.argv[2]
serving = load_serving(Path("."), "gaps")
counts = {"baseline": 0, "candidate": 0, "held": 0}
for i in range(units):
    chosen = serving.assign(f"acme/tests#{tag}-{i}")
    if chosen.arm == "candidate":
        assert serving.unreadable is None, serving.unreadable
    counts[chosen.arm] += 1
    counts["held"] += chosen.held is not None
    versions = chosen.to_dict()
    gap = {"id": f"G{i + 1}", "file": "app/db.py", "line": 3, "severity": "high", "what": "No test covers the retry.",
           "link": "https://ci.example.com/runs/7"}
    raw = json.dumps({"schema_version": versions["schema_version"], "prompt_version": versions["prompt_version"],
                      "gaps": [gap]})
    outcome = serving.parse(raw, ["app/db.py"], chosen)
    assert outcome.accepted and not outcome.diagnostics, (versions, outcome.to_dict())
print(json.dumps(counts))
"""


def serve(installed: Env, units: int, tag: str) -> dict[str, int]:
    installed.write("service.py", SERVICE)
    done = installed.python(
        f"import runpy, sys; sys.argv = ['service.py', '{units}', '{tag}']; "
        "runpy.run_path('service.py', run_name='__main__')"
    )
    return dict(json.loads(done))


def rehearse(installed: Env, plan: str, responses: int, start: str, seed: int) -> dict[str, Any]:
    """Simulated traffic of the plan's current step, ingested; the gate's verdict an hour after it."""
    log = f"logs/{seed}.jsonl"
    installed.run("rollout", "simulate", plan, "--responses", str(responses), "--start", start, "--hours", "2",
                  "--seed", str(seed), "--out", log)  # fmt: skip
    installed.run("ingest", log)
    now = start.replace("T09", "T12")
    return dict(
        json.loads(installed.run("rollout", "gate", plan, "--now", now, "--purpose", "promote", "--format", "json"))
    )


def promote(installed: Env, plan: str, now: str) -> None:
    installed.run("rollout", "promote", plan, "--by", "team", "--now", now)


def few_steps(installed: Env, plan: str) -> None:
    """The plan with one canary at half the units, so the rehearsal needs few responses."""
    text = (installed.repo / plan).read_text(encoding="utf-8")
    steps = text[text.index("steps:\n") : text.index("slos:")]
    parser = "  - {name: parser, weight: 0}\n" if "name: parser" in steps else ""
    canary = "  - {name: canary, weight: 0.5, min_responses: 900}\n  - {name: full, weight: 1.0}\n"
    installed.write(plan, text.replace(steps, "steps:\n" + parser + canary))


def test_contract_new_states_the_teams_own_rules(installed: Env) -> None:
    installed.run("init")
    installed.write("gaps.json", json.dumps(SCHEMA, indent=2))
    installed.run("contract", "new", C, "--schema", "gaps.json")
    prompt = installed.run("render", "--contract", C, "--changed-file", "app/db.py")
    assert "`id` must match the regular expression `^G[0-9]+$`" in prompt
    assert "`link` must be in uri format" in prompt and "`line` (integer, >= 1, <= 100000)" in prompt
    assert "An empty `gaps` array is a valid answer." in prompt and "empty findings array" not in prompt
    assert "All checks passed" in installed.run("lint")  # PO012 included: every enforced constraint is stated
    config = (installed.repo / f"versions/{C}/contract.yaml").read_text(encoding="utf-8")
    assert "merge:" in config and "- what" in config
    installed.run("release", "cut", "--contract", C, "--date", "2026-11-01T09:00:00Z")
    installed.commit("the gaps contract, release 1.0.0")
    assert serve(installed, 100, "one") == {"baseline": 100, "candidate": 0, "held": 0}


def test_a_compatible_candidate_is_rehearsed_to_full_traffic(installed: Env) -> None:
    head = f"templates/{C}.j2"
    installed.edit(head, '"1.0.0"', '"1.0.1"')
    installed.edit(head, "You review a code change", "You review a code change for missing tests")
    installed.run("release", "cut", "--contract", C, "--date", "2026-11-02T08:00:00Z")
    installed.run("rollout", "new", C)
    plan = f"rollout/{C}/{C}-1.0.1.yaml"
    few_steps(installed, plan)
    installed.commit("release 1.0.1 and its rollout")
    result = rehearse(installed, plan, 3_000, "2026-11-02T09:00:00Z", seed=1)
    assert result["verdict"] == "Passed", result["sentence"]
    dropped = next(m for m in result["metrics"] if m["metric"] == "dropped_finding")
    assert dropped["arms"]["candidate"]["rate"] < 0.05  # simulated ids match ^G[0-9]+$: nothing drops for it
    promote(installed, plan, "2026-11-02T12:00:00Z")
    counts = serve(installed, 200, "full-1")
    assert counts == {"baseline": 0, "candidate": 200, "held": 0}


def test_a_major_change_through_the_documented_path(installed: Env) -> None:
    schema = json.loads(json.dumps(SCHEMA))
    schema["properties"]["gaps"]["items"]["properties"]["severity"]["enum"].remove("medium")
    installed.write(f"versions/{C}/schemas/2.0.json", json.dumps(schema, indent=2))
    head = f"templates/{C}.j2"
    installed.edit(head, '"1.0.1"', '"2.0.0"')
    installed.edit(head, 'schema_version = "1.0"', 'schema_version = "2.0"')
    out = installed.run("release", "cut", "--contract", C, "--date", "2026-11-03T08:00:00Z")
    assert "released prompt 2.0.0 (major) with schema 2.0 (major)" in out and "Next, for the new major line:" in out
    installed.run("rollout", "new", C)
    plan = f"rollout/{C}/{C}-2.0.0.yaml"
    assert "name: parser" in (installed.repo / plan).read_text(encoding="utf-8")
    few_steps(installed, plan)
    installed.commit("release 2.0.0 and its rollout")

    assert serve(installed, 200, "parser") == {"baseline": 200, "candidate": 0, "held": 0}
    result = rehearse(installed, plan, 600, "2026-11-03T09:00:00Z", seed=2)
    assert result["parser"] == {"ready": True, "problems": []}, result
    promote(installed, plan, "2026-11-03T12:00:00Z")

    counts = serve(installed, 2_000, "canary")
    assert counts["held"] == 0 and 800 < counts["candidate"] < 1_200  # both majors served and read
    result = rehearse(installed, plan, 3_000, "2026-11-04T09:00:00Z", seed=3)
    assert result["verdict"] == "Passed", result["sentence"]
    incompatible = next(m for m in result["metrics"] if m["metric"] == "incompatible_version")
    assert incompatible["arms"]["candidate"]["x"] == 0 and incompatible["arms"]["baseline"]["x"] == 0
    promote(installed, plan, "2026-11-04T12:00:00Z")

    assert serve(installed, 200, "full-2") == {"baseline": 0, "candidate": 200, "held": 0}
    assert "retired major line 1" in installed.run("rollout", "retire", plan)
    installed.commit("2.0.0 at full traffic, 1.x retired")
    installed.write("answer.json", json.dumps({"schema_version": "2.0", "prompt_version": "2.0.0", "gaps": []}))
    assert installed.run("validate", "--contract", C, "--changed-file", "app/db.py", "answer.json").startswith(
        "accepted"
    )
    assert "All checks passed" in installed.run("lint")
    installed.run("release", "verify")


def test_merge_with_the_builtin_agent_output_contract(installed: Env) -> None:
    gap = {"id": "G1", "file": "app/db.py", "line": 3, "severity": "high", "what": "No test covers the retry."}
    installed.write("gaps-answer.json", json.dumps({"schema_version": "2.0", "prompt_version": "2.0.0", "gaps": [gap]}))
    agent = {
        "findings": [
            {"id": "A1", "title": "Retry never stops", "severity": "medium", "category": "reliability",
             "file": "app/db.py", "line": 9, "message": "The retry loop has no bound."}
        ],
        "summary": "One problem.",
    }  # fmt: skip
    installed.write("agent.json", json.dumps(agent))
    out = installed.run("merge", "--changed-file", "app/db.py", "--format", "json",
                        f"{C}=gaps-answer.json", "agent-output=agent.json")  # fmt: skip
    merged = json.loads(out)["findings"]
    assert sorted(f["title"] for f in merged) == ["No test covers the retry", "Retry never stops"]
