"""Chat sessions: several user turns over one context, each turn a run that sees the earlier turns.

Between turns three things persist: the context (given once), the conversation (each turn's task opens with the
earlier questions and answers, shortened when long: the last :data:`RECENT_TURNS` in full, answers cut at
:data:`ANSWER_CHARS`, older ones a line each, at most :data:`MAX_TURNS_SHOWN`), and the REPL variables whose values
are JSON data (``rlm_host.engine.carry`` says exactly what survives). A session is saved after every turn as
``<home>/sessions/<id>.json`` (the context beside it), so ``RLM.session(resume=ID)`` / ``rlm chat --resume ID``
continue it in another process: the variables are bound again in a fresh sandbox session. Each turn's run carries
the labels ``session_id`` and ``turn``.

A session file is untrusted input (a cloned project may ship ``.rlm/sessions``): an id is accepted only in the
form new ids take (:data:`SESSION_ID`) and only as a regular file inside ``<home>/sessions``, never through a
symbolic link; the options it stores fill in only what the caller (``RLM(...)``, the session, the call) left
unset. Options signed with this user's key (``rlm_host.config.user_key``: what this user's rlm saved) are taken
as they are; unsigned ones never give a sandbox that is not a security boundary, a model that names a file, a
looser limit or an endpoint: those are ignored with one warning (:func:`stored_options`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from rlm_host import logs
from rlm_host.config.trust import reads_model_file, sandbox_refusal
from rlm_host.context import open_regular, write_atomic
from rlm_host.errors import InputError, RlmError
from rlm_host.text import clip

if TYPE_CHECKING:
    from rlm_host.api.client import RLM
    from rlm_host.results import RunResult

RECENT_TURNS = 6
ANSWER_CHARS = 1000
MAX_TURNS_SHOWN = 40

#: The ids new sessions take; a resume id must match in full (it names a file: never a path).
SESSION_ID = re.compile(r"chat_[0-9]{8}_[0-9]{6}_[0-9a-f]{4}")
#: Stored options a resume may take from the session file, when the caller set none of them.
FROM_FILE = ("model", "sub_model", "sandbox", "environment", "framework", "reply_format", "strict")
#: Stored limits: taken only when not looser than the configured value.
LIMITS = ("max_steps", "max_depth", "timeout", "exec_timeout", "max_llm_calls", "max_tokens", "max_cost",
          "max_reply_tokens")


class ChatSession:
    """A conversation with one ``RLM``: ``ask(query)`` runs a turn; ``id`` names it for ``resume``."""

    def __init__(self, rlm: "RLM", context: Any = None, options: Optional[dict[str, Any]] = None, *,
                 resume: Optional[str] = None) -> None:
        self.rlm = rlm
        self.options = {k: v for k, v in (options or {}).items() if v is not None}  # the caller's own
        self.stored: dict[str, Any] = {}  # what the file said, screened: fills in what no caller level sets
        self.ignored: list[str] = []  # what the file said and was not taken, with why
        self.turns: list[dict[str, Any]] = []
        self.variables: dict[str, Any] = {}
        self.dropped: list[str] = []
        self._lock = threading.Lock()
        self._connectors: dict[Any, Any] = {}  # built once per model: a scripted model plays on from turn to turn
        self.id = resume if resume is not None else time.strftime("chat_%Y%m%d_%H%M%S_") + secrets.token_hex(2)
        self.path = session_file(rlm.home, self.id)
        self.context = context
        if resume is not None:
            self._load()
            self.context = self.context if context is None else context
        # what a save before the first turn records (and signs): the file's options as screened, never as written
        self.ran = {k: v for k, v in {**self.stored, **rlm.options, **self.options}.items() if k in FROM_FILE + LIMITS}

    def using(self, key: str) -> Any:
        """The value of run option ``key`` the next turn uses (caller, then session file, then settings)."""
        for level in (self.options, self.rlm.options, self.stored):
            if level.get(key) is not None:
                return level[key]
        return getattr(self.rlm.runner.loaded.settings.run, key, None)

    def ask(self, query: str, *, cancel: Optional[threading.Event] = None, on_event: Any = None,
            **options: Any) -> "RunResult":
        """Run one turn; the session keeps its answer, run id and the variables it left. One turn at a time."""
        from rlm_host.engine.carry import VariableCarrier

        with self._lock:
            carrier = VariableCarrier(self.variables)
            labels = {**self.options.get("labels", {}), "session_id": self.id, "turn": str(len(self.turns) + 1)}
            chosen = {**self.rlm.options, **self.options, **{k: v for k, v in options.items() if v is not None}}
            filled = {k: v for k, v in self.stored.items() if k not in chosen}  # the caller's choices win
            merged = {**filled, **self.options, **options, "labels": labels}
            task = self._task(query)
            result = self.rlm._run(self.context, task, cancel, on_event, merged, carry=carrier,
                                   question=query if task != query else None,
                                   connector_pool=self._connectors)
            self.ran = {k: v for k, v in {**filled, **chosen}.items() if k in FROM_FILE + LIMITS}
            self.ran.update({k: v for k, v in (("model", result.model), ("sandbox", result.sandbox))
                             if v and v != "none"})  # what it ran with: a resume uses it
            if carrier.saved is not None:
                self.variables, self.dropped = carrier.saved, carrier.dropped
            self.turns.append({"query": query, "answer": result.final_response, "run_id": result.run_id,
                               "termination_reason": result.termination_reason})
            self.save()
            return result

    def save(self) -> Path:
        """Write the session (and, once, its context) under the run home; return the session file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        context_file = self.path.with_suffix(".context.json")
        if isinstance(self.context, os.PathLike):
            path = os.fspath(Path(self.context).resolve())
            context_record: Any = {"path": path, "signature": _signature({"session_context_path": path})}
        else:
            if not context_file.exists():
                write_atomic(context_file, json.dumps({"value": self.context}, ensure_ascii=False, default=str))
            context_record = {"file": context_file.name}
        signature = _signature({"session_options": self.ran, "id": self.id})
        data = {"id": self.id, "options": self.ran, "options_signature": signature, "dropped": self.dropped,
                "context": context_record, "turns": self.turns, "variables": self.variables}
        write_atomic(self.path, json.dumps(data, ensure_ascii=False, default=str))  # never half a session
        return self.path

    def _load(self) -> None:
        from rlm_host.config.user_key import verify  # constant time; never true without this user's key

        if not os.path.lexists(self.path):
            raise InputError(f"no chat session {self.id!r} in {self.path.parent}",
                             hint="rlm chat --list shows the saved sessions")
        data = _read_json(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("turns", []), list):
            raise InputError(f"{self.path} is not a chat session file")
        turns = [t for t in data.get("turns", []) if isinstance(t, dict) and isinstance(t.get("query"), str)]
        options = found if isinstance(found := data.get("options"), dict) else {}
        chosen = {**self.rlm.options, **self.options}
        if verify({"session_options": options, "id": self.id}, data.get("options_signature")):
            self.stored = {k: v for k, v in options.items() if k in FROM_FILE + LIMITS and k not in chosen}
        else:  # not written by this user's rlm: screened
            self.stored, self.ignored = stored_options(options, chosen, self.rlm)
        if self.ignored:
            logs.get_logger("rlm.session").warning(
                f"session {self.id}: not taken from the session file: {'; '.join(self.ignored)} "
                "(pass them yourself, e.g. --sandbox / --model, to use them)", session_id=self.id)
        self.turns, self.variables = turns, found if isinstance(found := data.get("variables"), dict) else {}
        self.dropped = [d for d in data.get("dropped") or [] if isinstance(d, str)]
        record = found if isinstance(found := data.get("context"), dict) else {}
        if isinstance(record.get("path"), str):
            signed = verify({"session_context_path": record["path"]}, record.get("signature"))
            self.context = Path(record["path"]) if signed else None
            if self.context is None:  # not written by this user's rlm (a cloned project's .rlm, an edited file)
                self.ignored.append(f"context path {record['path'][:200]!r} (not signed by this user's rlm)")
                logs.get_logger("rlm.session").warning(
                    f"session {self.id}: its context file {record['path'][:200]!r} was not recorded by you: not "
                    "read (give the context again to use it)", session_id=self.id)
        else:  # only the context file save() writes beside the session, whatever name the record gives
            stored = self.path.with_suffix(".context.json")
            value = _read_json(stored) if "file" in record and os.path.lexists(stored) else None
            self.context = value.get("value") if isinstance(value, dict) else None

    def _task(self, query: str) -> str:
        """The turn's task: the earlier turns, shortened when long, then the new question."""
        if not self.turns:
            return query
        shown = self.turns[-MAX_TURNS_SHOWN:]
        lines = [f"This is turn {len(self.turns) + 1} of a conversation about the same context."]
        hidden = len(self.turns) - len(shown)
        lines += [f"({hidden} earlier turns are not shown.)"] if hidden else []
        lines.append("Earlier questions and your answers:")
        recent_from = len(shown) - RECENT_TURNS
        for index, turn in enumerate(shown):
            answer = str(turn.get("answer") if turn.get("answer") is not None else "(no answer: "
                         f"{turn.get('termination_reason')})")
            lines.append(f"- Q: {clip(turn['query'], 150, one_line=True)} → A: {clip(answer, 150, one_line=True)}"
                         if index < recent_from else f"- Q: {turn['query']}\n  A: {answer[:ANSWER_CHARS]}")
        for label, names in (("REPL variables kept from earlier turns", sorted(self.variables)),
                             ("Not kept (rebuild them if you need them)", self.dropped)):
            lines += [f"{label}: {', '.join(names)}."] if names else []
        lines.append(f"New question: {query}")
        return "\n".join(lines)


