"""Structured replies: an environment's ReplyFormat reaches the connectors that can enforce it, on the root
model's turns only, as ``[run] reply_format`` (auto / on / off, ``--reply-format``) says; the OpenAI-compatible
services put it in their own request fields. (generic's JSON schema: plugins/rlm-env-generic/tests.)"""

from __future__ import annotations

from typing import Any

import pytest

from rlm_host.environments.protocol import reply_format_of
from rlm_host.environments.pure_rlm.environment import PureRLMEnvironment
from rlm_host.environments.repl_format import REPLY_FORMAT as PURE_RLM
from rlm_host.models.protocol import ReplyFormat, reply_format_for
from rlm_host.testing import ScriptedConnector, isolated_runner, trajectory

ABSENT = "absent"  # the keyword was not passed at all


class Recording:
    """A scripted model that declares which reply formats it enforces and records what each call was given."""

    def __init__(self, replies: list[str], *, kinds: frozenset[str] = frozenset({"gbnf", "json_schema"}),
                 by_default: bool = True) -> None:
        self.inner = ScriptedConnector.from_responses(replies, name="scripted:recording")
        self.name, self.context_window = self.inner.name, self.inner.context_window
        self.reply_formats, self.reply_format_by_default = kinds, by_default
        self.calls: list[tuple[str, Any]] = []

    def complete(self, messages, **kwargs):
        self.calls.append((kwargs.get("purpose"), kwargs.get("reply_format", ABSENT)))
        return self.inner.complete(messages, **kwargs)


class Plain:
    """A connector declaring nothing about reply formats."""


def declaring(kinds: set[str], by_default: bool) -> Any:
    connector = Plain()
    connector.reply_formats, connector.reply_format_by_default = frozenset(kinds), by_default
    return connector


# ------------------------------------------------------------------------------ the record and the choice


def test_a_reply_format_is_a_hashable_record_of_its_kinds():
    schema = ReplyFormat("schema", json_schema={"type": "object"})
    assert PURE_RLM.kinds == {"gbnf"} and schema.kinds == {"json_schema"}
    assert ReplyFormat("both", gbnf="root ::= x", json_schema={}).kinds == {"gbnf", "json_schema"}
    assert ReplyFormat("none").kinds == frozenset()
    assert len({schema, schema}) == 1  # the schema (a dict) does not stop hashing
    with pytest.raises(AttributeError):
        PURE_RLM.gbnf = "x"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kinds", "by_default", "mode", "given"),
    [
        ({"gbnf"}, True, "auto", True),
        ({"gbnf"}, True, "on", True),
        ({"gbnf"}, True, "off", False),
        ({"gbnf"}, False, "auto", False),  # a hosted chat model: only when asked for
        ({"gbnf"}, False, "on", True),
        ({"json_schema"}, False, "on", False),  # it cannot enforce a grammar
        (set(), True, "on", False),
    ],
)
def test_which_connector_gets_the_format(kinds, by_default, mode, given):
    assert reply_format_for(declaring(kinds, by_default), PURE_RLM, mode) == (PURE_RLM if given else None)


def test_connectors_declaring_nothing_never_get_one():
    assert reply_format_for(Plain(), PURE_RLM, "on") is None
    assert reply_format_for(declaring({"gbnf"}, True), None, "on") is None


def test_the_environments_offer_their_format():
    assert reply_format_of(PureRLMEnvironment.__new__(PureRLMEnvironment)) is PURE_RLM
    assert reply_format_of(Plain()) is None


# ------------------------------------------------------------------------------ through a run


def run_with(tmp_path, monkeypatch, model: Recording, **options) -> list[tuple[str, Any]]:
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, environ=options.pop("environ", {}))
    result = runner.run_task("q", context="some text", connectors={"root": model, "sub": model}, sandbox="process",
                             **options)
    assert result.completed, result.error
    return model.calls


PURE_SCRIPT = ["```repl\nx = llm_query('hi')\nprint(x)\n```", "the sub-model's answer", "FINAL_VAR(x)"]


@pytest.mark.parametrize(("mode", "by_default", "given"),
                         [("auto", True, True), ("auto", False, False), ("on", False, True), ("off", True, False)])
def test_turns_get_the_environments_format_and_sub_calls_never(tmp_path, monkeypatch, mode, by_default, given):
    calls = run_with(tmp_path, monkeypatch, Recording(PURE_SCRIPT, by_default=by_default), reply_format=mode)
    expected = PURE_RLM if given else ABSENT
    assert calls == [("turn", expected), ("sub_call", ABSENT), ("turn", expected)]


def test_the_trajectory_records_which_calls_were_held_to_a_reply_format(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = Recording(PURE_SCRIPT)
    result = isolated_runner(tmp_path).run_task("q", context="t", connectors={"root": model, "sub": model},
                                                sandbox="process")
    starts = [e for e in trajectory(result) if e["type"] == "model_call_start"]
    assert [(e["data"]["purpose"], e["data"].get("reply_format")) for e in starts] == [
        ("turn", PURE_RLM.name), ("sub_call", None), ("turn", PURE_RLM.name)]


def test_the_setting_comes_from_the_configuration(tmp_path, monkeypatch):
    calls = run_with(tmp_path, monkeypatch, Recording(PURE_SCRIPT), environ={"RLM_RUN__REPLY_FORMAT": "off"})
    assert {given for _, given in calls} == {ABSENT}


def test_synthesis_after_the_last_step_is_free_text(tmp_path, monkeypatch):
    model = Recording(["```repl\nprint(1)\n```", "my best answer"])
    monkeypatch.chdir(tmp_path)
    result = isolated_runner(tmp_path).run_task("q", context="t", connectors={"root": model, "sub": model},
                                                sandbox="process", max_steps=1)
    assert result.final_response == "my best answer"
    assert model.calls == [("turn", PURE_RLM), ("synthesis", ABSENT)]


def test_a_bad_mode_is_a_usage_error(rlm_cli):
    result = rlm_cli("run", "q", "--reply-format", "sometimes", "--model", "scripted:none.json")
    assert result.code == 2 and "--reply-format" in result.err and "'auto', 'on' or 'off'" in result.err
