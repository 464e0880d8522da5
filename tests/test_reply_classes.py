"""Root replies no model output may break: CRLF line endings, a ``` inside a string of a repl block, replies of
hundreds of KB with the code at the very end, and text carrying lone UTF-16 surrogates. Each class is checked
by the parser and through a real run (scripted root model, the process sandbox) to its final answer."""

from __future__ import annotations

import json

import pytest

from rlm_host.environments.repl_format import parse_reply
from rlm_host.testing import isolated_runner, run_scripted


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path)


def run(runner, *replies, context="abc"):
    result, events, _ = run_scripted(runner, "How long is the context?", list(replies), context=context,
                                     sandbox="process", max_steps=3)
    return result, events


# --------------------------------------------------------------------------------------------- CRLF


def test_crlf_fences_and_final_lines_are_recognised():
    parsed = parse_reply("Let me look.\r\n```repl\r\nx = len(context)\r\nprint(x)\r\n```\r\nFINAL_VAR(x)\r\n")
    assert parsed.code_blocks == ["x = len(context)\nprint(x)\n"] and not parsed.unclosed_fence
    assert (parsed.final_kind, parsed.final_text) == ("variable", "x")
    assert parse_reply("Done.\rFINAL(3)\r").final_text == "3"  # old Mac line ends too


def test_a_crlf_run_reaches_its_final_answer(runner):
    result, _ = run(runner, "```repl\r\nn = len(context)\r\nprint(n)\r\n```\r\n", "FINAL_VAR(n)\r\n")
    assert result.completed and result.final_response == "3" and result.steps == 2


# --------------------------------------------------------------------------------------------- fences in strings


def test_a_fence_inside_a_string_does_not_close_the_block():
    reply = '```repl\nmarker = "```"\nprint(marker + "x")\n   ```\nafter'
    parsed = parse_reply(reply)
    assert parsed.code_blocks == ['marker = "```"\nprint(marker + "x")\n'] and not parsed.unclosed_fence


def test_a_run_whose_code_holds_a_fence_in_a_string(runner):
    result, events = run(runner, '```repl\nfence = "```"\nFINAL(fence + str(len(context)))\n```')
    assert result.completed and result.final_response == "```3"


# --------------------------------------------------------------------------------------------- very long replies


@pytest.mark.parametrize("filler", ["prose " * 60_000 + "\n", "FINAL(" + "x" * 100_000 + "\n"],
                         ids=["360KB of prose", "100KB unclosed FINAL line"])
def test_a_valid_block_at_the_end_of_a_huge_reply_still_runs(runner, filler):
    parsed = parse_reply(filler + "```repl\nFINAL(len(context))\n```\n")
    assert parsed.code_blocks == ["FINAL(len(context))\n"]
    result, events = run(runner, filler + "```repl\nFINAL(len(context))\n```\n")
    assert result.completed and result.final_response == "3", result.error
    (step,) = [e for e in events if e.type == "step"]
    assert step.data["action"] != "no_code"


# --------------------------------------------------------------------------------------------- lone surrogates


def test_lone_surrogates_are_sanitised_and_the_trajectory_stays_valid_utf8(runner):
    reply = json.loads('"Thinking \\ud800 about it.\\n```repl\\nprint(\'out \\udfff\')\\nFINAL(len(context))\\n```"')
    assert "\ud800" in reply  # what a JSON body with a lone surrogate escape decodes to
    result, events = run(runner, reply)
    assert result.completed and result.final_response == "3", result.error
    raw = open(result.trajectory_path, "rb").read()
    text = raw.decode("utf-8")  # strict: raises on surrogates encoded as CESU-8
    for line in text.splitlines():
        json.loads(line)
    assert "\ufffd" in text  # the surrogates became replacement characters, in the reply and in the output


def test_sandbox_output_with_a_surrogate_keeps_the_trajectory_valid(runner):
    result, events = run(runner, "```repl\nprint('out', chr(0xD800))\n```", "FINAL(done)")
    assert result.completed and result.steps == 2
    lines = open(result.trajectory_path, "rb").read().decode("utf-8").splitlines()
    steps = [json.loads(line) for line in lines if '"step"' in line and json.loads(line)["type"] == "step"]
    assert steps[0]["data"]["observation"]["blocks"][0]["stdout"] == "out \ufffd\n"
