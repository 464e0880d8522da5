"""``RlmLlm`` under a plain ADK ``LlmAgent`` and ``InMemoryRunner``: a text-only rlm model role calling tools
through the text protocol, its token counts on each response, ADK's own answers to calls it rejects."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

from rlm_adapter_adk.model import INVALID_KEY, REPLY_KEY, RlmLlm, to_response  # noqa: E402
from rlm_host.sdk.models import Completion  # noqa: E402
from rlm_host.testing import ScriptedConnector  # noqa: E402


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run_agent(replies, message="What is 2 + 3?"):
    role = ScriptedConnector.from_responses(replies, name="scripted:test")
    agent = LlmAgent(name="calc", model=RlmLlm(role), instruction=lambda _: "Be brief.", tools=[add])

    async def go():
        runner = InMemoryRunner(agent=agent, app_name="t")
        session = await runner.session_service.create_session(app_name="t", user_id="u")
        content = types.Content(role="user", parts=[types.Part(text=message)])
        events = [e async for e in runner.run_async(user_id="u", session_id=session.id, new_message=content)]
        await runner.close()
        return events

    return asyncio.run(go()), role


def test_a_tool_call_then_an_answer_with_tokens_on_each_response():
    events, role = run_agent([{"text": '{"tool": "add", "args": {"a": 2, "b": 3}}', "input_tokens": 50,
                               "output_tokens": 9},
                              {"text": '{"final": "5"}', "input_tokens": 70, "output_tokens": 4}])
    call_event, result_event, answer = events
    (function_call,) = call_event.get_function_calls()
    assert (function_call.name, function_call.args) == ("add", {"a": 2, "b": 3})
    assert (call_event.usage_metadata.prompt_token_count, call_event.usage_metadata.candidates_token_count) == (50, 9)
    assert call_event.custom_metadata[REPLY_KEY].startswith('{"tool"')
    assert result_event.get_function_responses()[0].response == {"result": 5}
    assert answer.is_final_response() and answer.content.parts[0].text == "5"
    assert answer.usage_metadata.total_token_count == 74
    # what the text-only model was sent: one system message (instructions, then the protocol), then turns
    system, user, assistant, tool_result = role.calls[1]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert "## add(a: integer, b: integer)" in system["content"] and "Add two numbers." in system["content"]
    assert user == {"role": "user", "content": "What is 2 + 3?"}
    assert assistant == {"role": "assistant", "content": '{"tool": "add", "args": {"a": 2, "b": 3}}'}
    assert tool_result == {"role": "user", "content": "Result of add:\n5"}


def test_an_unknown_tool_comes_back_from_adk_as_a_rejection_and_the_run_goes_on():
    events, role = run_agent(['{"tool": "multiply", "args": {"a": 2}}', '{"tool": "add", "args": {"a": 1, "b": 1}}',
                              "2"])
    assert events[-1].is_final_response() and events[-1].content.parts[0].text == "2"
    sent = [m["content"] for m in role.calls[-1]]
    assert sent[3].startswith("Your call of multiply was rejected") and "no tool with that name" in sent[3]
    assert sent[5] == "Result of add:\n2"


def test_replies_that_are_neither_are_marked_invalid():
    empty = to_response(Completion(text=None), [])
    assert empty.custom_metadata[INVALID_KEY] and empty.content.parts[0].text == ""
    shaped = to_response(Completion(text='{"thought": "hmm"}', input_tokens=3, output_tokens=2), [])
    assert "neither a tool call nor a final answer" in shaped.custom_metadata[INVALID_KEY]
    assert shaped.usage_metadata.total_token_count == 5
    answer = to_response(Completion(text="Plain prose is the answer."), [])
    assert INVALID_KEY not in answer.custom_metadata and answer.content.parts[0].text == "Plain prose is the answer."
