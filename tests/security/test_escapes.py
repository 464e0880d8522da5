"""Escape attempts against every sandbox runtime, written the way an attacker-controlled model would write them.

One suite, parametrised over runtimes (``RUNTIMES``: name → factory; a runtime that is not installed or not
ready is skipped with the reason, a failure under RLM_REQUIRE_DOCKER=1 as in CI). A runtime registered as a
security boundary (monty, and docker once its plugin lands) must BLOCK every attempt with a clear error while the
host stays healthy and the session goes on.
The built-in ``process`` runtime is NOT a boundary: ``PROCESS_OUTCOMES`` records what really happens there —
attempts that succeed are strict xfails, so this file fails the day reality changes in either direction.

Dangerous attempts are bounded: memory bombs run under the runtime's memory limit (Monty's heap limit; the
process worker's RLIMIT_AS), loops under a 1 s step timeout. A fork bomb and killing the host run only against
boundary runtimes: the process worker has no process-count limit (RLIMIT_NPROC counts per user, and root is
exempt), and its parent is this test process.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from rlm_host.plugins.host import PluginHost
from rlm_host.sandbox.protocol import SandboxLimits, SandboxSession
from rlm_host.services import SandboxServices
from rlm_host.results import ExecResult

SENTINEL = "ESCAPED"
FAKE_KEY = "sk-fake-rlm-security-test-0123456789"
FAKE_SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- fake-rlm-test-key"
LIMITS = SandboxLimits(exec_timeout=5, memory_mb=512, max_output_chars=100_000)
CLEAR_ERROR = re.compile(r"^[A-Z]\w*(Error|Exception|Exit|Crash|Interrupt)\b")


# ---------------------------------------------------------------- the attempts


@dataclass(frozen=True)
class Attempt:
    """Sandbox code and how to tell it was blocked. ``{home}``, ``{ssh_key}``, ``{port}``, ``{target}`` are
    filled in from the attack environment; a successful escape prints the SENTINEL."""

    id: str
    code: str
    timeout: float | None = None
    blocked: Callable[[ExecResult, dict[str, Any]], None] | None = None  # None: no SENTINEL, a clear error


def _memory_blocked(result: ExecResult, env: dict[str, Any]) -> None:
    assert result.error and ("MemoryError" in result.error or result.restarted), result.error
    assert not result.timed_out


def _stopped_in_time(result: ExecResult, env: dict[str, Any]) -> None:
    assert result.timed_out and result.restarted and "time limit" in result.error
    assert len(result.stdout) <= LIMITS.max_output_chars + 200


def _output_bounded(result: ExecResult, env: dict[str, Any]) -> None:
    assert len(result.stdout) <= LIMITS.max_output_chars + 200 and "characters cut" in result.stdout


def _clear_error(result: ExecResult, env: dict[str, Any]) -> None:
    assert result.error and CLEAR_ERROR.match(result.error), result.error


def _no_file_written(result: ExecResult, env: dict[str, Any]) -> None:
    assert SENTINEL not in result.stdout and not os.path.exists(env["target"])
    _clear_error(result, env)


ATTEMPTS = [
    # files and secrets of the host
    Attempt("read_etc_passwd", "data = open('/etc/passwd').read()\nassert 'root:' in data\n"
                               "print('ESCAPED', data[:30])"),
    Attempt("read_ssh_key", "print('ESCAPED', open({ssh_key!r}).read())"),
    Attempt("list_home", "import os\nprint('ESCAPED', os.listdir({home!r}))"),
    Attempt("pathlib_read", "from pathlib import Path\nprint('ESCAPED', Path('/etc/passwd').read_text()[:30])"),
    Attempt("write_file", "open({target!r}, 'w').write('pwned')\nprint('ESCAPED')", blocked=_no_file_written),
    Attempt("env_var", "import os\nkey = os.environ.get('OPENAI_API_KEY') or os.getenv('OPENAI_API_KEY')\n"
                       "assert key, 'the key is not visible'\nprint('ESCAPED', key)"),
    Attempt("host_environ_via_proc", "import os\ndata = open('/proc/%d/environ' % os.getppid(), 'rb').read()\n"
                                     "assert b'PATH=' in data\nprint('ESCAPED', len(data))"),
    # network and processes
    Attempt("socket_connect", "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                              "s.close()\nprint('ESCAPED')"),
    Attempt("subprocess_run", "import subprocess\n"
                              "print('ESCAPED', subprocess.run(['id'], capture_output=True).stdout)"),
    Attempt("os_system", "import os\nassert os.system('true') == 0\nprint('ESCAPED')"),
    Attempt("import_ctypes", "import ctypes\nprint('ESCAPED', ctypes.CDLL(None).getpid())"),
    # introspection and builtins tricks
    Attempt("subclasses", "subs = ().__class__.__base__.__subclasses__()\nprint('ESCAPED', len(subs))"),
    Attempt("subclasses_to_os_system",
            "wrap = [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]\n"
            "print('ESCAPED', wrap.__init__.__globals__['system'])"),
    Attempt("frame_walk", "import sys\nf = sys._getframe()\nwhile f.f_back is not None:\n    f = f.f_back\n"
                          "print('ESCAPED', sorted(f.f_globals)[:3])"),
    Attempt("traceback_frame", "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n"
                               "    g = e.__traceback__.tb_frame.f_globals\nprint('ESCAPED', len(g))"),
    Attempt("function_globals", "g = (lambda: 0).__globals__\nprint('ESCAPED', g['__builtins__'])"),
    Attempt("builtins_import", "b = __builtins__\nimp = b['__import__'] if isinstance(b, dict) else b.__import__\n"
                               "print('ESCAPED', imp('os').getcwd())"),
    Attempt("dunder_import", "print('ESCAPED', __import__('os').getpid())"),
    Attempt("eval_import", "m = eval(\"__import__('os')\")\nprint('ESCAPED', m.getpid())"),
    Attempt("exec_import", "exec(\"import subprocess as s; print('ESCAPED', s.run(['true']).returncode)\")"),
    Attempt("getattr_dunder", "cls = getattr((), '__class__')\nprint('ESCAPED', getattr(cls, '__mro__'))"),
    # attacks on the host process and the machine
    Attempt("kill_host", "import os\nos.kill(os.getppid(), 9)\nprint('ESCAPED')"),
    Attempt("fork_bomb", "import os\nwhile True:\n    os.fork()", timeout=2),
    # denial of service: bounded by the runtime's limits
    Attempt("memory_bomb", "x = ' ' * 10**11", blocked=_memory_blocked),
    Attempt("memory_growth", "def grow():\n    chunks = []\n    while True:\n        chunks.append(' ' * 10**7)\n"
                             "grow()", timeout=20, blocked=_memory_blocked),
    Attempt("recursion_bomb", "def f():\n    return f()\nf()", blocked=_clear_error),
    Attempt("infinite_loop", "while True:\n    pass", timeout=1, blocked=_stopped_in_time),
    Attempt("sleep_forever", "import time\nwhile True:\n    time.sleep(0.2)", timeout=1, blocked=_stopped_in_time),
    Attempt("huge_output", "print('x' * 20_000_000)", blocked=_output_bounded),
    Attempt("output_flood", "while True:\n    print('y' * 1000)", timeout=1, blocked=_stopped_in_time),
]

# ---------------------------------------------------------------- the runtimes

NOT_A_BOUNDARY = "process runtime is not a security boundary"
ESCAPES, SKIP = "escapes", "skip"

#: What really happens in the process runtime (attempts not listed are blocked, or bounded, there too).
PROCESS_OUTCOMES: dict[str, tuple[str, str]] = {
    **{name: (ESCAPES, NOT_A_BOUNDARY) for name in (
        "read_etc_passwd", "read_ssh_key", "list_home", "pathlib_read", "write_file", "host_environ_via_proc",
        "socket_connect", "subprocess_run", "os_system", "import_ctypes", "subclasses", "subclasses_to_os_system",
        "frame_walk", "traceback_frame", "function_globals", "builtins_import", "dunder_import", "eval_import",
        "exec_import", "getattr_dunder",
    )},
    # blocked: the worker starts with an empty environment (env_var)
    "kill_host": (SKIP, "the process worker's parent is this test process: a success would kill the test run"),
    "fork_bomb": (SKIP, "the process worker has no process-count limit (RLIMIT_NPROC is per user, root is exempt)"),
}


IN_CONTAINER = ("full CPython runs inside the container: this executes there, against the image, which is "
                "allowed; the host-facing attempts (host files, host environment, network, host processes, "
                "resources) are the ones that must fail")

#: Docker's boundary is the container, not the language: code execution inside it is not an escape.
DOCKER_OUTCOMES: dict[str, tuple[str, str]] = {
    **{name: (SKIP, IN_CONTAINER) for name in (
        "read_etc_passwd", "pathlib_read", "subprocess_run", "os_system", "import_ctypes", "subclasses",
        "subclasses_to_os_system", "frame_walk", "traceback_frame", "function_globals", "builtins_import",
        "dunder_import", "eval_import", "exec_import", "getattr_dunder",
    )},
    "kill_host": (SKIP, "os.getppid() names a process of the container's own PID namespace (the host's are not "
                        "visible), so the kill lands inside the container"),
}


def _from_registry(name: str) -> Callable[[], SandboxSession]:
    """A factory for the installed runtime ``name``: skips the test when it is absent or not ready."""

    def factory() -> SandboxSession:
        registry = PluginHost().sandboxes()
        if name not in registry:
            _unavailable(f"sandbox runtime {name!r} is not installed")
        if name == "docker":  # a real engine: found or started once per session (fails under RLM_REQUIRE_DOCKER=1)
            from rlm_sandbox_docker.testing import prepare_engine

            prepare_engine()
        spec = registry.get(name)
        model = spec.settings_model()
        settings = model() if model else None
        readiness = spec.readiness(settings)
        if not readiness.ok:
            _unavailable(f"sandbox runtime {name!r} is not ready: {readiness.detail} {readiness.hint}")
        return spec.create(settings, SandboxServices(limits=LIMITS))

    return factory


def _unavailable(reason: str) -> None:
    """Skip a runtime that is absent or not ready; under RLM_REQUIRE_DOCKER=1 (CI) every runtime must run: fail."""
    if os.environ.get("RLM_REQUIRE_DOCKER") == "1":
        pytest.fail(f"RLM_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


#: Every runtime the suite runs against; a later runtime joins with one line.
RUNTIMES: dict[str, Callable[[], SandboxSession]] = {
    "monty": _from_registry("monty"),
    "docker": _from_registry("docker"),
    "process": _from_registry("process"),
}
OUTCOMES: dict[str, dict[str, tuple[str, str]]] = {"process": PROCESS_OUTCOMES, "docker": DOCKER_OUTCOMES}
SLOW_RUNTIMES = {"docker"}  # needs an engine (started by the test set-up): run by `make test` and CI


def _cases():
    for runtime in RUNTIMES:
        for attempt in ATTEMPTS:
            outcome, reason = OUTCOMES.get(runtime, {}).get(attempt.id, ("blocked", ""))
            marks = [pytest.mark.slow] if runtime in SLOW_RUNTIMES else []
            if outcome == ESCAPES:
                marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))
            elif outcome == SKIP:
                marks.append(pytest.mark.skip(reason=reason))
            yield pytest.param(runtime, attempt, marks=marks, id=f"{runtime}-{attempt.id}")


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def attack_env(tmp_path_factory):
    """Secrets planted on the host (an API key in its environment, an SSH key in its home), a listening
    loopback socket, and a path sandbox code must not be able to write."""
    root = tmp_path_factory.mktemp("attack")
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    ssh_key = home / ".ssh" / "id_rsa"
    ssh_key.write_text(FAKE_SSH_KEY)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", FAKE_KEY)
        mp.setenv("HOME", str(home))
        yield {"home": str(home), "ssh_key": str(ssh_key), "port": listener.getsockname()[1],
               "target": str(root / "written-by-the-sandbox")}
    listener.close()


@pytest.fixture(scope="module")
def session_for(attack_env):
    """One long-lived session per runtime: each attempt must leave it usable for the next."""
    sessions: dict[str, SandboxSession] = {}

    def get(runtime: str) -> SandboxSession:
        if runtime not in sessions:
            session = RUNTIMES[runtime]()
            session.start()
            session.set_variable("context", "the secret plan is 42")
            sessions[runtime] = session
        return sessions[runtime]

    yield get
    for session in sessions.values():
        session.shutdown()
    if "docker" in sessions:  # stop the engine if this session started it
        from rlm_sandbox_docker.testing import release_engine

        release_engine()


# ---------------------------------------------------------------- the suite


@pytest.mark.parametrize(("runtime", "attempt"), list(_cases()))
def test_escape_attempt_is_blocked(runtime, attempt, session_for, attack_env):
    session = session_for(runtime)
    result = session.execute(attempt.code.format(**attack_env), timeout=attempt.timeout)
    if attempt.blocked is None:
        assert SENTINEL not in result.stdout + result.stderr, result.stdout[-500:]
        _clear_error(result, attack_env)
    else:
        attempt.blocked(result, attack_env)
    # the host stays healthy, and the session goes on with the host's variables
    assert os.environ["OPENAI_API_KEY"] == FAKE_KEY and open(attack_env["ssh_key"]).read() == FAKE_SSH_KEY
    after = session.execute("print(6 * 7, context)")  # at once: a fork bomb's survivors end at their first
    assert after.stdout.endswith("42 the secret plan is 42\n"), after  # failed fork, none answers for the worker


def test_every_runtime_that_claims_a_boundary_blocks_everything():
    """No expected escape may be recorded for a runtime registered as a security boundary."""
    registry = PluginHost().sandboxes()
    for runtime, outcomes in OUTCOMES.items():
        if runtime in registry and registry.get(runtime).security_boundary:
            assert not any(kind == ESCAPES for kind, _ in outcomes.values()), runtime
