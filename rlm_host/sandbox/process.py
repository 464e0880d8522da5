"""The built-in ``process`` sandbox runtime: model-written code runs in a separate Python process.

NOT A SECURITY BOUNDARY. The worker is a plain child process of the same user: it shares the filesystem, can
open network connections and can do anything the user running rlm can. What it does give is crash isolation:
an infinite loop, a memory bomb, a segfault or ``os._exit`` in model code costs one restarted worker, never the
host. Use a boundary runtime (Monty, Docker) for untrusted code.

The worker (``worker.py`` next to this file, standard library only) runs as ``python -I -u worker.py`` would,
forked from a pristine template (``fork_server.py``, ``fork_template.py``; ``fork_server = false``: started as that
command), in a new session with an empty environment (PATH, HOME/TMPDIR = a fresh temporary working directory,
PYTHONIOENCODING, LANG) and an address-space limit of ``limits.memory_mb``. Host and worker exchange JSON
lines (see the worker's docstring). The end of a session, a timeout or a crash kills the worker with every
process it started, even one that left its group and session (``process_tree``), and a restart starts a
fresh worker, into which the host-set variables and host functions are restored (``session.py``: the host side
shared with other worker-based runtimes).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Any, Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rlm_host.errors import SandboxError
from rlm_host.sandbox.fork_server import fork_server
from rlm_host.sandbox.process_tree import kill_tree
from rlm_host.sandbox.protocol import SandboxInfo, SandboxLimits
from rlm_host.sandbox.session import WORKER_SCRIPT, Channel, WorkerSession
from rlm_host.services import SandboxServices
from rlm_host.threads import run_in_thread


#: Workers this process has started. The first is started directly: a single run does not pay for a template
#: process (its start and its ≈ 10 MB); the fork server starts with the second (a run's child run, a restart,
#: a benchmark's next case).
_launched = itertools.count()


class ProcessSettings(BaseModel):
    """``[sandbox.process]``: how the worker process is started."""

    model_config = ConfigDict(extra="forbid")

    python: str | None = Field(None, description="interpreter running the worker (default: the host's)")
    start_timeout: float = Field(15.0, gt=0, description="seconds a new worker may take to answer 'ready'")
    control_timeout: float = Field(120.0, gt=0, description="seconds for set/get/list/register requests")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables for the worker")
    fork_server: bool = Field(True, description="start each worker as a fork of a pristine template process "
                              "(≈ 1 ms) instead of a new interpreter (≈ 20 ms); false: a new interpreter each")


class _ProcessChannel(Channel):
    """One running worker process, a thread reading its protocol lines and one keeping its stderr tail."""

    def __init__(self, proc: Any) -> None:
        super().__init__()
        self.proc = proc  # a Popen, or a ForkedProcess from the fork server
        err = proc.stderr
        run_in_thread(lambda: self._drain(proc.stdout, proc.stdout, self._deliver), f"rlm-process-{proc.pid}")
        run_in_thread(lambda: self._drain(err, iter(lambda: os.read(err.fileno(), 65536), b""),
                                          self.stderr_tail.append),
                      f"rlm-process-err-{proc.pid}")

    def _drain(self, stream: Any, pieces: Iterable[bytes], take: Callable[[bytes], object]) -> None:
        """Give each line (stdout) or chunk (stderr) of the worker to ``take`` until the stream ends, then close it;
        the end of stdout is the end of the channel."""
        try:
            for piece in pieces:
                take(piece)
        except (OSError, ValueError):
            pass
        finally:
            if stream is self.proc.stdout:
                self._closed()
            with contextlib.suppress(OSError):
                stream.close()

    def write_line(self, data: bytes) -> None:
        """One write of the encoded message (a 100 MB string is not copied again to add the newline)."""
        self.proc.stdin.write(data)
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()

    def exited(self) -> bool:
        return self.proc.poll() is not None

    def describe_exit(self) -> str:
        """How the process ended ("exit code 1", "killed by signal SIGSEGV"), then the end of its stderr."""
        try:
            code: int | None = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            how = "it closed its channel"
        elif code < 0:
            how = f"killed by signal {next((s.name for s in signal.Signals if s == -code), -code)}"
            how += " (out of memory, or killed from outside)" if code == -signal.SIGKILL else ""
        else:
            how = f"exit code {code}"
        tail = self.stderr_text(drop=lambda line: WORKER_SCRIPT.name + '"' in line)  # no worker frames
        return how + (f".\nThe process's last stderr output:\n{tail}\n" if tail else "")

    def kill(self) -> None:
        """Kill the worker with every process of its session (``kill_tree``: its group, and what left the group
        with ``setsid``) and reap it. A worker already gone leaves only its group: its pid may be another's now."""
        if self.proc.poll() is None:
            kill_tree(self.proc.pid)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()


