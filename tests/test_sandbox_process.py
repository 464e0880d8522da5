"""The built-in ``process`` sandbox: a real worker subprocess speaking JSON lines (no mocks).

The protocol's behaviours are the contract suite's (``rlm_host.testing.sandbox_contract``); below it, what is
particular to a local worker process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rlm_host.sandbox.process import ProcessSandbox, ProcessSettings, create
from rlm_host.sandbox.protocol import SandboxError, SandboxLimits
from rlm_host.services import SandboxServices
from rlm_host.testing.sandbox_contract import SandboxContract


class TestProcessSandbox(SandboxContract):
    name = "process"
    security_boundary = False
    isolation_mentions = ("NOT a security boundary",)
    killed_worker_report = ("SIGKILL", "NOT run|died during this step")

    def make_sandbox(self, limits: SandboxLimits) -> ProcessSandbox:
        return ProcessSandbox(limits=limits)


def test_factory_and_settings():
    session = create(None, SandboxServices())
    assert isinstance(session, ProcessSandbox)
    with pytest.raises(ValueError):
        ProcessSettings(unknown_key=1)
    session.shutdown()


def test_host_environment_does_not_leak(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
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


def test_shutdown_kills_the_worker_and_removes_its_directory():
    session = ProcessSandbox()
    session.start()
    pid, workdir = session.pid, session.workdir
    assert os.path.isdir(workdir)
    session.shutdown()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(workdir)


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
