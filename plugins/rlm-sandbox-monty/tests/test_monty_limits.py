"""Limits and failures particular to the monty runtime: memory of a variable, recursion, host calls, the worker's
lifetime. (Timeouts, crashes, interrupts, memory bombs and the cost of a large context are the contract suite's,
run in test_monty_runtime.py.)

Every failure must end in a clear error and a usable session, never in a hung run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host import SandboxError  # noqa: E402
from rlm_host.sdk.sandbox import SandboxLimits  # noqa: E402

from rlm_sandbox_monty.runtime import MontySandbox, MontySettings  # noqa: E402


def test_a_variable_larger_than_the_memory_limit_is_a_sandbox_error():
    with MontySandbox(limits=SandboxLimits(memory_mb=64)) as session:
        session.set_variable("small", "kept")
        with pytest.raises(SandboxError, match="memory limit of 64 MB"):
            session.set_variable("huge", "x" * 100_000_000)
        told = session.execute("print(small)")
        assert told.restarted and "NOT run" in told.error and "while receiving the variable 'huge'" in told.error
        assert session.execute("print(small)").stdout == "kept\n"
        with pytest.raises(KeyError):
            session.get_variable("huge")


def test_recursion_depth_is_limited():
    with MontySandbox(MontySettings(max_recursion_depth=100)) as session:
        session.execute("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)")
        assert session.execute("print(depth(50))").stdout == "50\n"
        assert session.execute("depth(500)").error.startswith("RecursionError")
        assert session.execute("print(depth(10))").stdout == "10\n"


def test_host_calls_are_limited_per_session():
    with MontySandbox(MontySettings(max_host_calls=100)) as session:
        session.register_functions({"ping": lambda: 1})
        result = session.execute("n = 0\nfor i in range(500):\n    n += ping()")
        assert "RuntimeError" in result.error and "max_host_calls" in result.error
        after = session.execute("print(n > 0)\nFINAL(ping())")  # the count starts again, variables kept
        assert after.stdout == "True\n" and after.final.value == 1


def test_no_worker_survives_the_host_process():
    script = (
        "from rlm_sandbox_monty.runtime import MontySandbox\n"
        "s = MontySandbox()\n"
        "s.execute('x = 1')\n"
        "print(s.pid, flush=True)\n"
        "import sys, time\n"
        "if sys.argv[1] == 'hang':\n"
        "    time.sleep(60)\n"
    )
    for how in ("exit", "hang"):
        proc = subprocess.Popen([sys.executable, "-c", script, how], stdout=subprocess.PIPE, text=True)
        pid = int(proc.stdout.readline())
        if how == "hang":
            proc.kill()  # the host dies without any clean-up
        proc.wait(timeout=20)
        deadline = time.monotonic() + 5
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(f"/proc/{pid}"), how
