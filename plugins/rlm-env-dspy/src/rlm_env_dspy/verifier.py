"""The checks that run inside the sandbox, in the project folder (its working directory): compile, pytest, the
code analysis and the regex search. Nothing here runs the model's code or a model-given regex on the host.

``verify_file`` is the seeds' post-write suite: ``python -m compileall`` on the file, ``pytest`` on its matching
test file when there is one (``tests/test_<stem>.py`` or ``test_<stem>.py``), and the analysis of
``sandbox_analysis.py``, whose score decides validation. ``reward_of`` turns the outcome into the step's reward
with the ``[rewards]`` profile.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import PurePosixPath
from typing import Any, Optional

from rlm_host import SandboxError
from rlm_host.sdk.sandbox import PYTHON, CommandResult, run_command, run_in_session

#: The DSPy patterns that earn the pattern bonus (our own fixed regexes; the model's text is only searched).
DSPY_PATTERNS = {
    "imports dspy": re.compile(r"^\s*(?:import dspy|from dspy\b)", re.MULTILINE),
    "dspy.Signature": re.compile(r"\bdspy\.Signature\b"),
    "dspy.InputField": re.compile(r"\bdspy\.InputField\b"),
    "dspy.OutputField": re.compile(r"\bdspy\.OutputField\b"),
    "dspy.Module": re.compile(r"\bdspy\.Module\b"),
    "forward()": re.compile(r"^\s*def forward\s*\(", re.MULTILINE),
}
PYTEST = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no"]
_SUMMARY = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed)")

_SEARCH_SOURCE = """
def __rlm_search(pattern, files, limit):
    import re
    try:
        matcher = re.compile(pattern)
    except re.error as exc:
        return {"error": "bad regex: " + str(exc)}
    found = []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, 1):
                    if matcher.search(line):
                        found.append({"path": path, "line": number, "text": line.rstrip()[:240]})
                        if len(found) >= limit:
                            return {"matches": found, "truncated": True}
        except OSError as exc:
            found.append({"path": path, "error": str(exc)})
    return {"matches": found, "truncated": False}
"""


def analysis_source() -> str:
    """The analysis module's source, sent into the sandbox and run there against the DSPy installed there."""
    return resources.files("rlm_env_dspy").joinpath("sandbox_analysis.py").read_text(encoding="utf-8")


def dspy_patterns(text: str) -> list[str]:
    return [name for name, pattern in DSPY_PATTERNS.items() if pattern.search(text or "")]


@dataclass
class Verification:
    """What the post-write suite found: None for a check that did not apply."""

    compiled: Optional[bool] = None
    tests_passed: Optional[bool] = None
    validated: Optional[bool] = None
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: each check's outcome (what the live view shows under the step)."""
        parts = []
        for label, passed in (("compile", self.compiled), ("tests", self.tests_passed), ("validation", self.validated)):
            if passed is not None:
                parts.append(f"{label} {'ok' if passed else 'FAILED'}")
        counts = (self.details.get("tests_run") or {}).get("counts")
        if counts:
            parts[-1 if self.validated is None else -2] += " (" + ", ".join(f"{n} {w}" for w, n in counts.items()) + ")"
        score = (self.details.get("analysis") or {}).get("score")
        if score is not None:
            parts[-1] += f" (analysis {score}/100)"
        return " · ".join(parts) or "not verified"

    def as_observation(self) -> dict[str, Any]:
        return {"compile": self.compiled, "tests": self.tests_passed, "validation": self.validated, **self.details}


def pytest_counts(output: str) -> dict[str, int]:
    """``{"passed": 3, "failed": 1}`` from pytest's last summary line."""
    counts: dict[str, int] = {}
    lines = [line for line in output.strip().splitlines() if _SUMMARY.search(line)]
    for number, word in _SUMMARY.findall(lines[-1] if lines else ""):
        counts["errors" if word == "error" else word] = int(number)
    return counts


