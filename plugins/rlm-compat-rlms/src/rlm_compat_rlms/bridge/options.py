"""What the arguments of the authors' ``RLM(...)`` become on rlm: run options, ``[environment.rlms]`` settings, the
sandbox, and what only a completion's root run takes (``setup_code``). Bad values fail here, once, by name.

Limits rlms does not have stay off, as there: a run has no wall-clock limit unless ``max_timeout`` is given (one
year is recorded), a code block none beyond the run's, and sub-calls are not counted against a cap. A limit the
user configured for rlm (``rlm.toml``, ``RLM_*`` variables) still applies; only rlm's defaults are replaced.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Optional

#: rlms environments that are full Python in the caller's process: rlm's ``process`` sandbox (a worker process of
#: the same user: crash isolation, NOT a security boundary) is the runtime that runs any Python.
FULL_PYTHON = {"local": "process", "ipython": "process"}
#: rlms environments on hosted services this layer does not reach.
UNAVAILABLE = ("modal", "prime", "daytona", "e2b")
#: "No limit": rlm's limits are numbers, so a year stands for none.
NO_LIMIT_SECONDS = 365 * 24 * 3600.0
UNCOUNTED_CALLS = 1_000_000_000
#: ``environment_kwargs`` this layer takes: ``setup_code`` (run once in the root run's REPL before the first
#: turn) and, for ``docker``, ``image``.
ENVIRONMENT_KWARGS = ("setup_code", "image")
NOT_A_BOUNDARY = ("environment={env!r} runs the model's code as full Python in rlm's process sandbox: a separate "
                  "process with your user's rights, NOT a security boundary (use environment='monty' or 'docker' "
                  "for code you do not trust)")


@dataclass
class FrontPlan:
    """An ``RLM``'s arguments as rlm takes them."""

    sandbox: str
    run_options: dict[str, Any]
    labels: dict[str, str]
    overrides: dict[str, tuple[Any, str]] = field(default_factory=dict)  # dotted settings keys (environment.rlms.…)
    setup_code: Optional[str] = None
    notice: Optional[str] = None  # said once, when the first run starts


def sandbox_for(environment: Any, persistent: bool) -> str:
    """rlm's sandbox for an rlms environment name (rlm's own names pass as they are)."""
    if not isinstance(environment, str) or not environment:
        raise ValueError(f"environment must be a name, not {environment!r}")
    if environment in UNAVAILABLE:
        if persistent:
            raise ValueError(f"persistent=True is not supported for environment type {environment!r}: "
                             "rlm_compat_rlms has no such sandbox (use 'local', 'docker' or 'monty')")
        raise ValueError(f"environment {environment!r} is not available in rlm_compat_rlms: use 'local' (full Python, "
                         "rlm's process sandbox), 'docker' or 'monty' (rlm's sandboxes that are security "
                         "boundaries)")
    return FULL_PYTHON.get(environment, environment)


