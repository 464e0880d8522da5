"""The docs check: every ``rlm …`` command of README.md, the docs site (docs/**/*.md) and the plugin READMEs
(```bash blocks, ``$ rlm …`` lines of sessions), in an isolated HOME with every installed plugin and no API key,
each page in a working folder of its own.

For each command: ``rlm <its sub-command> --help`` must succeed and list every ``--flag`` the page uses with it;
the commands in ``RUN`` also run as printed — in page order, in the page's folder, with its session's files and
variables (``support.doc_sessions``: scripted models, the page's own files) and a ``VAR=value`` prefix the page
gives — with the exit code the page gives and, where ``says`` is set, the text it shows. A command that is not a
synopsis and not in ``RUN`` must match ``SKIP``, which says why it cannot run here (a hosted model, a Docker
engine, a server that runs until stopped, the page's own earlier runs by id): a new command must be classified."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from dataclasses import dataclass, field

import pytest

from support.doc_sessions import SESSIONS, FromPage, write_files

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("plugins/*/README.md"))]
RLM = str(Path(sys.executable).with_name("rlm"))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
#: PATH with this Python's folder first: a page's MCP server started as ``python3`` finds the ``mcp`` package
VENV_PATH = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
GLOBAL_FLAGS = ("--version", "--config", "--debug", "--verbose", "--log-json", "--trust-config", "--help")


@dataclass(frozen=True)
class Expect:
    """How a command run as printed must end: an exit code of ``codes``, ``says`` in its output (stdout and
    stderr); ``pages``: only on these pages (on another, it runs in their session); ``env``: the session's model for
    a command that names none (``RLM_RUN__MODEL``: a scripted script instead of a hosted or the embedded model);
    ``before``: the page's files this command uses, written just before it (a page that shows two ``script.json``);
    ``input``: what the page types at it."""

    codes: frozenset[int]
    says: str = ""
    pages: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict, hash=False)
    before: dict[str, Any] = field(default_factory=dict, hash=False)
    input: str = ""


def ok(*codes: int, says: str = "", pages: tuple[str, ...] = (), env: dict[str, str] | None = None,
       before: dict[str, Any] | None = None, input: str = "") -> Expect:
    return Expect(frozenset(codes or (0,)), says, pages, env or {}, before or {}, input)


#: commands run as printed -> how they must end
RUN: dict[str, Expect] = {
    "rlm --version": ok(),
    "rlm plugins list": ok(),
    "rlm config show": ok(),
    "rlm models list": ok(),
    "rlm runs list": ok(),
    "rlm runs active": ok(),  # "no active runs"
    "rlm frameworks list": ok(),
    "rlm bench list": ok(),
    "rlm plugins doctor": ok(0, 1),  # "exit 1 if anything is not ready" (Docker is not installed here)
    "rlm plugins doctor --sink langfuse": ok(1),  # the page shows its FAIL line: no keys here
    "rlm plugins doctor --sink langsmith": ok(1),
    "rlm plugins doctor --sink logfire": ok(1),
    "rlm mcp serve --transport http --host 0.0.0.0": ok(2),  # the page shows the refusal (bad input: exit 2)
    "rlm leaderboard --metric accuracy": ok(pages=("docs/guide/benchmarks.md",)),  # an empty home: none saved yet
    "rlm traces generate harness.jsonl": ok(),  # the traces README session starts with it
    "rlm harness tools": ok(),  # the built-in tools (no MCP server configured here)
    # README.md
    'rlm run "What is the magic number?" --context hay.txt --model scripted:script.json --sub-model scripted:sub.json':
        ok(says="4217", pages=("README.md",)),
    "rlm tui": ok(2, says="rlm tui needs a terminal"),  # here stdin and stderr are pipes: it says so, exit 2
    # docs/guide/run.md
    'rlm run "What happened to thermistor T4?" --context report.pdf --model scripted:script.json --sub-model '
    "scripted:sub.json --quiet": ok(says="Thermistor T4 at Halley failed at -41.7 C on day 117 and was replaced on "
                                         "day 119. (report.pdf#p312)"),
    'rlm run "Which parts are out of stock?" --context orders.txt --tool mytools:lookup':
        ok(says="nuts: none left in stock", env={"RLM_RUN__MODEL": "scripted:tools.json"}),
    'rlm run "Which sensor failed on day 117?" --context samples/station_log.txt --output-schema incident.json --json':
        ok(says='"output": {\n    "sensor": "T4",\n    "reading": -41.7',
           env={"RLM_RUN__MODEL": "scripted:typed.json"}),
    # docs/guide/configuration.md: a cloned project's settings, ignored until trusted
    'rlm run "q" --context notes.txt': ok(says="is not trusted, so these settings were ignored: run.base_url (sends "
                                          "your "
                                               "API key to another server); run.sandbox (runs model code without a "
                                               "security boundary)"),
    # docs/guide/models.md (the session's scripted model: the page names none)
    'rlm run "Summarise the incidents" --context samples/station_log.txt --temperature 0.2 --seed 7 --sub-sampling '
    "temperature=0": ok(says="one incident: T4"),
    # docs/guide/observability.md
    'rlm run "How many words are there?" --context notes.txt --model scripted:script.json --sink otel --quiet':
        ok(says="9"),
    "docs/guide/observability.md :: rlm runs show latest": ok(says="sinks: local, otel"),
    "rlm traces overview .rlm/observability/otel-traces.jsonl": ok(says='"pure_rlm": 1'),
    # docs/guide/python-api.md: the page's typed lines
    "rlm chat --context nums.txt --sandbox monty --model scripted:chat.json":
        ok(says="rlm> 43", input="Sum the numbers\n/vars\nAdd one\n/exit\n"),
    # docs/guide/benchmarks.md
    "rlm bench sweep sweep.toml --dry-run": ok(says="24 points, 96 cases"),
    # plugins/_template/README.md: the template, installed for the tests (plugin_site)
    'rlm run "How many inspections?" --context log.txt --env plugin-template-lines --model scripted:lines.json '
    "--sandbox process": ok(says="3 inspections"),
    'rlm run "Which valve was inspected, and when?" --context log.txt --framework plugin-template-agent --model '
    "scripted:agent.json --sandbox process": ok(says="valve V-7, on 2026-03-09"),
    'rlm run "What is 6 x 7?" --model scripted:six.json --sandbox process -q': ok(says="42"),
    "rlm bench run -p plugin-template-qa --model scripted:qa.json --sandbox process -q": ok(says="3/3"),
    # the framework READMEs: each on the station log, with the page's own script
    'rlm run "Which sensor failed on day 117, and what did it read before failing?" --framework google-adk --context '
    "station_log.txt --model scripted:script.json --sandbox process": ok(says="its last reading was -41.7 C"),
    'rlm run "Which sensor failed on day 117, and what did it read before failing?" --framework adk-rlm --context '
    "station_log.txt --model scripted:script.json --sandbox process":
        ok(says="The thermistor T4 failed; it read -41.7 C before failing.",
           before={"script.json": FromPage('{\n "responses": [')}),
    'rlm run "Which sensor failed on day 117, and what did it read before failing?" --framework adk-rlm-agent '
    "--model scripted:script.json --sandbox process":
        ok(says="its last reading was -41.7 C", before={"script.json": FromPage('{\n "responses": [', 1)}),
    'rlm run "Which sensor failed on day 117?" --framework google-adk --context samples/station_log.txt':
        ok(says="-41.7 C", env={"RLM_RUN__MODEL": "scripted:script.json", "RLM_RUN__SANDBOX": "process"}),
    'rlm run "Which sensor failed on day 117, and what did it read before failing?" --framework deepagents --context '
    "station_log.txt --model scripted:script.json --sandbox process": ok(says="its last reading was -41.7 C"),
    'rlm run "Which sensor failed on day 117?" --framework deepagents --context samples/station_log.txt':
        ok(says="-41.7 C", env={"RLM_RUN__MODEL": "scripted:script.json", "RLM_RUN__SANDBOX": "process"}),
    'rlm run "Which sensor failed on day 117, and what did it read before failing?" --framework pydantic-ai --context '
    "station_log.txt --model scripted:script.json --sandbox process": ok(says="its last reading was -41.7 C"),
    'rlm run "Which sensor failed on day 117?" --framework pydantic-ai --context samples/station_log.txt':
        ok(says="-41.7 C", env={"RLM_RUN__MODEL": "scripted:script.json", "RLM_RUN__SANDBOX": "process"}),
    'rlm run "Who will ship the parser fix, and when?" --framework dspy-rlm --context notes.txt --model '
    "scripted:script.json --sandbox monty": ok(says="Bo, on Friday."),
    "plugins/rlm-adapter-dspy/README.md :: rlm runs show latest": ok(says="final answer: Bo, on Friday."),
    # … and each with the user's function (stationtools:spares) and a typed answer (incident.json)
    **{f'rlm run "Which sensor failed on day 117, what did it read, and how many spares of it are left?" --framework '
       f"{framework} --context station_log.txt --model scripted:{script} --sandbox process --tool stationtools:spares "
       "--output-schema incident.json": ok(says="✗ not the required type: (the answer): 'spares_left' is a required "
                                                "property")
       for framework, script in (("pydantic-ai", "agent.json"), ("google-adk", "agent.json"),
                                 ("deepagents", "agent.json"), ("dspy-rlm", "dspy.json"))},
    'rlm run "Who will ship the parser fix, and when?" --framework dspy --context notes.txt --model replay:latest '
    "--sandbox process -q": ok(says="Bo, on Friday."),
    'rlm run "Who will ship the parser fix, and when?" --framework dspy --context notes.txt --model '
    'scripted:script.json '
    "--sandbox monty --max-steps 1": ok(1, says="max_steps after 1 step"),
    # docs/guide/run.md: an MCP server's tools in the REPL (the page's own server, started with this Python), a
    # run's page
    'rlm run "When do invoices go out?" --mcp-config mcp.json':
        ok(says="Invoices go out on the 1st", env={"RLM_RUN__MODEL": "scripted:notes.json", "PATH": VENV_PATH}),
    "rlm runs export latest --format html -o run.html": ok(says="wrote run.html (html"),
    'rlm run "Which sensor failed on day 117?" --context samples/station_log.txt --branch-width 3':
        ok(says="T4", env={"RLM_RUN__MODEL": "scripted:branch.json"}),
    'rlm run "Which sensor failed on day 117?" --context samples/station_log.txt --max-steps 2':
        ok(says="T4", env={"RLM_RUN__MODEL": "scripted:find.json"}),
    # docs/guide/benchmarks.md: a leaderboard of runs
    'rlm run "What is 6 x 7?" --label expected=42': ok(says="42", env={"RLM_RUN__MODEL": "scripted:six.json"}),
    "rlm leaderboard --runs --metric accuracy -F label=expected -F since=2026-01-01":
        ok(says="runs ranked by accuracy"),
    # plugins/rlm-export-html/README.md
    'rlm run "Halve eighty-four." --model scripted:half.json -q': ok(says="42"),
    "rlm runs export latest --format html -o half.html": ok(says="wrote half.html (html, 22 events)"),
    # plugins/rlm-runs/README.md: a run, shown, forked at step 1 with another model, listed, one step replayed
    'rlm run "What is the code word?" --context notes.txt --model scripted:find.json -q': ok(says="heron"),
    "plugins/rlm-runs/README.md :: rlm runs show latest": ok(says="var word (str, 5) = 'heron'"),
    "rlm runs fork latest --at 1 --model scripted:guess.json -q": ok(says="step 1 is taken as recorded"),
    "plugins/rlm-runs/README.md :: rlm runs list": ok(says="final            2    1.80"),
    "rlm replay latest --no-interactive --step 2": ok(says="labels: fork_of=run_"),
    # plugins/rlm-bench/README.md
    "rlm bench run -p pure_rlm_smoke --model scripted:smoke.json --sandbox process -q": ok(says="mean score 1.000"),
    "rlm bench run -p pure_rlm_smoke --model scripted:worse.json --sandbox process -q": ok(says="mean score 0.917"),
    "plugins/rlm-bench/README.md :: rlm bench compare latest previous": ok(1, says="gates failed: accuracy"),
    "plugins/rlm-bench/README.md :: rlm leaderboard --metric accuracy": ok(says="scripted:smoke.json"),
    # plugins/rlm-compat-rlms/README.md
    'rlm run "How many words?" --context notes.txt --env rlms --model scripted:script.json --sandbox process':
        ok(says="2"),
    "rlm runs export latest --format rlms -o run.rlms.jsonl": ok(),
    # plugins/rlm-context-documents/README.md: the report, and the refusals of files it cannot read
    'rlm run "What happened to thermistor T4?" --context report.pdf --model scripted:script.json --sub-model '
    "scripted:sub.json": ok(says="(report.pdf#p312)"),
    "rlm run q --context locked.pdf": ok(2, says="locked.pdf: the PDF is encrypted"),
    "rlm run q --context scan.pdf": ok(2, says="scan.pdf: no text in this PDF file (none on any of its 4 pages)"),
    "rlm run q --context half.pdf": ok(2, says="half.pdf: not a readable PDF file"),
    # plugins/rlm-env-generic/README.md
    'rlm run "Which sensor failed, and when?" --context log.txt --env generic --model scripted:actions.json '
    "--sandbox process": ok(says="the thermistor T4, on day 117"),
    'rlm run "How cold was day 116, and when was T4 replaced?" --context log.txt --env generic --model '
    "scripted:delegate.json --sandbox process": ok(says="T4 was replaced on day 118; day 116 was calm at -9 C"),
    # plugins/rlm-env-traces/README.md
    'rlm run "Find the systemic failure modes of this harness." --env traces --context traces.jsonl':
        ok(says="Systemic:", env={"RLM_RUN__MODEL": "scripted:script.json"}),
    'rlm run "Find the systemic failure modes of this harness." --env traces --context harness.jsonl --model '
    "scripted:script.json": ok(says="Systemic: the researcher agent's web_search tool times out."),
    "rlm traces index harness.jsonl": ok(says="traces=60 spans=420 malformed_lines=2"),
    "rlm traces query harness.jsonl --errors --limit 3": ok(says="11 traces (showing 3 from 0)"),
    'rlm traces search harness.jsonl 6513270e269e0d37f2a74de452e6b438 "time.?out" --regex --json':
        ok(says='"match_count": 1'),
    'rlm run "Which failures recur?" --env traces-repl --context harness.jsonl --model scripted:repl.json':
        ok(says="10 with a web_search timeout"),
    # plugins/rlm-provider-compatible/README.md: nothing listens there: one clear error
    'rlm run "q" --model ollama:llama3.2 --base-url http://127.0.0.1:9/v1 --sandbox process -q':
        ok(1, says="nothing listens at http://127.0.0.1:9/v1 (connection refused)"),
    # plugins/rlm-sink-local/README.md
    "plugins/rlm-sink-local/README.md :: rlm runs show latest": ok(says="sinks: local"),
    # the sink READMEs: a loopback receiver stands in for the backend (keys set in the session)
    "plugins/rlm-sink-langfuse/README.md :: rlm plugins doctor --sink langfuse": ok(says="reachable"),
    'rlm run "How many words?" --context notes.txt --model scripted:script.json --sink langfuse': ok(says="150"),
    'rlm run "How many words?" --context notes.txt --model scripted:script.json --sink langsmith': ok(says="150"),
    'rlm run "How many words?" --context notes.txt --model scripted:script.json --sink logfire': ok(says="150"),
    'rlm run "How many words?" --context notes.txt --sink langfuse':
        ok(says="150", env={"RLM_RUN__MODEL": "scripted:script.json"}),
    'rlm run "How many words?" --context notes.txt --sink langsmith':
        ok(says="150", env={"RLM_RUN__MODEL": "scripted:script.json"}),
    'rlm run "How many words?" --context notes.txt --sink logfire':
        ok(says="150", env={"RLM_RUN__MODEL": "scripted:script.json"}),
    "plugins/rlm-sink-langsmith/README.md :: rlm plugins doctor --sink langsmith": ok(0, 1),
    "plugins/rlm-sink-logfire/README.md :: rlm plugins doctor --sink logfire": ok(0, 1),
    "rlm plugins doctor --sink mlflow": ok(says="mlflow.db opens"),  # MLflow's default local store, opened
    'rlm run "What is this text about?" --context context.txt --model scripted:root.json --sub-model scripted:sub.json '
    "--sandbox process --max-depth 1 --sink mlflow -q": ok(says="a few words of context"),
    "rlm plugins doctor --sink otel": ok(says="reachable"),
    'rlm run "What is the answer?" --context notes.txt --model scripted:script.json --sandbox process': ok(says="42"),
    'rlm run "What is the answer?" --context notes.txt --model scripted:script.json --sandbox process --json':
        ok(says='"final_response": "42"'),
    "rlm traces overview otel.jsonl": ok(says='{"script.json": 1}'),
}

#: (pattern, why the command is not run as printed here); its --help and flags are still checked. Narrow on purpose:
#: a new command that could run here (a scripted model, the sandboxes here) matches none, and must join RUN.
SKIP = [
    (r"--model (openai|anthropic|gemini):|--model …|--model auto", "a hosted model: network and an API key"),
    (r"llamacpp", "the embedded local model: a long model run on two cores"),
    (r"--sandbox docker|sandbox build-image|--env dspy|dspy_quick|coding_quick",
     "a Docker engine and its image (the docker sandbox's tests start one)"),
    (r"^rlm bench sweep (sweep\.toml (-j|--executor)|--resume)|^rlm bench sweep-report",
     "the sweep's grid names hosted models (its --dry-run runs here)"),
    (r"^rlm bench run --preset oolong_style --model openai", "a hosted model: network and an API key"),
    (r"^rlm bench compare latest previous$", "the benchmarks.md page compares its runs of a hosted model "
     "(plugins/rlm-bench/README.md's session runs it)"),
    (r"^rlm mcp serve(?!.*--host 0\.0\.0\.0)", "a server that runs until stopped (tests/test_docs_terms.py checks "
     "its banner; rlm-mcp's tests drive it)"),
    (r"run_20\d{6}_\d{6}_\d{6}_[0-9a-f]{4}", "names a run of the page's own session by its id (the runs here get "
     "new ids; the same command with `latest` runs)"),
    (r"--mcp-config", "the page's MCP servers (npx: the npm registry)"),
    (r"--context (nested\.pdf|bomb\.epub|node\.docx)", "a file built to reach the loader's memory or size limits "
     "(plugins/rlm-context-documents/tests/test_document_limits.py reads it)"),
]


def _commands(text: str) -> list[str]:
    return [command for command, _ in _commands_with_env(text)]


def _commands_with_env(text: str) -> list[tuple[str, dict[str, str]]]:
    """Each ``rlm …`` command of the page's shell blocks and sessions, with the ``VAR=value`` prefix it is given."""
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
                prefix = {}
                while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                    name, _, value = words.pop(0).partition("=")  # VAR=value prefixes
                    prefix[name] = value.strip("'\"")
                if words and words[0] == "rlm":
                    found.append((re.sub(r"\s+>.*$", "", " ".join(words)), prefix))
    return found


