"""``RLMLogger``: a completion's trajectory (the RLM's configuration, then one entry per root iteration), kept in
memory for ``RLMChatCompletion.metadata`` and, given ``log_dir``, appended to a JSON-lines file in the format of the
authors' logger, which their web visualiser opens.

Each ``completion`` starts a new list of iterations (``clear_iterations``); the configuration is logged once, when
the ``RLM`` is made. rlm records every run anyway (``.rlm/runs``); this is for code that reads the authors' logs."""

from __future__ import annotations

import json
import os
import threading
import uuid
from datetime import datetime
from typing import Any, Optional

from rlm_compat_rlms.core.types import RLMIteration, RLMMetadata


class RLMLogger:
    """In memory by default; with ``log_dir`` also written to ``<log_dir>/<file_name>_<time>_<id>.jsonl``."""

    def __init__(self, log_dir: Optional[str] = None, file_name: str = "rlm"):
        self.log_dir = log_dir
        self.log_file_path: Optional[str] = None
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            self.log_file_path = os.path.join(log_dir, f"{file_name}_{stamp}_{uuid.uuid4().hex[:8]}.jsonl")
        self._run_metadata: Optional[dict[str, Any]] = None
        self._iterations: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def log_metadata(self, metadata: RLMMetadata) -> None:
        """Keep the configuration (the first call only: one RLM, one configuration)."""
        with self._lock:
            if self._run_metadata is not None:
                return
            self._run_metadata = metadata.to_dict()
            self._append({"type": "metadata", "timestamp": datetime.now().isoformat(), **self._run_metadata})

    def log(self, iteration: RLMIteration) -> None:
        """Keep one root iteration, numbered from 1 within the current completion."""
        with self._lock:
            entry = {"type": "iteration", "iteration": len(self._iterations) + 1,
                     "timestamp": datetime.now().isoformat(), **iteration.to_dict()}
            self._iterations.append(entry)
            self._append(entry)

    def clear_iterations(self) -> None:
        """Start the next completion's list (the file keeps every line)."""
        with self._lock:
            self._iterations = []

    def get_trajectory(self) -> Optional[dict[str, Any]]:
        """``{"run_metadata", "iterations"}`` of the current completion; None before any configuration was logged."""
        with self._lock:
            if self._run_metadata is None:
                return None
            return {"run_metadata": self._run_metadata, "iterations": list(self._iterations)}

    @property
    def iteration_count(self) -> int:
        return len(self._iterations)

    def _append(self, entry: dict[str, Any]) -> None:
        if self.log_file_path is not None:
            with open(self.log_file_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, default=repr) + "\n")


__all__ = ["RLMLogger"]
