"""Typed answers: ``RLM(output_type=…)`` and ``rlm run --output-schema FILE``. The prompt states the
schema, a final value that does not match goes back to the model with the errors (the run goes on), and the run's
``output`` holds the validated object."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from rlm_host import ConfigError
from rlm_host.testing.engine import isolated_runner, run_scripted


class Incident(BaseModel):
    sensor: str
    reading: float


@dataclass
class Pair:
    left: int
    right: int


BAD = "```repl\nanswer = {'sensor': 'T4'}\n```\nFINAL_VAR(answer)"
GOOD = "```repl\nanswer = {'sensor': 'T4', 'reading': -41.7}\n```\nFINAL_VAR(answer)"


def test_an_invalid_answer_is_sent_back_and_the_valid_one_is_the_output(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    result, events, root = run_scripted(runner, "q", [BAD, GOOD], output_type=Incident, sandbox="monty")
    assert result.completed and result.steps == 2
    assert result.output == Incident(sensor="T4", reading=-41.7)
    assert "Incident" in root.calls[0][0]["content"] and '"reading"' in root.calls[0][0]["content"]
    first = [e.data for e in events if e.type == "step"][0]
    assert first["action"] == "final_rejected" and "reading: Field required" in first["observation"]["final_rejected"]
    feedback = root.calls[1][-1]["content"]
    assert "does not match the required type" in feedback and "reading: Field required" in feedback
    final = [e.data for e in events if e.type == "final"][0]
    assert final["output"] == {"sensor": "T4", "reading": -41.7}


def test_a_dataclass_and_a_schema_dict_are_types_too(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    result, _, _ = run_scripted(runner, "q", ["FINAL({\"left\": 1, \"right\": 2})"], output_type=Pair, sandbox="monty")
    assert result.output == Pair(1, 2)
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 2}
    result, events, _ = run_scripted(runner, "q",
                                     ["```repl\nx = [1]\n```\nFINAL_VAR(x)", "```repl\nx = [1, 2]\n```\nFINAL_VAR(x)"],
                                     output_type=schema, sandbox="monty")
    assert result.output == [1, 2] and result.steps == 2
    assert "is too short" in json.dumps([e.data for e in events if e.type == "step"][0])


def test_a_schema_that_is_not_json_schema_is_refused_before_the_run(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        run_scripted(runner, "q", ["FINAL(1)"], output_type={"type": "nonsense"}, sandbox="monty")
    with pytest.raises(ConfigError, match="is not a type an answer can be validated as"):
        run_scripted(runner, "q", ["FINAL(1)"], output_type=object(), sandbox="monty")


def test_rlm_run_output_schema_prints_the_output_with_json(rlm, isolated_env):
    work = Path(isolated_env["WORK"])
    (work / "schema.json").write_text(json.dumps({"type": "object", "required": ["n"],
                                                  "properties": {"n": {"type": "integer"}}}))
    (work / "root.json").write_text(json.dumps({"responses": ["FINAL({\"n\": \"x\"})", "FINAL({\"n\": 3})"]}))
    done = rlm("run", "q", "--model", "scripted:root.json", "--sandbox", "monty", "--output-schema", "schema.json",
               "--json", plugins=["rlm-sandbox-monty"])
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["output"] == {"n": 3} and run["steps"] == 2
    (work / "bad.json").write_text('{"type": 5}')
    (work / "text.json").write_text("not json")
    for bad, message in (("missing.json", "cannot read the schema missing.json"),
                         ("bad.json", "not a valid JSON Schema"),
                         ("text.json", "text.json is not JSON")):
        refused = rlm("run", "q", "--model", "scripted:root.json", "--output-schema", bad,
                      plugins=["rlm-sandbox-monty"])
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