def _signature(value: Any) -> Optional[str]:
    """``value`` signed with this user's key, None when no key can be had (nothing then verifies)."""
    from rlm_host.config.user_key import sign

    try:
        return sign(value)
    except OSError:
        return None


def session_file(home: Path, session_id: Any) -> Path:
    """``<home>/sessions/<id>.json`` for a well-formed id whose file resolves inside that folder; else InputError."""
    if not isinstance(session_id, str) or not SESSION_ID.fullmatch(session_id):
        raise InputError(f"not a chat session id: {repr(session_id)[:80]}", hint="ids look like "
                         "chat_20260101_120000_ab12; rlm chat --list shows the saved sessions")
    folder = Path(home).resolve() / "sessions"
    path = folder / f"{session_id}.json"
    if not path.resolve().is_relative_to(folder):
        raise InputError(f"chat session {session_id} leads outside {folder} (a symbolic link)",
                         hint="a session file must be a regular file in the sessions folder")
    return path


def _read_json(path: Path) -> Any:
    """A session's JSON, opened without following a final symbolic link, from a regular file only."""
    try:
        handle = open_regular(path, follow_links=False)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise InputError(f"cannot read chat session file {path}: {why}") from None
    with handle:
        try:
            return json.loads(handle.read().decode("utf-8"))
        except ValueError as exc:
            raise InputError(f"{path} is not a chat session file: {exc}") from None


