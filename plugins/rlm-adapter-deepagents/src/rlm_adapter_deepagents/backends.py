"""``SandboxShellBackend``: deepagents' shell and file tools inside the run's sandbox (``backend = "local_shell"``).

deepagents' own ``LocalShellBackend`` runs ``execute`` commands with ``subprocess`` on the host. This backend is a
``BaseSandbox`` whose one primitive, ``execute``, is ``rlm_host.run_command(session, ["sh", "-c", command])``:
the command runs where the model's ``run_code`` runs (the run's sandbox session: a Docker container, or the
``process`` sandbox's own process), and so do ``ls`` / ``read_file`` / ``write_file`` / ``edit_file`` / ``grep`` /
``glob``, which ``BaseSandbox`` builds on ``execute``. File uploads and downloads go through Python code in the
session (base64 in JSON), never the host's filesystem. In a sandbox without processes (Monty) every command
fails with the sandbox's error, and the agent is told so.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from deepagents.backends.protocol import ExecuteResponse, FileDownloadResponse, FileUploadResponse
from deepagents.backends.sandbox import BaseSandbox

from rlm_host import SandboxError
from rlm_host.sdk.sandbox import run_command, run_in_session

_FILES_SOURCE = """
def __rlm_put_files(files):
    import base64, os
    done = []
    for path, data in files:
        try:
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(base64.b64decode(data))
            done.append(None)
        except IsADirectoryError:
            done.append("is_directory")
        except PermissionError:
            done.append("permission_denied")
        except OSError as exc:
            done.append(str(exc))
    return done

def __rlm_get_files(paths):
    import base64
    out = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                out.append([base64.b64encode(handle.read()).decode(), None])
        except FileNotFoundError:
            out.append([None, "file_not_found"])
        except IsADirectoryError:
            out.append([None, "is_directory"])
        except PermissionError:
            out.append([None, "permission_denied"])
        except OSError as exc:
            out.append([None, str(exc)])
    return out
"""


class SandboxShellBackend(BaseSandbox):
    """deepagents' sandbox backend over one rlm sandbox session (``session_of()`` opens it on first use)."""

    def __init__(self, tools: Any, *, timeout: float = 60.0, keep_chars: int = 20_000) -> None:
        self._tools = tools  # rlm_host SandboxTools: ``.session`` is the run's session
        self._timeout = timeout
        self._keep = keep_chars

    @property
    def id(self) -> str:
        return "rlm-sandbox"

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        seconds = float(timeout) if timeout else self._timeout
        try:
            done = run_command(self._tools.session, ["sh", "-c", command], timeout=seconds, keep_chars=self._keep)
        except SandboxError as exc:
            return ExecuteResponse(output=f"the sandbox could not run the command: {exc}", exit_code=None)
        glue = "\n" if done.stdout and done.stderr and not done.stdout.endswith("\n") else ""
        output = done.stdout + glue + done.stderr
        if done.timed_out:
            output += f"\n(timed out after {seconds:g} s)"
        elif done.error:
            output += f"\n(could not start: {done.error})"
        truncated = len(done.stdout) >= self._keep or len(done.stderr) >= self._keep
        return ExecuteResponse(output=output, exit_code=done.exit_code, truncated=truncated)

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        payload = [[path, base64.b64encode(data).decode()] for path, data in files]
        try:
            errors = run_in_session(self._tools.session, _FILES_SOURCE, f"__rlm_put_files({json.dumps(payload)})",
                                    timeout=self._timeout)
        except SandboxError as exc:
            errors = [str(exc)] * len(files)
        return [FileUploadResponse(path=path, error=error) for (path, _), error in zip(files, errors)]

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        try:
            found = run_in_session(self._tools.session, _FILES_SOURCE, f"__rlm_get_files({json.dumps(list(paths))})",
                                   timeout=self._timeout)
        except SandboxError as exc:
            found = [[None, str(exc)]] * len(paths)
        return [FileDownloadResponse(path=path, content=base64.b64decode(data) if data is not None else None,
                                     error=error) for path, (data, error) in zip(paths, found)]
