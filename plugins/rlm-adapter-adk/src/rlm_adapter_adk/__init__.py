"""rlm-adapter-adk: run an rlm task through a Google ADK agent (``rlm run … --framework google-adk``).

- ``model``: ``RlmLlm``, a ``google.adk.models.BaseLlm`` over one of the run's model roles (tool calls as text:
  the host's tool protocol, ``rlm_host.render_tool_protocol`` / ``parse_tool_reply``);
- ``adapter``: the framework adapter (an ``LlmAgent`` with ``run_code`` / ``llm_query`` tools, run by ADK's
  ``InMemoryRunner``, each event recorded as a step as it arrives);
- ``settings``: ``[framework.google-adk]``.

Importing this package imports nothing heavy: google.adk loads only when a run uses the framework.
"""
