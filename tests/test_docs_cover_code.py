"""The docs cover the code, as datasette's ``tests/test_docs.py`` checks that its plugin hooks and settings are
documented: a public name, a hook, a host module, a plugin distribution or a run option added to the code without
a word in the docs fails here, naming what is missing and the page it belongs on.

- every name of a kit's ``__all__`` (``rlm_host.sdk.*``) is a code span in that kit's section of
  ``docs/plugins/sdk.md``, and every name of ``rlm_host.testing.__all__`` one in ``docs/plugins/testing.md``;
- every registration hook (``rlm_host/hookspecs.py``) has its row, with its record, in the table of kinds of
  ``docs/plugins/index.md``;
- every package and top-level module of ``rlm_host`` is an entry of the tree in ``docs/architecture.md``, and
  every plugin distribution under ``plugins/`` is named on that page;
- every run option (a ``RunSettings`` field) is in the guide (``docs/guide/*.md``), by its flag or its name.

Also here: the built wheel of rlm-host ships ``rlm_host/py.typed`` (PEP 561), and CONTRIBUTING.md's links resolve.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import rlm_host.sdk
from rlm_host import hookspecs, testing
from rlm_host.components import KINDS
from rlm_host.config.run_options import flag_of
from rlm_host.config.schema import RunSettings

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
KITS = sorted(module.name for module in pkgutil.iter_modules(rlm_host.sdk.__path__))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)

#: Names of ``rlm_host.testing`` that docs/plugins/testing.md does not describe yet. Strict: a name
#: documented there must leave this set, and no name may join it.
TESTING_NOT_YET_DOCUMENTED = {
    "ANSWER", "FINAL", "FIRST_LOOK", "LOG", "MODEL_TEXT", "OpenAIServer", "QUESTION", "RETRY", "SUB_RULES",
    "TOOL_CALL", "TOOL_ERROR", "TOOL_RESULT", "assert_a_real_model_run_ends_cleanly", "in_sandbox",
    "median_step_seconds", "openai_answer", "openai_unauthorized", "write_station_log",
}


def code_spans(text: str) -> list[str]:
    """The inline code of a Markdown text (single or double backticks; a span may wrap a line), stripped."""
    return [" ".join(m.group(2).split()) for m in re.finditer(r"(`+)(.+?)\1", FENCE.sub("", text), re.S)]


def documented(name: str, text: str) -> bool:
    """``name`` is a code span of ``text`` by itself, or called or reached into (``ProjectFiles(ctx.workdir)``,
    ``SubCalls.helpers_source()``): prose that merely contains the word does not count."""
    pattern = re.compile(rf"{re.escape(name)}(?:[(.\[].*)?")
    return any(pattern.fullmatch(span) for span in code_spans(text))


def kit_sections(page: str) -> dict[str, str]:
    """``## <kit>`` section → its text, up to the next level-2 heading."""
    parts = re.split(r"^## (.+)$", page, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2])}


def test_the_kits_are_the_sdk_modules():
    assert KITS == sorted(["models", "sandbox", "context", "environments", "frameworks", "tools", "observability",
                           "embedding", "commands"])


@pytest.mark.parametrize("kit", KITS)
def test_every_kit_name_is_documented_in_its_section(kit):
    sections = kit_sections((DOCS / "plugins" / "sdk.md").read_text())
    assert kit in sections, f"docs/plugins/sdk.md has no '## {kit}' section for rlm_host.sdk.{kit}"
    names = importlib.import_module(f"rlm_host.sdk.{kit}").__all__
    missing = [name for name in names if not documented(name, sections[kit])]
    assert not missing, f"docs/plugins/sdk.md, section '{kit}', does not document: {', '.join(missing)}"


def test_every_testing_name_is_documented():
    page = (DOCS / "plugins" / "testing.md").read_text()
    missing = {name for name in testing.__all__ if not documented(name, page)}
    assert not missing - TESTING_NOT_YET_DOCUMENTED, (
        f"docs/plugins/testing.md does not document: {', '.join(sorted(missing - TESTING_NOT_YET_DOCUMENTED))}")
    assert not TESTING_NOT_YET_DOCUMENTED - missing, (
        f"documented now (or gone): remove from TESTING_NOT_YET_DOCUMENTED: "
        f"{', '.join(sorted(TESTING_NOT_YET_DOCUMENTED - missing))}")


def test_every_hook_has_its_row_in_the_table_of_kinds():
    rows = [line for line in (DOCS / "plugins" / "index.md").read_text().splitlines() if line.startswith("|")]
    hooks = [name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("rlm_")]
    records = {kind.hook: kind.record.__name__ for kind in KINDS}
    assert hooks and set(hooks) == set(records)
    missing = []
    for hook in hooks:
        row = next((row for row in rows if documented(hook, row)), None)
        if row is None or not documented(records[hook], row):
            missing.append(f"{hook} ({records[hook]})")
    assert not missing, f"docs/plugins/index.md's table of kinds lacks a row for: {', '.join(missing)}"


