"""``SandboxContract``: the test suite of the sandbox protocol (``rlm_host.sdk.sandbox``), for every runtime.

A sandbox plugin proves it keeps the protocol by subclassing it in its tests::

    from rlm_host import SandboxLimits
    from rlm_host.testing import SandboxContract

    from rlm_sandbox_mine.runtime import MySandbox


    class TestMySandbox(SandboxContract):
        name = "mine"                       # SandboxInfo.name
        security_boundary = True            # SandboxInfo.security_boundary
        isolation_mentions = ("no network",)

        def make_sandbox(self, limits: SandboxLimits) -> MySandbox:
            return MySandbox(limits=limits)

        def kill_worker(self, sandbox: MySandbox) -> None:  # optional: the default kills ``sandbox.pid``
            sandbox.container.kill()

        def worker_id(self, sandbox: MySandbox) -> str:  # optional: the default is ``sandbox.pid``
            return sandbox.container_id

pytest then runs every ``test_*`` method below against the runtime, with ``sandbox``: a session made by
``make_sandbox(self.limits)``, started, and shut down after the test. Keep the runtime's own tests (its
isolation, its settings, how it fails to start…) next to the class. ``make_sandbox`` may rely on pytest fixtures
of the subclass: an ``autouse`` fixture (say, one starting a container engine) runs before every test. A test
of the contract can be extended by overriding it, calling ``super()`` and adding the runtime's own checks. Real
examples: the host's tests/test_sandbox_process.py, and the tests of rlm-sandbox-monty and rlm-sandbox-docker.

What the contract checks, beyond the protocol's docstrings, are the conventions the engine and the model rely on:
- an error is text whose first line is ``ExcType: message``, followed by a traceback that shows only the user's
  code (frames named ``<cell N>``), never the runtime's own;
- a step stopped at its time limit reports ``TimeoutError: … time limit of N s …``; a step that lost the worker
  reports ``SandboxCrash: … died …``; when the worker was lost between steps (killed, or stopped because the
  host was interrupted inside a host function), the next step is not run and its ``SandboxCrash`` error says
  "NOT run"; each names the host-set variables and functions that survived the restart;
- memory exhaustion is a ``MemoryError`` of the step ("ran out of memory"), not a crash of the session;
- output past ``max_output_chars`` is cut in the middle, keeping its head and tail, with "characters cut".

Class attributes declare what differs legitimately between runtimes (see each below); every other behaviour is
the same for all.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import time
from typing import Any

import pytest

from rlm_host.plugins.host import PluginHost
from rlm_host.sandbox.protocol import SandboxError, SandboxInfo, SandboxLimits, SandboxSession

#: The first line of an error: an exception type name, then ": message" (or nothing).
ERROR_FIRST_LINE = re.compile(r"^[A-Z]\w*(: |$)")
#: Sandbox code printing whether a variable is defined (without globals()/locals(), which not every runtime has).
DEFINED = "try:\n    {0}\n    print(True)\nexcept NameError:\n    print(False)"


#: The time limit of the memory bomb's steps (seconds): a bound for a runtime that never refuses the memory, far
#: above what filling the limits' 1 GB takes on a busy machine (well under a second on an idle one).
MEMORY_BOMB_BOUND_S = 120


def assert_clear_error(error: str | None) -> None:
    """``error`` is set and its first line is ``ExcType: message``."""
    assert error, "expected an error"
    assert ERROR_FIRST_LINE.match(error), f"the first line is not 'ExcType: message': {error!r}"


def median_step_seconds(sandbox: SandboxSession, code: str = "x = 1", repeat: int = 20) -> float:
    """The median wall time of ``sandbox.execute(code)`` (after three warm-up steps); each step must succeed."""
    for _ in range(3):
        sandbox.execute(code)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = sandbox.execute(code)
        timings.append(time.perf_counter() - started)
        assert result.ok, result.error
    return statistics.median(timings)


class SandboxContract:
    """Base class of a runtime's protocol tests: subclass it as ``Test…`` and implement ``make_sandbox``."""

    # -- what the runtime declares --------------------------------------------------------------------------
    #: ``SandboxInfo.name`` of the runtime (required).
    name: str = ""
    #: ``SandboxInfo.security_boundary`` (required).
    security_boundary: bool | None = None
    #: Words ``SandboxInfo.isolation`` must contain.
    isolation_mentions: tuple[str, ...] = ()
    #: Words ``SandboxInfo.python_notes`` must contain (a runtime with a Python subset describes it there).
    python_notes_mentions: tuple[str, ...] = ()
    #: The limits of the ``sandbox`` fixture. The tests assume these (a short step timeout, room for a 10 MB
    #: context, 1000 characters of output): change them only if the runtime cannot work with them.
    limits: SandboxLimits = SandboxLimits(exec_timeout=5, memory_mb=1024, max_output_chars=1000)
    #: Sandbox code runs on CPython with its standard library (``os``, integer exit codes…). False for a runtime
    #: with a Python subset: the tests that need ``os`` (exiting the worker, writing to its file descriptors)
    #: are skipped.
    full_cpython: bool = True
    #: ``SHOW_VARS()`` lists the variables as they are when it is called. False: as they are at the end of the
    #: step (e.g. Monty lists them after the step), so a variable bound later in the same step is listed too.
    show_vars_is_live: bool = True
    #: A host function's exception raises ``RuntimeError(message)`` that sandbox code can catch (the protocol's
    #: rule). False: the step ends with the error, which still carries the message.
    host_errors_catchable: bool = True
    #: Regular expressions the report must match when the worker was killed between two steps (e.g. how the
    #: runtime names the cause: "SIGKILL").
    killed_worker_report: tuple[str, ...] = ()
    #: How much slower (seconds) a trivial step may get with a 10 MB context than with a small one (beyond 3×):
    #: a runtime must send the context once, not at every step.
    step_cost_slack_s: float = 0.02

    def make_sandbox(self, limits: SandboxLimits) -> SandboxSession:
        """A new session of the runtime with these limits (the contract starts it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_sandbox(limits)")

    def kill_worker(self, sandbox: SandboxSession) -> None:
        """Kill the worker behind ``sandbox`` from outside (SIGKILL, container kill…), as a crash would; called
        from the test and from inside a host function.

        The default sends SIGKILL to ``sandbox.pid``, for a session whose worker is a local process it exposes
        as ``pid``; a session with neither ``pid`` nor an override skips the crash tests.
        """
        pid = getattr(sandbox, "pid", None)  # not a SandboxSession member: _needs_kill_worker skips a session without
        assert isinstance(pid, int), f"{type(sandbox).__name__} has no pid: override kill_worker"
        os.kill(pid, signal.SIGKILL)

    def worker_id(self, sandbox: SandboxSession) -> Any:
        """Something naming the worker behind ``sandbox`` (a pid, a container id): a restart must change it.
        The default is ``sandbox.pid`` if the session has one; None: not checked."""
        return getattr(sandbox, "pid", None)

    # -- fixtures and helpers -------------------------------------------------------------------------------
    @pytest.fixture
    def sandbox(self):
        """A started session with the contract's limits; shut down after the test."""
        session = self.make_sandbox(self.limits)
        session.start()
        yield session
        session.shutdown()

    def _assert_replaced(self, sandbox: SandboxSession, old_worker: Any) -> None:
        """After a restart, a new worker runs the session (when the runtime names its workers)."""
        if old_worker is not None:
            assert self.worker_id(sandbox) not in (None, old_worker)

    def _needs_kill_worker(self, sandbox: SandboxSession) -> None:
        if type(self).kill_worker is SandboxContract.kill_worker and getattr(sandbox, "pid", None) is None:
            pytest.skip(f"{type(self).__name__} does not implement kill_worker(sandbox) and the session has no pid")

    def _needs_full_cpython(self, what: str) -> None:
        if not self.full_cpython:
            pytest.skip(f"{type(self).__name__}.full_cpython is False: {what}")

    # -- the session and its info ---------------------------------------------------------------------------
    def test_info_and_shutdown_before_start(self):
        assert self.name and self.security_boundary is not None, "declare name and security_boundary"
        session = self.make_sandbox(self.limits)
        assert isinstance(session, SandboxSession)
        assert isinstance(session.info, SandboxInfo)
        assert session.info.name == self.name and session.info.security_boundary is self.security_boundary
        for words in self.isolation_mentions:
            assert words in session.info.isolation
        for words in self.python_notes_mentions:
            assert words in session.info.python_notes
        session.shutdown()
        session.shutdown()  # idempotent, even when never started

    def test_info_agrees_with_the_registration(self):
        """What the session tells the model (its info) is what its ``SandboxSpec`` tells listings and
        ``--sandbox auto``; skipped for a runtime no installed plugin registers."""
        registry = PluginHost(environ={}).sandboxes()
        if self.name not in registry:
            pytest.skip(f"no installed plugin registers a sandbox named {self.name!r}")
        spec = registry.get(self.name)
        session = self.make_sandbox(self.limits)
        try:
            assert spec.security_boundary is session.info.security_boundary
            assert spec.isolation == session.info.isolation
        finally:
            session.shutdown()

    def test_namespace_persists_and_print_is_captured(self, sandbox):
        first = sandbox.execute("x = 41\nprint('hello')\nimport sys\nprint('warn', file=sys.stderr)")
        assert first.ok and first.stdout == "hello\n" and first.stderr == "warn\n"
        second = sandbox.execute("x += 1\nprint(x)")
        assert second.stdout == "42\n" and not second.restarted
        assert sandbox.get_variable("x") == 42
        with pytest.raises(KeyError):
            sandbox.get_variable("nope")
        with pytest.raises(KeyError):
            sandbox.get_variable("print")  # a builtin is not a variable

    def test_shutdown_is_idempotent_and_final(self, sandbox):
        sandbox.execute("x = 1")
        sandbox.start()  # idempotent: the running session goes on
        assert sandbox.execute("print(x)").stdout == "1\n"
        sandbox.shutdown()
        sandbox.shutdown()
        with pytest.raises(SandboxError):
            sandbox.execute("1")

    # -- errors -------------------------------------------------------------------------------------------
    def test_errors_carry_type_message_and_user_traceback(self, sandbox):
        result = sandbox.execute("y = undefined_name")
        assert result.error.startswith("NameError: name 'undefined_name' is not defined")
        assert "<cell" in result.error and "y = undefined_name" in result.error
        result = sandbox.execute("def f(n):\n    return n / 0\nf(3)")
        assert result.error.splitlines()[0] == "ZeroDivisionError: division by zero"
        assert "in f" in result.error and "return n / 0" in result.error
        frames = re.findall(r'File "([^"]*)"', result.error)
        assert frames and all(frame.startswith("<cell") for frame in frames), result.error  # no runtime frames
        assert sandbox.execute("def broken(:\n  pass").error.startswith("SyntaxError")
        assert sandbox.execute("raise SystemExit('bye')").error.splitlines()[0] == "SystemExit: bye"
        if self.full_cpython:
            assert sandbox.execute("raise SystemExit(3)").error.splitlines()[0] == "SystemExit: 3"
        assert sandbox.execute("print('still alive')").stdout == "still alive\n"

    # -- ending a run -------------------------------------------------------------------------------------
    def test_final_final_var_and_submit(self, sandbox):
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
        result = sandbox.execute("from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nFINAL(P(3))")
        assert result.final.value == "P(x=3)"

    def test_the_first_final_wins_even_if_swallowed(self, sandbox):
        result = sandbox.execute("try:\n    FINAL('first')\nexcept BaseException:\n    pass\nFINAL('second')")
        assert result.final.value == "first" and result.error is None

    def test_final_var_of_a_missing_variable_is_an_error(self, sandbox):
        result = sandbox.execute("FINAL_VAR('missing')")
        assert result.final is None
        assert "FINAL_VAR: no variable named 'missing'" in result.error
        assert_clear_error(result.error)
        result = sandbox.execute("FINAL_VAR(42)")
        assert result.final is None and result.error.startswith("TypeError: FINAL_VAR expects the variable NAME")

    # -- variables ----------------------------------------------------------------------------------------
    def test_show_vars_and_list_variables(self, sandbox):
        sandbox.set_variable("context", "some text")
        sandbox.register_functions({"llm_query": lambda prompt: prompt})
        sandbox.execute("count = 3\n_hidden = 1\ndef helper():\n    pass")
        shown = sandbox.execute("print('before')\nSHOW_VARS()\nprint('after')").stdout
        assert shown.startswith("before\nVariables:\n") and shown.endswith("after\n")
        assert "context: str" in shown and "count: int" in shown and "helper: function" in shown
        assert "_hidden" not in shown and "llm_query" not in shown and "FINAL" not in shown
        assert sandbox.list_variables() == {"context": "str", "count": "int", "helper": "function"}
        assert sandbox.get_variable("_hidden") == 1
        later = sandbox.execute("SHOW_VARS()\nlate = 1").stdout
        assert "count: int" in later
        if self.show_vars_is_live:
            assert "late" not in later  # bound after the call
        else:
            assert "late: int" in later  # listed as at the end of the step

    def test_large_variables_and_bad_values(self, sandbox):
        sandbox.set_variable("context", "é" * 10_000_000)
        assert sandbox.execute("print(len(context))").stdout == "10000000\n"
        small = {"a": [1, 2.5, None, True], "é": "ü"}
        sandbox.set_variable("small", small)
        assert sandbox.get_variable("small") == small
        docs = [f"document {i} " * 20 for i in range(10_000)]  # ≈ 2.7 MB of JSON
        sandbox.set_variable("docs", docs)
        assert sandbox.execute("print(len(docs), docs[9999][:13])").stdout == "10000 document 9999\n"
        assert sandbox.get_variable("docs") == docs
        with pytest.raises(TypeError):
            sandbox.set_variable("bad", object())
        with pytest.raises(ValueError):
            sandbox.set_variable("FINAL", 1)
        with pytest.raises(ValueError):
            sandbox.set_variable("_private", 1)
        assert sandbox.execute("print(len(context))").stdout == "10000000\n"

    def test_step_cost_does_not_grow_with_the_context(self, sandbox):
        sandbox.set_variable("context", "x" * 1_000)
        small = median_step_seconds(sandbox, "n = len(context)", repeat=30)
        sandbox.set_variable("context", "x" * 10_000_000)
        large = median_step_seconds(sandbox, "n = len(context)", repeat=30)
        assert sandbox.get_variable("n") == 10_000_000
        assert large < max(3 * small, small + self.step_cost_slack_s), (small, large)

    # -- host functions -----------------------------------------------------------------------------------
    def test_host_functions_round_trip(self, sandbox):
        calls = []

        def llm_query(prompt, *, model=None, options=None):
            calls.append((prompt, model, options))
            return {"text": prompt.upper(), "model": model, "echo": options}

        def failing(_prompt):
            raise ValueError("provider unavailable")

        sandbox.register_functions({"llm_query": llm_query, "failing": failing, "plain": lambda: 1 / 0})
        result = sandbox.execute(
            "r = llm_query('hi', model='small', options={'t': [1, 2.5, None, True]})\n"
            "print(r['text'], r['model'], r['echo'])"
        )
        assert result.ok, result.error
        assert result.stdout == "HI small {'t': [1, 2.5, None, True]}\n"
        assert calls == [("hi", "small", {"t": [1, 2.5, None, True]})]
        uncaught = sandbox.execute("failing('y')")
        assert "ValueError: provider unavailable" in uncaught.error.splitlines()[0]
        plain = sandbox.execute("plain()")
        assert "ZeroDivisionError: division by zero" in plain.error.splitlines()[0]
        if self.host_errors_catchable:
            assert uncaught.error.startswith("RuntimeError: ValueError: provider unavailable")
            assert plain.error.startswith("RuntimeError: ZeroDivisionError: division by zero")
            caught = sandbox.execute("try:\n    failing('x')\nexcept RuntimeError as exc:\n    caught = str(exc)")
            assert caught.ok, caught.error
            assert "provider unavailable" in sandbox.get_variable("caught")
        # a function defined in one step calls a host function in a later one
        sandbox.execute("def ask(p):\n    return llm_query(p)['text']")
        assert sandbox.execute("print(ask('later'))").stdout == "LATER\n"

    def test_host_functions_cannot_reenter_the_sandbox(self, sandbox):
        sandbox.register_functions({"reenter": lambda: sandbox.execute("1")})
        result = sandbox.execute("reenter()")
        assert "cannot be used from inside one of its own host functions" in result.error

    def test_time_in_host_functions_does_not_count(self, sandbox):
        def slow() -> str:
            time.sleep(1.5)
            return "done"

        sandbox.register_functions({"slow": slow})
        result = sandbox.execute("v = slow()", timeout=1)
        assert result.ok and not result.timed_out, result.error
        assert sandbox.get_variable("v") == "done"

    def test_an_interrupt_in_a_host_function_stops_the_step_and_reaches_the_host(self, sandbox):
        def interrupt():
            raise KeyboardInterrupt

        sandbox.set_variable("context", "kept")
        sandbox.register_functions({"interrupt": interrupt})
        with pytest.raises(KeyboardInterrupt):
            sandbox.execute("try:\n    interrupt()\nexcept BaseException:\n    pass\nwhile True:\n    pass")
        told = sandbox.execute("print('hi')")
        assert told.restarted and "interrupted" in told.error and "NOT run" in told.error
        assert sandbox.execute("print(context)").stdout == "kept\n"

    # -- limits and failures ------------------------------------------------------------------------------
    def test_timeout_restarts_and_keeps_host_state(self, sandbox):
        sandbox.set_variable("context", "the context")
        sandbox.register_functions({"llm_query": lambda p: "ok"})
        sandbox.execute("mine = 1")
        old_worker = self.worker_id(sandbox)
        started = time.monotonic()
        result = sandbox.execute("while True:\n    pass", timeout=0.5)
        assert time.monotonic() - started < 3
        assert result.timed_out and result.restarted and not result.ok
        assert result.error.startswith("TimeoutError: ") and "time limit of 0.5 s" in result.error
        assert "context" in result.error and "llm_query" in result.error  # what survived the restart
        self._assert_replaced(sandbox, old_worker)
        after = sandbox.execute("print(context, llm_query('x'))\n" + DEFINED.format("mine"))
        assert after.stdout == "the context ok\nFalse\n"

    def test_default_timeout_is_the_limits_exec_timeout(self):
        session = self.make_sandbox(self.limits.model_copy(update={"exec_timeout": 0.5}))
        try:
            session.start()
            result = session.execute("import time\nwhile True:\n    time.sleep(0.1)")
            assert result.timed_out and "0.5 s" in (result.error or "")
            assert session.execute("print(1)").stdout == "1\n"
        finally:
            session.shutdown()

    def test_a_worker_dying_mid_step_is_restarted(self, sandbox):
        self._needs_kill_worker(sandbox)
        sandbox.set_variable("context", "kept")
        sandbox.register_functions({"die": lambda: self.kill_worker(sandbox)})
        old_worker = self.worker_id(sandbox)
        result = sandbox.execute("print('started')\ndie()")
        assert result.restarted and not result.timed_out
        self._assert_replaced(sandbox, old_worker)
        assert result.error.startswith("SandboxCrash: ") and "died" in result.error and "context" in result.error
        assert sandbox.execute("print(context)").stdout == "kept\n"

    def test_a_worker_killed_between_steps_is_reported(self, sandbox):
        self._needs_kill_worker(sandbox)
        sandbox.set_variable("context", "kept")
        old_worker = self.worker_id(sandbox)
        self.kill_worker(sandbox)
        time.sleep(0.2)
        result = sandbox.execute("print('hi')")
        self._assert_replaced(sandbox, old_worker)
        assert result.restarted and result.error.startswith("SandboxCrash: ") and "context" in result.error
        for pattern in self.killed_worker_report:
            assert re.search(pattern, result.error), (pattern, result.error)
        assert sandbox.execute("print('hi', context)").stdout == "hi kept\n"

    def test_exiting_the_worker_is_a_crash_and_restarts(self, sandbox):
        self._needs_full_cpython("no os._exit()")
        sandbox.set_variable("context", "kept")
        old_worker = self.worker_id(sandbox)
        result = sandbox.execute("import os\nos._exit(3)")
        assert result.restarted and not result.timed_out
        self._assert_replaced(sandbox, old_worker)
        assert result.error.startswith("SandboxCrash: ") and "died" in result.error
        assert "exit code 3" in result.error and "context" in result.error
        assert sandbox.execute("print(context)").stdout == "kept\n"

    def test_a_worker_lost_while_answering_the_host_is_replaced(self, sandbox):
        """A worker that dies while answering the host (a variable whose ``repr`` exits) is replaced, and the next
        step says why, naming the worker as the runtime does (its ``worker_noun``)."""
        self._needs_full_cpython("no os._exit()")
        sandbox.execute("import os\nclass Dies:\n    def __repr__(self):\n        os._exit(9)\nd = Dies()")
        with pytest.raises(KeyError):  # asked again of a fresh worker, where the variable is gone
            sandbox.get_variable("d")
        noun = getattr(sandbox, "worker_noun", "")
        assert f"Cause: {noun} died" in sandbox.execute("pass").error

    def test_memory_bomb_is_an_ordinary_error(self, sandbox):
        """The session's memory limit refuses the allocations: that, not a clock, ends each step, so the steps get
        a generous time limit (:data:`MEMORY_BOMB_BOUND_S`) that only bounds a runtime that never refuses them —
        a busy machine is slower to fill the memory, and still gets the ``MemoryError``."""
        result = sandbox.execute("x = ' ' * 10**10", timeout=MEMORY_BOMB_BOUND_S)  # 10 GB at once: refused
        assert result.error.startswith("MemoryError") and "ran out of memory" in result.error, result
        assert not result.restarted and not result.timed_out
        # growing by 100 MB until refused: the limits' 1 GB is reached in about ten allocations
        bomb = "chunks = []\nwhile True:\n    chunks.append(' ' * 10**8)"
        result = sandbox.execute(bomb, timeout=MEMORY_BOMB_BOUND_S)
        assert result.error.startswith("MemoryError") and not result.timed_out, result
        assert sandbox.execute("chunks = None\nprint('usable')").stdout == "usable\n"

    def test_output_is_truncated_keeping_head_and_tail(self, sandbox):
        half = self.limits.max_output_chars // 2
        result = sandbox.execute(f"print('A' * {6 * half} + 'B' * {6 * half})")
        assert result.stdout.startswith("A" * half) and result.stdout.endswith("B" * (half - 1) + "\n")
        assert "characters cut" in result.stdout and len(result.stdout) < self.limits.max_output_chars + 200

    def test_processes_forked_by_user_code_never_answer_for_the_sandbox(self, sandbox):
        """A fork of the worker shares its channel: no child may answer a step in the worker's place, and the
        steps after a burst of forks run at once with the right output. (The burst is bounded: 8 processes; a
        real fork bomb belongs in tests/security, against runtimes with a process limit.)"""
        self._needs_full_cpython("no os.fork()")
        sandbox.set_variable("context", "kept")
        worker = sandbox.execute("import os\nprint(os.getpid())").stdout.strip()
        for _ in range(3):
            result = sandbox.execute("pid = os.fork()\nprint('parent' if pid else 'child', os.getpid())", timeout=10)
            assert result.stdout == f"parent {worker}\n", result
        burst = sandbox.execute("for _ in range(3):\n    os.fork()\nprint(os.getpid())", timeout=10)
        assert burst.stdout == f"{worker}\n", burst
        for n in range(5):
            after = sandbox.execute(f"print({n}, context, os.getpid())", timeout=5)
            assert after.stdout == f"{n} kept {worker}\n" and not after.timed_out, after

    def test_user_code_cannot_corrupt_the_channel(self, sandbox):
        self._needs_full_cpython("no os.write() to the worker's file descriptors")
        result = sandbox.execute("import os, sys\nos.write(1, b'garbage\\n')\nsys.__stdout__.write('{bad json\\n')")
        assert result.ok
        assert sandbox.execute("print(1 + 1)").stdout == "2\n"


__all__ = ["SandboxContract", "assert_clear_error", "median_step_seconds", "DEFINED", "ERROR_FIRST_LINE"]
