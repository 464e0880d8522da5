"""The harness driving a real model: the built-in openai provider against llama.cpp's OpenAI-compatible server on
loopback with the embedded SmolLM2-135M, the harness's reply format (one tool call) enforced as a grammar. A model
this small seldom does the task: what must hold is that the run ends cleanly (an answer or the step limit, never an
internal error), its usage is counted and its trajectory complete. Slow: it starts the server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_support import PLUGIN

from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


def test_a_harness_run_against_a_real_llama_cpp_server(llama_server, rlm_cli, rlm_isolated, monkeypatch):
    project = rlm_isolated.work / "project"
    project.mkdir()
    (project / "notes.txt").write_text("The meeting is on Tuesday.\n")
    monkeypatch.setenv("RLM_RUN__BASE_URL", llama_server)
    result = rlm_cli("harness", "run", "Read notes.txt and say which day the meeting is.", "--workdir", str(project),
                     "--model", "openai:smollm2", "--max-steps", "3", "--sandbox", "process", "--json",
                     plugins=PLUGIN)
    assert result.code in (0, 1), result.err
    outcome = json.loads(result.out)
    assert outcome["environment"] == "harness"
    assert outcome["termination_reason"] in ("final", "max_steps"), outcome["error"]
    assert 1 <= outcome["usage"]["root"]["calls"] <= 4 and outcome["usage"]["root"]["input_tokens"] > 200
    events = [json.loads(line) for line in Path(outcome["trajectory_path"]).read_text().splitlines()]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
    assert not [e for e in events if e["type"] == "error"]
    steps = [e["data"] for e in events if e["type"] == "step"]
    assert steps and all(s["action"] for s in steps)


def test_the_in_process_llama_cpp_model_is_held_to_the_tool_call_grammar(rlm_cli, rlm_isolated, monkeypatch):
    """The llamacpp provider enforces the harness's reply format as a grammar: the tiny model's reply is a call of a
    listed tool (its answer may be nonsense; its shape is not). About 5 s."""
    pytest.importorskip("rlm_provider_llamacpp")
    monkeypatch.setenv("RLM_RUN__MAX_REPLY_TOKENS", "96")
    project = rlm_isolated.work / "project"
    project.mkdir()
    (project / "notes.txt").write_text("The meeting is on Tuesday.\n")
    result = rlm_cli("harness", "run", "Read notes.txt and say which day the meeting is.", "--workdir", str(project),
                     "--model", "llamacpp:smollm2", "--max-steps", "1", "--sandbox", "process", "--json",
                     plugins=f"{PLUGIN},rlm-provider-llamacpp")
    assert result.code in (0, 1), result.err
    outcome = json.loads(result.out)
    assert outcome["termination_reason"] in ("final", "max_steps"), outcome["error"]
    events = [json.loads(line) for line in Path(outcome["trajectory_path"]).read_text().splitlines()]
    steps = [e["data"] for e in events if e["type"] == "step"]
    assert steps[0]["reply"].lstrip().startswith("{") and '"tool"' in steps[0]["reply"][:16], steps[0]["reply"]
    starts = [e["data"] for e in events if e["type"] == "model_call_start" and e["data"].get("purpose") != "synthesis"]
    assert starts and str(starts[0].get("reply_format", "")).startswith("tool_protocol:"), starts[:1]
