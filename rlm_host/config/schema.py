"""The host's settings models. Plugin components add their own sections, ``[<kind>.<name>]``, validated by
the pydantic model their registration record names (see ``Component.settings``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Optional

from pydantic import (BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, ValidationInfo, create_model,
                      field_serializer, field_validator)

from rlm_host.components import COMPONENT_KINDS
from rlm_host.price_keys import parse_key

#: The largest ``@FILE`` of instructions read (guidance for a system prompt, not a document).
MAX_INSTRUCTIONS_BYTES = 1024 * 1024


def problems(exc: ValidationError, root: str = "", labels: Optional[Mapping[str, str]] = None, sep: str = "; ",
             most: Optional[int] = None) -> str:
    """A validation error as ``key: what is wrong`` per problem (the first ``most``), joined by ``sep``: the key
    dotted, ``root`` when the value itself is wrong, or the label of its first part (``--max-steps``) when
    ``labels`` names one."""
    named = labels or {}
    return sep.join(f"{named.get(str(e['loc'][0]), '.'.join(map(str, e['loc']))) if e['loc'] else root}: {e['msg']}"
                    for e in exc.errors()[:most])


def tool_spec(item: Any) -> str:
    """How a run records one of the user's tools: ``module:function`` (``name=module:function`` when renamed)."""
    if isinstance(item, str):
        return item
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return f"{item[0]}={tool_spec(item[1])}"
    return f"{getattr(item, '__module__', None) or '?'}:{getattr(item, '__qualname__', None) or repr(item)}"


