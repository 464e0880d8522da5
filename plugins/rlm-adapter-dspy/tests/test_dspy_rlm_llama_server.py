"""dspy.RLM driving a real model: the built-in openai provider against llama.cpp's OpenAI-compatible server on
loopback, with the embedded SmolLM2-135M. The tiny model rarely writes dspy.RLM's fields, so what is checked is
what must hold whatever it answers: the run ends cleanly (an answer, the step limit, or dspy giving up
with a clear error; never an internal error), its usage is counted from the server's token counts, and its
trajectory is complete. Slow: it starts the server (about 5 s) and makes a few real model calls."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

LLAMA_TESTS = Path(__file__).resolve().parents[2] / "rlm-provider-llamacpp" / "tests"
if str(LLAMA_TESTS) not in sys.path:
    sys.path.append(str(LLAMA_TESTS))

from llama_server import llama_server  # noqa: E402,F401 (a fixture)

pytestmark = pytest.mark.slow


def test_a_dspy_rlm_run_against_a_real_llama_cpp_server(llama_server, rlm_cli, rlm_isolated):
    notes = rlm_isolated.work / "notes.txt"
    notes.write_text("Day 1: all sensors fine.\nDay 2: sensor B failed at 42.7 bar.\n")
    result = rlm_cli("run", "Which sensor failed?", "--framework", "dspy-rlm", "--context", str(notes),
                     "--model", "openai:smollm2", "--base-url", llama_server, "--max-steps", "3",
                     "--sandbox", "process", "--json",
                     plugins="rlm-adapter-dspy")  # fmt: skip
    outcome = json.loads(result.out)
    assert outcome["framework"] == "dspy-rlm"
    assert outcome["termination_reason"] in ("final", "max_steps", "error"), outcome
    assert not (outcome["error"] or "").startswith(("internal", "TypeError", "AttributeError")), outcome["error"]
    assert 1 <= outcome["usage"]["root"]["calls"] <= 3 and outcome["usage"]["root"]["input_tokens"] > 50
    events = [json.loads(line) for line in Path(outcome["trajectory_path"]).read_text().splitlines()]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
