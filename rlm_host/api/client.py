"""``RLM``: the engine from Python — ``completion``, ``acompletion``, ``stream`` and ``astream`` over one runner.

Settings come from the same layers as the CLI (``rlm.toml`` in the working directory, ``RLM_*`` variables, the
user file); what the constructor or a call is given overrides them. Each call is an independent run (its own
sandbox session, trajectory and budget), so one ``RLM`` serves many threads or asyncio tasks at once;
``shared_budget=True`` makes the cost, token and sub-call limits cover all of its runs together.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:  # importing this module stays cheap: the engine loads when an RLM is built
    from rlm_host.api.session import ChatSession
    from rlm_host.engine.budget import Budget
    from rlm_host.engine.carry import VariableCarrier
    from rlm_host.events import RunEvent
    from rlm_host.results import RunResult


def run_options() -> tuple[str, ...]:
    """The run options a constructor or a call may set: every ``[run]`` setting (``rlm config show``), declared
    once in ``RunSettings`` (the ``rlm run`` flags set the same fields), so the API and the CLI cannot drift."""
    from rlm_host.config import run_options as declared

    return declared.names()


def _labels(options: dict[str, Any]) -> dict[str, str]:
    from rlm_host.config.run_options import keyword_label

    return {name: keyword_label(name) for name in options}


_DONE = object()


class RLM:
    """A Recursive Language Model: ``RLM(model="openai:gpt-4o-mini").completion(context, "question")``.

    ``model`` and the other keyword arguments are ``[run]`` settings (``None``: the configured value); ``home``
    is where runs are stored (default ``.rlm``, or ``[paths] home``); ``config`` an ``rlm.toml`` to read instead
    of the one in the working directory, or ``settings`` ones already loaded (``rlm_host.load_settings``).
    ``connectors`` (``{"root": …, "sub": …}``) passes ready model connectors, as tests and embedding programs do.
    """

    def __init__(self, model: Optional[str] = None, *, home: Union[str, os.PathLike, None] = None,
                 config: Union[str, os.PathLike, None] = None, shared_budget: bool = False,
                 connectors: Optional[dict[str, Any]] = None, settings: Any = None, approver: Any = None,
                 **options: Any) -> None:
        allowed = run_options()
        if unknown := sorted(set(options) - set(allowed)):
            raise TypeError(f"RLM() got unknown option(s): {', '.join(unknown)} (run options: {', '.join(allowed)})")
        from rlm_host.config import load_settings
        from rlm_host.engine.runner import RLMRunner
        from rlm_host.plugins import get_host

        self.approver = approver  # asked before actions that change things under [run] approve = "ask"
        host = get_host()
        loaded = settings or load_settings(config_file=Path(config) if config is not None else None, host=host)
        loaded.warn_untrusted()
        home = Path(home if home is not None else loaded.home).expanduser().resolve()  # a later chdir moves nothing
        self.options = {k: v for k, v in {"model": model, **options}.items() if v is not None}
        self.loaded = loaded.with_run(self.options, _labels(self.options))  # a bad value fails here, named
        self.runner = RLMRunner(loaded=self.loaded, host=host, home=home)
        self.connectors = connectors
        self._pool: Optional[Budget] = None
        if shared_budget:
            from rlm_host.engine.budget import Budget

            run = self.loaded.settings.run
            self._pool = Budget(timeout=float("inf"), max_llm_calls=run.max_llm_calls, max_tokens=run.max_tokens,
                                max_cost=run.max_cost)

    @property
    def home(self) -> Path:
        """Where this object's runs are stored (``runs/<run_id>.jsonl`` under it)."""
        return self.runner.home

    @property
    def spent(self) -> Optional[Budget]:
        """The shared budget's counters (``llm_calls``, ``tokens``, ``cost``), with ``shared_budget=True``."""
        return self._pool

    # ------------------------------------------------------------------ runs

    def completion(self, context: Any, query: str, *, cancel: Optional[threading.Event] = None,
                   on_event: Any = None, event_types: Optional[Iterable[str]] = None,
                   carry: Optional[VariableCarrier] = None, **options: Any) -> RunResult:
        """Run ``query`` over ``context`` (text, a list of documents, a JSON value, a file or folder path, or None)
        and return the ``RunResult`` (``final_response``, ``completed``, usage, cost, ``trajectory_path``…).

        Options override this object's for this call; ``cancel`` (a ``threading.Event``) stops the run;
        ``on_event`` receives the run's events as they happen, only those of ``event_types`` when given (e.g.
        ``{"step", "model_call_start"}``; an unknown type name is a ValueError); ``carry`` (a ``VariableCarrier``)
        binds its variables in the root run's sandbox and reads them back when the run ends, so a front door can
        keep REPL state between runs (as chat sessions do; the environment sees it as ``ctx.carry``); an error in
        the setup (an unknown model, a bad value) raises ``rlm_host.RlmError``."""
        return self._run(context, query, cancel, on_event, options, carry=carry, event_types=event_types)

    async def acompletion(self, context: Any, query: str, **options: Any) -> RunResult:
        """``completion`` for asyncio: runs in a worker thread; cancelling the task cancels the run."""
        cancel = threading.Event()
        future = asyncio.get_running_loop().run_in_executor(None, self._run, context, query, cancel, None, options)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel.set()  # the runner stops at its next check; its trajectory gets its final event
            raise

    def stream(self, context: Any, query: str, *, event_types: Optional[Iterable[str]] = None,
               **options: Any) -> "RunStream":
        """The run's events as they happen (``run_start``, ``step_start``, ``model_call_start``, ``step``,
        ``sub_call``…, ``final``; only those of ``event_types`` when given), from a run in a background thread;
        ``.result`` holds the ``RunResult`` once iteration ends. Leaving the loop early (or ``.cancel()``) cancels
        the run."""
        from rlm_host.events import check_event_types

        check_event_types(event_types)  # a misspelt type fails here, not in the run's thread
        return RunStream(self, context, query, options, event_types)

    async def astream(self, context: Any, query: str, *, event_types: Optional[Iterable[str]] = None,
                      **options: Any) -> AsyncIterator[RunEvent]:
        """``stream`` for asyncio; cancelling the consuming task (or leaving the loop early) cancels the run, and
        the generator's end waits for the run to stop (its trajectory gets its final event) before the loop may
        close: nothing is handed to a loop that is gone."""
        stream = self.stream(context, query, event_types=event_types, **options)
        events = iter(stream)
        try:
            while (event := await asyncio.to_thread(next, events, None)) is not None:
                yield event
        finally:
            stream.cancel()  # the run only hands events to a thread-safe queue, never to this loop
            await asyncio.shield(asyncio.to_thread(stream._thread.join))

    def check(self, *, model: Optional[str] = None, sandbox: Optional[str] = None) -> None:
        """Resolve ``model`` and ``sandbox`` as a run would (the provider and its key, a script or weights file; the
        runtime installed and ready), raising ``RlmError`` when one cannot be used: for a front door taking them
        ahead of a run (chat's ``/model``, the TUI's ``/connect`` and ``/sandbox``), so the refusal comes there."""
        runner = self.runner
        if model is not None:
            from rlm_host.models.resolve import resolve_connector

            connector = resolve_connector(model, host=runner.host, settings=runner.loaded, home=self.home)
            if callable(close := getattr(connector, "close", None)):
                close()
        if sandbox is not None:
            from rlm_host.engine.sandbox_plan import choose_sandbox

            choose_sandbox(runner.host, runner.loaded, sandbox)

    def session(self, context: Any = None, *, resume: Optional[str] = None, **options: Any) -> "ChatSession":
        """A chat over ``context``: ``ask(query)`` per turn, the REPL's JSON variables and the conversation kept
        between turns and saved under ``home/sessions``; ``resume=ID`` continues a saved one (see
        ``rlm_host.api.session``)."""
        from rlm_host.api.session import ChatSession

        return ChatSession(self, context, options, resume=resume)

    # ------------------------------------------------------------------ internals

    def _run(self, context: Any, query: str, cancel: Optional[threading.Event], on_event: Any,
             options: dict[str, Any], carry: Any = None, event_types: Optional[Iterable[str]] = None,
             question: Optional[str] = None, connector_pool: Optional[dict[Any, Any]] = None) -> RunResult:
        """One run: this object's settings with the call's options merged in (validated, each labelled), the
        context as given (a path or a list of paths: loaded by the run's plan, as ``--context`` is); ``question``
        and ``connector_pool`` as ``Runner.run_task`` takes them (a chat session's turn)."""
        from rlm_host.context import ContextFiles

        loaded = self.loaded.with_run(options, _labels(options))
        return self.runner.run_task(query, context=ContextFiles.of(context), settings=loaded, cancel=cancel,
                                    on_event=on_event, event_types=event_types, connectors=self.connectors,
                                    shared_budget=self._pool, carry=carry, approver=self.approver,
                                    question=question, connector_pool=connector_pool)


class RunStream:
    """The events of one run, iterated as they happen; ``result`` is the ``RunResult`` at the end."""

    def __init__(self, rlm: RLM, context: Any, query: str, options: dict[str, Any],
                 event_types: Optional[Iterable[str]] = None) -> None:
        self.result: Optional[RunResult] = None
        self._events: queue.Queue = queue.Queue()
        self._cancel = threading.Event()
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._work, args=(rlm, context, query, options, event_types),
                                        name="rlm-stream", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run (it ends with ``termination_reason="cancelled"``)."""
        self._cancel.set()

    def __iter__(self) -> Iterator[RunEvent]:
        try:
            while (item := self._events.get()) is not _DONE:
                yield item
        finally:
            if self.result is None:
                self._cancel.set()
                self._thread.join()
        if self._error is not None:
            raise self._error

    def _work(self, rlm: RLM, context: Any, query: str, options: dict[str, Any], event_types: Any) -> None:
        try:
            self.result = rlm._run(context, query, self._cancel, self._events.put, options, event_types=event_types)
        except BaseException as exc:  # noqa: BLE001 - raised in the consumer's thread
            self._error = exc
        finally:
            self._events.put(_DONE)
