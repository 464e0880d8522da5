"""Fast tests (no Docker engine needed): registration, readiness and errors with no engine, settings, the
worker's set_file operation, and the pieces of the runtime that do not talk to an engine."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile

import pytest

from rlm_host import ConfigError, SandboxError, SandboxServices
from rlm_host.sdk.embedding import load_settings
from rlm_host.sdk.sandbox import WORKER_SCRIPT
from rlm_host.testing import ScriptedConnector, isolated_runner

PLUGIN = "rlm-sandbox-docker"


@pytest.fixture
def dead_engine(tmp_path, monkeypatch):
    """DOCKER_HOST pointing at a socket nobody listens on."""
    address = f"unix://{tmp_path}/dead.sock"
    monkeypatch.setenv("DOCKER_HOST", address)
    return address


def test_registered_through_the_entry_point(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"sandbox": ["docker"], "command": ["sandbox"], "check": ["docker-engine", "docker-image"]}
    spec = host.sandboxes().get("docker")
    assert spec.security_boundary and spec.isolation.startswith("Docker container: no network")
    assert spec.settings_model().__name__ == "DockerSettings"
    assert spec.workspace is True  # it can mount an environment's project folder (SandboxServices.workspace)


def test_hooks_import_nothing_heavy():
    code = "import sys, rlm_sandbox_docker.hooks\nprint(sorted(m for m in ('docker', 'requests') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_readiness_without_an_engine_names_the_fix(dead_engine, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    ready = host.sandboxes().get("docker").readiness()
    assert not ready.ok
    assert ready.detail == f"cannot reach the Docker engine at {dead_engine} (no engine socket there): start the engine"
    assert "start" in ready.hint and "DOCKER_HOST" in ready.hint
    check = host.doctor_checks().get("docker-engine").readiness()
    assert not check.ok and "cannot reach the Docker engine" in check.detail


def test_readiness_and_commands_use_the_configuration_of_the_command(dead_engine, rlm_cli, rlm_isolated):
    """``rlm --config other.toml`` reaches the checks and the commands: its [sandbox.docker] base_url, not
    DOCKER_HOST nor the ./rlm.toml, is the engine they try."""
    configured = f"unix://{rlm_isolated.work}/configured.sock"
    (rlm_isolated.work / "other.toml").write_text(f'[sandbox.docker]\nbase_url = "{configured}"\n')
    doctor = rlm_cli("--config", "other.toml", "plugins", "doctor", "--json", plugins=PLUGIN)
    rows = {row["name"]: row for row in json.loads(doctor.out)["checks"]}
    for name in ("docker", "docker-engine"):
        assert not rows[name]["ok"] and configured in rows[name]["detail"], rows[name]
    cleanup = rlm_cli("--config", "other.toml", "sandbox", "cleanup", plugins=PLUGIN)
    assert cleanup.code == 1 and f"cannot reach the Docker engine at {configured}" in cleanup.err


def test_starting_without_an_engine_is_a_clear_error(dead_engine):
    from rlm_sandbox_docker.runtime import DockerSandbox

    session = DockerSandbox()
    with pytest.raises(SandboxError, match=r"cannot reach the Docker engine at unix://.*dead.sock: start it \("):
        session.start()
    session.shutdown()


def test_a_run_without_an_engine_is_refused_with_the_fix(dead_engine, tmp_path, monkeypatch):
    """A sandbox the user named that cannot start is bad input, said by the planner before any model call."""
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, plugins=PLUGIN)
    root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```"], name="scripted:root")
    with pytest.raises(ConfigError) as refused:
        runner.run_task("q", context="c", sandbox="docker", connectors={"root": root})
    assert "cannot reach the Docker engine" in str(refused.value) and "start it" in (refused.value.hint or "")
    assert root.calls == []  # refused before the first model call


def test_commands_without_an_engine(dead_engine, rlm_cli):
    helped = rlm_cli("sandbox", "--help", plugins=PLUGIN)
    assert helped.code == 0 and "build-image" in helped.out and "cleanup" in helped.out
    cleanup = rlm_cli("sandbox", "cleanup", plugins=PLUGIN)
    assert cleanup.code == 1 and "cannot reach the Docker engine" in cleanup.err


def test_settings_are_validated(tmp_path, rlm_plugin_host):
    from rlm_sandbox_docker.settings import DockerSettings, size_bytes

    defaults = DockerSettings()
    assert defaults.network_mode == "none" and defaults.read_only and defaults.cap_drop == ["ALL"]
    assert defaults.user == "65534:65534" and defaults.security_opt == ["no-new-privileges"]
    with pytest.raises(ValueError):
        DockerSettings(netwrk_mode="host")
    with pytest.raises(ValueError):
        DockerSettings(memory="lots")
    assert size_bytes("512m") == 512 * 2**20 and size_bytes("2g") == 2 * 2**30 and size_bytes("100") == 100
    host = rlm_plugin_host(PLUGIN)
    loaded = load_settings(environ={"HOME": str(tmp_path), "RLM_SANDBOX__DOCKER__MEMORY": "2g"}, cwd=tmp_path,
                           host=host)
    assert loaded.component("sandbox", "docker").memory == "2g"
    with pytest.raises(ConfigError, match="memory"):
        load_settings(environ={"HOME": str(tmp_path), "RLM_SANDBOX__DOCKER__MEMORY": "x"}, cwd=tmp_path, host=host)


def test_large_values_are_chosen_for_files():
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    session = DockerSandbox(DockerSettings(file_threshold=100))
    assert session._encode_large("x" * 100) is None
    assert session._encode_large("é" * 101) == ("é".encode() * 101, "text")
    assert session._encode_large("\ud800" * 101)[1] == "json"
    assert session._encode_large(list(range(100)))[1] == "json" and session._encode_large([1, 2]) is None
    assert session._encode_large(12345) is None
    with pytest.raises(TypeError):
        session._encode_large([object()] * 100)
    assert DockerSandbox(DockerSettings(file_threshold=0))._encode_large("x" * 10**6) is None
    session.shutdown()


def test_owners_of_stale_containers():
    from rlm_sandbox_docker.engine import owner_is_gone, owner_label

    mine = owner_label()
    host, pid, started = mine.split(":")
    assert pid == str(os.getpid()) and not owner_is_gone(mine)
    assert owner_is_gone(f"{host}:{pid}:{int(started) + 1}")  # a reused pid
    assert owner_is_gone(f"{host}:999999999:1")
    assert not owner_is_gone("another-machine:1:1") and not owner_is_gone("")


def test_worker_set_file_loads_text_and_json(tmp_path):
    text = "line one\r\nline two é\n"
    (tmp_path / "v.text").write_bytes(text.encode())
    (tmp_path / "v.json").write_text(json.dumps({"a": [1, 2], "s": "\ud800"}))
    requests = [
        {"id": 1, "op": "set_file", "name": "t", "path": str(tmp_path / "v.text"), "format": "text"},
        {"id": 2, "op": "set_file", "name": "j", "path": str(tmp_path / "v.json"), "format": "json"},
        {"id": 3, "op": "execute", "code": "ok = (t, j['a'], j['s'] == '\\ud800')"},
        {"id": 4, "op": "get", "name": "ok"},
        {"id": 5, "op": "set_file", "name": "x", "path": str(tmp_path / "missing"), "format": "text"},
        {"id": 6, "op": "set_file", "name": "x", "path": str(tmp_path / "v.text"), "format": "yaml"},
    ]
    proc = subprocess.Popen([sys.executable, "-I", "-u", str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
        proc.stdin.flush()  # kept open until the answers are in: the worker exits as soon as its host hangs up
        lines = [json.loads(proc.stdout.readline()) for _ in range(len(requests) + 1)]  # + "ready"
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    replies = {m.get("id"): m for m in lines}
    assert replies[1] == {"id": 1, "op": "result"} and replies[2] == {"id": 2, "op": "result"}
    assert replies[4]["value"] == [text, [1, 2], True]
    assert replies[5]["error"].startswith("FileNotFoundError") and "unknown file format" in replies[6]["error"]


# ---------------------------------------------------------------- workspaces and packages (no engine)


def test_the_derived_tag_depends_only_on_the_set_of_requirements():
    from rlm_sandbox_docker.engine import build_command, derived_tag, package_set

    tag = derived_tag(["dspy", "pytest"])
    assert tag.startswith("rlm-sandbox:py-") and len(tag) == len("rlm-sandbox:py-") + 10
    assert derived_tag(("pytest", " dspy", "dspy")) == tag and derived_tag(["pytest"]) != tag
    assert package_set(["pytest", "", "dspy "]) == ("dspy", "pytest")
    assert build_command(["pytest", "dspy"]) == "rlm sandbox build-image --with dspy --with pytest"
    assert build_command(["dspy>=3"]) == "rlm sandbox build-image --with 'dspy>=3'"


def test_the_factory_passes_workspace_and_packages(tmp_path):
    from rlm_sandbox_docker.engine import derived_tag
    from rlm_sandbox_docker.runtime import create

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    session = create(None, SandboxServices(workspace=tmp_path / "link", packages=("pytest", "dspy")))
    assert session.workspace == (tmp_path / "real").resolve()  # resolved on the host
    assert session.packages == ("dspy", "pytest") and session.image == derived_tag(["dspy", "pytest"])
    assert "/workspace is the project folder" in session.info.python_notes
    own = create({"image": "mine:1"}, SandboxServices(packages=("pytest",)))
    assert own.image == "mine:1"  # an image of one's own is used as it is
    plain = create(None, SandboxServices())
    assert plain.workspace is None and plain.image == "rlm-sandbox:py3"
    assert "project folder" not in plain.info.python_notes
    for session in (session, own, plain):
        session.shutdown()


def test_a_workspace_must_be_an_existing_directory(tmp_path):
    from rlm_sandbox_docker.engine import DockerSandboxError
    from rlm_sandbox_docker.runtime import create

    (tmp_path / "file").write_text("x")
    with pytest.raises(DockerSandboxError, match=r"the sandbox workspace .*missing does not exist: give an "
                                                 r"existing directory"):
        create(None, SandboxServices(workspace=tmp_path / "missing"))
    with pytest.raises(DockerSandboxError, match=r"the sandbox workspace .*file is not a directory"):
        create(None, SandboxServices(workspace=tmp_path / "file"))


def test_a_workspace_is_the_writable_working_directory_of_its_owner(tmp_path):
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    project = tmp_path / "project"
    project.mkdir()
    session = DockerSandbox(workspace=project)
    session._dir = tmp_path / "host"  # what _prepare makes, without an engine
    options = session._container_options()
    st = project.stat()
    assert options["user"] == f"{st.st_uid}:{st.st_gid}" and options["working_dir"] == "/workspace"
    assert options["volumes"][str(project)] == {"bind": "/workspace", "mode": "rw"}
    assert options["environment"]["HOME"] == options["environment"]["TMPDIR"] == "/work"
    assert options["network_mode"] == "none" and options["read_only"] is True and options["cap_drop"] == ["ALL"]
    assert options["security_opt"] == ["no-new-privileges"]
    assert [v["mode"] for k, v in options["volumes"].items() if k != str(project)] == ["ro", "ro"]
    session.shutdown()
    other = DockerSandbox(DockerSettings(workspace_dir="/src", workspace_user="1000:1000"), workspace=project)
    other._dir = tmp_path / "host"
    options = other._container_options()
    assert options["user"] == "1000:1000" and options["working_dir"] == "/src"
    other.shutdown()
    plain = DockerSandbox()
    plain._dir = tmp_path / "host"
    assert plain._container_options()["user"] == "65534:65534"
    plain.shutdown()


def test_workspace_settings_are_validated():
    from rlm_sandbox_docker.settings import DockerSettings

    assert DockerSettings().workspace_dir == "/workspace" and DockerSettings().workspace_user is None
    for bad in ({"workspace_dir": "rel"}, {"workspace_dir": "/"}, {"workspace_dir": "/work"},
                {"workspace_user": "me"}, {"workspace_user": "1000"}):
        with pytest.raises(ValueError):
            DockerSettings(**bad)


def test_platform_tags_and_the_image_configuration():
    from rlm_sandbox_docker.image import _changes, platform_tags

    tags = platform_tags("2.36", "x86_64")
    assert tags[0] == "manylinux_2_36_x86_64" and "manylinux_2_17_x86_64" in tags
    assert tags[-1] == "manylinux2014_x86_64" and "manylinux_2_37_x86_64" not in tags
    assert platform_tags("2.28", "aarch64")[0] == "manylinux_2_28_aarch64"
    changes = _changes({"Cmd": ["python3", "-I"], "User": "65534:65534", "WorkingDir": "/work",
                        "Env": ["LANG=C.UTF-8"], "Labels": {"a": "1"}}, {"org.rlm.sandbox-packages": '["x"]'})
    assert changes == ['CMD ["python3", "-I"]', "USER 65534:65534", "WORKDIR /work", 'ENV LANG="C.UTF-8"',
                       'LABEL a="1"', 'LABEL org.rlm.sandbox-packages="[\\"x\\"]"']


def _tar_with(path, entries):
    with tarfile.open(path, "w") as tar:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o2775
            else:
                info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data) if data is not None else None)


def test_the_derived_tar_adds_the_staged_files_as_root_without_duplicates(tmp_path):
    from rlm_sandbox_docker.image import _assemble, _python_layout

    exported = tmp_path / "base.tar"
    _tar_with(exported, [("usr/", None), ("usr/bin/", None), ("usr/bin/python3.11", b"elf"),
                         ("usr/lib/python3.11/", None), ("usr/lib/python3.11/os.py", b"# os"),
                         ("usr/lib/x86_64-linux-gnu/libc.so.6", b"\0GNU C Library stable release version 2.36.\0"),
                         ("usr/local/", None), ("usr/local/lib/", None), ("usr/local/lib/python3.11/", None),
                         ("usr/local/lib/python3.11/dist-packages/", None)])
    layout = _python_layout(exported)
    assert layout == {"python": "3.11", "site": "usr/local/lib/python3.11/dist-packages",
                      "executable": "/usr/bin/python3", "glibc": "2.36"}
    staging = tmp_path / "staging"
    (staging / "pkg").mkdir(parents=True)
    (staging / "pkg" / "__init__.py").write_text("x = 1\n")
    os.chmod(staging / "pkg" / "__init__.py", 0o600)
    (staging / "bin").mkdir()
    (staging / "bin" / "tool").write_text(f"#!{sys.executable}\nimport pkg\n")
    os.chmod(staging / "bin" / "tool", 0o700)
    out = tmp_path / "image.tar"
    _assemble(exported, staging, layout, out)
    with tarfile.open(out) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert len(names) == len(set(names))  # the engine refuses duplicate paths
        by_name = {m.name: m for m in members}
        module = by_name["usr/local/lib/python3.11/dist-packages/pkg/__init__.py"]
        assert (module.uid, module.gid, module.uname, module.mode) == (0, 0, "root", 0o644)
        assert by_name["usr/local/lib/python3.11/dist-packages"].mode == 0o755
        assert "usr/local/lib/python3.11/dist-packages/bin" not in by_name
        tool = by_name["usr/local/bin/tool"]
        assert tool.mode == 0o755 and tar.extractfile(tool).read() == b"#!/usr/bin/python3\nimport pkg\n"
        assert tar.extractfile("usr/lib/python3.11/os.py").read() == b"# os"  # the base's files are kept
