"""What the app does through the host's public API: start runs and chat turns, cancel runs, list saved runs.

A run starts as ``rlm run`` starts one: the command's settings (``CommandServices``) with the options given —
``/connect`` and ``/sandbox`` choices, then the command line's ``key=value`` — merged through the host's
run-option API (``merge_options``: each option mapped to its run option by name and recorded as typed, so a bad
value's error names ``steps=`` as the user wrote it), then ``RLM(settings=…, home=…).completion`` in a
worker thread with ``on_event``, so the app learns the run's id from its ``run_start`` and follows the trajectory
file like any other run's. Cancelling uses the host's registry of active runs (``ActiveRuns``): this user's runs on
the machine, the same for a run started here and one started by another process in any folder. In a browser
session (``rlm tui --web``) every choice is checked against the launching user's settings first
(``rlm_tui.browser_session``).
"""

from __future__ import annotations

import difflib
import os
import threading
import typing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

from rlm_host import InputError, RlmError
from rlm_host.sdk.embedding import RLM, ActiveRuns, RunStore
from rlm_host.sdk.commands import apply_run_flags

from rlm_tui.browser_session import BrowserCeilings

#: Seconds leaving the app waits for its own runs to end ``cancelled``.
STOP_SECONDS = 5.0
Started = Callable[[str, Path], None]
Finished = Callable[[Any, Optional[str]], None]


class OptionError(InputError):
    """A run option the command line gave (or /connect, /sandbox chose) is not valid; the message says which."""


def merge_options(loaded: Any, given: dict[str, Any]) -> Any:
    """``loaded`` (LoadedSettings) with the command line's run options: ``given`` maps each option as it was typed
    (a short name, ``steps``, or a ``RunSettings`` name, ``max_steps``) to its value as typed.

    Each is mapped to its run option by name (``ALIASES``, else the same name) and merged as the host merges a front
    door's options, ``LoadedSettings.with_run(values, labels)``, labelled as typed (``steps=``): a bad value's
    error names it that way (``invalid run option: steps=: …``) and so does the value's provenance, with no
    rewriting of the host's message. A list or KEY=VALUE option (``labels=k=v,k2=v2``, ``sinks=otel``) adds to the
    configured values as its flag does, through ``apply_run_flags``: its error is given after what was typed. A
    name that is no run option is an ``OptionError`` with the nearest names of the command line."""
    from rlm_tui.slash import ALIASES

    fields = type(loaded.settings.run).model_fields
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    collections: list[tuple[str, str]] = []
    for typed, value in given.items():
        name = ALIASES.get(typed, typed)
        if name not in fields:
            near = difflib.get_close_matches(typed, [*ALIASES, *fields], n=3, cutoff=0.5)
            guess = f" (did you mean {' or '.join(n + '=' for n in near)}?)" if near else ""
            raise OptionError(f"unknown run option {typed}={guess}", hint="a run option's name (rlm run --help: "
                              "--max-steps is max_steps=) or a short one: " + ", ".join(f"{s}=" for s in ALIASES)
                              + " (cost= and tokens= for a budget)")
        if _collection(fields[name].annotation):
            collections.append((typed, name))
        else:
            values[name], labels[name] = value, f"{typed}="
    merged = loaded.with_run(values, labels)
    for typed, name in collections:
        items = tuple(part for part in str(given[typed]).split(",") if part.strip())
        try:
            merged = apply_run_flags(merged, {name: items})
        except RlmError as exc:  # the host names the option by its flag (--label): say first what was typed
            raise OptionError(f"{typed}={given[typed]}: {exc}", hint=exc.hint) from None
    return merged


def _collection(annotation: Any) -> bool:
    """Whether a run option holds a list or a mapping (``list[str]``, ``Optional[list]``, ``dict[str, str]``)."""
    return any(typing.get_origin(kind) in (list, dict) for kind in (annotation, *typing.get_args(annotation)))