#: (page, command) -> the ``VAR=value`` prefix the page runs it with
PREFIXES: dict[tuple[str, str], dict[str, str]] = {}


def documented() -> list[tuple[str, str]]:
    """Every (page, command), pages in order and each page's commands in the order it shows them (a page's session
    builds on its earlier commands), once per page."""
    found: dict[tuple[str, str], None] = {}
    for page in PAGES:
        where = str(page.relative_to(ROOT))
        for command, prefix in _commands_with_env(page.read_text(encoding="utf-8")):
            PREFIXES.setdefault((where, command), prefix)
            found[where, command] = None
    return list(found)


DOCUMENTED = documented()


def _env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith("RLM_") and not re.search(r"(_API_KEY|_TOKEN|_SECRET|BASE_URL)$", k)}
    return {**keep, "HOME": str(home), "COLUMNS": "120", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, Path]:
    home, work = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("work")
    return home, work


@pytest.fixture(scope="module")
def page_folder(tmp_path_factory, plugin_site):
    """The working folder of a page's session and its variables, made at the page's first command run: its files
    written, its servers started (stopped with the module); ``{plugin_site}`` in a variable is the folder of the
    test-only plugin distributions (the template's)."""
    folders: dict[str, tuple[Path, dict[str, str]]] = {}
    stops = []

    def folder(where: str) -> tuple[Path, dict[str, str]]:
        if where not in folders:
            path, env = tmp_path_factory.mktemp(re.sub(r"\W+", "_", where)), {}
            session = SESSIONS.get(where)
            if session is not None:
                session.prepare(path, (ROOT / where).read_text(encoding="utf-8"))
                env = {name: value.format(plugin_site=plugin_site) for name, value in session.env.items()}
                for server in session.servers:
                    pointing, stop = server(path)
                    env.update(pointing)
                    stops.append(stop)
            folders[where] = path, env
        return folders[where]

    yield folder
    for stop in stops:
        stop()


