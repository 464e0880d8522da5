"""rlm-adapter-adk: run an rlm task through a Google ADK agent (``rlm run … --framework google-adk``).

- ``model``: ``RlmLlm``, a ``google.adk.models.BaseLlm`` over one of the run's model roles (tool calls as text:
  the host's tool protocol, ``rlm_host.sdk.tools``: ``render_tool_protocol`` / ``parse_tool_reply``);
- ``framework``: the framework (an ``LlmAgent`` with ``run_code`` / ``llm_query`` tools, run by ADK's
  ``InMemoryRunner``, each event recorded as a step as it arrives);
- ``settings``: ``[framework.google-adk]``;
- ``rlm_loop``: the second framework, ``adk-rlm`` (mode ``native_rlm``): the RLM loop built of ADK agents (a code
  generator ``LlmAgent``, a REPL executor running code in the run's sandbox, a completion checker), in a custom
  ``BaseAgent`` loop; ``rlm_settings``: ``[framework.adk-rlm]``;
- ``agent``: the third, ``adk-rlm-agent`` (mode ``agent``): seed 003's conversational root agent (tools
  ``rlm_execute_code``, ``rlm_load_context``, ``rlm_query_context``; a ``context_loader`` sub-agent; the adk-rlm loop
  as ``rlm_workflow``); ``bundles``: its callback bundles (approvals, metadata, logging, a program's own);
  ``metadata``: the context, sub-LM call, tool and session schemas; ``agent_settings``: ``[framework.adk-rlm-agent]``.

Importing this package imports nothing heavy: google.adk loads only when a run uses the framework.
"""
