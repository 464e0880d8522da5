"""Reading root-model replies: code blocks and final answers, including malformed replies."""

import pytest

from rlm_host.environments.repl_format import parse_reply
from rlm_host.context import describe_context
from rlm_host.environments.kit import render_description


def test_repl_and_python_blocks_run_in_order_other_fences_do_not():
    reply = "Look:\n```repl\nx = 1\n```\ntext\n```python\nprint(x)\n```\n```json\n{}\n```\n```\nplain\n```"
    parsed = parse_reply(reply)
    assert parsed.code_blocks == ["x = 1\n", "print(x)\n"]
    assert parsed.final_kind is None and not parsed.unclosed_fence


def test_unclosed_fence_runs_to_the_end_and_is_flagged():
    parsed = parse_reply("```repl\nprint(len(context))\n")
    assert parsed.code_blocks == ["print(len(context))"]
    assert parsed.unclosed_fence


@pytest.mark.parametrize(
    "reply, kind, text",
    [
        ("Done.\nFINAL(42)", "direct", "42"),
        ('FINAL("The answer is (b)")', "direct", "The answer is (b)"),
        ("  FINAL(multi\nline answer)", "direct", "multi\nline answer"),
        ("FINAL_VAR(result)", "variable", "result"),
        ("FINAL_VAR('result')\n", "variable", "result"),
    ],
)
def test_final_at_the_start_of_a_line(reply, kind, text):
    parsed = parse_reply(reply)
    assert (parsed.final_kind, parsed.final_text) == (kind, text)


@pytest.mark.parametrize(
    "reply",
    [
        "I will call FINAL(answer) once I know more.",
        "When done, use FINAL_VAR(x).",
        "```repl\nFINAL(1)\n```",  # inside code: the sandbox runs it; the text parser ignores it
        "FINAL without parentheses",
    ],
)
def test_mentions_of_final_do_not_end_the_run(reply):
    assert parse_reply(reply).final_kind is None


def test_description_size_does_not_depend_on_context_size():
    small = render_description(describe_context("x" * 1_000))
    large = render_description(describe_context("x" * 100_000_000))
    assert abs(len(large) - len(small)) < 20
    many = describe_context(["doc"] * 10_000)
    assert len(many["document_lengths"]) == 20 and many["documents"] == 10_000
    assert len(render_description(many)) < 600


def test_description_of_json_and_none():
    meta = describe_context({"a": 1, "b": [1, 2]})
    assert meta["type"] == "dict" and meta["keys"] == ["a", "b"]
    assert "nothing" in render_description(describe_context(None))
