"""The built-in ``process`` sandbox: a real worker subprocess speaking JSON lines (no mocks).

The protocol's behaviours are the contract suite's (``rlm_host.testing.sandbox_contract``); below it, what is
particular to a local worker process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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
        "ProcessSandbox().shutdown()\n"
        "first = ProcessSandbox()\n"
        "first.start()\n"
        "first.shutdown()\n"  # the first worker starts on its own; the next is forked by the template
        "s = ProcessSandbox()\n"
        "s.execute('import threading\\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()')\n"
        "print(s.pid, s.workdir, open(f'/proc/{s.pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20, check=True)
    pid, workdir, template = out.stdout.split()  # the worker, its folder, and the fork server that forked it
    deadline = time.monotonic() + 5
    while (os.path.exists(f"/proc/{pid}") or os.path.exists(f"/proc/{template}")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") and not os.path.exists(workdir)
    assert not os.path.exists(f"/proc/{template}")


# -- the fork server: a fresh fork of a pristine template per session ------------------------------------------


def _past_the_first_worker() -> None:
    """The first worker of a process starts on its own (a single run pays for no template): start it."""
    first = ProcessSandbox()
    first.start()
    first.shutdown()


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def test_workers_are_forked_by_the_fork_server_and_share_nothing():
    _past_the_first_worker()
    first, second = ProcessSandbox(), ProcessSandbox()
    try:
        first.execute("import json\njson.planted = 'from the first session'\nsecret = 42")
        second.start()
        assert first.pid != second.pid
        assert _parent_of(first.pid) == _parent_of(second.pid) != os.getpid()  # the template forked both
        result = second.execute("import json, os\nprint(hasattr(json, 'planted'), 'secret' in dir())\n"
                                "print(os.getsid(0) == os.getpid(), os.getcwd() == os.environ['HOME'])")
        assert result.stdout == "False False\nTrue True\n"
        assert first.get_variable("secret") == 42
    finally:
        first.shutdown()
        second.shutdown()


def test_a_forked_worker_reports_how_it_ended():
    _past_the_first_worker()
    session = ProcessSandbox()
    try:
        assert "exit code 3" in session.execute("import os\nos._exit(3)").error
        crashed = session.execute("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        assert "killed by signal SIGSEGV" in crashed.error
        assert session.execute("print('restarted')").stdout == "restarted\n"
    finally:
        session.shutdown()


def test_a_dead_fork_server_is_replaced_and_fork_server_false_starts_an_interpreter():
    from rlm_host.sandbox import fork_server

    _past_the_first_worker()
    session = ProcessSandbox()
    session.start()
    template = _parent_of(session.pid)
    session.shutdown()
    os.kill(template, 9)
    deadline = time.monotonic() + 5
    while any(server.alive for server in fork_server._servers.values()) and time.monotonic() < deadline:
        time.sleep(0.02)
    again = ProcessSandbox()
    plain = ProcessSandbox(ProcessSettings(fork_server=False))
    try:
        assert again.execute("print(1)").stdout == "1\n" and _parent_of(again.pid) not in (template, os.getpid())
        assert plain.execute("print(2)").stdout == "2\n" and _parent_of(plain.pid) == os.getpid()
    finally:
        again.shutdown()
        plain.shutdown()


def test_a_relative_workspace_is_the_hosts_folder_for_a_forked_worker(tmp_path, monkeypatch):
    """The template runs in /: a workspace given relative to the host's folder is resolved by the host."""
    _past_the_first_worker()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "project").mkdir()
    session = ProcessSandbox(workspace=Path("project"))
    try:
        assert session.execute("import os\nprint(os.getcwd())").stdout == f"{tmp_path / 'project'}\n"
        assert _parent_of(session.pid) != os.getpid()
    finally:
        session.shutdown()


def test_a_worker_hung_in_a_control_request_is_the_sandbox_process():
    """A worker that hangs while answering ``get`` (a ``repr`` that sleeps) is restarted after ``control_timeout``,
    and the next step says why, naming the worker as this runtime does (the contract checks a worker that dies)."""
    session = ProcessSandbox(ProcessSettings(control_timeout=1))
    try:
        session.execute("import time\nclass Hangs:\n    def __repr__(self):\n        time.sleep(30)\nh = Hangs()")
        with pytest.raises(SandboxError, match="did not answer 'get' in time; restarted"):
            session.get_variable("h")
        assert "Cause: the sandbox process did not answer a 'get' request in time" in session.execute("pass").error
    finally:
        session.shutdown()
