"""``RLM`` against a real model: the built-in openai provider talking to llama.cpp's OpenAI-compatible server on
loopback with the embedded SmolLM2-135M, through ``completion`` and ``stream``. The tiny model's answers are
weak; what must hold is that the runs end cleanly with real usage counted. Slow: it starts the server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host import RLM

pytest.importorskip("rlm_provider_llamacpp", reason="the llama.cpp provider plugin has the server fixture")
from rlm_provider_llamacpp.testing import llama_server  # noqa: E402,F401 (a fixture)

pytestmark = pytest.mark.slow


def test_completion_and_stream_against_a_real_server(llama_server, rlm_isolated):
    notes = "Day 1: all sensors fine.\nDay 2: sensor B failed at 42.7 bar.\n"
    rlm = RLM("openai:smollm2", base_url=llama_server, sandbox="process", max_steps=2)
    result = rlm.completion(notes, "Which sensor failed?")
    assert result.termination_reason in ("final", "max_steps"), result.error
    assert result.usage.root.calls >= 1 and result.usage.root.input_tokens > 50  # the server's own counts
    events = [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
    stream = rlm.stream(notes, "Which sensor failed?")
    kinds = [event.type for event in stream]
    assert kinds[0] == "run_start" and kinds[-1] == "final" and "step" in kinds
    assert stream.result is not None and stream.result.usage.root.input_tokens > 50


def test_a_chat_session_against_a_real_server(llama_server, rlm_isolated):
    notes = "Day 1: all sensors fine.\nDay 2: sensor B failed at 42.7 bar.\n"
    chat = RLM("openai:smollm2", base_url=llama_server, sandbox="process", max_steps=2).session(notes)
    first = chat.ask("Which sensor failed?")
    second = chat.ask("On which day?")
    for turn in (first, second):
        assert turn.termination_reason in ("final", "max_steps"), turn.error
        assert turn.usage.root.input_tokens > 50
    start = json.loads(Path(second.trajectory_path).read_text().splitlines()[0])
    assert "Which sensor failed?" in start["data"]["task"]  # the second turn saw the first
    assert json.loads(chat.path.read_text())["turns"][1]["run_id"] == second.run_id
