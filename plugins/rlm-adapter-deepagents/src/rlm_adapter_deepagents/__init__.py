"""rlm-adapter-deepagents: run an rlm task through a LangChain deep agent (``rlm run … --framework deepagents``).

- ``model``: ``RlmChatModel``, a LangChain ``BaseChatModel`` over one of the run's model roles (tool calls as
  text: the host's tool protocol, ``rlm_host.sdk.tools``: ``render_tool_protocol`` / ``parse_tool_reply``);
- ``framework``: the framework (``create_deep_agent`` with ``run_code`` / ``llm_query``, steps as they
  stream);
- ``settings``: ``[framework.deepagents]``.

Importing this package imports nothing heavy: deepagents and LangChain load only when a run uses the framework.
"""