def custom_tools_plan(tools: Optional[dict[str, Any]], *, where: str) -> tuple[list[tuple[str, Any]], str]:
    """rlms' ``custom_tools`` as rlm takes them: each function (``{"name": fn}`` or ``{"name": {"tool": fn,
    "description": "…"}}``) a tool of the run (the host's bridge: called on the host, listed in the prompt, its
    description as its first docstring line), and each data value a REPL variable set by code run before the first
    turn (JSON data only: it crosses into the sandbox as a literal)."""
    functions: list[tuple[str, Any]] = []
    data: list[str] = []
    for name, entry in (tools or {}).items():
        value, description = (entry["tool"], entry.get("description")) if isinstance(entry, dict) and "tool" in entry \
            else (entry, None)
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{where}: {name!r} is not a Python name")
        if callable(value):
            functions.append((name, _described(value, description)))
            continue
        try:
            literal = json.dumps(value, ensure_ascii=True, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(f"{where}[{name!r}] is neither a function nor JSON data ({type(value).__name__})") from None
        data.append(f"{name} = json.loads({literal!r})")
    code = "import json\n" + "\n".join(data) if data else ""
    return functions, code


def _described(function: Any, description: Optional[str]) -> Any:
    """``function`` whose docstring is the rlms ``description`` (its signature kept), or itself when none."""
    if not isinstance(description, str) or not description.strip():
        return function

    @functools.wraps(function)
    def tool(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    tool.__doc__ = description.strip()
    return tool


def plan_front(*, environment: str, environment_kwargs: Optional[dict[str, Any]], persistent: bool, depth: int,
               max_depth: int, max_iterations: int, max_budget: Optional[float], max_timeout: Optional[float],
               max_tokens: Optional[int], max_errors: Optional[int], custom_system_prompt: Optional[str],
               compaction: bool, compaction_threshold_pct: float, max_concurrent_subcalls: int, orchestrator: bool,
               user_prologue: Optional[str], configured: Any, custom_tools: Optional[dict[str, Any]] = None,
               custom_sub_tools: Optional[dict[str, Any]] = None) -> FrontPlan:
    """The plan of an ``RLM``; ``configured(name)`` says whether the user set run option ``name`` for rlm."""
    sandbox = sandbox_for(environment, persistent)
    kwargs = dict(environment_kwargs or {})
    unknown = sorted(set(kwargs) - set(ENVIRONMENT_KWARGS))
    if unknown or ("image" in kwargs and sandbox != "docker"):
        raise TypeError(f"environment_kwargs: {', '.join(unknown or ['image'])} not supported by rlm_compat_rlms for "
                        f"environment {environment!r} (supported: setup_code; image with 'docker')")
    setup_code = kwargs.get("setup_code")
    if setup_code is not None and not isinstance(setup_code, str):
        raise TypeError("environment_kwargs['setup_code'] must be Python source text")
    for name, value in (("depth", depth), ("max_depth", max_depth), ("max_iterations", max_iterations)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, not {value!r}")
    run = {"environment": "rlms", "framework": "native", "sandbox": sandbox, "max_steps": max_iterations,
           "max_depth": max(0, max_depth - depth - 1), "max_cost": max_budget, "max_tokens": max_tokens}
    labels = {"environment": "RLM(environment=…)", "framework": "RLM(…)", "sandbox": "RLM(environment=…)",
              "max_steps": "RLM(max_iterations=…)", "max_depth": "RLM(max_depth=…)",
              "max_cost": "RLM(max_budget=…)", "max_tokens": "RLM(max_tokens=…)"}
    if max_timeout is not None or not configured("timeout"):
        run["timeout"] = max_timeout if max_timeout is not None else NO_LIMIT_SECONDS
        labels["timeout"] = "RLM(max_timeout=…)"
    if not configured("exec_timeout"):
        run["exec_timeout"] = run.get("timeout") or NO_LIMIT_SECONDS
        labels["exec_timeout"] = "RLM(max_timeout=…)"
    if not configured("max_llm_calls"):
        run["max_llm_calls"] = UNCOUNTED_CALLS
        labels["max_llm_calls"] = "RLM(…)"
    loop = {"system_prompt": custom_system_prompt, "orchestrator": orchestrator, "user_prologue": user_prologue,
            "max_errors": max_errors, "compaction": compaction, "compaction_threshold": compaction_threshold_pct,
            "max_concurrent_subcalls": max_concurrent_subcalls}
    names = {"system_prompt": "custom_system_prompt", "compaction_threshold": "compaction_threshold_pct"}
    overrides = {f"environment.rlms.{key}": (value, f"RLM({names.get(key, key)}=…)") for key, value in loop.items()
                 if value is not None}
    if "image" in kwargs:
        overrides["sandbox.docker.image"] = (kwargs["image"], "RLM(environment_kwargs={'image': …})")
    tools, data_code = custom_tools_plan(custom_tools, where="custom_tools")
    sub_tools, _ = custom_tools_plan(custom_sub_tools if custom_sub_tools is not None else custom_tools,
                                     where="custom_sub_tools")
    if tools:
        run["tools"], labels["tools"] = tools, "RLM(custom_tools=…)"
    if custom_tools is not None or custom_sub_tools is not None:
        run["sub_tools"], labels["sub_tools"] = sub_tools, "RLM(custom_sub_tools=…)"
    if data_code:
        setup_code = f"{data_code}\n{setup_code}" if setup_code else data_code
    notice = NOT_A_BOUNDARY.format(env=environment) if environment in FULL_PYTHON else None
    return FrontPlan(sandbox, {k: v for k, v in run.items() if v is not None}, labels, overrides, setup_code, notice)


__all__ = ["FrontPlan", "plan_front", "sandbox_for", "FULL_PYTHON", "UNAVAILABLE", "NO_LIMIT_SECONDS"]
