"""A missing image met by other processes: the question on a real pseudo-terminal (yes, no), and two processes
(as ``rlm bench run --processes 2``'s workers) that build it once. Each process runs ``SESSION_SCRIPT``: a
session whose base build is a retag of the suite's image (real tags in the real engine, no debootstrap)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

import pytest

from docker_fixtures import docker_client, docker_engine, missing_tag, sandbox_tags  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


SESSION_SCRIPT = """
# a session of argv[1] with build_missing = argv[2]; the base build is a retag, noted in the file argv[3]
import os, sys, time
from rlm_sandbox_docker import image
from rlm_sandbox_docker.engine import connect
from rlm_sandbox_docker.runtime import DockerSandbox
from rlm_sandbox_docker.settings import DockerSettings

def build_image(tag, *, base_url=None, log=print, phase=None, **options):
    with open(sys.argv[3], "a") as builds:
        builds.write(tag + "\\n")
    for name in image.BASE_PHASES:
        phase(name)
        time.sleep(float(os.environ.get("PHASE_SECONDS", "0.2")))
    connect(base_url, cached=False).images.get("rlm-sandbox:py3").tag(*tag.rsplit(":", 1))
    return {"tag": tag, "built": True, "seconds": 0.8, "size_mb": 117}

image.build_image = build_image
session = DockerSandbox(DockerSettings(image=sys.argv[1], build_missing=sys.argv[2]))
try:
    print("ran:", session.execute("print(6 * 7)").stdout.strip())
except Exception as exc:
    print("error:", exc)
finally:
    session.shutdown()
"""


def on_a_terminal(argv: list[str], answer: str, env: dict[str, str]) -> tuple[str, int]:
    """Run ``argv`` with stdin, stdout and stderr on a pseudo-terminal; type ``answer`` at the question."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    out, answered, deadline = b"", False, time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            if not answered and b"[y/N] " in out:
                os.write(master, answer.encode() + b"\n")
                answered = True
            if proc.poll() is not None and not ready:
                break
        return out.decode("utf-8", "replace"), proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("answer", ["y", "n"])
def test_ask_on_a_terminal(missing_tag, docker_client, tmp_path, answer):
    """The question on a real pseudo-terminal: yes builds (with the live status line and a ✓ per phase) and the
    session runs; no (or Enter) keeps the error naming the command."""
    script = tmp_path / "session.py"
    script.write_text(SESSION_SCRIPT)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TERM": "xterm", "COLUMNS": "120"}
    out, code = on_a_terminal([sys.executable, str(script), missing_tag, "ask", str(tmp_path / "builds")], answer,
                              env)
    assert code == 0, out
    assert f"The Docker sandbox image {missing_tag} is missing. Build it now (about 1 minute)? [y/N] " in out
    if answer == "y":
        assert "✓ debootstrap" in out and "✓ importing" in out and f"✓ built {missing_tag} in " in out
        assert f"building {missing_tag} · packing (3/4) · 0:0" in out  # the live line
        assert "ran: 42" in out and missing_tag in sandbox_tags(docker_client)
    else:
        assert f"error: image {missing_tag} not found: run `rlm sandbox build-image --tag {missing_tag}`" in out
        assert missing_tag not in sandbox_tags(docker_client)


def test_two_processes_build_the_image_once(missing_tag, docker_client, tmp_path):
    """As the worker processes of ``rlm bench run --processes 2`` would: one builds, the other waits for the
    lock, finds the image and runs."""
    script = tmp_path / "session.py"
    script.write_text(SESSION_SCRIPT)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PHASE_SECONDS": "0.75"}  # 3 s: both start
    argv = [sys.executable, str(script), missing_tag, "always", str(tmp_path / "builds")]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for _ in range(2)]
    outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    assert all("ran: 42" in out for out in outputs), outputs
    assert len((tmp_path / "builds").read_text().splitlines()) == 1
    assert sum(f"waiting for the build of {missing_tag}" in out for out in outputs) == 1, outputs
    assert missing_tag in sandbox_tags(docker_client)
