"""``rlm_bench_run`` (the rlm-bench plugin in a subprocess; a clear error without it) and ``rlm_run`` against a real
model: llama.cpp's OpenAI-compatible server with the embedded SmolLM2-135M."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_support import RLM

from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)


async def _calls(rlm_isolated, calls, env=None, args=()):
    server = StdioServerParameters(command=RLM, args=["mcp", "serve", *args], cwd=str(rlm_isolated.work),
                                   env={"HOME": str(rlm_isolated.home), **(env or {})})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await calls(session)


def test_bench_needs_the_rlm_bench_plugin(monkeypatch):
    from rlm_mcp import bench

    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(bench.BenchUnavailable, match="needs the rlm-bench plugin"):
        anyio.run(lambda: bench.run_preset("pure_rlm_smoke", 1, None, cwd=Path.cwd()))


@pytest.mark.slow
def test_a_benchmark_preset_runs_its_first_cases(rlm_isolated, rlm_script):
    pytest.importorskip("rlm_bench")
    model = rlm_script(["FINAL(no idea)"] * 5)

    async def calls(session):
        ran = await session.call_tool("rlm_bench_run", {"preset": "pure_rlm_smoke", "limit": 2, "model": model})
        unknown = await session.call_tool("rlm_bench_run", {"preset": "no-such-preset", "limit": 1, "model": model})
        return ran, unknown

    ran, unknown = anyio.run(_calls, rlm_isolated, calls, None, ["--model", model])
    assert not ran.is_error, ran.content
    summary = ran.structured_content
    assert summary["preset"] == "pure_rlm_smoke" and summary["cases_run"] == 2
    assert summary["accuracy"] == 0.0
    assert all(c["score"] == 0.0 and c["final_response"] == "no idea" for c in summary["cases"])
    assert unknown.is_error and "no-such-preset" in unknown.content[0].text


@pytest.mark.slow
def test_rlm_run_against_a_real_llama_cpp_server(llama_server, rlm_isolated):
    (rlm_isolated.work / "notes.txt").write_text("Day 1: all sensors fine.\nDay 2: sensor B failed at 42.7 bar.\n")
    progress = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    async def calls(session):
        return await session.call_tool("rlm_run", {"query": "Which sensor failed?", "path": "notes.txt",
                                                   "model": "openai:smollm2", "max_steps": 3},
                                       progress_callback=on_progress)

    result = anyio.run(_calls, rlm_isolated, calls, {"RLM_RUN__BASE_URL": llama_server},
                       ["--model", "openai:smollm2"])
    assert not result.is_error, result.content
    run = result.structured_content
    assert run["termination_reason"] in ("final", "max_steps", "error"), run
    assert not (run["error"] or "").startswith(("internal", "TypeError", "AttributeError")), run["error"]
    assert 1 <= run["steps"] <= 3 and run["tokens"] > 50
    assert len(progress) == run["steps"] and all(total == 3 for _, total in progress)
    events = [json.loads(line) for line in Path(run["trajectory_path"]).read_text().splitlines()]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
