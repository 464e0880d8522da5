"""rlm-adapter-adk: run an rlm task through a Google ADK agent (``rlm run … --framework google-adk``).

- ``model``: ``RlmLlm``, a ``google.adk.models.BaseLlm`` over one of the run's model roles (tool calls as text:
  the host's tool protocol, ``rlm_host.render_tool_protocol`` / ``parse_tool_reply``);
- ``framework``: the framework (an ``LlmAgent`` with ``run_code`` / ``llm_query`` tools, run by ADK's
  ``InMemoryRunner``, each event recorded as a step as it arrives);
- ``settings``: ``[framework.google-adk]``;
- ``rlm_loop``: the second framework, ``adk-rlm`` (mode ``native_rlm``): the RLM loop built of ADK agents (a code
  generator ``LlmAgent``, a REPL executor running code in the run's sandbox, a completion checker), in a custom
  ``BaseAgent`` loop; ``rlm_settings``: ``[framework.adk-rlm]``.

Importing this package imports nothing heavy: google.adk loads only when a run uses the framework.
"""
