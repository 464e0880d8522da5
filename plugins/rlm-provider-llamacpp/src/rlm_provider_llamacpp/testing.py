"""``llama_server``: llama.cpp's OpenAI-compatible HTTP server with the embedded model, on a free loopback port,
once per test module that imports it: this plugin's slow tests, the framework plugins' (they drive their agent
frameworks through it) and the host's. Needs pytest; nothing else in the plugin imports this module::

    from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)

The embedded model is looked up, and ``llama_cpp[server]`` started, only when the fixture runs."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

import pytest

SERVER_START_LIMIT = 120.0  # seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``python -m llama_cpp.server`` with the embedded model on a free loopback port; its base URL."""
    from rlm_provider_llamacpp.models import bundled_path

    port = free_port()
    log = (tmp_path_factory.mktemp("llama-server") / "server.log").open("w+")
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_path()),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
    ]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        while True:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log.read()[-3000:]}")
            if time.monotonic() - started > SERVER_START_LIMIT:
                pytest.fail(f"llama_cpp.server not ready within {SERVER_START_LIMIT:g} s")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        print(f"llama_cpp.server ready in {time.monotonic() - started:.1f} s")
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


__all__ = ["llama_server"]