def stored_options(options: dict[str, Any], chosen: dict[str, Any], rlm: "RLM") -> tuple[dict[str, Any], list[str]]:
    """Split a session file's options into those a resume may use (for what ``chosen`` leaves unset) and the
    ignored ones (``key=value (why)``). Silently dropped: what the caller chose, or what changes nothing."""
    kept, ignored = {}, []
    run = rlm.runner.loaded.settings.run
    for key, value in options.items():
        configured = getattr(run, key, None)
        if key in chosen or key == "labels" or value is None or value == configured:
            continue
        if why := _refusal(key, value, configured, rlm.runner.host):
            ignored.append(f"{key}={repr(value)[:80]} ({why})")
        else:
            kept[key] = value
    return kept, ignored


def _refusal(key: str, value: Any, configured: Any, host: Any) -> str:
    """Why a session file's ``key = value`` is not used ("" when it may be)."""
    if key in LIMITS:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return "not a number"
        return f"looser than the configured {configured}" if configured is not None and value > configured else ""
    if key == "strict":
        return "" if value is True else "looser than the configured strict mode"
    if key not in FROM_FILE:
        return "not taken from a session file"
    if not isinstance(value, str) or not value or len(value) > 300:
        return "not a name"
    if key in ("model", "sub_model"):
        return _model_refusal(value, host)
    if key == "sandbox":
        return sandbox_refusal(value, host)
    if key != "environment":
        return ""
    try:
        spec = host.environments().get(value)
    except RlmError:
        return "not installed"
    return "edits the project folder" if spec.workspace else ""


def _model_refusal(model: str, host: Any) -> str:
    """Why a stored model string is not used: it names no installed provider, a provider that reads a file (a
    script, a saved run) or a file its provider reads (a weights path)."""
    from rlm_host.models.resolve import split_model_string

    if model == "auto":
        return ""
    try:
        spec = host.providers().get(split_model_string(model, host)[0])
    except RlmError:
        return "names no installed provider"
    if spec.model_files and not spec.default_model:  # every model of it is a file: a script, a saved run
        return "its provider reads a file"
    return "names a file its provider reads" if reads_model_file(model, host) else ""


def list_sessions(home: Path) -> list[dict[str, Any]]:
    """The saved sessions under ``home``, newest first: id, turns, last question."""
    found = []
    paths = [p for p in (Path(home) / "sessions").glob("chat_*.json") if SESSION_ID.fullmatch(p.stem)]
    for path in sorted(paths, key=lambda p: p.lstat().st_mtime, reverse=True):
        try:
            turns = _read_json(path).get("turns") or []
            last = str(turns[-1].get("query", "")) if turns else ""
        except (InputError, OSError, AttributeError, IndexError, TypeError):
            continue
        found.append({"id": path.stem, "turns": len(turns), "last": last})
    return found
