"""The built-in environments keep the environment protocol (the contract every environment plugin runs)."""

from rlm_host.testing import EnvironmentContract


class TestPureRLM(EnvironmentContract):
    environment = "pure_rlm"
    final_reply = "FINAL(42)"
    final_answer = "42"
    working_reply = "```repl\nx = len(context)\nprint(x)\n```"


class TestGeneric(EnvironmentContract):
    environment = "generic"
    final_reply = '{"action": "final", "final_response": "42"}'
    final_answer = "42"
    working_reply = '{"action": "run_python", "code": "x = len(context)\\nprint(x)"}'
