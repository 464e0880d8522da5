"""The host's settings models. Plugin components add their own sections, ``[<kind>.<name>]``, validated by
the pydantic model their registration record names (see ``Component.settings``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rlm_host.engine.rewards import RewardProfile

#: Config sections that hold per-component settings, keyed by component name: ``[sandbox.docker]``.
COMPONENT_SECTIONS = ("environment", "framework", "sandbox", "sink", "benchmark", "provider")


class Section(BaseModel):
    """Base of every settings section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RunSettings(Section):
    """Defaults of ``rlm run`` (each one also a flag)."""

    environment: str = Field("pure_rlm", description="environment of a run")
    framework: str = Field("native", description="'native' (the rlm loop) or a framework adapter")
    sandbox: str = Field("auto", description="sandbox runtime; 'auto' picks the best installed boundary")
    model: str = Field("auto", description="root model as provider:model; 'auto' uses the configured default")
    sub_model: str | None = Field(None, description="model for llm_query sub-calls (default: the root model)")
    max_steps: int = Field(8, ge=1, le=1000, description="root turns before the run is stopped")
    timeout: float = Field(600.0, gt=0, description="wall-clock limit of a run, seconds")
    exec_timeout: float = Field(30.0, gt=0, description="limit of one code execution, seconds")
    max_depth: int = Field(2, ge=0, le=8, description="recursion depth of rlm_query / delegate")
    max_llm_calls: int = Field(50, ge=0, description="sub-model calls allowed per run")
    max_tokens: int | None = Field(None, ge=1, description="token budget of a run tree (all roles)")
    max_cost: float | None = Field(None, gt=0, description="cost budget of a run tree, USD")
    base_url: str | None = Field(None, description="OpenAI-compatible server for the openai provider")
    max_reply_tokens: int | None = Field(None, ge=16, description="cap on each model reply (default: the provider's)")
    sinks: list[str] = Field(default_factory=lambda: ["local"], description="observability sinks to feed")


class LoggingSettings(Section):
    level: Literal["debug", "info", "warning", "error"] = "warning"
    json_lines: bool = Field(False, description="log JSON lines instead of readable lines")


class PathsSettings(Section):
    home: Path = Field(Path(".rlm"), description="where runs, benchmarks and caches are stored ($RLM_HOME)")


class PriceSettings(Section):
    """One ``[[prices]]`` entry: USD per million tokens for the models matching ``model`` (provider:prefix).

    A list of tables rather than a table keyed by model, because model names hold dots (``gpt-4.1``).
    """

    model: str = Field(description="provider:model-prefix, e.g. 'openai:gpt-4o-mini' ('vllm:*': every model)")
    input: float = Field(ge=0, description="USD per 1M input (prompt) tokens")
    output: float = Field(ge=0, description="USD per 1M output (completion) tokens")

    @field_validator("model")
    @classmethod
    def _provider_and_prefix(cls, value: str) -> str:
        from rlm_host.llm.prices import parse_key

        parse_key(value)  # ValueError names the expected form
        return value.strip()


class Settings(Section):
    """All settings. Component sections stay raw dicts here and are validated by the plugin's own model."""

    run: RunSettings = Field(default_factory=RunSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    paths: PathsSettings = Field(default_factory=PathsSettings)
    rewards: RewardProfile = Field(default_factory=RewardProfile)
    prices: list[PriceSettings] = Field(default_factory=list, description="model prices overriding the built-in table")
    environment: dict[str, dict[str, Any]] = Field(default_factory=dict)
    framework: dict[str, dict[str, Any]] = Field(default_factory=dict)
    sandbox: dict[str, dict[str, Any]] = Field(default_factory=dict)
    sink: dict[str, dict[str, Any]] = Field(default_factory=dict)
    benchmark: dict[str, dict[str, Any]] = Field(default_factory=dict)
    provider: dict[str, dict[str, Any]] = Field(default_factory=dict)


