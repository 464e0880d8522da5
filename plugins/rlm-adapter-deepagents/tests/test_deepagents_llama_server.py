"""The framework driving a real model: the built-in openai provider against llama.cpp's OpenAI-compatible server on
loopback, with the embedded SmolLM2-135M (see ``assert_a_real_model_run_ends_cleanly`` for what is checked). Slow:
it starts the server (about 5 s) and makes a few real model calls."""


import pytest

from rlm_host.testing import assert_a_real_model_run_ends_cleanly

from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


def test_a_run_against_a_real_llama_cpp_server(llama_server, rlm_cli, rlm_isolated):
    # the server's context is 4,096 tokens: deepagents' own tool descriptions alone take about 4,500 (the
    # prompt is refused with HTTP 400), so the tools are described briefly and write_todos is left out
    (rlm_isolated.work / "rlm.toml").write_text("[framework.deepagents]\nbrief_tool_descriptions = true\n"
                                                "planning = false\n")
    assert_a_real_model_run_ends_cleanly(rlm_cli, rlm_isolated, framework="deepagents",
                                         distribution="rlm-adapter-deepagents", base_url=llama_server)