@lru_cache(maxsize=None)
def _help(path: tuple[str, ...], home: str, work: str) -> tuple[int, str]:
    done = subprocess.run([RLM, *path, "--help"], cwd=work, env=_env(Path(home)), capture_output=True, text=True,
                          timeout=120)
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


def classification(where: str, command: str) -> str:
    """How the check treats a documented command: ``run``, ``run elsewhere`` (another page's session runs it),
    ``synopsis`` (its help and flags only), ``skip`` (a reason in SKIP) or ``unclassified``."""
    bare = re.sub(r"\s*\[[^\]]*\]", "", command).strip()
    runnable = next((c for c in (command, bare) if c in RUN or f"{where} :: {c}" in RUN), None)
    if runnable is not None:
        expect = RUN.get(f"{where} :: {runnable}") or RUN[runnable]
        return "run elsewhere" if expect.pages and where not in expect.pages else "run"
    if _synopsis(command):
        return "synopsis"
    return "skip" if any(re.search(pattern, command) for pattern, _ in SKIP) else "unclassified"


def test_every_documented_command_is_classified():
    """A new command on any page must be placed: run here (RUN, with its session) or skipped with a reason (SKIP);
    and a RUN entry no page shows any more must go (the check would run nothing for it)."""
    unplaced = [f"{where}: {command}" for where,
                command in DOCUMENTED if classification(where, command) == "unclassified"]
    assert not unplaced, "classify (RUN or SKIP):\n" + "\n".join(unplaced)
    shown = {command for _, command in DOCUMENTED} | {re.sub(r"\s*\[[^\]]*\]", "", c).strip() for _, c in DOCUMENTED}
    stale = [key for key in RUN if key.split(" :: ")[-1] not in shown]
    assert not stale, f"RUN entries no page shows: {stale}"


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
@pytest.mark.parametrize("where,command", DOCUMENTED, ids=[f"{w}::{c}" for w, c in DOCUMENTED])
def test_documented_command(where, command, place, page_folder):
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
    kind = classification(where, command)
    if kind == "run":
        bare = re.sub(r"\s*\[[^\]]*\]", "", command).strip()  # a synopsis without its optional parts
        runnable = next(c for c in (command, bare) if c in RUN or f"{where} :: {c}" in RUN)
        run_as_printed(where, runnable, RUN.get(f"{where} :: {runnable}") or RUN[runnable], home, page_folder(where))
    assert kind != "unclassified", f"{where}: classify `{command}`: add it to RUN (runnable here) or to SKIP (why not)"


