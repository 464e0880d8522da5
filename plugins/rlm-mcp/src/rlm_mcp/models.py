"""The tools' structured results: pydantic models the SDK publishes as output schemas."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field


class RunOutput(BaseModel):
    """The outcome of ``rlm_run``."""

    run_id: str
    final_response: Optional[str] = None
    completed: bool = False
    termination_reason: str = ""
    steps: int = 0
    tokens: int = 0
    cost: Optional[float] = None
    duration_s: float = 0.0
    trajectory_path: Optional[str] = None
    error: Optional[str] = None


class RunSummaryOut(BaseModel):
    """One saved run as ``rlm runs list`` shows it."""

    run_id: str
    task: str = ""
    model: str = ""
    environment: str = ""
    started: Optional[str] = None
    completed: bool = False
    termination_reason: str = ""
    steps: int = 0
    tokens: Optional[int] = None
    cost: Optional[float] = None
    duration_s: Optional[float] = None


class RunsList(BaseModel):
    """Saved runs, newest first."""

    runs: list[RunSummaryOut] = Field(default_factory=list)
    total: int = 0


class StepOut(BaseModel):
    """One root step: the action, its code and what it printed (each cut to a readable length)."""

    step: int
    action: str
    code: Optional[str] = None
    output: Optional[str] = None
    reply: Optional[str] = None
    tokens: int = 0
    duration_s: float = 0.0


class RunDetail(RunSummaryOut):
    """One saved run with its root steps and its final answer."""

    final_response: Optional[str] = None
    error: Optional[str] = None
    trajectory_path: str = ""
    sub_calls: int = 0
    steps_detail: list[StepOut] = Field(default_factory=list)


class BenchCase(BaseModel):
    """One benchmark case's outcome."""

    case_id: str
    status: str = ""
    score: Optional[float] = None
    correct: Optional[bool] = None
    final_response: Optional[str] = None
    expected: Any = None
    error: Optional[str] = None


class BenchOutput(BaseModel):
    """A benchmark's summary: accuracy and each case with its score."""

    benchmark_id: str = ""
    preset: str
    model: str = ""
    cases_run: int = 0
    accuracy: Optional[float] = None
    completion_rate: float = 0.0
    cost: Optional[float] = None
    cases: list[BenchCase] = Field(default_factory=list)


class ActiveRunOut(BaseModel):
    """One run in progress on the server's machine (``rlm runs active``); ``own``: started by this server."""

    run_id: str
    status: str
    task: str = ""
    model: str = ""
    environment: str = ""
    started: str
    command: str = ""
    own: bool = False


class ActiveList(BaseModel):
    """The outcome of ``rlm_runs_active`` and ``rlm_runs_cancel``."""

    runs: list[ActiveRunOut] = Field(default_factory=list)
