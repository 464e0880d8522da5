"""Benchmark cases: one task, the context it needs, its expected answer and how to score it.

``BenchmarkCase`` is a frozen pydantic model holding a case's data and its answer. Its context is a
``ContextSpec``: nothing, an inline value, a file (text, or JSON for ``.json``), or a generator with parameters
(``rlm_bench.generators``). A generated context brings its own answer, question and scorer; a case may still pin
``expected`` (the runner refuses to score when the two disagree, so a generator that drifted is caught) and its own
``task`` (otherwise the generator's question is asked).

Nothing is built when a case is defined: :meth:`BenchmarkCase.materialize` builds the context when the case
runs, and the runner drops it when the case ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rlm_bench.scorers import canonical
from rlm_host import RlmError
from rlm_host.sdk.context import load_file
from rlm_host.sdk.models import estimate_tokens

#: Run options a case may set besides its environment, max_steps and exec_timeout.
CASE_RUN_OPTIONS = frozenset({"timeout", "max_depth", "max_llm_calls", "max_tokens", "max_cost"})
HIDDEN_TESTS = "hidden_tests"  # the scorer of a coding case: its hidden tests, run in the sandbox
_BUCKETS = (8_192, 16_384, 32_768, 65_536, 131_072, 262_144, 524_288, 1_048_576)


class CaseError(RlmError):
    """A case whose context cannot be built (missing file, bad generator parameters)."""


def length_bucket(tokens: int) -> str:
    """The size class of a context: the smallest of 8K, 16K, …, 1M holding it, or ``>1M``."""
    for bucket in _BUCKETS:
        if tokens <= bucket * 1.01:
            return f"{bucket // 1_048_576}M" if bucket >= 1_048_576 else f"{bucket // 1024}K"
    return ">1M"


class ContextSpec(BaseModel):
    """Where a case's context comes from: ``none``, ``inline`` (``value``), ``file`` (``path``) or ``generator``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["none", "inline", "file", "generator"] = "none"
    value: Any = None
    path: Optional[str] = None
    generator: Optional[str] = None
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> "ContextSpec":
        if self.kind == "file" and not self.path:
            raise ValueError("a file context needs 'path'")
        if self.kind == "generator":
            from rlm_bench.generators import FAMILIES

            if (self.generator or "").replace("-", "_") not in FAMILIES:
                raise ValueError(f"generator must be one of: {', '.join(FAMILIES)} (got {self.generator!r})")
        return self

    @classmethod
    def inline(cls, value: Any) -> "ContextSpec":
        return cls(kind="inline", value=value)

    @classmethod
    def file(cls, path: str | Path) -> "ContextSpec":
        return cls(kind="file", path=str(path))

    @classmethod
    def generated(cls, generator: str, **params: Any) -> "ContextSpec":
        return cls(kind="generator", generator=generator, params=params)

    def planned_tokens(self) -> Optional[int]:
        """The size in tokens when it is known without building the context."""
        if self.kind == "generator":
            return int(self.params.get("tokens", 8192))
        if self.kind == "inline" and self.value is not None:
            return estimate_tokens(context_chars(self.value))
        return None


@dataclass
class Materialized:
    """A case ready to run: its context, the task asked, the expected answer and the scorer."""

    context: Any
    task: str
    expected: Any
    scorer: str
    chars: int


class BenchmarkCase(BaseModel):
    """One benchmark task with its data and expected answer (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str = Field(min_length=1)
    description: str = ""
    task: Optional[str] = None
    environment: str = "pure_rlm"
    max_steps: int = Field(8, ge=1, le=1000)
    exec_timeout: float = Field(30.0, gt=0)
    context: ContextSpec = Field(default_factory=ContextSpec)
    expected: Any = None
    scorer: Optional[str] = None
    tags: dict[str, str] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
    mode: Optional[Literal["native", "direct-llm"]] = None
    framework: Optional[str] = None  # run through this framework (unless the benchmark names one for all)
    # coding cases (rlm_bench.projects): the files the run's project folder starts with, and the pytest files
    # that score it after the run, in the sandbox (scorer "hidden_tests")
    project: dict[str, str] = Field(default_factory=dict)
    hidden_tests: dict[str, str] = Field(default_factory=dict)

    @field_validator("scorer")
    @classmethod
    def _scorer(cls, value: Optional[str]) -> Optional[str]:
        return None if value is None else canonical(value)

    @field_validator("options")
    @classmethod
    def _options(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - CASE_RUN_OPTIONS)
        if unknown:
            raise ValueError(f"unknown run option(s) {', '.join(unknown)}; allowed: "
                             f"{', '.join(sorted(CASE_RUN_OPTIONS))}")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):  # a plain list of tags: each becomes {tag: "yes"}
            return {str(tag): "yes" for tag in value}
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _has_task(self) -> "BenchmarkCase":
        if not self.task and self.context.kind != "generator":
            raise ValueError(f"case {self.case_id!r} needs a task (only a generated context brings its own question)")
        if self.hidden_tests and self.scorer not in (None, HIDDEN_TESTS):
            raise ValueError(f"case {self.case_id!r} has hidden tests: its scorer is {HIDDEN_TESTS!r}")
        return self

    @property
    def has_answer(self) -> bool:
        """Whether the case is scored: an expected answer is pinned, the generator computes one, or hidden tests
        check the project."""
        return self.expected is not None or self.context.kind == "generator" or bool(self.hidden_tests)

    def all_tags(self) -> dict[str, str]:
        """The case's tags plus ``length_bucket`` from the planned size when known and not set."""
        tags = dict(self.tags)
        tokens = self.context.planned_tokens()
        if "length_bucket" not in tags and tokens is not None and self.context.kind != "none":
            tags["length_bucket"] = length_bucket(tokens)
        return tags

    def materialize(self, base_dir: Optional[Path] = None) -> Materialized:
        """Build the context (generators run, files are read) and settle the task, answer and scorer."""
        spec = self.context
        expected, scorer, task = self.expected, self.scorer, self.task
        context: Any = None
        if spec.kind == "inline":
            context = spec.value
        elif spec.kind == "file":
            context = _read_file(Path(spec.path or ""), base_dir)
        elif spec.kind == "generator":
            from rlm_bench.generators import generate

            generated = generate(spec.generator or "", spec.params)
            context = generated.context
            if expected is not None and _canonical_json(expected) != _canonical_json(generated.answer):
                raise CaseError(
                    f"case {self.case_id!r}: the pinned answer {expected!r} differs from the generator's "
                    f"{generated.answer!r} (the generator changed?)"
                )
            expected = generated.answer
            scorer = scorer or generated.scorer
            task = task or generated.question
        if self.hidden_tests:
            scorer = HIDDEN_TESTS
        return Materialized(context, task or "", expected, scorer or "normalized_exact", context_chars(context))


def context_chars(context: Any) -> int:
    if context is None:
        return 0
    if isinstance(context, str):
        return len(context)
    if isinstance(context, list):
        return sum(len(d) if isinstance(d, str) else len(_canonical_json(d)) for d in context)
    return len(_canonical_json(context))


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _read_file(path: Path, base_dir: Optional[Path]) -> Any:
    full = path if path.is_absolute() or base_dir is None else base_dir / path
    try:
        return load_file(full)
    except RlmError as exc:
        raise CaseError(str(exc)) from None