class ProcessSandbox(WorkerSession):
    """A persistent REPL session in a separate worker process (crash isolation only, no security boundary)."""

    info = SandboxInfo(name="process", security_boundary=False, isolation="separate OS process: crash isolation "
                       "only, NOT a security boundary (same user, same filesystem, network not blocked)")

    def __init__(self, settings: ProcessSettings | None = None, limits: SandboxLimits | None = None, *,
                 workspace: Path | None = None) -> None:
        super().__init__(limits)
        self.settings = settings or ProcessSettings()
        self.start_timeout = self.settings.start_timeout
        self.control_timeout = self.settings.control_timeout
        self.workspace = workspace  # the current directory when given (nothing confines writes to it here)
        self.workdir: str | None = None  # the worker's working directory (also its HOME and TMPDIR)

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before start and after shutdown)."""
        channel = self._res.channel
        return channel.proc.pid if isinstance(channel, _ProcessChannel) else None

    def _text_file_request(self, name: str, text_file: Any) -> dict:
        """The worker reads the context file where it is (this runtime shares the host's filesystem anyway): the
        host never holds its text, and nothing is encoded or copied."""
        return {"op": "set_file", "name": name, "path": str(text_file.path), "format": "textfile"}

    def _launch(self) -> _ProcessChannel:
        """Start a worker process in the session's working directory, with an empty environment."""
        if self.workdir is None:
            workdir = self.workdir = tempfile.mkdtemp(prefix="rlm-process-")
            self._res.cleanups.append(lambda: shutil.rmtree(workdir, ignore_errors=True))
        workdir = self.workdir
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir,
               "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8", **self.settings.env}
        python = self.settings.python or sys.executable
        args = ["--memory-mb", str(self.limits.memory_mb), "--max-output-chars", str(self.limits.max_output_chars)]
        if self.workspace is not None and not Path(self.workspace).is_dir():
            raise SandboxError(f"the workspace {self.workspace} is not a directory")
        cwd = os.path.abspath(self.workspace or workdir)  # the fork server's own folder is /, not this process's
        if self.settings.fork_server and next(_launched):  # the first worker of a process starts on its own
            with contextlib.suppress(OSError):  # no fork server here (or it ended): start the worker on its own
                server_env = {k: v for k, v in env.items() if k not in ("HOME", "TMPDIR")}
                server = fork_server(python, WORKER_SCRIPT, server_env, self.settings.start_timeout)
                return _ProcessChannel(server.spawn({"cwd": cwd, "env": env, "args": args}))
        argv = [python, "-I", "-u", str(WORKER_SCRIPT), *args]
        try:
            return _ProcessChannel(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True, close_fds=True))
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox worker ({argv[0]}): {exc}") from exc


def create(settings: ProcessSettings | dict | None, services: SandboxServices) -> ProcessSandbox:
    """The ``SandboxSpec`` factory: ``create(settings, services) -> ProcessSandbox``."""
    if isinstance(settings, dict):
        settings = ProcessSettings(**settings)
    return ProcessSandbox(settings, services.limits, workspace=services.workspace)
