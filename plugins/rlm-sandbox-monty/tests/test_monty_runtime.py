"""The monty runtime against the sandbox protocol: a real Monty worker, no mocks.

The same behaviours as the host's tests/test_sandbox_process.py where they apply.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host.sandbox.protocol import SandboxError, SandboxLimits, SandboxSession  # noqa: E402

from rlm_sandbox_monty.runtime import MontySandbox, MontySettings, create  # noqa: E402


@pytest.fixture
def sandbox():
    """A session with a short default timeout; shut down after the test."""
    session = MontySandbox(limits=SandboxLimits(exec_timeout=5, memory_mb=1024, max_output_chars=1000))
    session.start()
    yield session
    session.shutdown()


def test_factory_settings_and_info():
    session = create({"max_recursion_depth": 200}, None)
    assert isinstance(session, SandboxSession)
    assert session.settings.max_recursion_depth == 200
    assert session.info.name == "monty" and session.info.security_boundary is True
    assert "no filesystem, network, environment" in session.info.isolation
    assert "class inheritance" in session.info.python_notes
    with pytest.raises(ValueError):
        MontySettings(unknown_key=1)
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
    with pytest.raises(KeyError):
        sandbox.get_variable("print")  # a builtin is not a variable


def test_errors_carry_type_message_and_user_traceback(sandbox):
    result = sandbox.execute("y = undefined_name")
    assert result.error.startswith("NameError: name 'undefined_name' is not defined")
    assert "<cell" in result.error and "y = undefined_name" in result.error
    result = sandbox.execute("def f(n):\n    return n / 0\nf(3)")
    assert result.error.splitlines()[0] == "ZeroDivisionError: division by zero"
    assert "in f" in result.error and "return n / 0" in result.error
    assert sandbox.execute("def broken(:\n  pass").error.startswith("SyntaxError")
    assert sandbox.execute("raise SystemExit('bye')").error.splitlines()[0] == "SystemExit: bye"
    assert sandbox.execute("class A(Exception):\n    pass").error.startswith("NotImplementedError")
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
    result = sandbox.execute("from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nFINAL(P(3))")
    assert result.final.value == "P(x=3)"


def test_the_first_final_wins_even_if_swallowed(sandbox):
    result = sandbox.execute("try:\n    FINAL('first')\nexcept BaseException:\n    pass\nFINAL('second')")
    assert result.final.value == "first" and result.error is None


def test_final_var_of_a_missing_variable_is_an_error(sandbox):
    result = sandbox.execute("FINAL_VAR('missing')")
    assert result.final is None
    assert "FINAL_VAR: no variable named 'missing'" in result.error
    result = sandbox.execute("FINAL_VAR(42)")
    assert result.final is None and result.error.startswith("TypeError: FINAL_VAR expects the variable NAME")


def test_show_vars_and_list_variables(sandbox):
    sandbox.set_variable("context", "some text")
    sandbox.register_functions({"llm_query": lambda prompt: prompt})
    sandbox.execute("count = 3\n_hidden = 1\ndef helper():\n    pass")
    result = sandbox.execute("print('before')\nSHOW_VARS()\nprint('after')")
    shown = result.stdout
    assert shown.startswith("before\nVariables:\n") and shown.endswith("after\n")
    assert "context: str" in shown and "count: int" in shown and "helper: function" in shown
    assert "_hidden" not in shown and "llm_query" not in shown and "FINAL" not in shown
    assert sandbox.list_variables() == {"context": "str", "count": "int", "helper": "function"}
    assert sandbox.get_variable("_hidden") == 1


def test_host_functions_round_trip(sandbox):
    calls = []

    def llm_query(prompt, *, model=None, options=None):
        calls.append((prompt, model, options))
        return {"text": prompt.upper(), "model": model, "echo": options}

    def failing(_prompt):
        raise ValueError("provider unavailable")

    sandbox.register_functions({"llm_query": llm_query, "failing": failing, "plain": lambda: 1 / 0})
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
    assert sandbox.execute("plain()").error.startswith("RuntimeError: ZeroDivisionError: division by zero")
    # a function defined in one step calls a host function in a later one
    sandbox.execute("def ask(p):\n    return llm_query(p)['text']")
    assert sandbox.execute("print(ask('later'))").stdout == "LATER\n"


def test_host_functions_cannot_reenter_the_sandbox(sandbox):
    sandbox.register_functions({"reenter": lambda: sandbox.execute("1")})
    result = sandbox.execute("reenter()")
    assert "cannot be used from inside one of its own host functions" in result.error


def test_large_variable_and_bad_values(sandbox):
    sandbox.set_variable("context", "é" * 10_000_000)
    assert sandbox.execute("print(len(context))").stdout == "10000000\n"
    with pytest.raises(TypeError):
        sandbox.set_variable("bad", object())
    with pytest.raises(ValueError):
        sandbox.set_variable("FINAL", 1)
    with pytest.raises(ValueError):
        sandbox.set_variable("_private", 1)
    assert sandbox.execute("print(len(context))").stdout == "10000000\n"


def test_output_is_truncated_keeping_head_and_tail(sandbox):
    result = sandbox.execute("print('A' * 3000 + 'B' * 3000)")
    assert result.stdout.startswith("A" * 500) and result.stdout.endswith("B" * 499 + "\n")
    assert "characters cut" in result.stdout and len(result.stdout) < 1200


def test_shutdown_ends_the_worker():
    session = MontySandbox()
    session.start()
    pid = session.pid
    assert pid and session._worker.alive()
    session.shutdown()
    session.shutdown()
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)
    with pytest.raises(SandboxError):
        session.execute("1")


def test_monty_that_cannot_start_is_a_sandbox_error(tmp_path):
    session = MontySandbox(MontySettings(binary_path=str(tmp_path / "no-monty")))
    with pytest.raises(SandboxError, match="pip install rlm-sandbox-monty"):
        session.execute("1")
    session.shutdown()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
