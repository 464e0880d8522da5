"""Installable the way users install it: every distribution builds a wheel and an sdist that pass `twine check`,
and rlm-host plus a plugin install from a wheelhouse into a fresh virtual environment (no editable install, no
repository on the path) where `rlm plugins doctor` and a scripted `rlm run` work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import REPO

PROJECTS = [REPO] + sorted(p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file()
                           and not p.name.startswith("_"))


def run(*command: str | Path, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, command))}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name if p != REPO else "rlm-host")
def test_metadata_is_complete(project):
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0" and (project / "LICENSE").is_file()  # an SPDX expression, its text
    assert meta["readme"] == "README.md" and meta["requires-python"] == ">=3.11" and meta["description"]
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in meta["classifiers"])
    unbounded = [d for d in meta["dependencies"] if not any(op in d for op in (">=", "==", "~="))]
    assert not unbounded, f"dependencies without a lower bound: {unbounded}"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """Wheels and sdists of every distribution, built as a release would build them."""
    house = tmp_path_factory.mktemp("wheelhouse")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:  # one build per core: ≈ half the time on two
        list(pool.map(lambda project: run(sys.executable, "-m", "build", "--no-isolation", "--outdir", house, project),
                      PROJECTS))
    return house


@pytest.mark.slow
def test_every_distribution_builds_and_passes_twine_check(wheelhouse):
    names = {tomllib.loads((p / "pyproject.toml").read_text())["project"]["name"].replace("-", "_") for p in PROJECTS}
    built = {f.name.split("-")[0] for f in wheelhouse.iterdir()}
    assert built == names
    assert len(list(wheelhouse.glob("*.whl"))) == len(list(wheelhouse.glob("*.tar.gz"))) == len(PROJECTS)
    result = run(sys.executable, "-m", "twine", "check", "--strict", *sorted(wheelhouse.iterdir()))
    assert result.stdout.count("PASSED") == 2 * len(PROJECTS)


@pytest.mark.slow
def test_host_and_a_plugin_install_from_the_wheelhouse_and_run(wheelhouse, tmp_path):
    # the third-party dependencies join the wheelhouse (pip's cache makes this quick), then the install is offline
    ours = [next(wheelhouse.glob(f"{name}-*.whl")) for name in ("rlm_host", "rlm_sandbox_monty")]
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", wheelhouse, *ours)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index", "--find-links", wheelhouse,
        "rlm-host", "rlm-sandbox-monty")
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    where = run(venv / "bin" / "python", "-c",
                "import rlm_host, rlm_sandbox_monty as m; print(rlm_host.__file__, m.__file__)",
                env=env, cwd=work).stdout
    assert str(REPO) not in where and str(venv) in where  # installed files, not the repository
    doctor = json.loads(run(venv / "bin" / "rlm", "plugins", "doctor", "--json", env=env, cwd=work).stdout)
    assert doctor["ok"] and {(c["kind"], c["name"], c["plugin"]) for c in doctor["checks"] if c["ok"]} >= {
        ("sandbox", "monty", "rlm-sandbox-monty"), ("environment", "pure_rlm", "rlm-host")}
    (work / "notes.txt").write_text("alpha beta gamma\n" * 100)
    (work / "script.json").write_text(json.dumps(["```repl\nn = len(context.split())\nprint(n)\n```", "FINAL_VAR(n)"]))
    answer = run(venv / "bin" / "rlm", "run", "How many words?", "--context", "notes.txt", "--model",
                 "scripted:script.json",
                 "--json", env=env, cwd=work)
    result = json.loads(answer.stdout)
    assert result["final_response"] == "300" and result["sandbox"] == "monty" and result["completed"]
    assert os.path.exists(work / result["trajectory_path"])