def error_text(exc: BaseException) -> str:
    """One line for the user: an RlmError's message and hint, anything else its type and message."""
    if isinstance(exc, RlmError):
        hint = getattr(exc, "hint", None)
        return str(exc) + (f" (hint: {hint})" if hint else "")
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Workspace:
    """The run home, the command's settings and the choices of this session (model, sandbox)."""

    home: Path
    settings: Any  # LoadedSettings of the `rlm` command (None: load them, as RLM() does)
    overrides: dict[str, Any] = field(default_factory=dict)
    chat: Any = None  # the ChatSession of /rlm chat, kept between turns
    approver: Any = None  # asked under approve=ask (the app's modal: rlm_tui.approval), None: ask is refused
    ceilings: Optional[BrowserCeilings] = None  # a browser session (rlm tui --web): the user's settings are ceilings

    @property
    def store(self) -> Any:
        return RunStore(self.home)

    def list_runs(self) -> list[Any]:
        """Every saved run of the home, newest first (``RunSummary``)."""
        return self.store.list_runs()

    def resolve(self, ref: str) -> Path:
        """A saved run's file from an id, a unique prefix or ``latest`` (an RlmError saying why not) — never a
        path: the app may be served to a browser, which must not open files outside the run home."""
        if "/" in ref or "\\" in ref or ref.endswith(".jsonl"):
            raise InputError(f"{ref!r} is a path: give a run id, a unique prefix of one, or latest")
        return Path(self.store.resolve(ref))

    # ------------------------------------------------------------------ runs

    def rlm(self, options: dict[str, Any]) -> Any:
        """An ``RLM`` with this session's choices and ``options`` (strings as typed; validated here)."""
        given = {**self.overrides, **options}
        settings = self.settings
        if settings is None:
            from rlm_host.sdk.embedding import load_settings

            settings = self.settings = load_settings()
        merged = merge_options(settings, given) if given else settings
        rlm = RLM(settings=merged, home=self.home, approver=self.approver)
        if self.ceilings is not None:
            self.ceilings.check(settings.settings.run, rlm.loaded.settings.run, rlm.runner.host)
        return rlm

    def check_bench(self, options: dict[str, Any]) -> None:
        """A benchmark's ``model=`` and ``sandbox=`` checked as a run's (in a browser session: its ceilings)."""
        chosen = {key: options[key] for key in ("model", "sandbox") if options.get(key)}
        if chosen and self.ceilings is not None:
            self.rlm(chosen)

    def choose(self, name: str, value: str) -> None:
        """``/connect`` (model) and ``/sandbox``: checked now as a run would resolve them (an unknown provider or
        runtime, a missing key or script, a runtime that is not ready), used by every later run."""
        rlm = self.rlm({name: value})  # raises a ConfigError naming the option when the value is bad
        rlm.check(**{name: value})
        self.overrides[name] = value
        self.chat = None

    def start_run(self, task: str, context: Optional[str], options: dict[str, Any], on_started: Started,
                  on_finished: Finished) -> threading.Thread:
        """Start ``task`` in a thread (settings errors raise here, before it starts); ``on_started(run_id, path)``
        when its ``run_start`` arrives, ``on_finished(result, error)`` at the end (both from the thread)."""
        rlm = self.rlm(options)
        value = self._context(context)
        return _in_thread(lambda on_event: rlm.completion(value, task, on_event=on_event), rlm.home, on_started,
                          on_finished, "rlm-tui-run")

    def start_harness(self, task: str, options: dict[str, Any], on_started: Started,
                      on_finished: Finished) -> threading.Thread:
        """``/harness run``: the coding harness over ``workdir=`` (default: the working folder), as ``rlm harness
        run`` runs it — the run in the ``harness`` environment (rlm-harness), no context; refused here when the
        plugin is missing."""
        from rlm_host import UnknownComponentError

        options = {**options, "environment": "harness"}
        rlm = self.rlm(options)
        try:
            rlm.runner.host.environments().get("harness")
        except UnknownComponentError:
            raise InputError("/harness run needs the coding harness plugin", hint="pip install rlm-harness") from None
        return _in_thread(lambda on_event: rlm.completion(None, task, on_event=on_event), rlm.home, on_started,
                          on_finished, "rlm-tui-harness")

    def ask(self, question: str, context: Optional[str], options: dict[str, Any], on_started: Started,
            on_finished: Finished) -> threading.Thread:
        """One ``/rlm chat`` turn in a thread; the session (REPL variables, history) is kept for the next turn
        unless a context is given (a new conversation); ``options`` apply to this turn."""
        from rlm_tui.slash import ALIASES

        turn: dict[str, Any] = {}
        if options:  # validated here (a bad value is a message before the turn starts); the turn gets them merged
            run = self.rlm(options).loaded.settings.run
            turn = {name: getattr(run, name) for name in (ALIASES.get(typed, typed) for typed in options)}
        if self.chat is None or context is not None:
            self.chat = self.rlm({}).session(self._context(context))
        session = self.chat
        return _in_thread(lambda on_event: session.ask(question, on_event=on_event, **turn), self.home,
                          on_started, on_finished, "rlm-tui-chat")

    def _context(self, value: Optional[str]) -> Any:
        """``context=`` as the CLI reads ``--context`` (in a browser session: only inside the working folder)."""
        if self.ceilings is not None:
            self.ceilings.check_context(value)
        return context_value(value)

    # ------------------------------------------------------------------ cancelling (any process's runs)

    def active(self) -> list[Any]:
        """This user's registered runs on the machine, whatever their home (``ActiveRun``: ``active``,
        ``cancelling``, ``dead``…)."""
        return ActiveRuns().list()

    def abort(self, ref: Optional[str]) -> str:
        """Cancel run ``ref`` (an id or unique prefix) or ``all``, whichever process runs it; what was done, as one
        line. No match raises the registry's error (an RlmError with exit code 2)."""
        registry = ActiveRuns()
        if ref in (None, "", "all"):
            runs = registry.cancel_all()
            return f"asked {len(runs)} run(s) to stop" + (": " + ", ".join(r.run_id for r in runs) if runs else "")
        run = registry.cancel(ref)
        return f"{run.run_id}: {run.status}"

    def stop_own(self, wait: float = STOP_SECONDS) -> list[str]:
        """Cancel the runs this process started (leaving the app) and wait up to ``wait`` seconds for each to write
        its ``cancelled`` final event; the ids still running after that."""
        registry = ActiveRuns()
        own = [run.run_id for run in registry.list() if run.pid == os.getpid() and run.status != "dead"]
        for run_id in own:
            try:
                registry.cancel(run_id)
            except InputError:
                pass  # it ended meanwhile
        return registry.wait(own, wait) if own else []


def _in_thread(run: Callable[[Callable[[Any], None]], Any], home: Path, on_started: Started, on_finished: Finished,
               name: str) -> threading.Thread:
    """``run(on_event)`` in a daemon thread: ``on_started(run_id, trajectory)`` at the root's ``run_start``,
    ``on_finished(result, error)`` at the end (an error as one line, never a traceback)."""
    seen = threading.Event()

    def on_event(event: Any) -> None:
        if event.type == "run_start" and event.depth == 0 and not seen.is_set():
            seen.set()
            on_started(event.root_run_id, home / "runs" / f"{event.root_run_id}.jsonl")

    def work() -> None:
        try:
            result = run(on_event)
        except BaseException as exc:  # noqa: BLE001 - reported in the app, never a traceback
            on_finished(None, error_text(exc))
            return
        on_finished(result, None)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    return thread


def context_value(value: Optional[str]) -> Any:
    """``context=`` as the CLI reads ``--context``: an existing file or folder is loaded by the run, else text."""
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.exists() else value


def started_text(started: Any) -> str:
    return started.strftime("%Y-%m-%d %H:%M") if isinstance(started, datetime) else "—"
