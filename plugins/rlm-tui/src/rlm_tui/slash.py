"""The command line's slash commands: parsed into one record each, or one clear ``SlashError`` message.

The seeds' commands, mapped onto the API the CLI uses (the app carries them out):

    /rlm run "task" env=… framework=… context=… steps=… [model=… sandbox=… timeout=… cost=… depth=…]
    /rlm chat "question" [context=…]       /rlm bench preset=NAME [limit=N]
    /rlm bench report candidate=ID baseline=ID                /rlm replay ID     /rlm doctor
    /rlm abort [ID|all]     /compare A B     /runs     /connect PROVIDER MODEL     /sandbox NAME     /help
    /harness run "task" [workdir=DIR] [key=value…]
    /leaderboard [runs] [metric=M] [KEY=VALUE…]

``key=value`` options are run options: a short seed name (``env``, ``steps``, ``depth``, ``cost``) or any
``RunSettings`` field name, kept as typed; the workspace maps them to run options by name and the host validates
their values when the run starts, naming each as it was typed (``rlm_tui.workspace.merge_options``), so this
module only splits them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Optional

#: Seed short names → RunSettings field names.
ALIASES = {"env": "environment", "steps": "max_steps", "depth": "max_depth", "cost": "max_cost",
           "tokens": "max_tokens", "sub": "sub_model"}
#: Run options the command line offers for completion (any RunSettings name is accepted).
RUN_KEYS = ["env=", "framework=", "context=", "steps=", "model=", "sub_model=", "sandbox=", "timeout=", "cost=",
            "depth=", "tokens="]

HELP = """\
/rlm run "task" env=pure_rlm framework=native context=FILE steps=8   start a run (model=, sandbox=, timeout=, cost=)
/rlm chat "question" [context=FILE]    one chat turn (turns keep the REPL's variables)
/rlm bench preset=NAME [limit=N]       run a benchmark preset (F4: presets, progress, leaderboard)
/rlm bench report candidate=ID baseline=ID   compare two benchmarks
/leaderboard runs [metric=M] [model=… label=K=V]   saved runs ranked (F4: r runs/benchmarks, m metric)
/rlm replay ID                         open a saved run (id, prefix or latest)
/rlm doctor                            what is installed and ready (rlm plugins doctor)
/harness run "task" [workdir=DIR]      the coding harness over a project folder (default: here; rlm-harness)
/rlm abort [ID|all]                    cancel a run (default: the one shown) — any process's
/compare A B                           two runs side by side from their first divergent step
/connect PROVIDER MODEL                model of the next runs     /sandbox NAME   sandbox of the next runs
/runs   /help   /quit
keys: F1 help  F2 runs  F3 live  F4 bench  / or : command line  ctrl+x abort  q back  ctrl+q quit"""

COMMANDS = ['/rlm run "', "/rlm chat \"", "/rlm bench preset=", "/rlm bench report candidate=", "/rlm replay ",
            "/rlm doctor", "/rlm abort ", '/harness run "', "/compare ", "/connect ", "/sandbox ", "/runs", "/help",
            "/quit", "/leaderboard runs metric="]


class SlashError(ValueError):
    """A command line that cannot be carried out; its message is shown as is."""


@dataclass
class Slash:
    """One parsed command: ``name`` (``run``, ``chat``, ``harness``, ``bench``, ``bench_report``, ``replay``,
    ``doctor``, ``abort``, ``compare``, ``connect``, ``sandbox``, ``runs``, ``leaderboard``, ``help``, ``quit``),
    its words and options (keyed as typed: ``steps``, ``max_steps``), a leaderboard's filters (``KEY=VALUE``)."""

    name: str
    args: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    context: Optional[str] = None
    filters: list[str] = field(default_factory=list)


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise SlashError(f"cannot read the command line: {exc} (close the quotes)") from None


def _options(words: list[str], allowed: Optional[set[str]] = None) -> tuple[list[str], dict[str, str]]:
    args, options = [], {}
    for word in words:
        key, eq, value = word.partition("=")
        if eq and key and key.replace("_", "").isalnum():
            if allowed is not None and key not in allowed:
                raise SlashError(f"unknown option {word.partition('=')[0]}= (here: {', '.join(sorted(allowed))})")
            if value == "":
                raise SlashError(f"option {key}= needs a value")
            options[key] = value
        else:
            args.append(word)
    return args, options


def parse(line: str) -> Slash:
    """The command of ``line``; a ``SlashError`` saying what is wrong otherwise."""
    words = _split(line.strip())
    if not words:
        raise SlashError("type a command: /help lists them")
    head, rest = words[0].lower(), words[1:]
    if head in ("/help", "/?"):
        return Slash("help")
    if head in ("/quit", "/exit"):
        return Slash("quit")
    if head == "/runs":
        return Slash("runs")
    if head == "/compare":
        if len(rest) != 2:
            raise SlashError("usage: /compare RUN_A RUN_B (ids, prefixes or latest)")
        return Slash("compare", rest)
    if head == "/connect":
        if len(rest) == 1 and ":" in rest[0]:
            rest = rest[0].split(":", 1)
        if len(rest) != 2:
            raise SlashError("usage: /connect PROVIDER MODEL (e.g. /connect openai gpt-4o-mini)")
        return Slash("connect", [f"{rest[0]}:{rest[1]}"])
    if head == "/sandbox":
        if len(rest) != 1:
            raise SlashError("usage: /sandbox NAME (e.g. /sandbox monty)")
        return Slash("sandbox", rest)
    if head == "/harness":
        args, options = _options(rest[1:])
        if not rest or rest[0].lower() != "run" or len(args) != 1:
            raise SlashError('usage: /harness run "task in quotes" [workdir=DIR] key=value…')
        return Slash("harness", args, options)
    if head == "/leaderboard":
        return _leaderboard(rest)
    if head != "/rlm":
        raise SlashError(f"unknown command {words[0]!r}: /help lists the commands")
    if not rest:
        raise SlashError("usage: /rlm run|chat|bench|replay|abort …  (/help)")
    sub, rest = rest[0].lower(), rest[1:]
    if sub in ("run", "chat"):
        args, options = _options(rest)
        if len(args) != 1:
            raise SlashError(f'usage: /rlm {sub} "task in quotes" key=value… (got {len(args)} words outside options)')
        context = options.pop("context", None)
        return Slash(sub, args, options, context)
    if sub == "bench":
        if rest and rest[0] == "report":
            args, options = _options(rest[1:], {"candidate", "baseline"})
            if args or "candidate" not in options:
                raise SlashError("usage: /rlm bench report candidate=ID [baseline=ID]")
            return Slash("bench_report", [], options)
        args, options = _options(rest, {"preset", "limit", "model", "sandbox"})
        if args or "preset" not in options:
            raise SlashError("usage: /rlm bench preset=NAME [limit=N] [model=…] (F4 lists the presets)")
        if "limit" in options and not options["limit"].isdigit():
            raise SlashError(f"limit= takes a whole number, not {options['limit']!r}")
        return Slash("bench", [], options)
    if sub == "replay":
        if len(rest) != 1:
            raise SlashError("usage: /rlm replay RUN_ID (an id, a unique prefix or latest)")
        return Slash("replay", rest)
    if sub == "abort":
        if len(rest) > 1:
            raise SlashError("usage: /rlm abort [RUN_ID|all]")
        return Slash("abort", rest)
    if sub == "doctor":
        if rest:
            raise SlashError("usage: /rlm doctor")
        return Slash("doctor")
    raise SlashError(f"unknown /rlm command {sub!r}: run, chat, bench, replay, doctor or abort")


def _leaderboard(words: list[str]) -> Slash:
    """``/leaderboard [benchmarks] [metric=M]`` or ``/leaderboard runs [metric=M] [KEY=VALUE…]`` (the filters of
    ``rlm runs list --filter``, each kept: ``label=`` may come twice)."""
    from rlm_host.sdk.embedding import RUN_FILTERS

    from rlm_tui.bench import METRICS, RUN_METRICS

    kind = words[0].lower() if words and "=" not in words[0] else "benchmarks"
    rest = words[1:] if words and "=" not in words[0] else words
    if kind not in ("runs", "benchmarks"):
        raise SlashError("usage: /leaderboard [runs|benchmarks] [metric=M] [KEY=VALUE…]")
    metrics, keys = (RUN_METRICS, {"metric", "env", *RUN_FILTERS}) if kind == "runs" else (METRICS, {"metric"})
    options: dict[str, Any] = {}
    filters = []
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq or key not in keys:
            raise SlashError(f"unknown option {word!r} for /leaderboard {kind} (here: "
                             f"{', '.join(k + '=' for k in sorted(keys))})")
        if not value:
            raise SlashError(f"option {key}= needs a value")
        if key == "metric":
            if value not in metrics:
                raise SlashError(f"unknown metric {value!r} for the {kind}: {', '.join(metrics)}")
            options["metric"] = value
        else:
            filters.append(word)
    return Slash("leaderboard", [kind], options, filters=filters)


def complete(value: str, run_ids: list[str], presets: list[str]) -> Optional[str]:
    """The completion of a partial command line (the whole line), or None."""
    if not value.startswith("/"):
        return None
    for command in COMMANDS:
        if command.startswith(value) and command != value:
            return command
    words = value.split(" ")
    last = words[-1]
    if value.startswith(("/rlm replay ", "/rlm abort ", "/compare ")):
        pool = run_ids + (["all"] if value.startswith("/rlm abort ") else []) + ["latest"]
    elif last.startswith("preset="):
        pool = [f"preset={name}" for name in presets]
    elif value.startswith("/leaderboard runs ") and last.startswith("metric="):
        from rlm_tui.bench import RUN_METRICS

        pool = [f"metric={name}" for name in RUN_METRICS]
    elif value.startswith(("/rlm run ", "/rlm chat ", "/harness run ")) and value.count('"') % 2 == 0 and last:
        pool = RUN_KEYS
    else:
        return None
    for candidate in pool:
        if candidate.startswith(last) and candidate != last:
            return " ".join(words[:-1] + [candidate])
    return None
