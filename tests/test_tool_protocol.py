"""The text tool protocol (rlm_host.sdk.tools): tool calls from text-only models, for every framework."""

from __future__ import annotations

import json

import pytest

from rlm_host.sdk.tools import (
    FinalAnswer, InvalidReply, ToolCall, ToolSpec, coerce_tool_args, format_tool_call, format_tool_result,
    parse_tool_reply, render_tool_protocol,
)

RUN_CODE = ToolSpec("run_code", "Run Python code.", {"type": "object", "properties": {"code": {"type": "string"}},
                                                     "required": ["code"], "additionalProperties": False,
                                                     "title": "run_code"})
LLM_QUERY = ToolSpec("llm_query", "Ask a model.", {"type": "object", "properties": {"prompt": {"type": "string"}},
                                                   "required": ["prompt"]})
TOOLS = [RUN_CODE, LLM_QUERY]


@pytest.mark.parametrize("reply", [
    '{"tool": "run_code", "args": {"code": "print(1)"}}',
    '```json\n{"tool": "run_code", "args": {"code": "print(1)"}}\n```',
    '```\n{"tool": "run_code", "args": {"code": "print(1)"}}\n```',
    '{"name": "run_code", "arguments": {"code": "print(1)"}}',  # OpenAI's spelling
    '{"tool": "run_code", "code": "print(1)"}',  # flat arguments
    '{"tool": "run_code", "args": "print(1)"}',  # a bare string for the one string parameter
    '{"tool": "run_code", "args": "{\\"code\\": \\"print(1)\\"}"}',  # arguments as a JSON string
    '{"tool_name": "run_code", "parameters": {"code": "print(1)"}}',
])
def test_tool_calls_in_the_shapes_models_write(reply):
    assert parse_tool_reply(reply, TOOLS) == ToolCall("run_code", {"code": "print(1)"})


def test_prose_around_the_call_is_kept_and_raw_newlines_in_code_are_read():
    reply = 'I will count the lines.\n{"tool": "run_code", "args": {"code": "x = 1\nprint(x)"}}\nThen answer.'
    call = parse_tool_reply(reply, TOOLS)
    assert call == ToolCall("run_code", {"code": "x = 1\nprint(x)"}, "I will count the lines.\nThen answer.")


def test_the_first_action_wins_and_unrelated_json_before_it_is_skipped():
    reply = 'The data looks like {"a": 1}. {"tool": "llm_query", "args": {"prompt": "hi"}} {"final": "no"}'
    assert parse_tool_reply(reply, TOOLS).name == "llm_query"


def test_braces_inside_strings_do_not_confuse_the_scan():
    reply = '{"tool": "run_code", "args": {"code": "print(\'}{\' + \\"{\\")"}}'
    assert parse_tool_reply(reply, TOOLS) == ToolCall("run_code", {"code": "print('}{' + \"{\")"})


@pytest.mark.parametrize(("reply", "answer"), [
    ('{"final": "Sensor B, 42.7"}', "Sensor B, 42.7"),
    ('```json\n{"final": "done"}\n```', "done"),
    ('{"final_answer": 42}', "42"),
    ("Sensor B failed on day 117.", "Sensor B failed on day 117."),  # plain text is the answer
    ('The answer is {"x": 1} as JSON.', 'The answer is {"x": 1} as JSON.'),  # JSON inside prose: still an answer
    ('["A", "B"]', '["A", "B"]'),  # JSON that is not an object may be an answer
])
def test_final_answers(reply, answer):
    parsed = parse_tool_reply(reply, TOOLS)
    assert isinstance(parsed, FinalAnswer) and parsed.text == answer


@pytest.mark.parametrize("reply", [
    '{"thought": "let me think"}',  # JSON, but no action
    '```json\n{"x": 1}\n```',
    '{"tool": "run_code", "args": {"code": "unterminated',  # broken JSON
    '{"tool": 3, "args": {}}',  # not a tool name
])
def test_replies_that_are_neither_are_invalid_with_a_reason(reply):
    parsed = parse_tool_reply(reply, TOOLS)
    assert isinstance(parsed, InvalidReply) and parsed.reason and parsed.text


@pytest.mark.parametrize("reply", [None, "", "  \n"])
def test_an_empty_reply_is_invalid_without_text(reply):
    parsed = parse_tool_reply(reply, TOOLS)
    assert isinstance(parsed, InvalidReply) and parsed.text == ""


def test_unknown_tools_and_bad_arguments_are_left_to_the_framework():
    assert parse_tool_reply('{"tool": "search", "args": {"q": "x"}}', TOOLS) == ToolCall("search", {"q": "x"})
    assert parse_tool_reply('{"tool": "run_code", "args": {}}', TOOLS) == ToolCall("run_code", {})
    assert parse_tool_reply('{"tool": "run_code", "args": [1]}', TOOLS) == ToolCall("run_code", "[1]")
    assert parse_tool_reply('{"tool": "run_code", "args": "print(1)"}') == ToolCall("run_code", "print(1)")  # no schema


def test_coerce_args():
    assert coerce_tool_args(None) == {} and coerce_tool_args({"a": 1}) == {"a": 1}
    assert coerce_tool_args('{"a": 1}') == {"a": 1} and coerce_tool_args("x", RUN_CODE) == {"code": "x"}
    assert coerce_tool_args(5, RUN_CODE) == "5"


def test_render_protocol_lists_each_tool_with_its_schema_and_the_two_shapes():
    text = render_tool_protocol(TOOLS)
    assert '{"tool": "<tool name>", "args": {<the arguments>}}' in text and '{"final": "<the answer>"}' in text
    assert "## run_code(code: string)" in text and "Run Python code." in text
    assert '"required": ["code"]' in text and "title" not in text and "additionalProperties" not in text
    assert "## llm_query(prompt: string)" in text
    structured = render_tool_protocol([*TOOLS, ToolSpec("final_result", "The answer.")], text_answer=False,
                                 answer_tools=["final_result"])
    assert "call `final_result`" in structured and '{"final"' not in structured


def test_history_is_written_in_the_protocol_form_and_reads_back():
    text = format_tool_call("run_code", {"code": "print(1)"}, "First a look.")
    assert text.splitlines()[0] == "First a look."
    assert parse_tool_reply(text, TOOLS) == ToolCall("run_code", {"code": "print(1)"}, "First a look.")
    assert json.loads(format_tool_call("llm_query", {"prompt": "é"})) == {"tool": "llm_query", "args": {"prompt": "é"}}
    assert format_tool_result("run_code", "4") == "Result of run_code:\n4"
    assert format_tool_result("run_code", "", status="error") == "run_code failed: (empty)"
    assert "rejected" in format_tool_result("search", "Unknown tool", status="retry")
