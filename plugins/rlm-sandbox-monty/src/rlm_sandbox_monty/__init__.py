"""rlm-sandbox-monty: the ``monty`` sandbox runtime of rlm (a security boundary, the default when installed).

``hooks`` registers the runtime (imported at every ``rlm`` start: rlm_host only); ``settings`` holds the
``[sandbox.monty]`` model; ``runtime`` implements the session on top of ``pydantic_monty`` (imported only when a
run uses the sandbox); ``notes`` is what the model is told about Monty's Python subset.
"""

PLUGIN_NAME = "rlm-sandbox-monty"
INSTALL_HINT = "pip install rlm-sandbox-monty (it brings pydantic-monty and its `monty` worker binary)"
#: What the runtime isolates, said once: in its registration (listings) and in its session's info (the prompt).
ISOLATION = "Monty interpreter (Rust): no filesystem, network, environment or imports beyond its own modules"