def tree_entries(page: str) -> set[str]:
    """The entries directly under ``rlm_host/`` in the page's tree: the left column of its lines indented by two
    spaces (``errors.py, results.py``, ``sdk/``)."""
    tree = FENCE.search(page)
    assert tree, "docs/architecture.md has no tree of the code"
    entries = set()
    for line in tree.group(0).splitlines():
        if re.match(r"  \S", line):
            left = re.split(r"\s{2,}", line.strip())[0]
            entries |= set(re.findall(r"[\w.]+/?", left))
    return entries


def host_entries() -> list[str]:
    """``rlm_host``'s packages (``sdk/``) and top-level modules (``bounded.py``)."""
    found = []
    for path in sorted((REPO / "rlm_host").iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            found.append(path.name + "/")
        elif path.suffix == ".py":
            found.append(path.name)
    return found


def test_every_host_package_and_module_is_in_the_architecture_tree():
    entries = tree_entries((DOCS / "architecture.md").read_text())
    missing = [entry for entry in host_entries() if entry not in entries]
    assert not missing, f"docs/architecture.md's tree does not list: {', '.join(missing)}"


def test_every_plugin_distribution_is_named_in_the_architecture_page():
    page = (DOCS / "architecture.md").read_text()
    plugins = [p.name for p in sorted((REPO / "plugins").iterdir())
               if (p / "pyproject.toml").is_file() and not p.name.startswith("_")]
    missing = [name for name in plugins if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", page)]
    assert plugins and not missing, f"docs/architecture.md does not name: {', '.join(missing)}"


def test_every_run_option_is_in_the_guide():
    guide = "\n".join(page.read_text() for page in sorted((DOCS / "guide").glob("*.md")))
    missing = []
    for name in RunSettings.model_fields:
        flag = re.search(rf"(?<![\w-]){re.escape(flag_of(name))}(?![\w-])", guide)
        setting = documented(name, guide) or re.search(rf"^\s*{re.escape(name)}\s*=", guide, re.M)
        if not (flag or setting):
            missing.append(f"{name} ({flag_of(name)})")
    assert not missing, f"run options in no page of docs/guide/: {', '.join(missing)}"


def test_the_checks_see_what_is_missing():
    """Each check above fails on a page without the name: a prose mention or a longer name is not enough."""
    assert documented("ProjectFiles", "`ProjectFiles(ctx.workdir)` reads") and documented("MASK", "``MASK``")
    assert not documented("ProjectFiles", "the ProjectFiles of a run") and not documented("Tool", "`ToolCall`")
    assert "bounded.py" not in tree_entries("```\nrlm_host/\n  errors.py     ok\n    bounded.py  deeper\n```")
    assert kit_sections("## models\n`A`\n## sandbox\n`B`\n")["models"].strip() == "`A`"


def test_the_wheel_ships_py_typed(tmp_path):
    """rlm-host is typed (PEP 561): its sdist carries ``rlm_host/py.typed``, and so does the wheel built from that
    sdist, as a release builds them. From a copy of the host's sources (no plugin, nothing left in the checkout),
    in about three seconds."""
    assert (REPO / "rlm_host" / "py.typed").is_file()
    source = tmp_path / "src"
    shutil.copytree(REPO / "rlm_host", source / "rlm_host", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    out = tmp_path / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sdist = tarfile.open(next(out.glob("*.tar.gz"))).getnames()
    wheel = zipfile.ZipFile(next(out.glob("*.whl"))).namelist()
    assert any(name.endswith("/rlm_host/py.typed") for name in sdist)
    assert "rlm_host/py.typed" in wheel


def test_contributing_links_resolve():
    page = REPO / "CONTRIBUTING.md"
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))
    targets = [t for t in re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", text) if not re.match(r"^[a-z]+:", t)]
    assert targets
    broken = [t for t in targets if t.partition("#")[0] and not (REPO / t.partition("#")[0]).exists()]
    assert not broken, f"CONTRIBUTING.md links to nothing: {', '.join(broken)}"


def test_the_run_pages_help_is_rlm_run_help_as_it_is():
    """docs/guide/run.md prints `rlm run --help`: its options are the command's own, every one of them."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    page = (DOCS / "guide" / "run.md").read_text()
    block = re.search(r"```text\n(Usage: rlm run .*?)```", page, re.S)
    assert block, "docs/guide/run.md shows `rlm run --help`"
    rlm = str(Path(sys.executable).with_name("rlm"))
    real = subprocess.run([rlm, "run", "--help"], capture_output=True, text=True, env={"COLUMNS": "80",
                          "PATH": "/usr/bin:/bin", "HOME": "/tmp"}).stdout

    def options(text: str) -> list[str]:
        return re.findall(r"^  (-[-\w]+(?:, -[-\w]+)?)", text.split("Options:", 1)[1], re.M)

    assert options(block.group(1)) == options(real)
