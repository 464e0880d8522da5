"""The model provider failing: some calls of a batch fail (the model's code gets one exception naming them, the
run goes on), and the root model's server failing mid-run (retried, then one error, the trajectory kept, exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

from rlm_host.testing.openai_server import OpenAIServer, answer, error

BATCH = ("```repl\ntry:\n    llm_query_batched(['ok 0', 'fail 1', 'ok 2', 'fail 3'])\nexcept RuntimeError as exc:\n"
         "    print('caught:', exc)\nprint(llm_query_batched(['ok 4', 'ok 5']))\n```")


class _Provider(OpenAIServer):
    """Root turns from a script; a sub-call answers ``A<n>`` for ``ok <n>`` and fails with 500 for ``fail <n>``;
    ``down_after``: root turns after that many fail with 500 (the server is down for the root model)."""

    def __init__(self, turns: list[str], down_after: int | None = None) -> None:
        super().__init__()
        self.turns, self.down_after, self.root_calls = list(turns), down_after, 0

    def route(self, request):
        refused = super().route(request)
        if refused is not None:
            return refused
        messages = request.body["messages"]
        if messages[0]["role"] != "system":  # a sub-call
            prompt = messages[-1]["content"]
            kind, number = prompt.split()
            return answer(f"A{number}") if kind == "ok" else error(500, "upstream failure")
        self.root_calls += 1
        if self.down_after is not None and self.root_calls > self.down_after:
            return error(500, "the server is down")
        return answer(self.turns.pop(0))


def _run(rlm_cli, rlm_isolated, server):
    (rlm_isolated.work / "rlm.toml").write_text("[provider.openai]\nmax_retries = 1\nmax_retry_wait = 0.1\n")
    return rlm_cli("run", "q", "--model", "openai:m", "--base-url", server.url, "--sandbox", "process", "--json")


def test_failed_calls_of_a_batch_reach_the_code_and_the_run_goes_on(rlm_cli, rlm_isolated):
    with _Provider([BATCH, "FINAL(done)"]) as server:
        result = _run(rlm_cli, rlm_isolated, server)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    events = [json.loads(line) for line in Path(data["trajectory_path"]).read_text().splitlines()]
    output = next(e for e in events if e["type"] == "step")["data"]["observation"]["blocks"][0]["stdout"]
    assert "caught: llm_query_batched: 2 of 4 calls failed: prompt 1:" in output and "prompt 3:" in output
    assert "['A4', 'A5']" in output
    failed = [e["data"] for e in events if e["type"] == "sub_call" and e["data"].get("error")]
    assert sorted(e["index"] for e in failed) == [1, 3]


def test_the_root_model_failing_mid_run_is_one_error_and_the_record_is_kept(rlm_cli, rlm_isolated):
    with _Provider(["```repl\nx = 1\nprint(x)\n```"], down_after=1) as server:
        result = _run(rlm_cli, rlm_isolated, server)
    assert result.code == 1
    data = json.loads(result.out)
    assert data["termination_reason"] == "error" and "500" in data["error"] and data["steps"] == 1
    assert "Traceback" not in result.err
    events = [json.loads(line) for line in Path(data["trajectory_path"]).read_text().splitlines()]
    assert [e["type"] for e in events if e["type"] in ("step", "final")] == ["step", "final"]
    listed = json.loads(rlm_cli("runs", "list", "--json", plugins="rlm-runs").out)
    assert listed[0]["termination_reason"] == "error"
