"""The framework driving a real model: the built-in openai provider against llama.cpp's OpenAI-compatible server on
loopback, with the embedded SmolLM2-135M (see ``assert_a_real_model_run_ends_cleanly`` for what is checked). Slow:
it starts the server (about 5 s) and makes a few real model calls."""


import pytest

from rlm_host.testing import assert_a_real_model_run_ends_cleanly

from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow


def test_a_run_against_a_real_llama_cpp_server(llama_server, rlm_cli, rlm_isolated):
    assert_a_real_model_run_ends_cleanly(rlm_cli, rlm_isolated, framework="pydantic-ai",
                                         distribution="rlm-adapter-pydantic-ai",
                                         base_url=llama_server)
