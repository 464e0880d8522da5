"""Test helpers for rlm and for anyone writing an rlm plugin (needs pytest: ``pip install rlm-host[test]``).

The public names, importable from here:

- contract suites, one per kind: subclass one in a ``Test…`` class of your plugin's tests and fill in the
  few hooks it names; pytest then runs the whole protocol suite against your component —
  ``SandboxContract``, ``ProviderContract``, ``EnvironmentContract``, ``SinkContract``, ``ContextLoaderContract``,
  ``BenchmarkPackContract``, ``FrameworkContract``, ``ToolAgentScenarios`` (with its kit: ``run_framework``,
  ``call``, ``final``, ``actions``, the station-log data and the framework rewards);
- engine drivers: ``isolated_runner``, ``run_scripted``, ``haystack``, ``trajectory``, ``FIND_NEEDLE``,
  ``HAYSTACK_NEEDLE``, ``assert_context_stays_out_of_the_prompt``; ``ScriptedConnector`` (a model answering
  from a script); ``HELPERS_SOURCE`` (the REPL helpers pure_rlm runs in every sandbox: a runtime must run them);
  ``ENVIRONMENT_REPLY_FORMATS`` (the reply format of pure_rlm, of the tool protocol and of every installed
  environment that declares a JSON-schema one, with whether its reader can act on a reply: for providers that
  enforce them);
- recorded run trees made by hand, for what reads trajectories back (a store, a replay, an exporter):
  ``RunTreeEvents``, ``sample_run_tree``, ``write_trajectory``, ``step_data``, ``code_block``, ``result_data``,
  ``SAMPLE_REPLIES``, ``SAMPLE_START``;
- ``FakeHTTPServer``, ``Behaviour``, ``RecordedRequest``: a loopback HTTP server answering from a queue of
  scripted behaviours and recording every request; subclass it with an API's route and error body;
- fixtures (no import needed: this package is a pytest plugin): ``rlm_isolated``, ``rlm_cli``,
  ``rlm_plugin_host`` (see ``rlm_host.testing.pytest_plugin``);
- ``OpenAIServer`` (with ``openai_answer``, ``openai_unauthorized``): a loopback OpenAI-compatible server.

A plugin's own real servers and engines are that plugin's test helpers, in its ``testing`` module (say, a Docker
engine holding the sandbox image, or llama.cpp's server with the embedded model): this package names no plugin and
installs nothing.

Nothing in the host imports this package: the ``rlm`` command never loads pytest.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

# Plain ``assert`` statements of the suites give pytest's detailed failure messages in the plugins' tests.
pytest.register_assert_rewrite(
    "rlm_host.testing.sandbox_contract",
    "rlm_host.testing.provider_contract",
    "rlm_host.testing.provider_calls",
    "rlm_host.testing.environment_contract",
    "rlm_host.testing.sink_contract",
    "rlm_host.testing.context_loader_contract",
    "rlm_host.testing.benchmark_contract",
    "rlm_host.testing.engine",
)

_LAZY: dict[str, str] = {
    "SandboxContract": "rlm_host.testing.sandbox_contract",
    "median_step_seconds": "rlm_host.testing.sandbox_contract",
    "ProviderContract": "rlm_host.testing.provider_contract",
    "EnvironmentContract": "rlm_host.testing.environment_contract",
    "SinkContract": "rlm_host.testing.sink_contract",
    "ContextLoaderContract": "rlm_host.testing.context_loader_contract",
    "BenchmarkPackContract": "rlm_host.testing.benchmark_contract",
    "FrameworkContract": "rlm_host.testing.framework_contract",
    "ToolAgentScenarios": "rlm_host.testing.tool_agent",
    "run_framework": "rlm_host.testing.tool_agent",
    "write_station_log": "rlm_host.testing.tool_agent",
    "UserToolScenarios": "rlm_host.testing.tool_agent",
    "call": "rlm_host.testing.tool_agent",
    "final": "rlm_host.testing.tool_agent",
    "actions": "rlm_host.testing.tool_agent",
    "LOG": "rlm_host.testing.tool_agent",
    "QUESTION": "rlm_host.testing.tool_agent",
    "SUB_RULES": "rlm_host.testing.tool_agent",
    "FIRST_LOOK": "rlm_host.testing.tool_agent",
    "ANSWER": "rlm_host.testing.tool_agent",
    "TOOL_CALL": "rlm_host.testing.tool_agent",
    "TOOL_RESULT": "rlm_host.testing.tool_agent",
    "TOOL_ERROR": "rlm_host.testing.tool_agent",
    "RETRY": "rlm_host.testing.tool_agent",
    "MODEL_TEXT": "rlm_host.testing.tool_agent",
    "FINAL": "rlm_host.testing.tool_agent",
    "in_sandbox": "rlm_host.testing.framework_contract",
    "assert_a_real_model_run_ends_cleanly": "rlm_host.testing.framework_contract",
    "isolated_runner": "rlm_host.testing.engine",
    "run_scripted": "rlm_host.testing.engine",
    "haystack": "rlm_host.testing.engine",
    "trajectory": "rlm_host.testing.engine",
    "FIND_NEEDLE": "rlm_host.testing.engine",
    "HAYSTACK_NEEDLE": "rlm_host.testing.engine",
    "assert_context_stays_out_of_the_prompt": "rlm_host.testing.engine",
    **{name: "rlm_host.testing.run_trees" for name in ("RunTreeEvents", "sample_run_tree", "write_trajectory",
                                                       "step_data", "code_block", "result_data", "SAMPLE_REPLIES",
                                                       "SAMPLE_START")},
    "ScriptedConnector": "rlm_host.models.scripted",
    "HELPERS_SOURCE": "rlm_host.environments.repl",
    "ENVIRONMENT_REPLY_FORMATS": "rlm_host.testing.reply_formats",
    "FakeHTTPServer": "rlm_host.testing.fake_http",
    "Behaviour": "rlm_host.testing.fake_http",
    "RecordedRequest": "rlm_host.testing.fake_http",
    "OpenAIServer": "rlm_host.testing.openai_server",
    "openai_answer": "rlm_host.testing.openai_server",
    "openai_unauthorized": "rlm_host.testing.openai_server",
    "Isolated": "rlm_host.testing.pytest_plugin",
    "CliResult": "rlm_host.testing.pytest_plugin",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
