"""Coding cases: a project folder the run works in, and hidden tests that score it afterwards in the sandbox.

A case with ``project`` files gets a fresh folder holding them (``<home>/benchmarks/<id>/projects/<case>``, from
``BenchStore.project_path``), passed to the run as its ``workdir``. A case with ``hidden_tests`` is scored after
the run: the tests are written into the folder (the agent never saw them) and pytest runs them in a *fresh*
sandbox session of the run's kind, with the folder as its working directory, so the score is not the model's
word and nothing of the model's project runs on the host. Score: the fraction of hidden tests that passed;
correct: all of them did.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from rlm_host.sdk.sandbox import PYTHON, run_command

HIDDEN_DIR = "_rlm_hidden_tests"
TEST_TIMEOUT = 300.0
OUTPUT_KEPT = 4000


def prepare_project(folder: Path, files: dict[str, str]) -> Path:
    """A fresh folder holding ``files`` (relative POSIX paths → text)."""
    _write_files(folder, files)
    return folder


def score_hidden_tests(runner: Any, folder: Path, hidden: dict[str, str], *, environment: str,
                       sandbox: str | None) -> tuple[float, bool, dict[str, Any]]:
    """(score, correct, detail) of the hidden tests run against the project in a fresh sandbox session."""
    _write_files(folder / HIDDEN_DIR, hidden)
    session = runner.open_sandbox(sandbox=sandbox, environment=environment, workspace=folder,
                                  exec_timeout=TEST_TIMEOUT)
    try:
        session.start()
        argv = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", "--rootdir", ".", HIDDEN_DIR]
        result = run_command(session, argv, timeout=TEST_TIMEOUT)
    finally:
        session.shutdown()
    counts = _counts(result.stdout)
    ran = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("errors", 0)
    value = counts.get("passed", 0) / ran if ran else 0.0
    detail = {"hidden_tests": counts, "exit_code": result.exit_code, "timed_out": result.timed_out,
              "output": (result.stdout + result.stderr)[-OUTPUT_KEPT:]}
    return round(value, 4), bool(result.ok and ran and value == 1.0), detail


def _counts(output: str) -> dict[str, int]:
    import re

    summary = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    counts: dict[str, int] = {}
    for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped)", summary[-1] if summary else ""):
        counts["errors" if word.startswith("error") else word] = int(number)
    return counts


def _write_files(folder: Path, files: dict[str, str]) -> None:
    """``folder`` made afresh, holding ``files``."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for relative, text in files.items():
        target = folder / _safe_relative(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _safe_relative(relative: str) -> Path:
    """A case's own file name, checked: relative, no '..' (case files come from packs, possibly third-party)."""
    path = PurePosixPath(relative)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ValueError(f"a case file path must be relative and stay inside the project: {relative!r}")
    return Path(*path.parts)
