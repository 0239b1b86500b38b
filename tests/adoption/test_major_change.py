"""A breaking change shipped the documented way (docs/breaking-changes.md), from a wheel, in a new repository.

The wheel built from this checkout is installed in a fresh virtualenv (the ``installed`` fixture of
test_new_project); the team's repository starts empty: ``init``, ``contract new`` from the built-in
review-result, release 1.0.0; then a major change (schema 2.0 drops the severity ``info``): ``release cut`` of
2.0.0, ``rollout new`` (its parser stage first), traffic, promotion to full traffic, ``rollout retire`` of 1.x,
and a later 2.1.0 promoted to full traffic. At every step a service builds its parsers with one call
(``promptops.serving.load_serving``) from the repository's files, and every answer of every arm it assigns is
accepted, and no unit is ever assigned to a candidate the parser cannot read.

The steps depend on each other, so they are one test per stage over one module-scoped repository, in order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.adoption.test_new_project import Env, installed

__all__ = ["installed"]  # the module-scoped fixture: a venv with the wheel and an empty git repository

pytestmark = pytest.mark.slow  # a wheel and a fresh venv

C = "rr"
PLAN = f"rollout/{C}/{C}-2.0.0.yaml"

# Run in the venv by the service: assign UNITS units, answer each as its arm's prompt asks, parse the answer with
# the arm's parser, and log it. Fails on any rejected answer and on a unit sent to an unreadable candidate.
SERVICE = """
import json, sys
from pathlib import Path
from promptops.serving import load_serving

units, tag, ts = int(sys.argv[1]), sys.argv[2], sys.argv[3]
serving = load_serving(Path("."), "rr")  # the lock and the active plan: no policy edit, ever
counts = {"baseline": 0, "candidate": 0, "held": 0}
with open(f"logs-{tag}.jsonl", "w") as log:
    for i in range(units):
        unit = f"acme/api#{tag}-{i}"
        chosen = serving.assign(unit)
        if chosen.arm == "candidate":
            assert serving.unreadable is None, serving.unreadable
        counts[chosen.arm] += 1
        counts["held"] += chosen.held is not None
        finding = {"id": "F1", "severity": "high", "category": "security", "title": "SQL injection",
                   "message": "The query is built from user input.", "file": "app/db.py", "line": 3}
        versions = chosen.to_dict()
        raw = json.dumps({"schema_version": versions["schema_version"], "prompt_version": versions["prompt_version"],
                          "findings": [finding]})
        outcome = serving.parse(raw, ["app/db.py"], chosen)
        assert outcome.accepted and len(outcome.result["findings"]) == 1, (versions, outcome.to_dict())
        record = {"response_id": f"{tag}-{i}", "ts": ts, "contract": "rr", "rollout_id": versions["rollout"],
                  "arm": chosen.arm, "unit": unit, "changed_files": ["app/db.py"], "raw": raw}
        log.write(json.dumps(record) + "\\n")
print(json.dumps({"counts": counts, "serving": serving.to_dict()}))
"""

# What a service gets for an answer of each version, by arm.
READS = """
import json, sys
from pathlib import Path
from promptops.serving import load_serving

serving = load_serving(Path("."), "rr")
out = {}
for arm in ("baseline", "candidate"):
    for prompt, schema in (("1.0.0", "1.1"), ("2.0.0", "2.0"), ("2.1.0", "2.0")):
        raw = json.dumps({"schema_version": schema, "prompt_version": prompt, "findings": []})
        outcome = serving.parse(raw, [], arm)
        out[f"{arm} {prompt}"] = outcome.outcome if outcome.reason is None else str(outcome.reason)
