"""Commands run inside a sandbox session (``run_command``), workspaces, and how a run that needs one picks its
sandbox. The process runtime stands in for any runtime here (fast; it is not a security boundary)."""

import pytest

from rlm_host import ConfigError, EnvironmentSpec, SandboxError
from rlm_host.sdk.embedding import RLMRunner
from rlm_host.sdk.sandbox import PYTHON, run_command, run_in_session
from rlm_host.engine.sandbox_plan import choose_sandbox, project_folder


@pytest.fixture
def session(tmp_path):
    runner = RLMRunner(home=tmp_path / ".rlm")
    session = runner.open_sandbox(sandbox="process", workspace=tmp_path)
    session.start()
    yield session
    session.shutdown()


def test_a_command_runs_in_the_workspace_and_its_result_comes_back_as_data(session, tmp_path):
    done = run_command(session, [PYTHON, "-c", "import os, sys; print(os.getcwd()); open('made.txt', 'w').write('x');"
                                 "print('warn', file=sys.stderr); sys.exit(3)"], timeout=30)
    assert (done.exit_code, done.ok, done.timed_out) == (3, False, False)
    assert done.stdout.strip() == str(tmp_path) and done.stderr.strip() == "warn"
    assert (tmp_path / "made.txt").read_text() == "x"
    assert "exit code 3" in done.summary()


def test_a_slow_command_times_out_and_a_missing_program_is_reported(session):
    slow = run_command(session, [PYTHON, "-c", "import time; print('started', flush=True); time.sleep(30)"], timeout=1)
    assert slow.timed_out and not slow.ok and slow.exit_code is None
    missing = run_command(session, ["rlm-no-such-program"], timeout=5)
    assert missing.error and "No such file" in missing.error and "could not start" in missing.summary()


def test_output_keeps_its_end(session):
    done = run_command(session, [PYTHON, "-c", "print('x' * 50000 + 'END')"], timeout=30, keep_chars=100)
    assert len(done.stdout) == 100 and done.stdout.rstrip().endswith("END")


def test_helper_code_errors_are_sandbox_errors(session):
    assert run_in_session(session, "def f(n):\n    return {'n': n * 2}\n", "f(21)", timeout=10) == {"n": 42}
    with pytest.raises(SandboxError, match="ZeroDivisionError"):
        run_in_session(session, "", "1 / 0", timeout=10)


def test_an_environment_needing_a_workspace_gets_a_runtime_that_can_mount_one(rlm_plugin_host, tmp_path):
    host = rlm_plugin_host("rlm-sandbox-monty")
    loaded = RLMRunner(host=host, home=tmp_path).loaded
    needs = EnvironmentSpec("coder", "edits a project", "x:y", workspace=True)
    with pytest.raises(ConfigError, match="the coder environment edits a project folder, and the monty sandbox "
                                          "cannot mount one") as refused:
        choose_sandbox(host, loaded, "monty", needs)
    assert "process (NOT a security boundary)" in refused.value.hint
    with pytest.raises(ConfigError, match="no sandbox that can mount"):
        choose_sandbox(host, loaded, "auto", needs)  # monty is the only boundary, and it cannot
    assert choose_sandbox(host, loaded, "process", needs).name == "process"
    assert choose_sandbox(host, loaded, "auto", EnvironmentSpec("plain", "runs code", "x:y")).name == "monty"


def test_the_project_folder_is_resolved_and_created(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert project_folder(None) == tmp_path
    assert project_folder(tmp_path / "new" / "dir").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        project_folder(tmp_path / "file")


def test_an_environments_settings_add_to_its_sandbox_packages():
    from rlm_host.engine.sandbox_plan import sandbox_packages_for

    spec = EnvironmentSpec("coder", "edits a project", "x:y", workspace=True, sandbox_packages=("dspy", "pytest"))

    class Settings:
        sandbox_packages = ["numpy>=2", "pytest"]  # the project's own test dependencies

    assert sandbox_packages_for(spec, Settings()) == ("dspy", "pytest", "numpy>=2")
    assert sandbox_packages_for(spec, None) == ("dspy", "pytest")
