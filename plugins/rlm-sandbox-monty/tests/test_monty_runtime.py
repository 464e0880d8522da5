"""The monty runtime against the sandbox protocol: a real Monty worker, no mocks.

The protocol's behaviours are the contract suite's (``rlm_host.testing.sandbox_contract``), with Monty's declared
differences; below it, what is particular to Monty.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host import SandboxError, SandboxServices  # noqa: E402
from rlm_host.sdk.sandbox import SandboxLimits, SandboxSession  # noqa: E402
from rlm_host.testing import SandboxContract  # noqa: E402

from rlm_sandbox_monty import pools  # noqa: E402
from rlm_sandbox_monty.runtime import MontySandbox, MontySettings, create  # noqa: E402
from rlm_sandbox_monty.worker import process_running as _running  # noqa: E402


class TestMontySandbox(SandboxContract):
    name = "monty"
    security_boundary = True
    isolation_mentions = ("no filesystem, network, environment",)
    python_notes_mentions = ("class inheritance",)
    full_cpython = False  # Monty's Python subset: no os module, exceptions take one string argument at most
    show_vars_is_live = False  # SHOW_VARS() lists the variables as at the end of the step
    killed_worker_report = ("NOT run", "had exited")
    step_cost_slack_s = 0.002  # the context is a feed input, sent once

    def make_sandbox(self, limits: SandboxLimits) -> MontySandbox:
        return MontySandbox(limits=limits)

    def test_unsupported_python_is_an_error_that_keeps_the_session(self, sandbox):
        assert sandbox.execute("class A(Exception):\n    pass").error.startswith("NotImplementedError")
        assert sandbox.execute("print('still alive')").stdout == "still alive\n"


def test_factory_and_settings():
    session = create({"max_recursion_depth": 200}, SandboxServices(limits=SandboxLimits(memory_mb=512)))
    assert isinstance(session, SandboxSession) and isinstance(session, MontySandbox)
    assert session.settings.max_recursion_depth == 200 and session.limits.memory_mb == 512
    with pytest.raises(ValueError):
        MontySettings(unknown_key=1)
    session.shutdown()


def test_shutdown_ends_the_worker(monkeypatch):
    """The worker goes back to the shared pool, which ends it once no sandbox holds the pool (``pools.LINGER``)."""
    monkeypatch.setattr(pools, "LINGER", 0.1)
    pools.close_all()
    session = MontySandbox()
    session.start()
    pid = session.pid
    assert pid and session._worker.alive()
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


def test_large_strings_are_indexed_at_bind_time_without_new_names(tmp_path):
    """A large context (a str, a documents list, a file joined from pieces) is indexed while it is bound
    (``worker.warm_code``): the values arrive whole and the namespace holds only what the host set."""
    from rlm_host.sdk.context import TextFile

    from rlm_sandbox_monty.worker import WARM_CHARS, warm_code

    text = "ab\u00e9" * (WARM_CHARS // 3 + 1)
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8")
    assert warm_code("s", "short") == "" and warm_code("s", text) == "len(s)"
    assert "_rlm_v" in warm_code("docs", [text]) and ".values()" in warm_code("d", {"a": text})
    sandbox = MontySandbox()
    try:
        sandbox.set_variable("context", text)
        sandbox.set_variable("docs", ["x", text, 3])
        sandbox.set_variable("named", {"a": text})
        sandbox.set_variable("on_disk", TextFile(path))
        assert sandbox.list_variables() == {"context": "str", "docs": "list", "named": "dict", "on_disk": "str"}
        result = sandbox.execute("print(len(context), len(docs[1]), len(named['a']), len(on_disk), on_disk[-3:])")
        assert result.stdout == f"{len(text)} {len(text)} {len(text)} {len(text)} {text[-3:]}\n"
    finally:
        sandbox.shutdown()
