"""What the harness runs *inside* the sandbox session: shell commands, pytest and the regex search.

A sandbox session only executes Python, so a command is a ``subprocess.Popen`` issued by Python code in the
session, in the session's working directory (the project folder, mounted read-write). Unlike the host kit's
``run_command`` it starts the command in a process group of its own and kills the whole group when the command
ends or times out (a ``sleep 1000 &`` left behind does not outlive its step), writes its output to temporary
files in the sandbox (a command printing gigabytes does not fill the worker's memory) and keeps the head and tail.

The regex search is a child Python process too: a model's regex is hostile (catastrophic backtracking), so it
runs in the sandbox, never on the host, and a child that runs past its time is killed without touching the
session. Files are opened one path component at a time, never through a symlink (the host lists no linked file
either).

Each runs through ``execute_code`` so the live view shows it as the step's code; results come back as JSON data
(``get_variable``), never parsed from printed text.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from rlm_host import SandboxError
from rlm_host.sdk.environments import execute_code

_RESULT = "__rlm_harness_result"

EXEC_SOURCE = r'''
def __rlm_harness_exec(argv, timeout, keep, stdin_text):
    import os, signal, subprocess, sys, tempfile, time
    argv = [sys.executable if part == "{python}" else part for part in argv]
    started = time.monotonic()
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    result = {"exit_code": None, "timed_out": False, "error": None}
    try:
        child = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                                 stdout=out, stderr=err, start_new_session=True)
    except OSError as exc:
        result["error"] = str(exc)
        child = None
    if child is not None:
        try:
            child.communicate(stdin_text.encode("utf-8") if stdin_text is not None else None, timeout=timeout)
        except subprocess.TimeoutExpired:
            result["timed_out"] = True
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the whole group: what it left running goes too
        except (ProcessLookupError, PermissionError):
            pass
        child.wait()
        result["exit_code"] = None if result["timed_out"] else child.returncode

    def shown(handle):
        size = handle.seek(0, 2)
        if size <= keep:
            handle.seek(0)
            return handle.read().decode("utf-8", "replace")
        half = keep // 2
        handle.seek(0)
        head = handle.read(half).decode("utf-8", "replace")
        handle.seek(size - half)
        tail = handle.read(half).decode("utf-8", "replace")
        return head + "\n[... " + str(size - 2 * half) + " bytes cut ...]\n" + tail

    result["stdout"], result["stderr"] = shown(out), shown(err)
    out.close()
    err.close()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result
'''

#: The search child: reads {"pattern", "files", "limit", "ignore_case"} on stdin, prints JSON.
SEARCH_SCRIPT = r'''
import json, os, re, sys
request = json.loads(sys.stdin.read())
try:
    matcher = re.compile(request["pattern"], re.IGNORECASE if request.get("ignore_case") else 0)
except (re.error, RecursionError, OverflowError) as exc:
    print(json.dumps({"error": "bad regex: " + str(exc)}))
    sys.exit(0)


def open_inside(path):
    """``path`` (relative) opened one component at a time, never through a link: a folder or file swapped for a
    link out of the project since the host listed it is not followed."""
    *folders, name = path.split("/")
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in folders:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    finally:
        os.close(folder)


found, truncated = [], False
for path in request["files"]:
    try:
        fd = open_inside(path)
    except OSError:
        continue
    with os.fdopen(fd, "rb") as handle:
        import stat
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            continue
        data = handle.read(2_000_000)
    if b"\0" in data[:4096]:
        continue  # binary
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if matcher.search(line):
            found.append({"path": path, "line": number, "text": line.rstrip()[:240]})
            if len(found) >= request["limit"]:
                truncated = True
                break
    if truncated:
        break
print(json.dumps({"matches": found, "truncated": truncated}))
'''

PYTEST = ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"]


def run_argv(scope: Any, session: Any, argv: list[str], *, timeout: float, keep: int, step: Optional[int] = None,
             stdin_text: Optional[str] = None) -> dict[str, Any]:
    """Run ``argv`` in the session's working directory; ``{"exit_code", "stdout", "stderr", "timed_out",
    "error", "seconds"}``. SandboxError when the session itself fails."""
    call = f"{_RESULT} = __rlm_harness_exec({json.dumps(argv)}, {float(timeout)!r}, {int(keep)}, " \
           f"{stdin_text!r})"
    code = f"{EXEC_SOURCE}\n{call}\n"
    result = execute_code(scope, session, code, timeout + 30, step=step)
    if not result.ok:
        raise SandboxError("the command helper failed in the sandbox: " + str("timed out" if result.timed_out
                                                                             else result.error))
    try:
        value = session.get_variable(_RESULT)
    finally:
        session.execute(f"{_RESULT} = None", timeout=30)
    if not isinstance(value, dict):
        raise SandboxError("the command helper returned no result")
    return value


def run_shell(scope: Any, session: Any, command: str, **kwargs: Any) -> dict[str, Any]:
    """A shell command line (``sh -c``) in the sandbox."""
    return run_argv(scope, session, ["sh", "-c", command], **kwargs)


def search(scope: Any, session: Any, pattern: str, files: list[str], *, timeout: float, ignore_case: bool = False,
           limit: int = 100, step: Optional[int] = None) -> dict[str, Any]:
    """The regex ``pattern`` over ``files`` (paths relative to the project), in a child process in the sandbox."""
    request = json.dumps({"pattern": pattern, "files": files, "limit": limit, "ignore_case": ignore_case})
    done = run_argv(scope, session, ["{python}", "-c", SEARCH_SCRIPT], timeout=timeout, keep=400_000, step=step,
                    stdin_text=request)
    if done.get("timed_out"):
        return {"error": f"the search ran past {timeout:g} s and was stopped (simplify the regex)"}
    try:
        value = json.loads(done.get("stdout") or "")
    except ValueError:
        return {"error": "the search failed: " + str(done.get("stderr") or done.get("error") or "no output")[-400:]}
    return value if isinstance(value, dict) else {"error": "the search returned no result"}
