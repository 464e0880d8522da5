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
                      "--sandbox", "process", plugins="rlm-env-dspy")  # fmt: skip
    assert refused.code == 2 and "refusing to let the model edit files in" in refused.err
    assert "--allow-any-workdir" in refused.err and "Traceback" not in refused.err
    allowed = rlm_cli("run", "Fix it", "--env", "dspy", "--workdir", str(rlm_isolated.home), "--model", model,
                      "--sandbox", "process", "--allow-any-workdir", plugins="rlm-env-dspy")  # fmt: skip
    assert "refusing to let the model edit files" not in allowed.err
