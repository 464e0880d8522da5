"""rlm-adapter-pydantic-ai: run an rlm task through a Pydantic AI agent (``rlm run … --framework pydantic-ai``).

- ``model``: ``RlmModel``, a ``pydantic_ai.models.Model`` over one of the run's model roles (tool calls as text:
  the host's tool protocol, ``rlm_host.sdk.tools``: ``render_tool_protocol`` / ``parse_tool_reply``);
- ``framework``: the framework (the agent, its ``run_code`` / ``llm_query`` tools, steps as they happen);
- ``settings``: ``[framework.pydantic-ai]``.

Importing this package imports nothing heavy: pydantic-ai loads only when a run uses the framework.
"""
