"""The repository's promises: every plugin distribution is installable, installed, and shows up healthy."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata

import pytest

from support import REPO, RLM_SCRIPT, TEMPLATE, pip_install_target

PLUGIN_DIRS = sorted(p for p in (REPO / "plugins").iterdir() if p.is_dir() and not p.name.startswith("_"))


@pytest.mark.parametrize("folder", [*PLUGIN_DIRS, TEMPLATE], ids=lambda p: p.name)
def test_plugin_folder_is_a_complete_distribution(folder):
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert "rlm" in project["entry-points"], "a plugin is found through the 'rlm' entry-point group"
    assert (folder / "README.md").is_file() and (folder / "tests").is_dir()
    if folder is not TEMPLATE:
        assert project["name"] == folder.name, "the folder is named after its distribution"


def test_every_repository_plugin_is_installed_and_healthy(isolated_env):
    """What the README's install command promises: `rlm plugins list --json` shows every plugin, ok."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_") and k != "PYTHONPATH"}
    result = subprocess.run([RLM_SCRIPT, "plugins", "list", "--json"], capture_output=True, text=True, env=env)
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    for folder in PLUGIN_DIRS:
        assert folder.name in listed, f"{folder.name} is not installed (scripts/install.sh installs plugins/*)"
        entry = listed[folder.name]
        assert entry["status"] == "ok", entry["errors"]
        assert entry["provides"], f"{folder.name} registers no component"
        assert entry["version"] == metadata.version(folder.name)


@pytest.mark.slow
def test_template_copies_renames_installs_and_passes_its_own_tests(tmp_path):
    """Follow the template README's "make it yours" steps literally, then install and test the copy."""
    repo = tmp_path / "repo"
    shutil.copytree(TEMPLATE, repo / "plugins" / "_template", ignore=shutil.ignore_patterns("*.egg-info", "build"))
    readme = (TEMPLATE / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    steps = block.split("pip install")[0]  # the copy-and-rename steps; installing is done below, privately
    subprocess.run(["bash", "-euo", "pipefail", "-c", steps], cwd=repo, check=True)
    plugin = repo / "plugins" / "rlm-sink-acme"
    assert not list(plugin.rglob("*template*")), "every template name was replaced"

    target = tmp_path / "site"
    pip_install_target(target, plugin)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(PYTHONPATH=str(target), RLM_STRICT_PLUGINS="1", RLM_PLUGINS="rlm-sink-acme")
    listing = subprocess.run([RLM_SCRIPT, "plugins", "list", "--json"], capture_output=True, text=True, env=env)
    assert listing.returncode == 0, listing.stderr
    (entry,) = [e for e in json.loads(listing.stdout) if e["status"] != "disabled"]  # other plugins: not selected
    assert entry["name"] == "rlm-sink-acme" and entry["status"] == "ok"
    assert entry["provides"] == {"benchmark": ["sink-acme-qa"], "check": ["sink-acme-output"], "command": ["sink-acme"],
                                 "environment": ["sink-acme-lines"], "framework": ["sink-acme-agent"],
                                 "provider": ["sink-acme-ollama"], "sink": ["sink-acme-csv"]}
    info = subprocess.run([RLM_SCRIPT, "sink-acme", "info"], capture_output=True, text=True, env=env)
    assert info.stdout.startswith("plugin=rlm-sink-acme version=0.1.0 host=")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(plugin), "tests"],
        cwd=plugin, capture_output=True, text=True, env=env,
    )
    assert tests.returncode == 0, tests.stdout[-2000:]
    # its own tests and the contract suites of its six kinds; the sink contract's content-switch checks skip (the
    # template's sink writes a file on this machine: nothing leaves it)
    assert "61 passed, 4 skipped" in tests.stdout
