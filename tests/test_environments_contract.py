"""The built-in environment keeps the environment protocol (the contract every environment plugin runs; generic's is
in plugins/rlm-env-generic)."""

from rlm_host.testing import EnvironmentContract


class TestPureRLM(EnvironmentContract):
    environment = "pure_rlm"
    final_reply = "FINAL(42)"
    final_answer = "42"
    working_reply = "```repl\nx = len(context)\nprint(x)\n```"
