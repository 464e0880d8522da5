"""Print how fast the embedded SmolLM2-135M model is here: load time, generation speed, server start time.

    .venv/bin/python plugins/rlm-provider-llamacpp/benchmarks/smollm2_speed.py

A measuring script, not a test: it asserts nothing.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request

from rlm_host.sdk.models import ModelOptions

from rlm_provider_llamacpp.connector import LlamaCppConnector
from rlm_provider_llamacpp.models import bundled_path

PROMPT = [{"role": "user", "content": "Write a short story about a lighthouse keeper and a storm."}]


def in_process() -> None:
    connector = LlamaCppConnector("smollm2", ModelOptions(max_tokens=256, temperature=0.0))
    started = time.monotonic()
    import llama_cpp  # noqa: F401  (counted apart from the model load)

    imported = time.monotonic()
    loaded = connector.load()
    print(f"import llama_cpp       {imported - started:6.2f} s")
    print(f"model load             {loaded.load_seconds:6.2f} s  (n_ctx={connector.n_ctx}, {connector.n_threads} "
          "threads)")
    connector.complete([{"role": "user", "content": "hi"}])  # warm up
    result = connector.complete(PROMPT)
    rate = result.output_tokens / result.seconds
    print(
        f"generation             {rate:6.1f} tokens/s  ({result.output_tokens} tokens, "
        f"{result.input_tokens} input tokens, {result.seconds:.2f} s, finish={result.finish_reason})"
    )


def server_start() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(bundled_path()),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.monotonic() - started < 120 and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                    print(f"llama_cpp.server ready {time.monotonic() - started:6.2f} s")
                    return
            except OSError:
                time.sleep(0.1)
        print("llama_cpp.server did not start")
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    in_process()
    server_start()
