"""The architecture the README promises, checked on the source: one small public root and a documented kit per
kind (``rlm_host.sdk.*``), one table of kinds, and imports that only run downwards (CLI → runner → environment →
sandbox / model)."""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

import rlm_host
import rlm_host.sdk
from support import REPO
from rlm_host import hookspecs, testing
from rlm_host.components import KINDS
from rlm_host.config.schema import Settings
from rlm_host.plugins.host import PluginHost
from rlm_host.trajectory.store import RUNS_DIR

HOST = REPO / "rlm_host"
PLUGIN_SOURCES = sorted((REPO / "plugins").glob("*/src/**/*.py"))
PLUGIN_TESTS = sorted((REPO / "plugins").glob("*/tests/**/*.py"))
TEST_PLUGINS = sorted((REPO / "tests" / "plugins").glob("*/src/**/*.py"))
KITS = ["models", "sandbox", "context", "environments", "frameworks", "tools", "observability", "embedding",
        "commands"]
#: Plugin files that still use the root's deprecated names (resolved by ``rlm_host.__getattr__``, in no
#: ``__all__``): being rewritten by their owners. Strict: a file that is fixed must leave this list.
STILL_ON_OLD_NAMES: set[str] = set()

#: Lower layers never import higher ones (imports under ``if TYPE_CHECKING:`` are for type checkers only).
LAYERS: list[tuple[str, int]] = [
    ("rlm_host.errors", 0), ("rlm_host.components", 0), ("rlm_host.hookspecs", 0), ("rlm_host.text", 0),
    ("rlm_host.results", 0), ("rlm_host.logs", 0), ("rlm_host.tokens", 0), ("rlm_host.signals", 0),
    ("rlm_host.redact", 0), ("rlm_host.price_keys", 0), ("rlm_host.bounded", 0), ("rlm_host.approvals", 0),
    ("rlm_host.threads", 0), ("rlm_host.process_state", 0),
    ("rlm_host.sandbox.fork_server", 0),  # the host's one fork server: sandbox workers and run_bounded's children
    ("rlm_host.events", 1), ("rlm_host.event_types", 1), ("rlm_host.context", 1), ("rlm_host.config", 1),
    ("rlm_host.models.protocol", 2), ("rlm_host.sandbox.protocol", 2),
    ("rlm_host.environments.protocol", 3), ("rlm_host.environments.kit", 3), ("rlm_host.environments.repl", 3),
    ("rlm_host.environments.repl_tools", 3), ("rlm_host.environments.output_type", 3),
    ("rlm_host.environments.repl_format", 3), ("rlm_host.environments.case_folders", 3), ("rlm_host.tools", 3),
    ("rlm_host.services", 3),
    ("rlm_host.models", 3), ("rlm_host.sandbox", 3), ("rlm_host.trajectory", 3), ("rlm_host.observability", 3),
    ("rlm_host.environments", 4), ("rlm_host.frameworks", 4),
    ("rlm_host.engine", 5), ("rlm_host.plugins", 5),
    ("rlm_host.default_plugins", 6), ("rlm_host.checks", 6), ("rlm_host.api", 6),
    ("rlm_host.cli", 7), ("rlm_host.testing", 7), ("rlm_host.__main__", 7),
    ("rlm_host.sdk", 7),  # the kits re-export from every layer (the embedding kit: the run flags of rlm run)
]


def layer(module: str) -> int | None:
    best = max((prefix for prefix, _ in LAYERS if module == prefix or module.startswith(prefix + ".")),
               key=len, default=None)
    return dict(LAYERS)[best] if best else None


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, imported names, line) of every import outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text())
    skipped = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
               and "TYPE_CHECKING" in ast.unparse(block.test) for node in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names], node.lineno))
    return found


def test_host_imports_only_run_downwards():
    upward = []
    for path in sorted(HOST.rglob("*.py")):
        here = module_name(path)
        if here == "rlm_host":
            continue  # the public face re-exports from every layer, lazily
        mine = layer(here)
        if mine is None:
            upward.append(f"{here} is in no layer of LAYERS")
            continue
        for module, names, line in imports(path):
            targets = [module] + [f"{module}.{name}" for name in names]
            theirs = max((layer(t) for t in targets if t.startswith("rlm_host.") and layer(t) is not None),
                         default=None)
            if theirs is not None and theirs > mine:
                upward.append(f"{path.relative_to(REPO)}:{line}: {here} (layer {mine}) imports {module} ({theirs})")
    assert not upward, "\n".join(upward)