class Section(BaseModel):
    """Base of every settings section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RunSettings(Section):
    """The run options, declared once: the ``[run]`` section, the ``rlm run`` flags (``--max-steps``, or the
    field's ``flag``), the keyword arguments of ``RLM(...)`` and its calls, and what other front doors (``rlm bench``,
    the MCP tool) offer of them are all derived from these fields (see ``rlm_host.config.run_options``)."""

    environment: str = Field("pure_rlm", description="environment of a run", json_schema_extra={"flag": "--env"})
    framework: str = Field("native", description="'native' (the rlm loop) or a framework")
    sandbox: str = Field("auto", description="sandbox runtime; 'auto' picks the best installed boundary")
    model: str = Field("auto", description="root model as provider:model; 'auto' uses the configured default")
    sub_model: str | None = Field(None, description="model for llm_query sub-calls (default: the root model)")
    allowed_sub_models: list[str] = Field(default_factory=list, description="more models the run's code may name in "
                                          "llm_query(..., model=NAME), besides the model and sub-model (nothing else "
                                          "is accepted from code)", json_schema_extra={"flag": "--allow-sub-model"})
    max_steps: int = Field(8, ge=1, le=1000, description="root turns before the run is stopped")
    timeout: float = Field(600.0, gt=0, description="wall-clock limit of a run, seconds")
    exec_timeout: float = Field(30.0, gt=0, description="limit of one code execution, seconds")
    max_depth: int = Field(2, ge=0, le=8, description="recursion depth of rlm_query / delegate")
    max_llm_calls: int = Field(50, ge=0, description="sub-model calls allowed per run")
    branch_width: int = Field(1, ge=1, description="candidate replies drawn at each root step: each is tried in a "
                              "throwaway copy of the REPL and scored with the run's rewards, the best is kept "
                              "(1: no branching; each candidate is a model call of the budget)")
    max_errors: int | None = Field(None, ge=1, description="stop after this many failed steps in a row (code that "
                                   "raised, a malformed reply), with the best answer so far (default: no limit)")
    nudge_first_answer: bool = Field(True, description="refuse once a FINAL(...) written at step 1 before any code "
                                     "looked at the context (a first_answer_refused step: the model is asked to "
                                     "look first, and may give the same answer again)")
    max_tokens: int | None = Field(None, ge=1, description="token budget of a run tree (all roles)")
    max_cost: float | None = Field(None, gt=0, description="cost budget of a run tree, USD")
    strict: bool = Field(False, description="refuse a run whose cost budget cannot be enforced (a model with no price)")
    base_url: str | None = Field(None, description="server URL for the providers of this run (overrides theirs)")
    max_reply_tokens: int | None = Field(None, ge=16, description="cap on each model reply (default: the provider's)")
    temperature: float | None = Field(None, ge=0, le=2, description="sampling temperature of every model call "
                                      "(default: the provider's)")
    top_p: float | None = Field(None, gt=0, le=1, description="nucleus sampling of every model call (default: the "
                                "provider's)")
    seed: int | None = Field(None, description="sampling seed of every model call, where the provider takes one")
    sub_sampling: dict[str, float] = Field(default_factory=dict, description="sampling of sub-calls (llm_query, "
                                           "child runs) where it differs from the root's: temperature, top_p, seed")
    tools: list[Any] = Field(default_factory=list, description="your own functions the model's code may call, as "
                             "module:function (name=module:function renames one); RLM(tools=[fn]) takes the functions",
                             json_schema_extra={"flag": "--tool"})
    sub_tools: Optional[list[Any]] = Field(None, description="the functions of child runs (rlm_query) (default: the "
                                           "run's tools)", json_schema_extra={"flag": "--sub-tool"})
    tool_timeout: float = Field(30.0, gt=0, description="limit of one call of a tool, seconds")
    mcp_servers: Any = Field(None, description="MCP servers whose tools the model's code may call as functions "
                             "(mcp__SERVER__TOOL): a Claude Desktop / VS Code JSON file, or [mcp_servers.NAME] "
                             "tables (command, args, env or url, headers)", json_schema_extra={"flag": "--mcp-config"})
    output_type: Any = Field(None, description="the type the final answer must have: a JSON Schema file; in Python "
                             "also a pydantic model, a dataclass or a schema dict (an answer that does not match is "
                             "sent back to the model)", json_schema_extra={"flag": "--output-schema"})
    reply_format: Literal["auto", "on", "off"] = Field(
        "auto", description="enforce the environment's reply shape (grammar, JSON schema) on root turns: 'auto' where "
        "the provider does so by default (local llama.cpp), 'on' wherever it can, 'off' never")
    sinks: Optional[list[str]] = Field(None, description="observability sinks to feed (not set: every installed "
                                       "sink that is on by default)", json_schema_extra={"flag": "--sink"})
    sink_flush_seconds: float = Field(10.0, gt=0, le=600, description="how long the end of a run waits for the sinks "
                                      "to deliver what they hold (together, not each)")
    sink_call_seconds: float = Field(30.0, gt=0, description="a sink whose one call has not returned after this many "
                                     "seconds is disabled for the run")
    instructions: str | None = Field(None, description="domain guidance appended to the environment's system prompt "
                                     "(--instructions TEXT or @FILE); recorded with the run and a benchmark's identity")
    labels: dict[str, str] = Field(default_factory=dict, description="labels recorded with a run and sent to the sinks "
                                   "(a benchmark sets benchmark_id, preset and case)",
                                   json_schema_extra={"flag": "--label"})
    approve: Literal["auto", "ask", "read-only"] = Field(
        "auto", description="actions that change things (file writes, commands, destructive tools): 'auto' lets them "
        "go ahead, 'ask' waits for your yes on the terminal (or the TUI), 'read-only' refuses them; a refusal is an "
        "observation the model sees")
    approval_rules: dict[str, Literal["allow", "ask", "deny"]] = Field(
        default_factory=dict, description="per-tool approvals over --approve: TOOL=allow|ask|deny, TOOL an fnmatch "
        "pattern ('run_command', 'mcp__github__*'); the first match wins",
        json_schema_extra={"flag": "--approval-rule"})

    @field_validator("tools", "sub_tools", mode="before")
    @classmethod
    def _tool_items(cls, value: Any) -> Any:
        """A dict (name → function or ``module:function``) or one function is a list of the user's tools."""
        if isinstance(value, dict):
            return [(str(name), target) for name, target in value.items()]
        if callable(value) or isinstance(value, str):
            return [value]
        return list(value) if isinstance(value, tuple) else value

    @field_serializer("output_type", when_used="json")
    def _output_schema(self, value: Any) -> Any:
        """A type is recorded as its JSON Schema; a file as its path."""
        if value is None or isinstance(value, (str, dict, Path)):
            return str(value) if isinstance(value, Path) else value
        try:
            return TypeAdapter(value).json_schema()
        except Exception:  # noqa: BLE001 - refused by the plan with its own message; recorded by name here
            return repr(value)

    @field_serializer("tools", "sub_tools", when_used="json")
    def _tool_refs(self, value: Optional[list[Any]]) -> Optional[list[str]]:
        return None if value is None else [tool_spec(item) for item in value]

    @field_validator("sub_sampling")
    @classmethod
    def _sampling_names(cls, value: dict[str, float]) -> dict[str, float]:
        if unknown := sorted(set(value) - {"temperature", "top_p", "seed"}):
            raise ValueError(f"unknown sampling option(s) {', '.join(unknown)}: use temperature, top_p, seed")
        return value

    @field_validator("instructions")
    @classmethod
    def _instructions_file(cls, value: str | None, info: ValidationInfo) -> str | None:
        """``@PATH`` reads the guidance from a text file (relative to the working directory): once, where the value
        is given (a re-validation with ``context={"given": names}`` leaves text already read alone)."""
        given = (info.context or {}).get("given")
        if value is None or not value.startswith("@") or (given is not None and "instructions" not in given):
            return value
        from rlm_host.context import read_regular

        path = Path(value[1:]).expanduser()
        try:  # a regular file only, read bounded: a FIFO or a device named here must not hang every command
            text = read_regular(path, MAX_INSTRUCTIONS_BYTES, follow_links=True).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            from pydantic_core import PydanticCustomError  # its message has no "Value error, " in front

            why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror or exc
            raise PydanticCustomError("instructions_file", "{reason}", {"reason": f"cannot read {path}: "
                                      f"{why} (give the text, or @PATH to a text file)"}) from None
        return text.replace("\r\n", "\n").replace("\r", "\n")  # as a text-mode read gives it

    allow_any_workdir: bool = Field(False, description="let an environment that edits files work in a home, documents "
                                    "or system folder (refused by default)")
    workdir: Path | None = Field(None, description="project folder an environment that edits files works in (mounted "
                                 "read-write into the sandbox; default: the current directory)")


