"""rlm-host: the host of the rlm framework for Recursive Language Models, and its public SDK.

The root holds what every plugin and every program needs — ``from rlm_host import ProviderSpec, hookimpl,
ConfigError, ProviderServices, RunResult, RLM`` — the registration records, ``hookimpl``, the errors, the
services a factory is given, the run's results and events, and the front door (``RLM``). What one kind of
plugin builds on is in its kit, a documented module with its own ``__all__``: ``rlm_host.sdk.models``,
``.sandbox``, ``.context``, ``.environments``, ``.frameworks``, ``.observability``, ``.embedding``, ``.commands`` (see
``rlm_host.sdk``). Test helpers and the contract suites are in ``rlm_host.testing``. Nothing else of the host is
public: its modules may move between releases, these names do not.

Importing this module stays cheap (no pydantic, no plugin, no framework, not even pluggy): the errors load at
once, every other name (the registration records and ``hookimpl`` included) on first use.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from rlm_host.errors import (BudgetExceeded as BudgetExceeded, ConfigError as ConfigError, InputError as InputError,
                             ModelError as ModelError, PluginError as PluginError, RecursionRefused as RecursionRefused,
                             RlmError as RlmError, SandboxError as SandboxError,
                             UnknownComponentError as UnknownComponentError)  # ``X as X``: re-exported for mypy

#: The registration records (``rlm_host.components``).
_RECORDS = [
    "LazyRef", "Readiness", "Component", "EnvironmentSpec", "FrameworkSpec", "SandboxSpec", "SinkSpec", "ExporterSpec",
    "ToolboxSpec", "ContextLoaderSpec", "BenchmarkPackSpec", "ProviderSpec", "CommandSpec", "DoctorCheck",
]

#: Public name → the module that defines it, imported on first use.
_LAZY: dict[str, str] = {
    # what a plugin's hook module imports: ``rlm --help`` lists the commands of a healthy installation from the user's
    # cache without importing a plugin, so these (pluggy, the dataclasses: 10 ms) load with the first plugin
    "hookimpl": "rlm_host.hookspecs",
    **dict.fromkeys(_RECORDS, "rlm_host.components"),
    # the factory convention: factory(settings, services); a plugin command's CommandServices.of(ctx)
    **dict.fromkeys(["HostServices", "ProviderServices", "SandboxServices", "CommandServices"], "rlm_host.services"),
    # a run's events and results
    "RunEvent": "rlm_host.events",
    **dict.fromkeys(["RunResult", "StepRecord", "Usage", "RunUsage", "ExecResult", "ActionResult"], "rlm_host.results"),
    # the front door
    **dict.fromkeys(["RLM", "RunStream"], "rlm_host.api.client"),
    "ChatSession": "rlm_host.api.session",
    "wait_for_sinks": "rlm_host.observability.delivery",
}

#: Names the root exported before the kits existed → where they are now. Still resolvable (with a
#: DeprecationWarning) so older plugins keep working for a release; in no ``__all__`` and hidden from ``dir()``.
_MOVED: dict[str, str] = {
    **dict.fromkeys([
        "ModelConnector", "Completion", "Message", "ModelOptions", "RetryCallback", "Purpose", "ReplyFormat",
        "ReplyFormatMode", "RetryPolicy", "Failure", "is_retryable_status", "status_text", "RetryingConnector",
        "MalformedBody", "validate_settings", "context_window_of", "token_count", "reject_raw_text",
        "retry_after_of", "CHARS_PER_TOKEN", "count_tokens", "estimate_tokens", "resolve_connector", "auto_model",
    ], "rlm_host.sdk.models"),
    **dict.fromkeys([
        "SandboxSession", "SandboxLimits", "SandboxInfo", "HostFunction", "FinalSignal", "SessionBase",
        "WorkerSession", "Channel", "WORKER_SCRIPT", "to_jsonable", "Capture", "CommandResult", "run_command",
        "run_in_session", "PYTHON", "WorkspaceRefused", "check_workspace_write", "open_in_workspace",
        "remove_in_workspace", "workspace_metadata", "sweep_workspace",
    ], "rlm_host.sdk.sandbox"),
    **dict.fromkeys([
        "Documents", "load_context", "load_file", "describe_context", "TextFile", "context_value", "loader_lookup",
        "load_context_with_loaders", "media_type", "run_bounded", "BoundedLimits", "BoundedError",
        "LimitExceeded", "ChildFailed", "bounded_start_method", "user_signature", "verify_user_signature",
    ], "rlm_host.sdk.context"),
    **dict.fromkeys([
        "Environment", "EnvironmentContext", "parse_action", "reply_action", "json_object_spans", "truncate",
        "StepHistory", "SubCalls",
    ], "rlm_host.sdk.environments"),
    **dict.fromkeys([
        "FrameworkAdapter", "FrameworkContext", "FrameworkOutcome", "StepLimitReached", "run_coroutine",
        "EVENT_REWARDS", "SandboxTools", "CodeOutcome", "TOOL_DESCRIPTIONS", "AGENT_INSTRUCTIONS",
        "describe_context_briefly",
    ], "rlm_host.sdk.frameworks"),
    **dict.fromkeys([
        "ToolSpec", "ToolCall", "FinalAnswer", "InvalidReply", "ToolReply", "render_tool_protocol", "parse_tool_reply",
        "format_tool_call", "format_tool_final", "format_tool_result", "coerce_tool_args",
    ], "rlm_host.sdk.tools"),
    **dict.fromkeys([
        "Sink", "SpanBuilder", "SpanRecord", "SpanEventRecord", "tree_order", "trace_id_for", "span_id_for",
    ], "rlm_host.sdk.observability"),
    **dict.fromkeys([
        "Budget", "RLMRunner", "load_settings", "LoadedSettings", "PluginHost", "RunStore",
    ], "rlm_host.sdk.embedding"),
    # internals once promoted to the face; their replacements are services
    "get_host": "rlm_host.plugins.host",  # EnvironmentContext.build_environment, CommandServices
    "command_settings": "rlm_host.cli.app",  # CommandServices.of(ctx)
}
#: Moved names that were renamed too: old name → the kit's name for it.
_RENAMED: dict[str, str] = {"FrameworkAdapter": "Framework"}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from metadata on demand, not at import
        from rlm_host.plugins.discovery import host_version

        return host_version()
    module = _LAZY.get(name)
    if module is None:
        module = _MOVED.get(name)
        if module is None:
            raise AttributeError(f"module 'rlm_host' has no attribute {name!r}")
        new = _RENAMED.get(name)
        where = (f"import {new} from {module}" if new else f"import it from {module}"
                 if module.startswith("rlm_host.sdk.") else "use the services instead")
        warnings.warn(f"rlm_host.{name} is deprecated: {where}", DeprecationWarning, stacklevel=2)
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value  # later lookups are plain attribute reads (a moved name warns once)
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "__version__", "hookimpl",
    # registration records
    *_RECORDS,
    # errors
    "RlmError", "PluginError", "ConfigError", "InputError", "UnknownComponentError", "ModelError", "SandboxError",
    "BudgetExceeded", "RecursionRefused",
    # services, results and events, the front door
    *(name for name in _LAZY if name != "hookimpl" and name not in _RECORDS),
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    __version__: str  # read by __getattr__ on demand
    from rlm_host.components import (BenchmarkPackSpec as BenchmarkPackSpec, CommandSpec as CommandSpec,
                                     Component as Component, ContextLoaderSpec as ContextLoaderSpec,
                                     DoctorCheck as DoctorCheck, EnvironmentSpec as EnvironmentSpec,
                                     ExporterSpec as ExporterSpec, FrameworkSpec as FrameworkSpec, LazyRef as LazyRef,
                                     ProviderSpec as ProviderSpec, Readiness as Readiness, SandboxSpec as SandboxSpec,
                                     SinkSpec as SinkSpec, ToolboxSpec as ToolboxSpec)
    from rlm_host.hookspecs import hookimpl as hookimpl
    from rlm_host.api.client import (RLM as RLM, RunStream as RunStream)
    from rlm_host.api.session import ChatSession as ChatSession
    from rlm_host.observability.delivery import wait_for_sinks as wait_for_sinks
    from rlm_host.events import RunEvent as RunEvent
    from rlm_host.results import (ActionResult as ActionResult, ExecResult as ExecResult, RunResult as RunResult,
                                  RunUsage as RunUsage, StepRecord as StepRecord, Usage as Usage)
    from rlm_host.services import (CommandServices as CommandServices, HostServices as HostServices,
                                   ProviderServices as ProviderServices, SandboxServices as SandboxServices)
