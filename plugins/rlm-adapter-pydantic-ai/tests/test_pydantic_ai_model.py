"""``RlmModel`` under a plain pydantic-ai Agent: a text-only rlm model role calling tools through the text
protocol, its token counts on each response, retries for what cannot be used."""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai")

from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402

from rlm_adapter_pydantic_ai.model import INVALID_KEY, REPLY_KEY, RlmModel, reject_invalid_reply  # noqa: E402
from rlm_host.testing import ScriptedConnector  # noqa: E402


def agent_with(replies, **kwargs):
    role = ScriptedConnector.from_responses(replies, name="scripted:test")
    agent = Agent(RlmModel(role), instructions="Be brief.", **kwargs)
    agent.output_validator(reject_invalid_reply)

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return agent, role


def responses(result):
    return [m for m in result.all_messages() if isinstance(m, ModelResponse)]


def test_a_tool_call_then_an_answer_with_tokens_on_each_response():
    agent, role = agent_with([{"text": '{"tool": "add", "args": {"a": 2, "b": 3}}', "input_tokens": 50,
                               "output_tokens": 9},
                              {"text": '{"final": "5"}', "input_tokens": 70, "output_tokens": 4}])
    result = agent.run_sync("What is 2 + 3?")
    assert result.output == "5"
    first, second = responses(result)
    assert isinstance(first.parts[0], ToolCallPart) and first.parts[0].args == {"a": 2, "b": 3}
    assert (first.usage.input_tokens, first.usage.output_tokens) == (50, 9)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (70, 4)
    assert result.usage.input_tokens == 120 and result.usage.output_tokens == 13
    assert first.model_name == "scripted:test" and first.provider_details[REPLY_KEY].startswith('{"tool"')
    # what the text-only model was sent: one system message (instructions, then the protocol), then turns
    system, user, assistant, tool_result = role.calls[1]
    assert system["role"] == "system" and system["content"].startswith("Be brief.")
    assert "## add(a: integer, b: integer)" in system["content"] and "Add two numbers." in system["content"]
    assert user == {"role": "user", "content": "What is 2 + 3?"}
    assert assistant == {"role": "assistant", "content": '{"tool": "add", "args": {"a": 2, "b": 3}}'}
    assert tool_result == {"role": "user", "content": "Result of add:\n5"}


def test_unknown_tools_and_bad_arguments_come_back_as_retries_and_the_run_goes_on():
    agent, role = agent_with(['{"tool": "multiply", "args": {"a": 2}}', '{"tool": "add", "args": {"a": "x"}}',
                              '{"tool": "add", "args": {"a": 1, "b": 1}}', "2"], retries=3)
    result = agent.run_sync("1 + 1?")
    assert result.output == "2"
    sent = [m["content"] for m in role.calls[-1]]  # system, the task, then (reply, answer) pairs
    assert "Your call of multiply was rejected" in sent[3] and "Unknown tool name" in sent[3]
    assert "Your call of add was rejected" in sent[5] and '"missing","loc":["b"]' in sent[5]
    assert sent[7] == "Result of add:\n2"


def test_a_malformed_reply_is_sent_back_not_taken_as_the_answer():
    agent, role = agent_with(['{"thought": "hmm"}', '{"final": "ok"}'])
    result = agent.run_sync("Say ok")
    assert result.output == "ok"
    first = responses(result)[0]
    assert first.parts == [TextPart('{"thought": "hmm"}')] and first.provider_details[INVALID_KEY]
    assert "was not understood" in role.calls[1][-1]["content"]


def test_an_empty_reply_gets_pydantic_ais_own_retry():
    agent, role = agent_with([{"text": None}, "fine"])
    result = agent.run_sync("Say fine")
    assert result.output == "fine" and responses(result)[0].parts == []
    assert len(role.calls) == 2 and role.calls[1][-1]["role"] == "user"


class Answer(BaseModel):
    sensor: str
    reading: float


def test_a_structured_answer_goes_through_pydantic_ais_output_tool():
    role = ScriptedConnector.from_responses(['{"final": {"sensor": "B", "reading": 42.7}}'])
    agent = Agent(RlmModel(role), output_type=Answer)
    result = agent.run_sync("Which sensor?")
    assert result.output == Answer(sensor="B", reading=42.7)
    system = role.calls[0][0]["content"]
    assert "## final_result(" in system and "call `final_result`" in system
