"""The frameworks kit: for framework plugins (``rlm_register_frameworks``, a ``FrameworkSpec`` whose
factory is called with a ``FrameworkContext`` and returns a ``Framework``: ``run()`` and ``close()``).

A framework lets an agent framework drive the loop over the run's own sandbox and models: ``SandboxTools``
(``ctx.tools``) is the sandbox as tools (``run_code``…, described by ``TOOL_DESCRIPTIONS`` and
``AGENT_INSTRUCTIONS``, which ``agent_instructions`` fills in for the run), ``run_coroutine`` runs an async
framework from the plugin's thread, and ``StepLimitReached`` ends a run at its step limit. A framework that
expects native tool calls gets them from a text-only model through the tool protocol of ``rlm_host.sdk.tools``.
``truncate`` is the environments' middle-cut of long output.

The user's own functions (``RLM(tools=[fn])``, ``--tool``) reach an agent's tools as ``ctx.tools.user_tools``
(``UserTools.functions()``: plain callables through the run's host-side tool path; ``tool_error_text`` /
``tool_result_text`` for what the model is shown, ``check_tool_names`` against the framework's own tool names). The
run's answer type is ``ctx.output``: ``typed_answer`` holds an answer to it (``OutputInvalid`` with the problems,
``ANSWER_REJECTED`` the words sent back), ``answer_type_instructions`` tells the agent.

Reference plugins to copy: ``plugins/rlm-adapter-pydantic-ai`` (native tool calls through the tool protocol),
``plugins/rlm-adapter-dspy`` (a framework with its own REPL loop). Contract suite:
``rlm_host.testing.FrameworkContract`` (and ``ToolAgentScenarios`` for tool-calling frameworks).
"""

import warnings
from typing import Any

from rlm_host.environments.kit import truncate
from rlm_host.frameworks.protocol import (EVENT_REWARDS, Framework, FrameworkContext, FrameworkOutcome,
                                          FrameworkRewards, StepLimitReached, run_coroutine)
from rlm_host.environments.repl_format import REPLY_FORMAT as REPL_REPLY_FORMAT
from rlm_host.frameworks.compaction import ChatCompactor
from rlm_host.environments.output_type import OutputInvalid
from rlm_host.frameworks.tools import (AGENT_INSTRUCTIONS, ANSWER_REJECTED, TOOL_DESCRIPTIONS, CodeOutcome,
                                       SandboxTools, UserTools, agent_instructions, answer_type_instructions,
                                       check_tool_names, describe_context_briefly, tool_error_text, tool_result_text,
                                       typed_answer)

__all__ = [
    # the contract
    "Framework", "FrameworkContext", "FrameworkOutcome", "StepLimitReached", "run_coroutine",
    "EVENT_REWARDS", "FrameworkRewards",
    # the run's sandbox as tools
    "SandboxTools", "CodeOutcome", "TOOL_DESCRIPTIONS", "AGENT_INSTRUCTIONS", "agent_instructions",
    "describe_context_briefly", "truncate",
    # the user's own functions as an agent's tools, and the run's answer type
    "UserTools", "tool_error_text", "tool_result_text", "check_tool_names", "typed_answer", "OutputInvalid",
    "ANSWER_REJECTED", "answer_type_instructions",
    # the reply shape a provider can enforce for the REPL loop (the tool protocol's is in rlm_host.sdk.tools)
    "REPL_REPLY_FORMAT",
    # the chat a framework sends, kept inside the model's window (older turns folded into a summary)
    "ChatCompactor",
]


#: Tool calling as text moved to its own kit (the harness uses it too): these still resolve here for a release.
MOVED_TO_TOOLS = ("ToolSpec", "ToolCall", "FinalAnswer", "InvalidReply", "ToolReply", "render_tool_protocol",
                  "parse_tool_reply", "format_tool_call", "format_tool_final", "format_tool_result", "coerce_tool_args",
                  "tool_reply_format")


def __getattr__(name: str) -> Any:
    if name == "FrameworkAdapter":  # the protocol's old name: still resolves for a release, in no ``__all__``
        warnings.warn("rlm_host.sdk.frameworks.FrameworkAdapter is deprecated: it is now Framework",
                      DeprecationWarning, stacklevel=2)
        return Framework
    if name in MOVED_TO_TOOLS:
        warnings.warn(f"rlm_host.sdk.frameworks.{name} is deprecated: import it from rlm_host.sdk.tools",
                      DeprecationWarning, stacklevel=2)
        import rlm_host.sdk.tools

        return getattr(rlm_host.sdk.tools, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
