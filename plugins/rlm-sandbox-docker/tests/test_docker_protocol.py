"""The docker runtime keeps the sandbox protocol: the behaviours of the host's tests/test_sandbox_process.py,
in a real container of a real engine (no mocks)."""

from __future__ import annotations

import time

import pytest

from rlm_host.sandbox.protocol import SandboxError, SandboxSession

from docker_fixtures import containers_of, docker_client, docker_engine, limits, sandbox  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def test_factory_and_info(docker_engine):
    from rlm_sandbox_docker.runtime import DockerSandbox, create

    session = create(None, None)
    assert isinstance(session, SandboxSession) and isinstance(session, DockerSandbox)
    assert session.info.name == "docker" and session.info.security_boundary is True
    assert "no network" in session.info.isolation
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


def test_errors_carry_type_message_and_user_traceback(sandbox):
    result = sandbox.execute("def f(n):\n    return n / 0\nf(3)")
    assert result.error.splitlines()[0] == "ZeroDivisionError: division by zero"
    assert "return n / 0" in result.error and "worker.py" not in result.error
    assert sandbox.execute("def broken(:\n  pass").error.startswith("SyntaxError")
    assert sandbox.execute("raise SystemExit(3)").error.splitlines()[0] == "SystemExit: 3"
    assert sandbox.execute("print('still alive')").stdout == "still alive\n"


def test_final_final_var_submit_and_show_vars(sandbox):
    result = sandbox.execute("print('before')\nFINAL('the answer')\nprint('never')")
    assert result.final.kind == "direct" and result.final.value == "the answer" and result.stdout == "before\n"
    result = sandbox.execute("answer = {'n': 3, 'items': (1, 2)}\nFINAL_VAR('answer')")
    assert result.final.kind == "variable" and result.final.value == {"n": 3, "items": [1, 2]}
    result = sandbox.execute("try:\n    SUBMIT(label='spam', score=0.5)\nexcept Exception:\n    pass")
    assert result.final.kind == "submit" and result.final.value == {"label": "spam", "score": 0.5}
    missing = sandbox.execute("FINAL_VAR('missing')")
    assert missing.final is None and "no variable named 'missing'" in missing.error
    sandbox.set_variable("context", "some text")
    shown = sandbox.execute("SHOW_VARS()").stdout
    assert "context: str" in shown and "answer: dict" in shown and "FINAL" not in shown
    assert sandbox.list_variables()["context"] == "str"


def test_host_functions_round_trip_and_raise(sandbox):
    calls = []

    def llm_query(prompt, *, model=None):
        calls.append((prompt, model))
        return {"text": prompt.upper(), "model": model}

    def failing(_prompt):
        raise ValueError("provider unavailable")

    sandbox.register_functions({"llm_query": llm_query, "failing": failing})
    code = (
        "r = llm_query('hi', model='small')\n"
        "try:\n    failing('x')\nexcept RuntimeError as exc:\n    caught = str(exc)\n"
        "print(r['text'], r['model'])"
    )
    result = sandbox.execute(code)
    assert result.ok, result.error
    assert result.stdout == "HI small\n" and calls == [("hi", "small")]
    assert "provider unavailable" in sandbox.get_variable("caught")
    assert sandbox.execute("failing('y')").error.startswith("RuntimeError: ValueError: provider unavailable")


def test_time_in_host_functions_does_not_count(sandbox):
    sandbox.register_functions({"slow": lambda: time.sleep(1.5) or "done"})
    result = sandbox.execute("v = slow()", timeout=1)
    assert result.ok and not result.timed_out and sandbox.get_variable("v") == "done"


def test_timeout_restarts_a_new_container_with_host_state(sandbox, containers_of):
    sandbox.set_variable("context", "the context")
    sandbox.register_functions({"llm_query": lambda p: "ok"})
    sandbox.execute("mine = 1")
    old = sandbox.container_id
    result = sandbox.execute("while True:\n    pass", timeout=0.5)
    assert result.timed_out and result.restarted and "time limit" in result.error and "context" in result.error
    assert sandbox.container_id != old
    assert [c.id for c in containers_of(sandbox)] == [sandbox.container_id]  # the old one is removed
    after = sandbox.execute("print(context, llm_query('x'))\nprint('mine' in globals())")
    assert after.stdout == "the context ok\nFalse\n"


def test_crash_restarts_and_removes_the_dead_container(sandbox, containers_of):
    sandbox.set_variable("context", "kept")
    old = sandbox.container_id
    result = sandbox.execute("import os\nos._exit(3)")
    assert result.restarted and not result.timed_out and "exit code 3" in result.error
    assert sandbox.execute("print(context)").stdout == "kept\n"
    assert [c.id for c in containers_of(sandbox)] == [sandbox.container_id] != [old]


def test_a_container_killed_between_steps_is_reported(sandbox):
    sandbox.container.kill()
    time.sleep(0.5)
    result = sandbox.execute("print('hi')")
    assert result.restarted and "SIGKILL" in result.error
    assert sandbox.execute("print('hi')").stdout == "hi\n"


def test_memory_bomb_is_an_ordinary_error(sandbox):
    result = sandbox.execute("x = ' ' * 10**10")
    assert result.error.startswith("MemoryError") and not result.restarted
    assert sandbox.execute("print('usable')").stdout == "usable\n"


def test_output_is_truncated_and_channel_cannot_be_corrupted(sandbox):
    result = sandbox.execute("print('A' * 3000 + 'B' * 3000)")
    assert result.stdout.startswith("A" * 500) and "characters cut" in result.stdout and len(result.stdout) < 1200
    result = sandbox.execute("import os, sys\nos.write(1, b'garbage\\n')\nsys.__stdout__.write('{bad json\\n')")
    assert result.ok and sandbox.execute("print(1 + 1)").stdout == "2\n"


def test_values_round_trip_through_the_channel_and_files(sandbox):
    from rlm_sandbox_docker.runtime import DockerSandbox

    assert isinstance(sandbox, DockerSandbox)
    small = {"a": [1, 2.5, None, True], "é": "ü"}
    sandbox.set_variable("small", small)
    big_list = [f"document {i} " * 20 for i in range(10_000)]  # ≈ 2.7 MB of JSON: goes as a file
    sandbox.set_variable("docs", big_list)
    odd = "\ud800 lone surrogate " + "x" * 1_100_000  # cannot be UTF-8: goes as a JSON file
    sandbox.set_variable("odd", odd)
    assert sorted(p.suffix for p in sandbox.input_dir.iterdir()) == [".json", ".json"]
    assert sandbox.get_variable("small") == small
    result = sandbox.execute("print(len(docs), docs[9999][:13], len(odd), odd[0] == '\\ud800')")
    assert result.stdout == f"10000 document 9999 {len(odd)} True\n"
    sandbox.set_variable("docs", ["now small"])  # the file of the old value is removed
    assert [p.suffix for p in sandbox.input_dir.iterdir()] == [".json"]
    with pytest.raises(TypeError):
        sandbox.set_variable("bad", object())
    with pytest.raises(ValueError):
        sandbox.set_variable("FINAL", 1)


def test_use_after_shutdown_is_an_error(sandbox):
    sandbox.shutdown()
    with pytest.raises(SandboxError):
        sandbox.execute("1")