def run_tests(session: Any, selection: list[str], timeout: float, keep: int) -> dict[str, Any]:
    """pytest in the project folder (all tests, or the selected files / node ids)."""
    result = run_command(session, PYTEST + selection, timeout=timeout)
    counts = pytest_counts(result.stdout)
    return {"command": "pytest " + " ".join(selection), "passed": result.ok, "exit_code": result.exit_code,
            "timed_out": result.timed_out, "counts": counts, "no_tests": result.exit_code == 5,
            "output": _tail(result, keep)}


def analyze(session: Any, files: list[str], timeout: float) -> dict[str, Any]:
    """The analysis of ``files`` (paths relative to the project) as the sandbox's DSPy sees them."""
    value = run_in_session(session, analysis_source(), f"analyze({json.dumps(files)})", timeout=timeout)
    if not isinstance(value, dict):
        raise SandboxError("the analysis returned no result")
    return value


def search(session: Any, pattern: str, files: list[str], timeout: float, limit: int = 100) -> dict[str, Any]:
    call = f"__rlm_search({json.dumps(pattern)}, {json.dumps(files)}, {int(limit)})"
    value = run_in_session(session, _SEARCH_SOURCE, call, timeout=timeout)
    return value if isinstance(value, dict) else {"error": "the search returned no result"}


def verify_file(session: Any, relative: str, python_files: list[str], *, timeout: float, keep: int,
                min_score: int) -> Verification:
    """The post-write suite for one written or patched file."""
    outcome = Verification()
    if not relative.endswith(".py"):
        return outcome
    compiled = run_command(session, [PYTHON, "-m", "py_compile", relative], timeout=timeout)
    outcome.compiled = compiled.ok
    if not compiled.ok:
        outcome.details["compile_output"] = _tail(compiled, keep)
    stem = PurePosixPath(relative).stem
    test_file = relative if stem.startswith("test_") else _matching_test(stem, python_files)
    if test_file and outcome.compiled:
        tests = run_tests(session, [test_file], timeout, keep)
        if not tests["no_tests"]:
            outcome.tests_passed = tests["passed"]
        outcome.details["tests_run"] = tests
    try:
        report = analyze(session, [relative], timeout)
        score = int(report.get("score", 0))
        outcome.validated = score >= min_score
        outcome.details["analysis"] = {"score": score, "reasons": list(report.get("reasons") or [])[:12]}
    except SandboxError as exc:
        outcome.details["analysis"] = {"error": str(exc)}
    return outcome


def reward_of(rewards: Any, weights: Any, verification: Verification, patterns: list[str]) -> float:
    """base + compile ± + tests ± + validation ± + DSPy pattern bonus (capped), the seeds' verifier rewards: the
    base is ``[rewards] run_python_base``, the rest the environment's settings (``weights``, ``[environment.dspy]``)."""
    reward = rewards.run_python_base
    for passed, bonus, penalty in (
        (verification.compiled, weights.verifier_compile_bonus, weights.verifier_compile_penalty),
        (verification.tests_passed, weights.verifier_pytest_bonus, weights.verifier_pytest_penalty),
        (verification.validated, weights.verifier_validation_bonus, weights.verifier_validation_penalty),
    ):
        if passed is not None:
            reward += bonus if passed else -penalty
    return reward + pattern_bonus(weights, patterns)


def pattern_bonus(weights: Any, patterns: list[str]) -> float:
    """The DSPy patterns' bonus, ``dspy_pattern_match_bonus`` each, at most ``dspy_pattern_bonus_cap``."""
    return min(weights.dspy_pattern_bonus_cap, weights.dspy_pattern_match_bonus * len(patterns))


def _matching_test(stem: str, python_files: list[str]) -> Optional[str]:
    for candidate in (f"tests/test_{stem}.py", f"test_{stem}.py"):
        if candidate in python_files:
            return candidate
    return None


def _tail(result: CommandResult, keep: int) -> str:
    text = (result.stdout + ("\n" + result.stderr if result.stderr else "")).strip()
    if result.error:
        text = f"could not start: {result.error}"
    return text[-keep:]
