"""``[sandbox.monty]``: the settings of the Monty runtime (pydantic only: loaded with every configuration)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class MontySettings(BaseModel):
    """Limits and worker options of the Monty sandbox; time and memory come from the run's limits."""

    model_config = ConfigDict(extra="forbid")

    max_recursion_depth: int = Field(1000, ge=50, le=100_000, description="deepest call stack of sandbox code")
    max_host_calls: int = Field(
        1_000_000, ge=100, description="host-function calls (llm_query, FINAL…) per session; Monty cannot disable it"
    )
    request_timeout: Optional[float] = Field(
        None, gt=0, description="seconds a worker may go without answering before the pool kills it "
        "(a backstop; default: exec_timeout + 60)",
    )
    start_timeout: float = Field(30.0, gt=0, description="seconds to wait for a worker when a session starts")
    os_memory_headroom_mb: Optional[int] = Field(
        1024, ge=256, description="address-space limit of the worker process above the heap limit "
        "(defence in depth; None: no OS limit)",
    )
    binary_path: Optional[str] = Field(None, description="the `monty` worker binary (default: found by pydantic-monty)")
