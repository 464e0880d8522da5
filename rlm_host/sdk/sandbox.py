"""The sandbox kit: for sandbox runtime plugins (``rlm_register_sandboxes``, a ``SandboxSpec`` whose factory is
called with ``SandboxServices`` and returns a ``SandboxSession``).

``SessionBase`` is the lifecycle every runtime shares; a runtime that runs a Python worker process (a container,
a VM) builds on ``WorkerSession``, ``Channel`` and ``WORKER_SCRIPT`` (the worker it must run); an in-process
interpreter on ``Capture`` and ``to_jsonable``. ``run_command`` / ``run_in_session`` run a command or Python in a
session (``PYTHON`` is its interpreter). A runtime given a project folder (``workspace=True``) keeps its
metadata read-only and never follows a link: the workspace names below do that, and environments that edit a
project use them too. ``run_in_thread`` runs a runtime's helper (a step timer, an output reader) on a reused
daemon thread; ``register_process_state`` is where a runtime's process-wide state (a pool of workers) says what a
forked child resets and what the process releases at exit.

Reference plugins to copy: ``plugins/rlm-sandbox-docker`` (a worker in a container),
``plugins/rlm-sandbox-monty`` (an in-process interpreter). Contract suite: ``rlm_host.testing.SandboxContract``.
"""

from rlm_host.process_state import register as register_process_state
from rlm_host.results import ExecResult, FinalSignal
from rlm_host.sandbox.commands import PYTHON, CommandResult, run_command, run_in_session
from rlm_host.sandbox.protocol import HostFunction, SandboxInfo, SandboxLimits, SandboxSession
from rlm_host.sandbox.session import WORKER_SCRIPT, Channel, WorkerSession
from rlm_host.sandbox.session_base import SessionBase
from rlm_host.sandbox.worker import Capture, to_jsonable
from rlm_host.sandbox.workspace import (
    WorkspaceRefused,
    check_workspace_write,
    open_in_workspace,
    remove_in_workspace,
    sweep_workspace,
    workspace_metadata,
)
from rlm_host.threads import run_in_thread

__all__ = [
    # the session protocol and what it returns
    "SandboxSession", "SandboxLimits", "SandboxInfo", "HostFunction", "ExecResult", "FinalSignal",
    # the lifecycle every runtime shares, and the kit of worker-based runtimes
    "SessionBase", "WorkerSession", "Channel", "WORKER_SCRIPT", "to_jsonable", "Capture",
    # commands and Python in a session
    "CommandResult", "run_command", "run_in_session", "PYTHON",
    # a project folder the model edits: metadata read-only, writes that never follow a link, the after-step sweep
    "WorkspaceRefused", "check_workspace_write", "open_in_workspace", "remove_in_workspace", "workspace_metadata",
    "sweep_workspace",
    # a helper thread (reused across sessions); process-wide state (what a forked child resets, what exit releases)
    "run_in_thread", "register_process_state",
]