class LoggingSettings(Section):
    level: Literal["debug", "info", "warning", "error"] = "warning"
    json_lines: bool = Field(False, description="log JSON lines instead of readable lines")


class PathsSettings(Section):
    home: Path = Field(Path(".rlm"), description="where runs, benchmarks and caches are stored ($RLM_HOME)")

    @field_validator("home")
    @classmethod
    def _expanded(cls, value: Path) -> Path:
        return value.expanduser()  # once, here: every reader gets the same path


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
        parse_key(value)  # ValueError names the expected form
        return value.strip()


class RewardProfile(Section):
    """The reward profile (the seeds' RLMRewardProfile), ``[rewards]``: named weights, clamping, global scale.

    Every environment computes a raw reward per step from these weights; the runner clamps it to [-1, 1] and
    multiplies by ``global_scale``. The weights of one component are that component's settings (the verifier of
    an environment that edits a project, framework events: ``[framework.<name>] reward_*``); a config that
    still sets one here is told where it went (``MOVED``, and the components' own settings models).
    """

    #: Keys this section once held under another name, and where they are set now.
    MOVED: ClassVar[dict[str, str]] = {
        f"framework_{kind}": f"reward_{kind}" for kind in (
            "tool_call", "planning_tool_call", "tool_result", "tool_error", "retry", "model_text", "model_response",
            "empty_response")
    }

    run_python_base: float = Field(0.1, description="any executed code step")
    run_python_success_bonus: float = Field(0.7, description="the code ran without error")
    run_python_failure_penalty: float = Field(0.3, description="the code raised or timed out")
    run_python_stderr_penalty: float = Field(0.1, description="the code wrote to stderr")
    final_reward: float = Field(1.0, description="the step that gives the final answer")
    no_action_penalty: float = Field(0.1, description="a reply with neither code nor a final answer")
    cycle_guard_penalty: float = Field(-0.25, description="a delegation refused by the cycle guard")
    unsupported_action_penalty: float = Field(0.2, description="a JSON action the environment does not know")
    global_scale: float = Field(1.0, ge=0, description="multiplies every clamped step reward")

    @staticmethod
    def clamp(value: float) -> float:
        return max(-1.0, min(1.0, float(value)))

    def apply_global_scale(self, raw: float) -> float:
        """The reward the runner records: clamped to [-1, 1], then scaled."""
        return self.clamp(raw) * self.global_scale

    def code_step(self, *, ok: bool, stderr: bool) -> float:
        """The seeds' run_python formula: base + success bonus, or − failure penalty; − stderr penalty."""
        reward = self.run_python_base
        reward += self.run_python_success_bonus if ok else -self.run_python_failure_penalty
        if stderr:
            reward -= self.run_python_stderr_penalty
        return self.clamp(reward)


class Settings(Section):
    """All settings. Component sections stay raw dicts here and are validated by the plugin's own model."""

    run: RunSettings = Field(default_factory=RunSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    paths: PathsSettings = Field(default_factory=PathsSettings)
    rewards: RewardProfile = Field(default_factory=RewardProfile)
    prices: list[PriceSettings] = Field(default_factory=list, description="model prices overriding the built-in table")
    # One raw section per configurable component kind (``[sandbox.docker]`` …), added below from the kinds table.


_SECTIONS: dict[str, Any] = {kind: (dict[str, dict[str, Any]], Field(default_factory=dict)) for kind in COMPONENT_KINDS}
if not TYPE_CHECKING:  # the same name for the class extended with the sections (type checkers see the one above)
    Settings = create_model("Settings", __base__=Settings, __module__=__name__, __doc__=Settings.__doc__, **_SECTIONS)
