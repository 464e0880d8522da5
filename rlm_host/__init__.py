"""rlm-host: the host of the rlm framework for Recursive Language Models, and its public SDK.

Everything a plugin (or a program embedding rlm) uses is importable from here — ``from rlm_host import
ProviderSpec, ModelConnector, Completion, hookimpl`` — and nothing else of the host is public: its modules may
move between releases, these names do not. Test helpers and the contract suites are in ``rlm_host.testing``.

Importing this module stays cheap (no pydantic, no plugin, no framework): the registration records, errors
and ``hookimpl`` load at once, every other name on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlm_host.components import (
    BenchmarkPackSpec,
    CommandSpec,
    Component,
    DoctorCheck,
    EnvironmentSpec,
    ExporterSpec,
    FrameworkSpec,
    LazyRef,
    ProviderSpec,
    Readiness,
    SandboxSpec,
    SinkSpec,
    ContextLoaderSpec,
)
from rlm_host.errors import (
    BudgetExceeded,
    ConfigError,
    InputError,
    ModelError,
    PluginError,
    RecursionRefused,
    RlmError,
    SandboxError,
    UnknownComponentError,
)
from rlm_host.hookspecs import hookimpl

#: Public name → the module that defines it, imported on first use.
_LAZY: dict[str, str] = {
    # the factory convention: factory(settings, services)
    "HostServices": "rlm_host.services",
    "ProviderServices": "rlm_host.services",
    "SandboxServices": "rlm_host.services",
    # models: the connector protocol and the kit shared by SDK-based connectors
    "ModelConnector": "rlm_host.llm.protocol",
    "Completion": "rlm_host.llm.protocol",
    "Message": "rlm_host.llm.protocol",
    "ModelOptions": "rlm_host.llm.protocol",
    "RetryCallback": "rlm_host.llm.protocol",
    "Purpose": "rlm_host.llm.protocol",
    "ReplyFormat": "rlm_host.llm.protocol",
    "ReplyFormatMode": "rlm_host.llm.protocol",
    "RetryPolicy": "rlm_host.llm.retry",
    "Failure": "rlm_host.llm.retry",
    "is_retryable_status": "rlm_host.llm.retry",
    "status_text": "rlm_host.llm.retry",
    "RetryingConnector": "rlm_host.llm.connector_base",
    "MalformedBody": "rlm_host.llm.connector_base",
    "validate_settings": "rlm_host.llm.connector_base",
    "context_window_of": "rlm_host.llm.connector_base",
    "token_count": "rlm_host.llm.connector_base",
    "reject_raw_text": "rlm_host.llm.connector_base",
    "retry_after_of": "rlm_host.llm.connector_base",
    # token counts: the model's own (a connector's optional ``count_tokens``), else the estimate
    "CHARS_PER_TOKEN": "rlm_host.tokens",
    "count_tokens": "rlm_host.tokens",
    "estimate_tokens": "rlm_host.tokens",
    # sandboxes: the session protocol, the lifecycle every runtime shares, and the kit of worker-based runtimes
    "SandboxSession": "rlm_host.sandbox.protocol",
    "SandboxLimits": "rlm_host.sandbox.protocol",
    "SandboxInfo": "rlm_host.sandbox.protocol",
    "HostFunction": "rlm_host.sandbox.protocol",
    "ExecResult": "rlm_host.results",
    "FinalSignal": "rlm_host.results",
    "SessionBase": "rlm_host.sandbox.session_base",
    "WorkerSession": "rlm_host.sandbox.session",
    "Channel": "rlm_host.sandbox.channel",
    "WORKER_SCRIPT": "rlm_host.sandbox.session",
    "to_jsonable": "rlm_host.sandbox.worker",
    "Capture": "rlm_host.sandbox.worker",
    "CommandResult": "rlm_host.sandbox.commands",
    "run_command": "rlm_host.sandbox.commands",
    "run_in_session": "rlm_host.sandbox.commands",
    "PYTHON": "rlm_host.sandbox.commands",
    # host-side work on untrusted bytes: a bounded child process; what rlm reads back, signed with the user's key
    "run_bounded": "rlm_host.bounded",
    "BoundedLimits": "rlm_host.bounded",
    "BoundedError": "rlm_host.bounded",
    "LimitExceeded": "rlm_host.bounded",
    "ChildFailed": "rlm_host.bounded",
    "bounded_start_method": "rlm_host.bounded",
    "user_signature": "rlm_host.config.user_key",
    "verify_user_signature": "rlm_host.config.user_key",
    # a project folder the model edits: metadata read-only, writes that never follow a link, the after-step sweep
    "WorkspaceRefused": "rlm_host.sandbox.workspace",
    "check_workspace_write": "rlm_host.sandbox.workspace",
    "open_in_workspace": "rlm_host.sandbox.workspace",
    "remove_in_workspace": "rlm_host.sandbox.workspace",
    "workspace_metadata": "rlm_host.sandbox.workspace",
    "sweep_workspace": "rlm_host.sandbox.workspace",
    # environments
    "Environment": "rlm_host.environments.protocol",
    "EnvironmentContext": "rlm_host.environments.protocol",
    "ActionResult": "rlm_host.results",
    "parse_action": "rlm_host.environments.generic",
    "reply_action": "rlm_host.environments.generic",
    "json_object_spans": "rlm_host.environments.generic",
    "truncate": "rlm_host.environments.kit",
    "StepHistory": "rlm_host.environments.kit",
    # framework adapters: the contract and the run's sandbox as tools
    "FrameworkAdapter": "rlm_host.frameworks.protocol",
    "FrameworkContext": "rlm_host.frameworks.protocol",
    "FrameworkOutcome": "rlm_host.frameworks.protocol",
    "StepLimitReached": "rlm_host.frameworks.protocol",
    "run_coroutine": "rlm_host.frameworks.protocol",
    "EVENT_REWARDS": "rlm_host.frameworks.protocol",
    "SandboxTools": "rlm_host.frameworks.tools",
    "CodeOutcome": "rlm_host.frameworks.tools",
    "TOOL_DESCRIPTIONS": "rlm_host.frameworks.tools",
    "AGENT_INSTRUCTIONS": "rlm_host.frameworks.tools",
    "describe_context_briefly": "rlm_host.frameworks.tools",
    "ToolSpec": "rlm_host.frameworks.tool_protocol",
    "ToolCall": "rlm_host.frameworks.tool_protocol",
    "FinalAnswer": "rlm_host.frameworks.tool_protocol",
    "InvalidReply": "rlm_host.frameworks.tool_protocol",
    "ToolReply": "rlm_host.frameworks.tool_protocol",
    "render_tool_protocol": "rlm_host.frameworks.tool_protocol",
    "parse_tool_reply": "rlm_host.frameworks.tool_protocol",
    "format_tool_call": "rlm_host.frameworks.tool_protocol",
    "format_tool_final": "rlm_host.frameworks.tool_protocol",
    "format_tool_result": "rlm_host.frameworks.tool_protocol",
    "coerce_tool_args": "rlm_host.frameworks.tool_protocol",
    "SubCalls": "rlm_host.environments.pure_rlm.host_functions",
    # events, sinks and results
    "RunEvent": "rlm_host.events",
    "Sink": "rlm_host.events",
    "SpanBuilder": "rlm_host.observability.spans",
    "SpanRecord": "rlm_host.observability.spans",
    "SpanEventRecord": "rlm_host.observability.spans",
    "tree_order": "rlm_host.observability.spans",
    "trace_id_for": "rlm_host.observability.spans",
    "span_id_for": "rlm_host.observability.spans",
    "RunResult": "rlm_host.results",
    "StepRecord": "rlm_host.results",
    "Usage": "rlm_host.results",
    "RunUsage": "rlm_host.results",
    # context
    "Documents": "rlm_host.context",
    "load_context": "rlm_host.context",
    "load_file": "rlm_host.context",
    "describe_context": "rlm_host.context",
    "TextFile": "rlm_host.context",
    "context_value": "rlm_host.context",
    "loader_lookup": "rlm_host.engine.context_loading",
    "load_context_with_loaders": "rlm_host.engine.context_loading",
    "media_type": "rlm_host.engine.context_loading",
    # running the engine from a program
    "RLM": "rlm_host.api.client",
    "RunStream": "rlm_host.api.client",
    "ChatSession": "rlm_host.api.session",
    "Budget": "rlm_host.engine.budget",
    "RLMRunner": "rlm_host.engine.runner",
    "load_settings": "rlm_host.config",
    "LoadedSettings": "rlm_host.config",
    "PluginHost": "rlm_host.plugins.host",
    "get_host": "rlm_host.plugins.host",
    "resolve_connector": "rlm_host.llm.resolve",
    "auto_model": "rlm_host.llm.resolve",
    "RunStore": "rlm_host.trajectory.store",
    # plugin sub-commands of `rlm`
    "command_settings": "rlm_host.cli.app",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from metadata on demand, not at import
        from rlm_host.plugins.discovery import host_version

        return host_version()
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlm_host' has no attribute {name!r}")
    value = importlib.import_module(module)
    value = value if name == module.rpartition(".")[2] else getattr(value, name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "__version__",
    "hookimpl",
    # registration records
    "LazyRef",
    "Readiness",
    "Component",
    "EnvironmentSpec",
    "FrameworkSpec",
    "SandboxSpec",
    "SinkSpec",
    "ExporterSpec",
    "ContextLoaderSpec",
    "BenchmarkPackSpec",
    "ProviderSpec",
    "CommandSpec",
    "DoctorCheck",
    # errors
    "RlmError",
    "PluginError",
    "ConfigError",
    "InputError",
    "UnknownComponentError",
    "ModelError",
    "SandboxError",
    "BudgetExceeded",
    "RecursionRefused",
    *_LAZY,
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from rlm_host.cli.app import command_settings
    from rlm_host.config import LoadedSettings, load_settings
    from rlm_host.context import Documents, TextFile, context_value, describe_context, load_context, load_file
    from rlm_host.api.client import RLM, RunStream
    from rlm_host.api.session import ChatSession
    from rlm_host.engine.budget import Budget
    from rlm_host.engine.context_loading import load_context_with_loaders, loader_lookup, media_type
    from rlm_host.engine.runner import RLMRunner
    from rlm_host.environments.generic import json_object_spans, parse_action, reply_action
    from rlm_host.environments.kit import StepHistory, truncate
    from rlm_host.frameworks.protocol import (
        EVENT_REWARDS, FrameworkAdapter, FrameworkContext, FrameworkOutcome, StepLimitReached, run_coroutine,
    )
    from rlm_host.frameworks.tools import (
        AGENT_INSTRUCTIONS, TOOL_DESCRIPTIONS, CodeOutcome, SandboxTools, describe_context_briefly,
    )
    from rlm_host.frameworks.tool_protocol import (
        FinalAnswer, InvalidReply, ToolCall, ToolReply, ToolSpec, coerce_tool_args, format_tool_call, format_tool_final,
        format_tool_result, parse_tool_reply, render_tool_protocol,
    )
    from rlm_host.environments.pure_rlm.host_functions import SubCalls
    from rlm_host.environments.protocol import Environment, EnvironmentContext
    from rlm_host.events import RunEvent, Sink
    from rlm_host.observability.spans import (
        SpanBuilder, SpanEventRecord, SpanRecord, span_id_for, trace_id_for, tree_order,
    )
    from rlm_host.llm.connector_base import (
        MalformedBody,
        RetryingConnector,
        context_window_of,
        reject_raw_text,
        retry_after_of,
        token_count,
        validate_settings,
    )
    from rlm_host.llm.protocol import Completion, Message, ModelConnector, ModelOptions
    from rlm_host.llm.resolve import auto_model, resolve_connector
    from rlm_host.llm.protocol import Purpose, ReplyFormat, ReplyFormatMode, RetryCallback
    from rlm_host.llm.retry import Failure, RetryPolicy, is_retryable_status, status_text
    from rlm_host.plugins.host import PluginHost, get_host
    from rlm_host.results import ActionResult, ExecResult, FinalSignal, RunResult, RunUsage, StepRecord, Usage
    from rlm_host.sandbox.commands import PYTHON, CommandResult, run_command, run_in_session
    from rlm_host.sandbox.protocol import HostFunction, SandboxInfo, SandboxLimits, SandboxSession
    from rlm_host.sandbox.channel import Channel
    from rlm_host.sandbox.session import WORKER_SCRIPT, WorkerSession
    from rlm_host.sandbox.session_base import SessionBase
    from rlm_host.sandbox.worker import Capture, to_jsonable
    from rlm_host.bounded import (
        BoundedError, BoundedLimits, ChildFailed, LimitExceeded, bounded_start_method, run_bounded,
    )
    from rlm_host.config.user_key import user_signature, verify_user_signature
    from rlm_host.sandbox.workspace import (
        WorkspaceRefused, check_workspace_write, open_in_workspace, remove_in_workspace, sweep_workspace,
        workspace_metadata,
    )
    from rlm_host.services import HostServices, ProviderServices, SandboxServices
    from rlm_host.tokens import CHARS_PER_TOKEN, count_tokens, estimate_tokens
    from rlm_host.trajectory.store import RunStore
