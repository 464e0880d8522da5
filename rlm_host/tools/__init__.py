"""Tool calling as text, for a model with no native tool calls: the protocol (``protocol.py``: tools described in
the prompt, a call or a final answer read back from the reply) and the reply format that holds a model to it
(``grammar.py``). Frameworks over text-only models and the coding harness both use it; plugins reach it through
``rlm_host.sdk.tools``."""