def run_as_printed(where: str, command: str, expect: Expect, home: Path, place: tuple[Path, dict[str, str]]) -> None:
    """Run ``command`` in the page's folder, with its session's variables and its own prefix; check how it ends."""
    folder, session_env = place
    write_files(expect.before, folder, (ROOT / where).read_text(encoding="utf-8"))
    env = {**_env(home), **session_env, **expect.env, **PREFIXES.get((where, command), {})}
    words = shlex.split(command) if command.count('"') % 2 == 0 else command.split()
    words = [f"{home}/{w[2:]}" if w.startswith("~/") else w for w in words]  # the page's ~ is the check's HOME
    done = subprocess.run([RLM, *words[1:]], cwd=folder, env=env, capture_output=True, text=True,
                          input=expect.input, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode in expect.codes, f"{where}: {command} exited {done.returncode}: {said[-1500:]}"
    assert "Traceback" not in done.stderr, f"{where}: {command}: {done.stderr[-1500:]}"
    assert expect.says in said, f"{where}: {command} did not say {expect.says!r}: {said[-1500:]}"
    # a sink that could not deliver says so and the run still succeeds: only a page that shows the warning may cause it
    assert "could not export" not in said or "could not export" in expect.says, f"{where}: {command}: {said[-1500:]}"
