"""Real runs of the engine in the docker sandbox with scripted models, and large contexts through the mount."""

from __future__ import annotations

import os
import time

import pytest

from rlm_host.testing import (
    FIND_NEEDLE, HAYSTACK_NEEDLE, ScriptedConnector, haystack, isolated_runner, median_step_seconds, run_scripted,
)

from docker_fixtures import docker_client, docker_engine  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.fixture
def runner(docker_engine, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins="rlm-sandbox-docker", sandbox="docker")


def my_containers(client) -> list:
    """Containers of this test process (running or not)."""
    pid = str(os.getpid())
    return [c for c in client.containers.list(all=True, filters={"label": "rlm.sandbox=1"})
            if c.labels.get("rlm.owner", "").split(":")[1:2] == [pid]]


def test_haystack_run_end_to_end(runner, docker_client):
    result, events, _ = run_scripted(runner, "What is the magic number?", [FIND_NEEDLE, "FINAL_VAR(answer)"],
                                     sub_rules=[{"match": "Extract the number", "text": "4217"}],
                                     context=haystack(2_000_000))
    assert result.completed and result.final_response == "4217", result.error
    assert result.sandbox == "docker" and result.steps == 2 and result.usage.sub.calls == 1
    recorded = [e.type for e in events if e.type in ("run_start", "sub_call", "step", "final")]  # not live events
    assert recorded == ["run_start", "sub_call", "step", "step", "final"]
    assert my_containers(docker_client) == []  # the run's container is gone


def test_child_runs_get_their_own_container(runner, docker_client):
    seen = []
    parent = "```repl\nr = rlm_query('Count the words', context='a b c')\nFINAL_VAR('r')\n```"
    child = "```repl\nimport socket\nFINAL(str(len(context.split())) + ' ' + socket.gethostname())\n```"

    class Watching(ScriptedConnector):
        def complete(self, messages, *, timeout=None, **kw):
            seen.append(len(my_containers(docker_client)))
            return super().complete(messages, timeout=timeout)

    root = Watching.from_responses([parent], rules=[{"match": "Count the words", "text": child}])
    result = runner.run_task("q", context="ctx", sandbox="docker", connectors={"root": root})
    assert result.final_response == "3 rlm-sandbox", result.error
    assert seen == [1, 2]  # the parent's container, then the child's as well
    assert my_containers(docker_client) == []


def test_ctrl_c_removes_the_container(runner, docker_client):
    class Interrupting(ScriptedConnector):
        def complete(self, messages, *, timeout=None, **kw):
            if len(self.calls) == 1:
                assert len(my_containers(docker_client)) == 1
                raise KeyboardInterrupt
            return super().complete(messages, timeout=timeout)

    root = Interrupting(["```repl\nprint(1)\n```", "never"], name="scripted:root")
    result = runner.run_task("q", context="c", sandbox="docker", connectors={"root": root})
    assert result.termination_reason == "cancelled"
    assert my_containers(docker_client) == []


def test_ten_megabyte_context_goes_through_the_read_only_mount(docker_engine):
    from rlm_sandbox_docker.runtime import DockerSandbox

    session = DockerSandbox()
    try:
        session.set_variable("context", "small")
        small = median_step_seconds(session)
        started = time.monotonic()
        session.set_variable("context", haystack(10_000_000))
        setup = time.monotonic() - started
        [file] = list(session.input_dir.iterdir())
        assert file.stat().st_size == 10_000_000 + len(HAYSTACK_NEEDLE)
        out = session.execute("print(len(context), context.find('magic number'))\n"
                              "import os\nprint(sorted(os.listdir('/rlm-input')))")
        assert out.stdout.splitlines() == [f"{10_000_000 + len(HAYSTACK_NEEDLE)} {5_000_000 + 4}", f"['{file.name}']"]
        large = median_step_seconds(session)
        print(f"\n10 MB context set-up {setup * 1000:.0f} ms; trivial execute {small * 1000:.2f} ms with a small "
              f"context, {large * 1000:.2f} ms with 10 MB")
        assert setup < 5
        assert large < max(3 * small, 0.02)  # the context is never resent
    finally:
        session.shutdown()
