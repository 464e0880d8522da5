"""rlm-adapter-pydantic-ai: run an rlm task through a Pydantic AI agent (``rlm run … --framework pydantic-ai``).

- ``tool_protocol``: tool calling as text for text-only models (framework-neutral, no pydantic-ai import);
- ``model``: ``RlmModel``, a ``pydantic_ai.models.Model`` over one of the run's model roles;
- ``adapter``: the framework adapter (the agent, its ``run_code`` / ``llm_query`` tools, steps as they happen);
- ``settings``: ``[framework.pydantic-ai]``.

Importing this package imports nothing heavy: pydantic-ai loads only when a run uses the framework.
"""
