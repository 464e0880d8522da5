"""Every distribution of this repository declares what it imports.

A module a distribution imports but does not declare works here only because some other package brought it
(PyYAML came with the llama.cpp plugin's dependencies; rich comes with typer): installed alone, the distribution
dies with ``ModuleNotFoundError``. The check reads every import statement of a distribution's code — the lazy
ones inside functions too, which an import test would miss — and wants each third-party module to come from a
requirement the distribution itself names (directly: a dependency of a dependency may go away). Imports inside
``try: … except ImportError`` are optional by construction and pass.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest

from support import REPO

#: What rlm-host promises every plugin as part of its SDK: settings models are pydantic models and commands are
#: typer apps, so a plugin may import both through its rlm-host requirement.
HOST_CONTRACT = {"pydantic", "typer"}
#: (project folder, source folders, extras whose requirements a source folder may also use)
#: Code that only ever runs inside a sandbox, as data (coding cases' starters, solutions and hidden tests): what it
#: imports is the sandbox image's business (``sandbox_packages``), not the distribution's.
SANDBOX_CODE = [REPO / "plugins" / "rlm-env-dspy" / "src" / "rlm_env_dspy" / "cases",
                REPO / "plugins" / "rlm-env-dspy" / "src" / "rlm_env_dspy" / "sandbox_analysis.py",
                REPO / "plugins" / "rlm-harness" / "src" / "rlm_harness" / "cases"]


def _extra_modules(folder: Path) -> dict[Path, tuple[str, ...]]:
    """A plugin's modules that may use one of its extras: its public ``testing`` module the ``test`` extra (sample
    files, test servers), and a module named after an extra (``sweep/ray_executor.py``, ``*_ray.py``: ``ray``) that
    extra."""
    found: dict[Path, tuple[str, ...]] = {path: ("test",) for path in (folder / "src").glob("*/testing.py")}
    extras = tomllib.loads((folder / "pyproject.toml").read_text()).get("project", {}).get("optional-dependencies", {})
    for extra in extras:
        for path in {*(folder / "src").rglob(f"{extra}_*.py"), *(folder / "src").rglob(f"*_{extra}.py")}:
            found[path] = (*found.get(path, ()), extra)
    return found


DISTRIBUTIONS = [(REPO, [REPO / "rlm_host"], {REPO / "rlm_host" / "testing": ("test",)})] + [
    (folder, [folder / "src"], _extra_modules(folder))
    for folder in sorted((REPO / "plugins").iterdir()) if (folder / "src").is_dir()
]


def requirement_names(requirements: list[str]) -> set[str]:
    return {canonical(re.match(r"[A-Za-z0-9_.\-]+", r.strip()).group(0)) for r in requirements}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def providers_of_modules() -> dict[str, set[str]]:
    """Top-level import name → the installed distributions providing it."""
    return {module: {canonical(d) for d in dists} for module, dists in metadata.packages_distributions().items()}


def optional_import_nodes(tree: ast.AST) -> set[int]:
    """The import statements inside ``try`` blocks that handle ImportError (or ModuleNotFoundError)."""
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            handler.type is not None and re.search(r"\b(ImportError|ModuleNotFoundError)\b", ast.unparse(handler.type))
            for handler in node.handlers
        ):
            guarded |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return guarded


def third_party_imports(path: Path, own: set[str]) -> dict[str, int]:
    """Top-level module → first line, for every non-optional import of a module outside stdlib and ``own``."""
    tree = ast.parse(path.read_text())
    optional = optional_import_nodes(tree)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in own and top != "__future__":
                found.setdefault(top, node.lineno)
    return found


@pytest.mark.parametrize(("project", "sources", "extras"), DISTRIBUTIONS, ids=lambda v: getattr(v, "name", None))
def test_every_import_comes_from_a_declared_requirement(project, sources, extras):
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    declared = requirement_names(meta.get("dependencies", []))
    optional = meta.get("optional-dependencies", {})
    own = {p.name for source in sources for p in source.iterdir() if p.is_dir() or p.suffix == ".py"}
    own |= {"rlm_host"}  # every plugin requires the host (checked below) and may import it
    assert project == REPO or "rlm-host" in declared, "a plugin declares rlm-host"
    if project != REPO:
        declared |= HOST_CONTRACT
    undeclared = []
    for source in sources:
        for path in sorted(source.rglob("*.py")):
            if any(code == path or code in path.parents for code in SANDBOX_CODE):
                continue
            allowed = set(declared)
            for folder, names in extras.items():
                if folder == path or folder in path.parents:
                    allowed |= {n for extra in names for n in requirement_names(optional.get(extra, []))}
            for module, line in third_party_imports(path, own).items():
                providers = providers_of_modules().get(module, set())
                if not providers & allowed:
                    undeclared.append(f"{path.relative_to(project)}:{line}: imports {module} "
                                      f"(from {', '.join(sorted(providers)) or 'nothing installed'})")
    assert not undeclared, "undeclared imports:\n" + "\n".join(undeclared)
