"""Chat sessions: several user turns over one context, each turn a run that sees the earlier turns.

Between turns three things persist: the context (given once), the conversation (each turn's task opens with the
earlier questions and answers, shortened when long: the last :data:`RECENT_TURNS` in full, answers cut at
:data:`ANSWER_CHARS`, older ones a line each, at most :data:`MAX_TURNS_SHOWN`), and the REPL variables whose values
are JSON data (``rlm_host.engine.carry`` says exactly what survives). A session is saved after every turn as
``<home>/sessions/<id>.json`` (the context beside it), so ``RLM.session(resume=ID)`` / ``rlm chat --resume ID``
continue it in another process: the variables are bound again in a fresh sandbox session. Each turn's run carries
the labels ``session_id`` and ``turn``.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from rlm_host.api.client import RLM
    from rlm_host.results import RunResult

RECENT_TURNS = 6
ANSWER_CHARS = 1000
MAX_TURNS_SHOWN = 40


class ChatSession:
    """A conversation with one ``RLM``: ``ask(query)`` runs a turn; ``id`` names it for ``resume``."""

    def __init__(self, rlm: "RLM", context: Any = None, options: Optional[dict[str, Any]] = None, *,
                 resume: Optional[str] = None) -> None:  # fmt: skip
        self.rlm = rlm
        self.options = dict(options or {})
        self.turns: list[dict[str, Any]] = []
        self.variables: dict[str, Any] = {}
        self.dropped: list[str] = []
        self._lock = threading.Lock()
        if resume is not None:
            self.id = resume
            self._load()
            if context is not None:
                self.context = context
        else:
            self.id = time.strftime("chat_%Y%m%d_%H%M%S_") + secrets.token_hex(2)
            self.context = context

    @property
    def path(self) -> Path:
        return self.rlm.home / "sessions" / f"{self.id}.json"

    def ask(self, query: str, *, cancel: Optional[threading.Event] = None, on_event: Any = None,
            **options: Any) -> "RunResult":  # fmt: skip
        """Run one turn; the session keeps its answer, run id and the variables it left. One turn at a time."""
        from rlm_host.engine.carry import VariableCarrier

        with self._lock:
            turn = len(self.turns) + 1
            carrier = VariableCarrier(self.variables)
            labels = {**self.options.get("labels", {}), "session_id": self.id, "turn": str(turn)}
            merged = {**self.options, **options, "labels": labels}
            result = self.rlm._run(self.context, self._task(query), cancel, on_event, merged, carry=carrier)
            if carrier.saved is not None:
                self.variables, self.dropped = carrier.saved, carrier.dropped
            self.turns.append({"query": query, "answer": result.final_response, "run_id": result.run_id,
                               "termination_reason": result.termination_reason})  # fmt: skip
            self.save()
            return result

    def save(self) -> Path:
        """Write the session (and, once, its context) under the run home; return the session file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        context_file = self.path.with_suffix(".context.json")
        if isinstance(self.context, os.PathLike):
            context_record: Any = {"path": os.fspath(Path(self.context).resolve())}
        else:
            if not context_file.exists():
                _write(context_file, {"value": self.context})
            context_record = {"file": context_file.name}
        _write(self.path, {"id": self.id, "options": self.options, "context": context_record, "turns": self.turns,
                           "variables": self.variables, "dropped": self.dropped})  # fmt: skip
        return self.path

    def _load(self) -> None:
        from rlm_host.errors import InputError

        if not self.path.is_file():
            raise InputError(f"no chat session {self.id!r} in {self.path.parent}",
                             hint="rlm chat --list shows the saved sessions")  # fmt: skip
        data = json.loads(self.path.read_text(encoding="utf-8"))
        self.options = {**data.get("options", {}), **self.options}
        self.turns, self.variables = data.get("turns", []), data.get("variables", {})
        self.dropped = data.get("dropped", [])
        record = data.get("context") or {}
        if "path" in record:
            self.context = Path(record["path"])
        else:
            stored = self.path.parent / record.get("file", "")
            self.context = json.loads(stored.read_text(encoding="utf-8"))["value"] if stored.is_file() else None

    def _task(self, query: str) -> str:
        """The turn's task: the earlier turns, shortened when long, then the new question."""
        if not self.turns:
            return query
        shown = self.turns[-MAX_TURNS_SHOWN:]
        lines = [f"This is turn {len(self.turns) + 1} of a conversation about the same context."]
        if len(self.turns) > len(shown):
            lines.append(f"({len(self.turns) - len(shown)} earlier turns are not shown.)")
        lines.append("Earlier questions and your answers:")
        recent_from = len(shown) - RECENT_TURNS
        for index, turn in enumerate(shown):
            answer = str(turn.get("answer") if turn.get("answer") is not None else f"(no answer: {turn.get('termination_reason')})")
            if index < recent_from:
                lines.append(f"- Q: {_one_line(turn['query'], 150)} → A: {_one_line(answer, 150)}")
            else:
                lines.append(f"- Q: {turn['query']}\n  A: {answer[:ANSWER_CHARS]}")
        if self.variables:
            lines.append(f"REPL variables kept from earlier turns: {', '.join(sorted(self.variables))}.")
        if self.dropped:
            lines.append(f"Not kept (rebuild them if you need them): {', '.join(self.dropped)}.")
        lines.append(f"New question: {query}")
        return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _write(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(json.dumps(data, ensure_ascii=False, default=str), encoding="utf-8")
    temporary.replace(path)  # a crash mid-write never leaves half a session


def list_sessions(home: Path) -> list[dict[str, Any]]:
    """The saved sessions under ``home``, newest first: id, turns, last question."""
    found = []
    for path in sorted((Path(home) / "sessions").glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        if path.name.endswith(".context.json"):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        turns = data.get("turns") or []
        found.append({"id": data.get("id", path.stem), "turns": len(turns),
                      "last": turns[-1]["query"] if turns else ""})  # fmt: skip
    return found
