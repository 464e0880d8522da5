"""``RlmChatModel`` on its own and under a plain LangChain agent: a text-only rlm model role calling tools
through the text protocol, with ids, token counts, and its own replies shown back verbatim."""

from __future__ import annotations

import pytest

pytest.importorskip("deepagents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402

from rlm_adapter_deepagents.model import INVALID_KEY, REPLY_KEY, RlmChatModel, to_chat  # noqa: E402
from rlm_host.testing import ScriptedConnector  # noqa: E402


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_a_tool_call_then_an_answer_under_a_langchain_agent():
    role = ScriptedConnector.from_responses([
        {"text": '{"tool": "add", "args": {"a": 2, "b": 3}}', "input_tokens": 50, "output_tokens": 9},
        {"text": '{"final": "5"}', "input_tokens": 70, "output_tokens": 4},
    ])
    agent = create_agent(RlmChatModel(role=role), tools=[add], system_prompt="Be brief.")
    messages = agent.invoke({"messages": [HumanMessage("What is 2 + 3?")]})["messages"]
    call, result, answer = messages[1:]
    assert call.tool_calls[0]["name"] == "add" and call.tool_calls[0]["args"] == {"a": 2, "b": 3}
    assert call.tool_calls[0]["id"].startswith("call_") and result.tool_call_id == call.tool_calls[0]["id"]
    assert call.usage_metadata == {"input_tokens": 50, "output_tokens": 9, "total_tokens": 59}
    assert result.content == "5" and answer.content == "5" and answer.usage_metadata["input_tokens"] == 70
    system, user, assistant, tool_result = role.calls[1]
    assert system["content"].startswith("Be brief.") and "## add(a: integer, b: integer)" in system["content"]
    assert user == {"role": "user", "content": "What is 2 + 3?"}
    assert assistant == {"role": "assistant", "content": '{"tool": "add", "args": {"a": 2, "b": 3}}'}
    assert tool_result == {"role": "user", "content": "Result of add:\n5"}


def test_bind_tools_returns_a_new_model_and_brief_descriptions_keep_the_first_paragraph():
    role = ScriptedConnector.from_responses(['{"final": "ok"}'])
    model = RlmChatModel(role=role, brief_tools=True)
    tool = StructuredTool.from_function(add, description="Add two numbers.\n\nA second paragraph, left out.")
    bound = model.bind_tools([tool])
    assert model.tool_specs == [] and [t.name for t in bound.tool_specs] == ["add"]
    assert bound.tool_specs[0].description == "Add two numbers."


def test_malformed_and_empty_replies_are_marked_invalid_prose_is_kept():
    role = ScriptedConnector.from_responses(['{"thought": "hmm"}', {"text": None},
                                             'Let me add.\n{"tool": "add", "args": {"a": 1, "b": 1}}'])
    bound = RlmChatModel(role=role).bind_tools([add])
    malformed, empty, prose = (bound.invoke("1 + 1?") for _ in range(3))
    assert malformed.additional_kwargs[INVALID_KEY] and not malformed.tool_calls
    assert empty.additional_kwargs[INVALID_KEY] and empty.content == ""
    assert prose.content == "Let me add." and prose.tool_calls[0]["args"] == {"a": 1, "b": 1}
    assert prose.additional_kwargs[REPLY_KEY].startswith("Let me add.")


def test_history_from_another_model_is_shown_in_the_protocols_form():
    chat = to_chat([SystemMessage("sys"), HumanMessage("q"),
                    AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1}, "id": "c1"}]),
                    ToolMessage("boom", tool_call_id="c1", name="add", status="error")], "PROTOCOL")
    assert chat == [{"role": "system", "content": "sys\n\nPROTOCOL"}, {"role": "user", "content": "q"},
                    {"role": "assistant", "content": '{"tool": "add", "args": {"a": 1}}'},
                    {"role": "user", "content": "add failed:\nboom"}]
