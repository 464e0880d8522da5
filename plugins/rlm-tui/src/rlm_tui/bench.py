"""Benchmarks through the rlm-bench plugin's commands, in a subprocess (as the MCP plugin runs them), and
``rlm plugins doctor`` for ``/rlm doctor`` the same way.

``rlm bench list --json`` gives the presets, ``rlm leaderboard --json`` the ranked benchmarks, ``rlm leaderboard
--runs --json`` the ranked runs (by one of ``RUN_METRICS``, filtered as ``rlm runs list --filter``), ``rlm bench
report C --baseline B`` a comparison; ``rlm bench run --preset P --json`` runs one, printing a line per finished case on
stderr (read here for the progress) and the summary JSON on stdout. The TUI does not import rlm_bench, so it
works (and says so) when the plugin is missing. The subprocess gets the command's ``--config`` and
``--trust-config`` and runs in the working directory, so it uses the same run home.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional


#: The metrics of the benchmarks' chart (keys of ``rlm leaderboard --json``'s rows).
METRICS = ("accuracy", "avg_reward", "completion_rate", "efficiency", "avg_tokens", "avg_cost")
#: The metrics ``rlm leaderboard --runs`` ranks by (reward and accuracy: higher is better; the rest lower).
RUN_METRICS = ("reward", "accuracy", "tokens", "cost", "seconds", "steps")


class BenchUnavailable(RuntimeError):
    """rlm-bench is not installed, or its command failed; the message says which."""


def rlm_command() -> list[str]:
    """The ``rlm`` command of this interpreter (``-P``: like the script, never importing from the working folder)."""
    script = Path(sys.executable).with_name("rlm")
    return [str(script)] if script.exists() else [sys.executable, "-P", "-m", "rlm_host"]


@dataclass
class BenchProgress:
    """A running benchmark: cases done of planned, the finished cases' lines, the summary at the end."""

    preset: str
    total: int = 0
    done: int = 0
    lines: list[str] = field(default_factory=list)
    summary: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    finished: bool = False
    process: Optional[subprocess.Popen] = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()


