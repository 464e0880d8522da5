"""Limits and failures of the monty runtime: timeouts, crashes, memory, recursion, host calls, context cost.

Every failure must end in a clear error and a usable session (fresh, with the host's variables, after a
timeout or a crash), never in a hung run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host.sandbox.protocol import SandboxError, SandboxLimits  # noqa: E402

from rlm_sandbox_monty.runtime import MontySandbox, MontySettings  # noqa: E402


@pytest.fixture
def sandbox():
    session = MontySandbox(limits=SandboxLimits(exec_timeout=5, memory_mb=512, max_output_chars=1000))
    session.start()
    yield session
    session.shutdown()


def test_timeout_restarts_and_keeps_host_state(sandbox):
    sandbox.set_variable("context", "the context")
    sandbox.register_functions({"llm_query": lambda p: "ok"})
    sandbox.execute("mine = 1")
    old_pid = sandbox.pid
    started = time.monotonic()
    result = sandbox.execute("while True:\n    pass", timeout=0.5)
    assert time.monotonic() - started < 3
    assert result.timed_out and result.restarted and not result.ok
    assert "time limit of 0.5 s" in result.error and "context" in result.error and "llm_query" in result.error
    assert sandbox.pid != old_pid
    after = sandbox.execute("print(context, llm_query('x'))\nprint('mine' in locals())")
    assert after.stdout == "the context ok\nFalse\n"


def test_default_timeout_is_the_limits_exec_timeout():
    with MontySandbox(limits=SandboxLimits(exec_timeout=0.5)) as session:
        result = session.execute("import time\nwhile True:\n    time.sleep(0.1)")
        assert result.timed_out and "0.5 s" in result.error
        assert session.execute("print(1)").stdout == "1\n"


def test_time_in_host_functions_does_not_count(sandbox):
    sandbox.register_functions({"slow": lambda: time.sleep(1.2) or "done"})
    result = sandbox.execute("v = slow()", timeout=0.8)
    assert result.ok and not result.timed_out, result.error
    assert sandbox.get_variable("v") == "done"


def test_a_worker_dying_mid_step_is_restarted(sandbox):
    sandbox.set_variable("context", "kept")
    sandbox.register_functions({"die": lambda: os.kill(sandbox.pid, 9)})
    result = sandbox.execute("print('started')\ndie()")
    assert result.restarted and not result.timed_out
    assert "SandboxCrash" in result.error and "died" in result.error and "context" in result.error
    assert sandbox.execute("print(context)").stdout == "kept\n"


def test_a_worker_killed_between_steps_is_reported(sandbox):
    sandbox.set_variable("context", "kept")
    os.kill(sandbox.pid, 9)
    time.sleep(0.2)
    result = sandbox.execute("print('hi')")
    assert result.restarted and "NOT run" in result.error and "had exited" in result.error
    assert sandbox.execute("print(context)").stdout == "kept\n"


def test_an_interrupt_in_a_host_function_stops_the_step_and_reaches_the_host(sandbox):
    def interrupt():
        raise KeyboardInterrupt

    sandbox.set_variable("context", "kept")
    sandbox.register_functions({"interrupt": interrupt})
    with pytest.raises(KeyboardInterrupt):
        sandbox.execute("try:\n    interrupt()\nexcept BaseException:\n    pass\nwhile True:\n    pass")
    told = sandbox.execute("print('hi')")
    assert told.restarted and "interrupted" in told.error and "NOT run" in told.error
    assert sandbox.execute("print(context)").stdout == "kept\n"


def test_memory_bomb_is_an_ordinary_error(sandbox):
    result = sandbox.execute("x = ' ' * 10**10")
    assert result.error.startswith("MemoryError") and "ran out of memory" in result.error
    assert not result.restarted
    result = sandbox.execute("chunks = []\nwhile True:\n    chunks.append(' ' * 10**7)")
    assert result.error.startswith("MemoryError") and not result.timed_out
    assert sandbox.execute("chunks = None\nprint('usable')").stdout == "usable\n"


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


def test_step_cost_does_not_grow_with_the_context(sandbox):
    def median_step() -> float:
        timings = []
        for _ in range(30):
            started = time.perf_counter()
            assert sandbox.execute("n = len(context)").ok
            timings.append(time.perf_counter() - started)
        return statistics.median(timings)

    sandbox.set_variable("context", "x" * 1_000)
    small = median_step()
    sandbox.set_variable("context", "x" * 10_000_000)
    large = median_step()
    assert sandbox.get_variable("n") == 10_000_000
    assert large < max(3 * small, small + 0.002), (small, large)


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
