"""``run_bounded`` through the host's fork server (a threaded caller's path): children run where the caller is
now (the template runs in /), exit codes and signals come back from the server, a child past its deadline or left
behind by a host that died is killed, and the template that preloads parsers is not the one that forks sandbox
workers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from rlm_host.bounded import BoundedLimits, ChildFailed, LimitExceeded, run_bounded
from rlm_host.sandbox import fork_server
from rlm_host.sandbox.process import ProcessSandbox


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        return [int(child) for child in children.read().split()]


def _bounded_template() -> int:
    return next(s.proc.pid for key, s in fork_server._servers.items() if key[1].endswith("bounded.py") and s.alive)


def test_a_fork_server_child_reads_relative_paths_from_the_callers_folder(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, text in ((first, "one"), (second, "three")):
        folder.mkdir()
        (folder / "note.txt").write_text(text)
    monkeypatch.chdir(first)
    size = os.path.getsize  # a module-level function the fork server's child imports by name (posixpath.getsize)
    assert run_bounded(size, "note.txt", method="forkserver") == 3
    monkeypatch.chdir(second)
    assert run_bounded(size, "note.txt", method="forkserver") == 5
    assert os.getcwd() == str(second)


def test_exit_codes_and_signals_come_from_the_server_and_prints_never_garble_the_value():
    assert run_bounded(print, "a library's noise on stdout", method="forkserver") is None
    with pytest.raises(ChildFailed, match="exited with status 7"):
        run_bounded(os._exit, 7, method="forkserver")
    with pytest.raises(ChildFailed) as crashed:
        run_bounded(os.abort, method="forkserver")
    assert crashed.value.signal == "SIGABRT"
    assert run_bounded(abs, -2, method="forkserver", preload=["no_such_module_here"]) == 2  # a bad preload is skipped


def test_a_child_past_its_deadline_is_killed():
    started = time.monotonic()
    with pytest.raises(LimitExceeded) as raised:
        run_bounded(time.sleep, 60, limits=BoundedLimits(wall_seconds=0.5), method="forkserver")
    assert raised.value.limit == "wall" and time.monotonic() - started < 5
    template = _bounded_template()
    deadline = time.monotonic() + 5
    while _children(template) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _children(template) == []


def test_a_child_left_by_a_host_that_died_is_killed():
    script = ("import os, threading, time\n"
              "from rlm_host.bounded import run_bounded\n"
              "from rlm_host.sandbox import fork_server\n"
              "threading.Thread(target=run_bounded, args=(time.sleep, 60), daemon=True).start()\n"
              "time.sleep(1)\n"
              "template = next(iter(fork_server._servers.values())).proc.pid\n"
              "print(open(f'/proc/{template}/task/{template}/children').read(), flush=True)\n"
              "os._exit(0)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    (child,) = map(int, out.stdout.split())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # killed, not reaped yet (by whoever adopted it)
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the bounded child {child} outlived its host")


def test_parsers_preloaded_for_bounded_children_never_reach_sandbox_workers():
    assert run_bounded(os.getpid, method="forkserver", preload=["xml.dom.minidom"]) != os.getpid()
    first = ProcessSandbox()
    first.start()
    first.shutdown()  # the first worker of a process starts on its own
    session = ProcessSandbox()
    try:
        assert session.execute("import sys\nprint('xml.dom.minidom' in sys.modules)").stdout == "False\n"
        with open(f"/proc/{session.pid}/stat") as stat:
            template = int(stat.read().rsplit(")", 1)[1].split()[1])
        assert template != _bounded_template()
    finally:
        session.shutdown()
