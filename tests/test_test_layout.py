"""How the repository's tests are imported: a copy of the plugin template collects beside the host's tests (the
template README's ``cp -r plugins/_template plugins/rlm-sink-acme`` leaves two ``tests/test_components.py``), and
what test modules import from one another is on pytest's ``pythonpath``, once.

pytest runs with ``--import-mode=importlib`` (the root pyproject.toml): each test module is imported under a name
made from its path, so same-named test files in two folders do not clash, and no test folder is put on sys.path —
the folders whose modules other tests import (``support``, ``harness_support``…) are listed in ``pythonpath``."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from support import REPO, TEMPLATE

PYTEST = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
#: Every folder of test modules: the host's and each plugin's (the template's is copied, never collected here).
TEST_ROOTS = [REPO / "tests"] + sorted(p / "tests" for p in (REPO / "plugins").iterdir()
                                       if (p / "tests").is_dir() and not p.name.startswith("_"))


def modules_of(root: Path) -> dict[str, Path]:
    """The top-level modules a folder gives when it is on sys.path: its .py files and its packages."""
    found = {p.stem: p for p in root.glob("*.py") if p.stem != "conftest"}
    found.update({p.name: p for p in root.iterdir() if (p / "__init__.py").is_file()})
    return found


def imported_names(path: Path) -> set[str]:
    """The top-level names of the absolute imports of a Python file."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def files_of_tests() -> list[Path]:
    """The Python files of every test folder (not the test-only plugin distributions under tests/plugins)."""
    return [path for root in TEST_ROOTS for path in sorted(root.rglob("*.py"))
            if not path.is_relative_to(REPO / "tests" / "plugins")]


def test_pytest_imports_test_modules_by_path():
    assert "--import-mode=importlib" in PYTEST["addopts"].split()


def test_no_test_imports_from_conftest():
    """pytest imports each conftest.py under a name of its own: what tests share is in tests/support."""
    offenders = [str(path.relative_to(REPO)) for path in files_of_tests() if "conftest" in imported_names(path)]
    assert not offenders, f"import these names from `support` (tests/support), not conftest: {offenders}"


def test_the_folders_whose_modules_tests_import_are_on_pythonpath_once():
    listed = [REPO / folder for folder in PYTEST["pythonpath"]]
    assert all(folder.is_dir() for folder in listed), "every pythonpath folder exists"
    offered = {root: modules_of(root) for root in TEST_ROOTS}
    needed = {}  # folder → a test file that imports one of its modules
    for path in files_of_tests():
        for name in imported_names(path):
            for root, modules in offered.items():
                if name in modules:
                    needed.setdefault(root, f"{path.relative_to(REPO)} imports {name}")
    missing = {str(root.relative_to(REPO)): why for root, why in needed.items() if root not in listed}
    assert not missing, f"add these folders to pythonpath in the root pyproject.toml: {missing}"
    owners: dict[str, list[str]] = {}
    for folder in listed:
        for name in modules_of(folder):
            owners.setdefault(name, []).append(str(folder.relative_to(REPO)))
    clashes = {name: folders for name, folders in owners.items() if len(folders) > 1}
    assert not clashes, f"one module name, several pythonpath folders (rename one): {clashes}"
    installed = set(metadata.packages_distributions()) | set(sys.stdlib_module_names)
    shadowing = sorted(set(owners) & installed)
    assert not shadowing, f"test modules named like an installed or standard module: {shadowing}"


def test_a_copy_of_the_template_collects_beside_the_hosts_tests(tmp_path):
    """The template README's copy-and-rename steps, in a tree laid out as this repository (its pytest settings,
    tests/conftest.py and tests/support, a host test file of each name the template's tests have): the whole
    tree collects. With pytest's default import mode the same tree fails with "import file mismatch", the
    trap the importlib mode removes."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(REPO / "pyproject.toml", repo / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(REPO / "tests" / "support", repo / "tests" / "support", ignore=ignore)
    shutil.copy(REPO / "tests" / "conftest.py", repo / "tests" / "conftest.py")
    (repo / "tests" / "plugins").mkdir()  # the test-only distributions: none needed to collect
    shutil.copytree(TEMPLATE, repo / "plugins" / "_template", ignore=ignore)
    names = sorted(p.name for p in (TEMPLATE / "tests").glob("test_*.py"))
    for name in names:  # the host's file of that name, else the template's own: a same-named file elsewhere
        shutil.copy(REPO / "tests" / name if (REPO / "tests" / name).is_file() else TEMPLATE / "tests" / name,
                    repo / "tests" / name)
    block = re.search(r"```bash\n(.*?)```", (TEMPLATE / "README.md").read_text(), re.S).group(1)
    steps = block.split("pip install")[0]  # cp -r, then the renames; installing is not needed to collect
    assert steps.startswith("cp -r plugins/_template plugins/rlm-sink-acme")
    subprocess.run(["bash", "-euo", "pipefail", "-c", steps], cwd=repo, check=True)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "PYTEST_"))}

    def collect(*options: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options]
        return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=300)

    collected = collect()
    output = collected.stdout + collected.stderr
    assert collected.returncode == 0 and "import file mismatch" not in output, output[-3000:]
    for name in names:
        assert f"tests/{name}::" in collected.stdout and f"plugins/rlm-sink-acme/tests/{name}::" in collected.stdout

    trap = collect("--import-mode=prepend")  # the command line's mode wins over addopts'
    assert trap.returncode != 0 and "import file mismatch" in trap.stdout + trap.stderr, trap.stdout[-3000:]
