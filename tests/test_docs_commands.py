"""The docs check: every ``rlm …`` command of README.md, the docs site (docs/**/*.md) and the plugin READMEs (```bash blocks, ``$ rlm …`` lines
of sessions), in an isolated HOME and working directory with every installed plugin and no API key.

For each command: ``rlm <its sub-command> --help`` must succeed and list every ``--flag`` the page uses with it;
the commands in ``RUN`` (no network, Docker, key or long model run) also run as printed, with the exit code the
page gives. A command that is not a synopsis and not in ``RUN`` must match ``SKIP``, which says why it cannot run
here: a new command in a README must be classified."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("plugins/*/README.md"))]
RLM = str(Path(sys.executable).with_name("rlm"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
GLOBAL_FLAGS = ("--version", "--config", "--debug", "--verbose", "--log-json", "--trust-config", "--help")

#: commands run as printed -> the exit codes the page allows
RUN = {
    "rlm --version": {0},
    "rlm plugins list": {0},
    "rlm config show": {0},
    "rlm models list": {0},
    "rlm runs list": {0},
    "rlm runs active": {0},  # "no active runs"
    "rlm frameworks list": {0},
    "rlm bench list": {0},
    "rlm plugins doctor": {0, 1},  # "exit 1 if anything is not ready" (Docker is not installed here)
    "rlm plugins doctor --sink langfuse": {1},  # the page shows its FAIL line: no keys here
    "rlm plugins doctor --sink langsmith": {1},
    "rlm plugins doctor --sink logfire": {1},
    "rlm mcp serve --transport http --host 0.0.0.0": {2},  # the page shows the refusal (bad input: exit 2)
    "rlm leaderboard --metric accuracy": {0},  # an empty home: "no saved benchmarks"
    "rlm traces generate harness.jsonl": {0},  # the traces README session starts with it
    "rlm harness tools": {0},  # the built-in tools (no MCP server configured here)
}

#: (pattern, why the command is not run as printed here); its --help and flags are still checked
SKIP = [
    (r"--model (openai|anthropic|gemini):|--model …|--model auto|--base-url", "a hosted model: network and an API key"),
    (r"--model llamacpp|llamacpp_server|--sub-model llamacpp", "the local model: a long model run"),
    (r"--sandbox docker|sandbox build-image|--env dspy|dspy_quick", "Docker (an engine, an image build)"),
    (r"--sink (otel|mlflow|langfuse|langsmith|logfire)|plugins doctor --sink (mlflow|otel)|RLM_SINK__",
     "an observability backend (a server, or the page's sink settings)"),
    (r"--framework (google-adk|adk-rlm|deepagents|pydantic-ai|dspy-rlm|dspy)\b", "a framework run with a real or "
     "scripted model over the page's files"),
    (r"^rlm mcp serve\b", "a server that runs until stopped (tests/test_docs_terms.py checks its banner)"),
    (r"^rlm tui\b", "a full-screen terminal app (rlm-tui's own tests drive it through Pilot, tmux and a browser)"),
    (r"^rlm harness run\b|^rlm harness tools --mcp-config", "a model run in the page's project folder, or the page's "
     "MCP servers (npx: the npm registry)"),
    (r"scripted:|replay:|--context|--resume|run_…|run_2026|traces (index|query|search|overview)|--env traces",
     "a session step over files or runs the page made earlier"),
    (r"^rlm bench (run|compare|sweep|sweep-report)|^rlm leaderboard$|^rlm runs (show|export|cancel)|^rlm run \"…\"|^rlm run --sandbox monty",
     "needs a model run or saved benchmarks/runs (the page's session)"),
]


def _commands(text: str) -> list[str]:
    found = []
    for lang, body in FENCE.findall(text):
        if lang not in ("bash", "", "text", "console"):
            continue
        lines = body.replace("\\\n", " ").splitlines()
        if lang == "bash":
            lines = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith(("#", "["))]
        else:
            lines = [ln[2:].strip() for ln in lines if ln.startswith("$ ")]
        for line in lines:
            code = line.split("  #")[0].split(" # ")[0].strip()
            for part in re.split(r"\s+(?:&&|\|)\s+|;\s+", code):  # `a|b` inside a synopsis is not a pipe
                words = part.split()
                while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                    words.pop(0)  # VAR=value prefixes
                if words and words[0] == "rlm":
                    found.append(re.sub(r"\s+>.*$", "", " ".join(words)))
    return found


def documented() -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for page in PAGES:
        for command in _commands(page.read_text(encoding="utf-8")):
            seen.setdefault(command, str(page.relative_to(ROOT)))
    return sorted((where, command) for command, where in seen.items())


def _env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith("RLM_") and not re.search(r"(_API_KEY|_TOKEN|_SECRET|BASE_URL)$", k)}  # fmt: skip
    return {**keep, "HOME": str(home), "COLUMNS": "120", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, Path]:
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    return home, work


@lru_cache(maxsize=None)
def _help(path: tuple[str, ...], home: str, work: str) -> tuple[int, str]:
    done = subprocess.run([RLM, *path, "--help"], cwd=work, env=_env(Path(home)), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def help_flags(help_text: str) -> set[str]:
    """The long options a ``--help`` text offers: those in the option column of its ``Options:`` lines (``  -c,
    --context PATH``, ``  --strict / --no-strict``), never a flag the help's prose merely mentions, and never a
    prefix of a longer one (``--max`` is not offered by ``--max-steps``)."""
    flags: set[str] = set()
    for line in help_text.splitlines():
        column = re.match(r"^ {2,4}(-[^ ].*?)(?: {2,}|$)", line)
        if column:
            flags.update(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?![\w-])", column.group(1)))
    return flags


def test_help_flags_are_the_option_column_only():
    """The check above must fail for a flag the page invents: a prefix of a real option, or one named in prose."""
    text = ("Options:\n  -c, --context PATH    A file (or repeat --context; see --also-in-prose).\n"
            "  --strict / --no-strict  Refuse a run.\n  --max-steps INTEGER\n                        Root turns.\n")
    assert help_flags(text) == {"--context", "--strict", "--no-strict", "--max-steps"}


def _subcommands(help_text: str) -> set[str]:
    part = help_text.split("Commands:", 1)
    return {m.group(1) for m in re.finditer(r"^  (\S+)", part[1], re.M)} if len(part) == 2 else set()


def _command_path(words: list[str], home: Path, work: Path) -> tuple[str, ...]:
    path: tuple[str, ...] = ()
    args = [w for w in words[1:] if not w.startswith("-")]
    for word in args:
        code, text = _help(path, str(home), str(work))
        if word not in _subcommands(text):
            break
        path += (word,)
    return path


def _synopsis(command: str) -> bool:
    return bool(re.search(r"[\[…]|\b[A-Z][A-Z_]{1,}\b(?!=)", command.replace("…", "[")))


@pytest.mark.slow
@pytest.mark.parametrize("where,command", documented(), ids=[c for _, c in documented()])
def test_documented_command(where, command, place):
    home, work = place
    words = shlex.split(command.replace("…", "")) if command.count('"') % 2 == 0 else command.split()
    path = _command_path(words, home, work)
    code, text = _help(path, str(home), str(work))
    assert code == 0, f"{where}: `rlm {' '.join(path)} --help` failed: {text}"
    root_help = _help((), str(home), str(work))[1]
    offered, global_offered = help_flags(text), help_flags(root_help)
    for flag in sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", command))):
        assert flag in offered or (flag in GLOBAL_FLAGS and flag in global_offered), \
            f"{where}: {command}: {flag} is not an option of `rlm {' '.join(path)}`"
    bare = re.sub(r"\s*\[[^\]]*\]", "", command).strip()  # a synopsis without its optional parts
    runnable = command if command in RUN else bare if bare in RUN else None
    if runnable:
        done = subprocess.run([RLM, *runnable.split()[1:]], cwd=work, env=_env(home), capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode in RUN[runnable], f"{where}: {runnable} exited {done.returncode}: {done.stderr[-600:]}"
        assert "Traceback" not in done.stderr
        return
    if _synopsis(command):
        return  # a synopsis: its help and flags are what can be checked
    reasons = [why for pattern, why in SKIP if re.search(pattern, command)]
    assert reasons, f"{where}: classify `{command}`: add it to RUN (runnable here) or to SKIP (with the reason)"
