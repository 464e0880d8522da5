"""``rlm_bench_run``: ``rlm bench run --preset NAME --limit N --json`` in a subprocess (the rlm-bench plugin)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Mapping, Optional, Sequence

import anyio

from rlm_mcp.models import BenchCase, BenchOutput
from rlm_mcp.runs import OUTPUT_CHARS, cut


#: Cases one ``rlm_bench_run`` call may run (a client asking for more gets the first ones).
MAX_CASES = 50
#: Seconds a case may take when the operator set no ``--timeout`` (the run's own default limit).
CASE_SECONDS = 600.0


class BenchUnavailable(RuntimeError):
    """rlm-bench is not installed, or the benchmark failed to run."""


def rlm_command() -> list[str]:
    """The ``rlm`` command of this interpreter."""
    script = Path(sys.executable).with_name("rlm")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rlm_host"]


async def run_preset(preset: str, limit: int, model: Optional[str], *, cwd: Path, sandbox: Optional[str] = None,
                     sub_model: Optional[str] = None,
                     allowed_sub_models: Optional[Sequence[str]] = None,
                     limits: Optional[Mapping[str, Optional[float]]] = None) -> BenchOutput:
    """Run ``preset``'s first ``limit`` cases (at most :data:`MAX_CASES`) and return the summary; the subprocess
    dies if the call is cancelled or overruns its deadline (cases × the case time limit). ``allowed_sub_models``
    and the operator's ``limits`` reach the cases as ``RLM_RUN__*`` variables (the server's ceilings)."""
    if importlib.util.find_spec("rlm_bench") is None:
        raise BenchUnavailable("rlm_bench_run needs the rlm-bench plugin: pip install rlm-bench")
    count = min(max(1, limit), MAX_CASES)
    args = [*rlm_command(), "bench", "run", "--preset", preset, "--limit", str(count), "--json", "--quiet"]
    args += ["--model", model] if model else []
    args += ["--sandbox", sandbox] if sandbox else []
    args += ["--sub-model", sub_model] if sub_model else []
    env = {**os.environ, "NO_COLOR": "1"}
    if allowed_sub_models:
        env["RLM_RUN__ALLOWED_SUB_MODELS"] = json.dumps(list(allowed_sub_models))
    for name, value in (limits or {}).items():
        if value is not None:
            env[f"RLM_RUN__{name.upper()}"] = str(int(value) if name in ("max_steps", "max_depth") else value)
    deadline = count * float((limits or {}).get("timeout") or CASE_SECONDS) + 60.0
    try:
        with anyio.fail_after(deadline):
            done = await anyio.run_process(args, cwd=cwd, check=False, env=env)
    except TimeoutError:
        raise BenchUnavailable(f"rlm bench run did not finish within {deadline:.0f} s; it was stopped") from None
    if done.returncode != 0 and not done.stdout.strip():
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise BenchUnavailable(f"rlm bench run failed (exit {done.returncode}): " + " | ".join(tail))
    try:
        summary = json.loads(done.stdout)
    except ValueError:
        raise BenchUnavailable("rlm bench run printed no summary JSON") from None
    if "error" in summary and "metrics" not in summary:  # the CLI's JSON error: {"error", "hint", "exit_code"}
        hint = f" (hint: {summary['hint']})" if summary.get("hint") else ""
        raise BenchUnavailable(f"rlm bench run: {summary['error']}{hint}")
    metrics = summary.get("metrics") or {}
    cases = [BenchCase(case_id=c.get("case_id", "?"), status=c.get("status", ""), score=c.get("score"),
                       correct=c.get("correct"), final_response=cut(c.get("final_response"), OUTPUT_CHARS),
                       expected=c.get("expected"), error=c.get("error"))
             for c in summary.get("cases") or []]
    return BenchOutput(benchmark_id=summary.get("benchmark_id", ""), preset=summary.get("preset", preset),
                       model=summary.get("model", ""), cases_run=len(cases), accuracy=metrics.get("accuracy"),
                       completion_rate=metrics.get("completion_rate", 0.0), cost=metrics.get("cost"),
                       cases=cases)