print(json.dumps(out))
"""


def serve(installed: Env, units: int, tag: str, ts: str) -> dict[str, Any]:
    installed.write("service.py", SERVICE)
    done = installed.python(
        f"import runpy, sys; sys.argv = ['service.py', '{units}', '{tag}', '{ts}']; "
        "runpy.run_path('service.py', run_name='__main__')"
    )
    return dict(json.loads(done))


def reads(installed: Env) -> dict[str, str]:
    return dict(json.loads(installed.python(READS)))


def gate(installed: Env, now: str) -> dict[str, Any]:
    done = installed.run("rollout", "gate", PLAN, "--now", now, "--format", "json")
    return dict(json.loads(done))


def test_release_one(installed: Env) -> None:
    installed.run("init")
    installed.run("contract", "new", C, "--from", "review-result")
    installed.run("release", "cut", "--contract", C, "--date", "2026-11-01T09:00:00Z")
    installed.commit("the rr contract, release 1.0.0")
    counts = serve(installed, 100, "one", "2026-11-01T10:00:00Z")["counts"]
    assert counts == {"baseline": 100, "candidate": 0, "held": 0}  # no plan: the contract's pinned release
    assert reads(installed)["baseline 1.0.0"] == "accepted"


def test_release_two_the_breaking_change(installed: Env) -> None:
    schema = json.loads((installed.repo / f"versions/{C}/schemas/1.1.json").read_text(encoding="utf-8"))
    schema["properties"]["findings"]["items"]["properties"]["severity"]["enum"].remove("info")
    installed.write(f"versions/{C}/schemas/2.0.json", json.dumps(schema, indent=2))
    head = f"templates/{C}.j2"
    installed.edit(head, '"1.0.0"', '"1.1.0"')
    installed.edit(head, 'schema_version = "1.1"', 'schema_version = "2.0"')
    understated = installed.run("release", "check", "--contract", C, code=2)
    assert "use 2.0.0" in understated
    installed.edit(head, '"1.1.0"', '"2.0.0"')
    installed.run("release", "check", "--contract", C)
    out = installed.run("release", "cut", "--contract", C, "--date", "2026-11-02T09:00:00Z")
    assert "released prompt 2.0.0 (major) with schema 2.0 (major)" in out
    assert "Next, for the new major line:" in out and f"promptops rollout retire {PLAN}" in out
    installed.run("release", "verify")
    installed.commit("release 2.0.0: severity info removed")
    # Released, not rolled out: the service still serves and reads 1.x only.
    assert reads(installed)["baseline 1.0.0"] == "accepted"


def test_the_rollout_starts_with_the_parser_stage(installed: Env) -> None:
    installed.run("rollout", "new", C)
    text = (installed.repo / PLAN).read_text(encoding="utf-8")
    assert "  - {name: parser, weight: 0}" in text
    # Two traffic steps, so that the rehearsal needs few responses: canary at half the units, then full.
    steps = text[text.index("steps:\n") : text.index("slos:")]
    installed.write(
        PLAN,
        text.replace(
            steps,
            "steps:\n  - {name: parser, weight: 0}\n  - {name: canary, weight: 0.5, min_responses: 900}\n"
            "  - {name: full, weight: 1.0}\n",
        ),
    )
    installed.commit("rollout plan for 2.0.0")
    counts = serve(installed, 200, "parser", "2026-11-02T10:00:00Z")["counts"]
    assert counts == {"baseline": 200, "candidate": 0, "held": 0}  # weight 0: nobody gets 2.0.0 yet
    installed.run("ingest", "logs-parser.jsonl")
    result = gate(installed, "2026-11-02T11:00:00Z")
    assert (result["verdict"], result["parser"]) == ("Passed", {"ready": True, "problems": []}), result
    installed.run("rollout", "promote", PLAN, "--by", "team", "--now", "2026-11-02T11:00:00Z")


def test_canary_both_majors_are_read(installed: Env) -> None:
    served = serve(installed, 2_400, "canary", "2026-11-02T12:00:00Z")
    counts = served["counts"]
    assert counts["held"] == 0 and 1_000 < counts["candidate"] < 1_400
    arms = served["serving"]["arms"]
    assert (arms["baseline"]["schema_floor"], arms["candidate"]["schema_floor"]) == ("1.1", "2.0")
    assert reads(installed) == {
        "baseline 1.0.0": "accepted",
        "baseline 2.0.0": "incompatible_version",
        "baseline 2.1.0": "incompatible_version",
        "candidate 1.0.0": "incompatible_version",
        "candidate 2.0.0": "accepted",
        "candidate 2.1.0": "incompatible_version",
    }
    # The CLI assigns as the service does.
    for i in range(20):
        assigned = json.loads(installed.run("rollout", "assign", PLAN, f"acme/api#canary-{i}", "--format", "json"))
        assert assigned["held"] is None
    stored = installed.run("ingest", "logs-canary.jsonl")
    assert "2,400 responses stored" in stored or "2400 responses stored" in stored, stored
    result = gate(installed, "2026-11-02T13:00:00Z")
    assert result["verdict"] == "Passed", result["sentence"]
    assert result["window"]["responses"]["candidate"] == counts["candidate"]
    incompatible = next(m for m in result["metrics"] if m["metric"] == "incompatible_version")
    assert incompatible["arms"]["candidate"]["x"] == 0
    installed.run("rollout", "promote", PLAN, "--by", "team", "--now", "2026-11-02T13:00:00Z")
    installed.commit("2.0.0 at full traffic")


def test_full_traffic_then_retire_one_x(installed: Env) -> None:
    counts = serve(installed, 200, "full", "2026-11-03T09:00:00Z")["counts"]
    assert counts == {"baseline": 0, "candidate": 200, "held": 0}
    out = installed.run("rollout", "retire", PLAN)
    assert "retired major line 1" in out and "policy.schema_floor 1.1 -> 2.0" in out
    installed.commit("retire 1.x")
    config = (installed.repo / f"versions/{C}/contract.yaml").read_text(encoding="utf-8")
    assert "schema_floor: '2.0'" in config and "prompt_version: '2.0.0'" in config
    seen = reads(installed)
    assert (seen["candidate 2.0.0"], seen["baseline 1.0.0"]) == ("accepted", "incompatible_version")
    installed.write("answer.json", json.dumps({"schema_version": "2.0", "prompt_version": "2.0.0", "findings": []}))
    assert installed.run("validate", "--contract", C, "--changed-file", "app/db.py", "answer.json").startswith(
        "accepted"
    )
    assert "All checks passed" in installed.run("lint")
    installed.run("release", "verify")
    installed.run("rollout", "retire", PLAN, code=2)  # nothing left to retire


def test_a_later_release_needs_no_policy_edit(installed: Env) -> None:
    head = f"templates/{C}.j2"
    installed.edit(head, '"2.0.0"', '"2.1.0"')
    installed.edit(head, "You are a senior", "You are a careful senior")
    installed.run("release", "cut", "--contract", C, "--date", "2026-11-04T09:00:00Z")
    installed.run("rollout", "new", C)
    plan = f"rollout/{C}/{C}-2.1.0.yaml"
    assert "name: parser" not in (installed.repo / plan).read_text(encoding="utf-8")  # same schema
    for _ in range(2):  # canary -> ramp -> full, forced: the statistics are covered above
        installed.run("rollout", "promote", plan, "--force", "--reason", "rehearsal", "--by", "team")
    installed.commit("2.1.0 at full traffic")
    counts = serve(installed, 200, "later", "2026-11-05T09:00:00Z")["counts"]
    assert counts == {"baseline": 0, "candidate": 200, "held": 0}
    seen = reads(installed)
    assert seen["candidate 2.1.0"] == "accepted" and seen["baseline 2.0.0"] == "accepted"
    config = (installed.repo / f"versions/{C}/contract.yaml").read_text(encoding="utf-8")
    assert "prompt_version: '2.0.0'" in config  # the policy was never edited for 2.1.0