class Bench:
    """The benchmark commands for one ``rlm`` invocation's config."""

    def __init__(self, config_file: Optional[Path] = None, trust: bool = False, cwd: Optional[Path] = None) -> None:
        self.prefix = [*rlm_command(), *(["--config", str(config_file)] if config_file else []),
                       *(["--trust-config"] if trust else [])]
        self.cwd = cwd or Path.cwd()
        self.env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "TERM": "dumb"}

    def _json(self, *args: str, timeout: float = 120) -> Any:
        try:
            done = subprocess.run([*self.prefix, *args], cwd=self.cwd, env=self.env, capture_output=True,
                                  text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BenchUnavailable(f"rlm {' '.join(args)}: {exc}") from None
        return _parsed(done, args)

    def presets(self) -> list[dict[str, Any]]:
        """Every preset: ``name``, ``cases`` (a list or a count), ``source``, ``description``."""
        found = self._json("bench", "list", "--json")
        return found if isinstance(found, list) else []

    def leaderboard(self, metric: str = "accuracy") -> dict[str, Any]:
        """``rlm leaderboard --json``: ``rows`` (best first), ``metric``, ``statistics``."""
        found = self._json("leaderboard", "--json", "--metric", metric)
        return found if isinstance(found, dict) else {"rows": []}

    def run_leaderboard(self, metric: str = "reward", filters: tuple[str, ...] = ()) -> dict[str, Any]:
        """``rlm leaderboard --runs --json``: the saved runs ranked by ``metric`` (``rows`` best first, ``metric``,
        ``higher_is_better``, ``statistics``), ``filters`` as ``rlm runs list --filter`` takes them (KEY=VALUE)."""
        found = self._json("leaderboard", "--runs", "--json", f"--metric={metric}",
                           *(f"--filter={item}" for item in filters))
        return found if isinstance(found, dict) else {"rows": []}

    def report(self, candidate: str, baseline: Optional[str]) -> str:
        """``rlm bench report CANDIDATE [--baseline B]`` as markdown text."""
        args = ["bench", "report", candidate, *(["--baseline", baseline] if baseline else [])]
        try:
            done = subprocess.run([*self.prefix, *args], cwd=self.cwd, env=self.env, capture_output=True, text=True,
                                  timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BenchUnavailable(f"rlm bench report: {exc}") from None
        if done.returncode != 0:
            raise BenchUnavailable(_failure(done, args))
        return done.stdout

    def doctor(self) -> tuple[str, bool]:
        """``rlm plugins doctor`` (``/rlm doctor``, a seed command): its text and whether it said all is ready
        (exit 0; 1 when something this setup uses is not)."""
        try:
            done = subprocess.run([*self.prefix, "plugins", "doctor"], cwd=self.cwd, env=self.env,
                                  capture_output=True, text=True, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"rlm plugins doctor: {exc}", False
        return (done.stdout + done.stderr).strip(), done.returncode == 0

    def run(self, preset: str, total: int, options: dict[str, str],
            on_change: Callable[[BenchProgress], None]) -> BenchProgress:
        """Start ``rlm bench run --preset`` in the background; ``on_change`` after each finished case and at the end."""
        args = ["bench", "run", "--preset", preset, "--json"]
        for key in ("limit", "model", "sandbox"):
            if options.get(key):
                args += [f"--{key}", str(options[key])]
        progress = BenchProgress(preset, total=total)
        try:
            progress.process = subprocess.Popen([*self.prefix, *args], cwd=self.cwd, env=self.env, text=True,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise BenchUnavailable(f"rlm bench run: {exc}") from None

        def watch() -> None:
            try:
                follow()
            except Exception as exc:  # noqa: BLE001 - said in the app, never a traceback over the screen
                progress.error, progress.finished = f"rlm bench run: {exc}", True
                on_change(progress)

        def follow() -> None:
            process = progress.process
            assert process is not None and process.stderr is not None and process.stdout is not None
            tail: list[str] = []
            for line in process.stderr:
                line = line.rstrip()
                if " score " in line and " steps " in line:
                    progress.done += 1
                    progress.lines.append(line)
                    on_change(progress)
                elif line.strip():
                    tail = (tail + [line])[-5:]
            out = process.stdout.read()
            process.wait()
            try:
                summary = json.loads(out) if out.strip() else None
            except ValueError:
                summary = None
            if isinstance(summary, dict) and "error" in summary and "metrics" not in summary:
                progress.error = str(summary["error"])
            elif isinstance(summary, dict):
                progress.summary = summary
            else:
                progress.error = f"rlm bench run failed (exit {process.returncode}): " + " | ".join(tail)
            progress.finished = True
            on_change(progress)

        threading.Thread(target=watch, name="rlm-tui-bench", daemon=True).start()
        return progress


def _parsed(done: subprocess.CompletedProcess, args: tuple[str, ...]) -> Any:
    try:
        found = json.loads(done.stdout) if done.stdout.strip() else None
    except ValueError:
        found = None
    if done.returncode != 0 or found is None:
        if isinstance(found, dict) and found.get("error"):
            hint = f" (hint: {found['hint']})" if found.get("hint") else ""
            raise BenchUnavailable(f"rlm {' '.join(args)}: {found['error']}{hint}")
        raise BenchUnavailable(_failure(done, list(args)))
    return found


def _failure(done: subprocess.CompletedProcess, args: list[str]) -> str:
    text = (done.stderr or "").strip().splitlines()
    if any("No such command" in line for line in text):
        return "benchmarks need the rlm-bench plugin: pip install rlm-bench"
    return f"rlm {' '.join(args[:2])} failed (exit {done.returncode}): " + " | ".join(text[-3:])


def chart(rows: list[dict[str, Any]], metric: str, width: int = 30,
          label: Optional[Callable[[dict[str, Any]], str]] = None) -> list[str]:
    """A horizontal bar chart of ``metric`` over the leaderboard rows, as plain text lines; ``label(row)`` names a
    bar (default: a benchmark's preset and model)."""
    values = [(row, row.get(metric)) for row in rows]
    numbers = [v for _, v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    top = max(numbers) if numbers else 0
    lines = []
    for row, value in values:
        name = label(row) if label else f"{_flat(row.get('preset'))[:18]:<18} {_flat(row.get('model'))[:16]:<16}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            bar = "█" * (max(1 if value > 0 else 0, round(width * value / top)) if top > 0 else 0)
            lines.append(f"{name} {bar:<{width}} {value:,}" if isinstance(value, int) else
                         f"{name} {bar:<{width}} {value:.3g}")
        else:
            lines.append(f"{name} {'':<{width}} —")
    return lines


def run_label(row: dict[str, Any]) -> str:
    """A run's bar in the chart: its rank, task and model (one line each, cut to their columns)."""
    return f"{_flat(row.get('rank'))[:3]:>3} {_flat(row.get('task'))[:22]:<22} {_flat(row.get('model'))[:14]:<14}"


def _flat(value: Any) -> str:
    """A value of a row as one line (a task or a label holds newlines); control characters are the caller's to
    clean (the view shows every line through ``clean``)."""
    return " ".join(str(value if value is not None else "").split())
