"""The built-in ``process`` sandbox: a real worker subprocess speaking JSON lines (no mocks)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rlm_host.sandbox.process import ProcessSandbox, ProcessSettings, create
from rlm_host.sandbox.protocol import SandboxError, SandboxLimits, SandboxSession


@pytest.fixture
def sandbox():
    """A session with a short default timeout; shut down after the test."""
    session = ProcessSandbox(limits=SandboxLimits(exec_timeout=5, memory_mb=1024, max_output_chars=1000))
    session.start()
    yield session
    session.shutdown()


def test_factory_settings_and_info():
    session = create(None, None)
    assert isinstance(session, SandboxSession)
    assert session.info.name == "process" and session.info.security_boundary is False
    assert "NOT a security boundary" in session.info.isolation
    with pytest.raises(ValueError):
        ProcessSettings(unknown_key=1)
    session.shutdown()
    session.shutdown()  # idempotent, even when never started


def test_namespace_persists_and_print_is_captured(sandbox):
    first = sandbox.execute("x = 41\nprint('hello')\nimport sys\nprint('warn', file=sys.stderr)")
    assert first.ok and first.stdout == "hello\n" and first.stderr == "warn\n"
    second = sandbox.execute("x += 1\nprint(x)")
    assert second.stdout == "42\n" and not second.restarted
    assert sandbox.get_variable("x") == 42
    with pytest.raises(KeyError):
        sandbox.get_variable("nope")


def test_errors_carry_type_message_and_user_traceback(sandbox):
    result = sandbox.execute("y = undefined_name")
    assert result.error.startswith("NameError: name 'undefined_name' is not defined")
    assert "<cell" in result.error and "y = undefined_name" in result.error
    result = sandbox.execute("def f(n):\n    return n / 0\nf(3)")
    assert result.error.splitlines()[0] == "ZeroDivisionError: division by zero"
    assert "in f" in result.error and "return n / 0" in result.error
    assert "worker.py" not in result.error  # no frames of the worker itself
    assert sandbox.execute("def broken(:\n  pass").error.startswith("SyntaxError")
    assert sandbox.execute("raise SystemExit(3)").error.splitlines()[0] == "SystemExit: 3"
    assert sandbox.execute("print('still alive')").stdout == "still alive\n"


def test_final_final_var_and_submit(sandbox):
    result = sandbox.execute("print('before')\nFINAL('the answer')\nprint('never')")
    assert result.final.kind == "direct" and result.final.value == "the answer"
    assert result.stdout == "before\n" and result.error is None
    result = sandbox.execute("answer = {'n': 3, 'items': (1, 2)}\nFINAL_VAR('answer')")
    assert result.final.kind == "variable" and result.final.var == "answer"
    assert result.final.value == {"n": 3, "items": [1, 2]}
    assert sandbox.execute("FINAL_VAR(\"'answer'\")").final.var == "answer"  # stray quotes are tolerated
    result = sandbox.execute("try:\n    SUBMIT(label='spam', score=0.5)\nexcept Exception:\n    pass")
    assert result.final.kind == "submit" and result.final.value == {"label": "spam", "score": 0.5}
    assert sandbox.execute("FINAL({1, 2})").final.value == "{1, 2}"  # not JSON data: repr()


def test_final_var_of_a_missing_variable_is_an_error(sandbox):
    result = sandbox.execute("FINAL_VAR('missing')")
    assert result.final is None
    assert "FINAL_VAR: no variable named 'missing'" in result.error


def test_show_vars_and_list_variables(sandbox):
    sandbox.set_variable("context", "some text")
    sandbox.register_functions({"llm_query": lambda prompt: prompt})
    sandbox.execute("count = 3\n_hidden = 1\ndef helper():\n    pass")
    shown = sandbox.execute("SHOW_VARS()").stdout
    assert "context: str" in shown and "count: int" in shown and "helper: function" in shown
    assert "_hidden" not in shown and "llm_query" not in shown and "FINAL" not in shown
    assert sandbox.list_variables() == {"context": "str", "count": "int", "helper": "function"}


def test_host_functions_round_trip(sandbox):
    calls = []

    def llm_query(prompt, *, model=None, options=None):
        calls.append((prompt, model, options))
        return {"text": prompt.upper(), "model": model, "echo": options}

    def failing(_prompt):
        raise ValueError("provider unavailable")

    sandbox.register_functions({"llm_query": llm_query, "failing": failing})
    code = (
        "r = llm_query('hi', model='small', options={'t': [1, 2.5, None, True]})\n"
        "try:\n    failing('x')\nexcept RuntimeError as exc:\n    caught = str(exc)\n"
        "print(r['text'], r['echo'])"
    )
    result = sandbox.execute(code)
    assert result.ok, result.error
    assert result.stdout == "HI {'t': [1, 2.5, None, True]}\n"
    assert calls == [("hi", "small", {"t": [1, 2.5, None, True]})]
    assert "provider unavailable" in sandbox.get_variable("caught")
    uncaught = sandbox.execute("failing('y')")
    assert uncaught.error.startswith("RuntimeError: ValueError: provider unavailable")


def test_time_in_host_functions_does_not_count(sandbox):
    sandbox.register_functions({"slow": lambda: time.sleep(1.5) or "done"})
    result = sandbox.execute("v = slow()", timeout=1)
    assert result.ok and not result.timed_out
    assert sandbox.get_variable("v") == "done"


def test_timeout_restarts_and_keeps_host_state(sandbox):
    sandbox.set_variable("context", "the context")
    sandbox.register_functions({"llm_query": lambda p: "ok"})
    sandbox.execute("mine = 1")
    old_pid = sandbox.pid
    result = sandbox.execute("while True:\n    pass", timeout=0.5)
    assert result.timed_out and result.restarted and not result.ok
    assert "time limit" in result.error and "context" in result.error and "llm_query" in result.error
    assert sandbox.pid != old_pid
    after = sandbox.execute("print(context, llm_query('x'))\nprint('mine' in globals())")
    assert after.stdout == "the context ok\nFalse\n"


def test_crashing_worker_is_restarted(sandbox):
    sandbox.set_variable("context", "kept")
    result = sandbox.execute("import os\nos._exit(1)")
    assert result.restarted and not result.timed_out
    assert "died" in result.error and "exit code 1" in result.error and "context" in result.error
    assert sandbox.execute("print(context)").stdout == "kept\n"


def test_a_worker_killed_between_steps_is_reported(sandbox):
    os.kill(sandbox.pid, 9)
    time.sleep(0.2)
    result = sandbox.execute("print('hi')")
    assert result.restarted and "SIGKILL" in result.error
    assert "NOT run" in result.error or "died during this step" in result.error
    assert sandbox.execute("print('hi')").stdout == "hi\n"


def test_memory_bomb_is_an_ordinary_error(sandbox):
    result = sandbox.execute("x = ' ' * 10**10")
    assert result.error.startswith("MemoryError") and not result.restarted
    assert sandbox.execute("print('usable')").stdout == "usable\n"


def test_host_environment_does_not_leak(sandbox, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
    sandbox.shutdown()
    session = ProcessSandbox()
    try:
        result = session.execute("import os\nenv = dict(os.environ)\ncwd = os.getcwd()")
        assert result.ok
        env = session.get_variable("env")
        assert "OPENAI_API_KEY" not in env
        assert env["PATH"] == "/usr/bin:/bin" and env["HOME"] == env["TMPDIR"] == session.get_variable("cwd")
        assert os.path.realpath(session.workdir) == os.path.realpath(env["HOME"])
    finally:
        session.shutdown()


def test_user_code_cannot_corrupt_the_channel(sandbox):
    result = sandbox.execute("import os, sys\nos.write(1, b'garbage\\n')\nsys.__stdout__.write('{bad json\\n')")
    assert result.ok
    assert sandbox.execute("print(1 + 1)").stdout == "2\n"


def test_large_variable(sandbox):
    sandbox.set_variable("context", "é" * 10_000_000)
    assert sandbox.execute("print(len(context))").stdout == "10000000\n"
    with pytest.raises(TypeError):
        sandbox.set_variable("bad", object())
    with pytest.raises(ValueError):
        sandbox.set_variable("FINAL", 1)


def test_output_is_truncated_keeping_head_and_tail(sandbox):
    result = sandbox.execute("print('A' * 3000 + 'B' * 3000)")
    assert result.stdout.startswith("A" * 500) and result.stdout.endswith("B" * 499 + "\n")
    assert "characters cut" in result.stdout and len(result.stdout) < 1200


def test_shutdown_kills_the_worker_and_removes_its_directory():
    session = ProcessSandbox()
    session.start()
    pid, workdir = session.pid, session.workdir
    assert os.path.isdir(workdir)
    session.shutdown()
    session.shutdown()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(workdir)
    with pytest.raises(SandboxError):
        session.execute("1")


def test_a_worker_that_cannot_start_is_a_sandbox_error(tmp_path):
    with pytest.raises(SandboxError, match="cannot start"):
        ProcessSandbox(ProcessSettings(python=str(tmp_path / "no-python"))).start()
    session = ProcessSandbox(ProcessSettings(python="/bin/false"))
    with pytest.raises(SandboxError, match="could not be started: exit code 1"):
        session.execute("1")
    session.shutdown()


def test_no_worker_survives_the_host_process():
    script = (
        "from rlm_host.sandbox.process import ProcessSandbox\n"
        "s = ProcessSandbox()\n"
        "s.execute('import threading\\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()')\n"
        "print(s.pid, s.workdir)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=True)
    pid, workdir = out.stdout.split()
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") and not os.path.exists(workdir)
