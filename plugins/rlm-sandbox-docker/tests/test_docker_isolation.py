"""The container's hardening, seen from inside it, and the containers' lifecycle, seen from the engine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rlm_host.sdk.sandbox import SandboxLimits

from docker_fixtures import containers_of, docker_client, docker_engine, limits, sandbox  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def run_ok(sandbox, code: str) -> str:
    result = sandbox.execute(textwrap.dedent(code))
    assert result.ok, result.error
    return result.stdout


# ---------------------------------------------------------------- hardening, from inside


def test_runs_as_non_root_without_capabilities_or_new_privileges(sandbox):
    out = run_ok(sandbox, """
        import os
        status = {k: v.strip() for k, v in (line.split(':', 1) for line in open('/proc/self/status'))}
        print(os.getuid(), os.getgid(), status['CapEff'], status['CapBnd'], status['NoNewPrivs'])
    """)
    assert out.split() == ["65534", "65534", "0000000000000000", "0000000000000000", "1"]


def test_no_network(sandbox):
    out = run_ok(sandbox, """
        import socket
        for address in [('1.1.1.1', 53), ('8.8.8.8', 443)]:
            try:
                socket.create_connection(address, timeout=3)
                print('connected')
            except OSError as exc:
                print('refused', exc.errno)
        try:
            socket.getaddrinfo('deb.debian.org', 80)
            print('resolved')
        except OSError:
            print('no dns')
        print(sorted(name for name in __import__('os').listdir('/sys/class/net')))
    """)
    assert "connected" not in out and "resolved" not in out and "no dns" in out
    assert out.splitlines()[-1] == "['lo']"


def test_cannot_write_outside_the_work_tmpfs(sandbox):
    sandbox.set_variable("context", "x" * 2_000_000)  # a file in the read-only input mount
    out = run_ok(sandbox, """
        import os
        for directory in ['/', '/tmp', '/var/tmp', '/etc', '/usr', '/opt/rlm', '/opt/rlm-host', '/rlm-input',
                          '/dev', '/dev/shm', '/run', '/work']:
            try:
                with open(os.path.join(directory, 'probe'), 'w') as f:
                    f.write('x')
                print(directory, 'writable')
            except OSError:
                print(directory, 'refused')
        for path in os.listdir('/rlm-input'):
            try:
                open('/rlm-input/' + path, 'a').write('x')
                print('input file writable')
            except OSError:
                print('input file refused')
        print(os.getcwd(), os.environ['HOME'], os.environ['TMPDIR'])
    """)
    lines = out.splitlines()
    assert [line for line in lines if line.endswith("writable")] == ["/work writable"]
    assert "input file refused" in lines and lines[-1] == "/work /work /work"


def test_the_work_tmpfs_is_size_limited(sandbox):
    out = run_ok(sandbox, """
        try:
            with open('/work/big', 'wb') as f:
                for _ in range(400):
                    f.write(b'x' * (1 << 20))
            print('wrote 400 MB')
        except OSError as exc:
            print('full', exc.errno)
    """)
    assert out.startswith("full")


def test_host_environment_does_not_leak(docker_engine, monkeypatch):
    from rlm_sandbox_docker.runtime import DockerSandbox

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
    session = DockerSandbox()
    try:
        assert session.execute("import os\nenv = dict(os.environ)").ok
        env = session.get_variable("env")
    finally:
        session.shutdown()
    assert "OPENAI_API_KEY" not in env and "sk-fake-secret" not in str(env)
    assert set(env) <= {"HOME", "TMPDIR", "LANG", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PATH", "HOSTNAME"}


def test_limits_and_labels_are_applied(docker_engine, containers_of):
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    session = DockerSandbox(DockerSettings(memory="600m", cpus=0.5, pids_limit=64), SandboxLimits(memory_mb=512))
    try:
        out = run_ok(session, """
            print(open('/sys/fs/cgroup/memory/memory.limit_in_bytes').read().strip()
                  if __import__('os').path.exists('/sys/fs/cgroup/memory/memory.limit_in_bytes')
                  else open('/sys/fs/cgroup/memory.max').read().strip())
        """)
        assert out.strip() == str(600 * 2**20)
        [container] = containers_of(session)
        host = container.attrs["HostConfig"]
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
        assert host["SecurityOpt"] == ["no-new-privileges"] and host["PidsLimit"] == 64
        assert host["NanoCpus"] == 500_000_000 and host["Memory"] == host["MemorySwap"] == 600 * 2**20
        assert container.attrs["Config"]["User"] == "65534:65534"
        labels = container.labels
        assert labels["rlm.sandbox"] == "1" and labels["rlm.session"] == session.session_id
        assert labels["rlm.run"] and labels["rlm.owner"].split(":")[1] == str(os.getpid())
        result = session.execute("threads = [__import__('threading').Thread(target=__import__('time').sleep, "
                                 "args=(5,)) for _ in range(100)]\nfor t in threads: t.start()")
        assert "can't start new thread" in result.error  # the pids limit
    finally:
        session.shutdown()


# ---------------------------------------------------------------- lifecycle, from the engine


def test_shutdown_removes_the_container_and_the_host_directory(docker_engine, containers_of):
    from rlm_sandbox_docker.runtime import DockerSandbox

    session = DockerSandbox()
    session.set_variable("context", "y" * 3_000_000)
    directory = session.input_dir.parent
    assert len(containers_of(session)) == 1 and directory.is_dir()
    session.shutdown()
    session.shutdown()
    assert containers_of(session) == [] and not directory.exists()


HOST_SCRIPT = """
import sys, time
from rlm_sandbox_docker.runtime import DockerSandbox
session = DockerSandbox()
session.set_variable("context", "c" * 2_000_000)
print(session.session_id, session.input_dir.parent, flush=True)
session.execute("while True:\\n    pass", timeout=1000)
"""


def test_a_killed_host_leaves_a_stopped_container_that_the_next_start_removes(docker_engine, docker_client):
    from rlm_sandbox_docker.runtime import DockerSandbox

    host = subprocess.Popen([sys.executable, "-c", HOST_SCRIPT], stdout=subprocess.PIPE, text=True)
    session_id, host_dir = host.stdout.readline().split()
    assert os.path.isdir(host_dir)
    time.sleep(0.5)  # the container is busy in its loop
    host.send_signal(signal.SIGKILL)
    host.wait()
    label = {"label": f"rlm.session={session_id}"}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        [container] = docker_client.containers.list(all=True, filters=label)
        if container.status == "exited":
            break
        time.sleep(0.2)
    assert container.status == "exited"  # the worker saw its channel close, even while busy
    import rlm_sandbox_docker.engine as engine

    engine._swept.clear()  # as in a new rlm process
    DockerSandbox().shutdown()  # never started: no sweep yet
    session = DockerSandbox()
    session.start()
    session.shutdown()
    assert docker_client.containers.list(all=True, filters=label) == []
    assert not os.path.exists(host_dir)  # the dead session's copy of its context is gone too


def test_cleanup_command_removes_stale_containers(docker_engine, docker_client, rlm_cli):
    stale = docker_client.containers.create("rlm-sandbox:py3", ["true"], labels={
        "rlm.sandbox": "1", "rlm.owner": f"{os.uname().nodename}:999999999:1"})
    live = docker_client.containers.create("rlm-sandbox:py3", ["true"], labels={"rlm.sandbox": "1",
                                                                                 "rlm.owner": "another-machine:1:1"})
    try:
        done = rlm_cli("sandbox", "cleanup", plugins="rlm-sandbox-docker")
        assert done.code == 0 and stale.name in done.out
        names = [c.name for c in docker_client.containers.list(all=True, filters={"label": "rlm.sandbox=1"})]
        assert stale.name not in names and live.name in names
    finally:
        live.remove(force=True)


def test_missing_image_names_the_fix(docker_engine):
    from rlm_sandbox_docker.engine import DockerSandboxError
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    session = DockerSandbox(DockerSettings(image="rlm-no-such-image:1"))
    with pytest.raises(DockerSandboxError, match=r"image rlm-no-such-image:1 not found: run `rlm sandbox build-image "
                                                 r"--tag rlm-no-such-image:1` \(or `docker pull"):
        session.start()
    session.shutdown()
