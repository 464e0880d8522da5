"""An environment that edits files refuses to work in a home, documents or system folder unless told to
(``--allow-any-workdir``): the model would be editing the user's own files."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlm_host.engine.sandbox_plan import project_folder
from rlm_host.errors import ConfigError


def test_home_documents_and_system_folders_are_refused(rlm_isolated):
    home = Path.home()
    for folder in (home, home / "Documents", home / "Desktop", Path("/"), Path("/etc"), Path("/usr")):
        with pytest.raises(ConfigError, match="refusing to let the model edit files"):
            project_folder(folder)
    assert project_folder(home / "projects" / "demo") == (home / "projects" / "demo").resolve()  # a project: fine
    assert project_folder(home, allow_any=True) == home.resolve()


def test_the_cli_refuses_with_a_hint_and_the_override_passes_the_guard(rlm_cli, rlm_script, rlm_isolated):
    model = rlm_script(['{"action": "final", "answer": "done"}'])
    refused = rlm_cli("run", "Fix it", "--env", "dspy", "--workdir", str(rlm_isolated.home), "--model", model,
                      "--sandbox", "process", plugins="rlm-env-dspy")
    assert refused.code == 2 and "refusing to let the model edit files in" in refused.err
    assert "--allow-any-workdir" in refused.err and "Traceback" not in refused.err
    allowed = rlm_cli("run", "Fix it", "--env", "dspy", "--workdir", str(rlm_isolated.home), "--model", model,
                      "--sandbox", "process", "--allow-any-workdir", plugins="rlm-env-dspy")
    assert "refusing to let the model edit files" not in allowed.err


def test_a_home_or_system_folder_as_the_context_is_refused_too(rlm_cli, rlm_script, rlm_isolated):
    """Every run that touches files: ``--context ~`` would put the user's keys and mail in the sandbox."""
    model = rlm_script(["FINAL(done)", "FINAL(done)"])
    (rlm_isolated.home / ".ssh").mkdir(exist_ok=True)
    (rlm_isolated.home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    for folder in (str(rlm_isolated.home), "/etc", "~"):
        refused = rlm_cli("run", "q", "--context", folder, "--model", model)
        assert refused.code == 2 and "refusing to read" in refused.err and "as the context" in refused.err, refused.err
        assert "Traceback" not in refused.err
    project = rlm_isolated.home / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello")
    ok = rlm_cli("run", "q", "--context", str(project), "--model", rlm_script(["FINAL(done)", "FINAL(done)"]),
                 "--sandbox", "process")
    assert ok.code == 0, ok.err
    allowed = rlm_cli("run", "q", "--context", "/etc/hostname", "--model", rlm_script(["FINAL(done)", "FINAL(done)"]),
                      "--sandbox",
                      "process")  # a file is what the user named
    assert "refusing" not in allowed.err
    from rlm_host import RLM, ConfigError

    with pytest.raises(ConfigError, match="as the context"):
        RLM(model, sandbox="process").completion(Path.home(), "q")