def plugin_names() -> set[str]:
    """Every name (and alias) a plugin distribution registers, of every kind, from the plugins' own records (the
    host's default plugins excluded), with the plugins' distribution and package names."""
    host = PluginHost(environ={}).collect_all()
    names = {name for dist in host.distributions if not dist.builtin for records in dist.provides.values()
             for name in records}
    for kind in KINDS:
        for record, owner in host.registry(kind.name).items():
            if owner != "rlm-host":
                names.update(record.names)
    plugins = [p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file()]
    names |= {p.name for p in plugins} | {s.name for p in plugins for s in p.glob("src/*") if s.is_dir()}
    # the host's own vocabulary, which a plugin may also take as a name (rlm-sandbox-docker's `rlm sandbox`
    # command, rlm-runs' `json` exporter and `rlm runs`): the kinds, the config sections ([sandbox.docker]) and
    # their hooks, the names the host registers itself (its `json` context loader), and the run home's folders
    own = {name for kind in KINDS for record, owner in host.registry(kind.name).items() if owner == "rlm-host"
           for name in record.names}
    return names - {word for kind in KINDS for word in (kind.name, kind.plural)} - own - {RUNS_DIR}


def test_the_host_names_no_plugin():
    """No name a plugin registers (provider, sandbox, sink, environment, framework, pack, loader, exporter,
    command, check, or an alias), nor a plugin's distribution or package, as a string or an import in the host's
    code: the host learns what it needs from the records (``ProviderSpec.price_id``, ``local``…). Everywhere
    in the host, ``rlm_host/testing`` included: a plugin's test fixtures (a Docker engine, llama.cpp's server) are
    in that plugin's own ``testing`` module. Comments and docstrings may name plugins."""
    words = plugin_names()
    assert {"anthropic", "docker", "ollama", "otel", "rlms"} <= words, "the installed plugins' names are read"
    mentions = []
    for path in sorted(HOST.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            found = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                found = node.value if node.value in words else None
            elif isinstance(node, ast.Import):
                found = next((a.name for a in node.names if a.name.split(".")[0] in words), None)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found = node.module if node.module.split(".")[0] in words else None
            if found:
                mentions.append(f"{path.relative_to(REPO)}:{node.lineno}: {found!r}")
    assert not mentions, "\n".join(sorted(set(mentions)))


def public_faces(tests: bool) -> dict[str, set[str]]:
    """The modules a plugin may import, each with the names it may take from it (its ``__all__``)."""
    faces = {"rlm_host": set(rlm_host.__all__)}
    for kit in KITS:
        faces[f"rlm_host.sdk.{kit}"] = set(importlib.import_module(f"rlm_host.sdk.{kit}").__all__)
    if tests:
        faces["rlm_host.testing"] = set(testing.__all__)
    return faces


def faces_used(path: Path) -> list[tuple[str, list[str], int]]:
    """(module, names, line) of every ``rlm_host`` import, and of every ``alias.name`` read on a module imported
    whole (``import rlm_host``, ``import rlm_host.sdk.frameworks as protocol``)."""
    used = [(module, names, line) for module, names, line in imports(path)
            if module == "rlm_host" or module.startswith("rlm_host.")]
    tree = ast.parse(path.read_text())
    aliases = {alias.asname or alias.name: alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names
               if alias.name.startswith("rlm_host") and (alias.asname or "." not in alias.name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            module = aliases[node.value.id]
            if not (module == "rlm_host" and node.attr in ("sdk", "testing")):
                used.append((module, [node.attr], node.lineno))
    return used


def plugin_id(path: Path) -> str:
    return str(path.relative_to(REPO / "plugins" if path.is_relative_to(REPO / "plugins") else REPO))


@pytest.mark.parametrize("path", [
    pytest.param(path, marks=pytest.mark.xfail(strict=True, reason="still on the root's deprecated names"))
    if plugin_id(path) in STILL_ON_OLD_NAMES else path for path in PLUGIN_SOURCES + PLUGIN_TESTS + TEST_PLUGINS
], ids=plugin_id)
def test_plugins_import_only_the_public_faces(path):
    """A plugin imports ``rlm_host``, the kits ``rlm_host.sdk.*`` and (its tests) ``rlm_host.testing``, and only
    the names in their ``__all__``; the root's deprecated names still resolve, for plugins not yet rewritten."""
    allowed = public_faces(tests=path in PLUGIN_TESTS)
    for module, names, line in faces_used(path):
        assert module in allowed, f"line {line}: imports {module}; a plugin uses only {sorted(allowed)}"
        unknown = set(names) - allowed[module]
        assert not unknown, f"line {line}: {sorted(unknown)} not in {module}.__all__"


def test_every_public_name_resolves_and_the_face_stays_cheap():
    for name in rlm_host.__all__:
        assert getattr(rlm_host, name) is not None, name
    for name in testing.__all__:
        assert getattr(testing, name) is not None, name
    probe = "import sys, rlm_host; print(sorted(m for m in ('pydantic', 'typer', 'structlog') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", "importing rlm_host must not import pydantic, typer or structlog"


def test_the_root_stays_small_and_the_kits_resolve():
    """About forty names in the root (llm has 36); each kit documents who uses it and the plugin to copy, and
    every name of its ``__all__`` resolves. The root's deprecated names are in no ``__all__`` and still work."""
    assert len(rlm_host.__all__) <= 40, f"{len(rlm_host.__all__)} names in rlm_host.__all__"
    assert len(set(rlm_host.__all__)) == len(rlm_host.__all__)
    assert rlm_host.sdk.__all__ == []
    for kit in KITS:
        module = importlib.import_module(f"rlm_host.sdk.{kit}")
        assert module.__doc__ and "plugins/" in module.__doc__, f"rlm_host.sdk.{kit}: who uses it, what to copy"
        assert len(set(module.__all__)) == len(module.__all__), kit
        for name in module.__all__:
            assert getattr(module, name) is not None, f"rlm_host.sdk.{kit}.{name}"
    for name, kit in rlm_host._MOVED.items():
        assert name not in rlm_host.__all__ and name not in dir(rlm_host)
        with pytest.warns(DeprecationWarning, match=name):
            value = rlm_host.__getattr__(name)
        assert value is getattr(importlib.import_module(kit), rlm_host._RENAMED.get(name, name))
    frameworks = importlib.import_module("rlm_host.sdk.frameworks")
    tools = importlib.import_module("rlm_host.sdk.tools")
    for name in frameworks.MOVED_TO_TOOLS:  # tool calling as text left the frameworks kit: still there for a release
        assert name in tools.__all__ and name not in frameworks.__all__
        with pytest.warns(DeprecationWarning, match="rlm_host.sdk.tools"):
            assert getattr(frameworks, name) is getattr(tools, name)


def test_no_kit_imports_a_concrete_environment():
    """The kits (and the framework and environment kits under them) never load pure_rlm, an installed
    environment plugin or the default plugins: a plugin builds on the kits, and reaches a concrete environment only
    through its context."""
    probe = ("import importlib, sys\n"
             f"for kit in {KITS!r}: importlib.import_module('rlm_host.sdk.' + kit)\n"
             "print(sorted(m for m in sys.modules if m.startswith(('rlm_host.environments.pure_rlm', "
             "'rlm_env_', 'rlm_host.default_plugins'))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_one_table_of_kinds():
    hook_functions = {name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("rlm_")}
    assert hook_functions == {kind.hook for kind in KINDS}
    for kind in KINDS:
        method = getattr(PluginHost, kind.plural)
        assert inspect.signature(method).return_annotation.endswith(f"Registry[{kind.record.__name__}]")
        assert kind.record.kind == kind.name
        assert (kind.name in Settings.model_fields) == kind.configurable
    assert importlib.import_module("rlm_host.default_plugins")


#: ``…Adapter`` identifiers that are not ours: DSPy's adapters (a signature → a prompt), pydantic's ``TypeAdapter``
#: and, in the protocol module only, the deprecated old name of ``Framework``.
DSPY_ADAPTERS = {"Adapter", "ChatAdapter", "JSONAdapter", "XMLAdapter", "TwoStepAdapter", "BAMLAdapter", "TypeAdapter"}
DEPRECATED_ADAPTER = ("rlm_host/frameworks/protocol.py", "FrameworkAdapter")


def test_one_word_for_frameworks():
    """The kind is a *framework* everywhere (``--framework``, ``FrameworkSpec``, ``Framework``): no identifier of
    the host or a plugin's source ends in ``Adapter`` but DSPy's, and no host string says "framework adapter".
    (``rlm-adapter-<name>`` stays the distributions' name, and ``rlm_adapter_<name>`` their modules'.)"""
    found = []
    for path in sorted(HOST.rglob("*.py")) + PLUGIN_SOURCES:
        where = str(path.relative_to(REPO))
        source = path.read_text()
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if (token.type == tokenize.NAME and re.fullmatch(r"\w*Adapter", token.string)
                    and token.string not in DSPY_ADAPTERS and (where, token.string) != DEPRECATED_ADAPTER):
                found.append(f"{where}:{token.start[0]}: {token.string}")
        if path.is_relative_to(HOST):
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and re.search(r"framework\s+adapter", node.value, re.IGNORECASE):
                    found.append(f"{where}:{node.lineno}: says 'framework adapter'")
    assert not found, "\n".join(found)
