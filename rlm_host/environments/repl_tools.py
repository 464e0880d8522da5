"""The user's own functions in the REPL (``RLM(tools=[fn])``, ``rlm run --tool module:function``, ``[run] tools``).

A tool is host code: the model's code calls it by name inside the sandbox, the call crosses the same bridge as
``llm_query`` (arguments and result as JSON, bounded in size) and runs here, in the host, under the run's
approvals, with a timeout, recorded as a ``tool_call`` sub-call. Its exception reaches the sandbox code as an
exception it can catch, naming the type and message, never a host traceback. ``resolve_tools`` turns what the
user gave into ``Tool``s (one clear error for anything that cannot be one), ``tools_prompt`` lists them for the
model the way the REPL's own functions are listed, and ``ToolCalls`` makes the host functions.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import keyword
import time
from concurrent.futures import wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from rlm_host.approvals import ActionKind, ApprovalRequest
from rlm_host.components import MissingAttribute, import_object
from rlm_host.config.schema import tool_spec
from rlm_host.errors import ConfigError
from rlm_host.events import sub_call_text
from rlm_host.sandbox.session_base import RESERVED
from rlm_host.threads import submit

__all__ = ["RESERVED_NAMES", "Tool", "ToolCalls", "plan_toolboxes", "resolve_tools", "tool_spec", "tools_prompt"]

#: Names the REPL itself defines (the sandbox's builtins, and what environments install): a tool may not take them.
RESERVED_NAMES = RESERVED | {
    "llm_query", "llm_query_batched", "rlm_query", "rlm_query_batched", "context", "context_names", "list_files",
    "load_file", "load_files", "switch_to", "remove_file", "chunk_text", "chunk_indices", "print", "answer",
}
#: The largest JSON of a call's arguments, or of its result, that crosses the bridge.
MAX_JSON_CHARS = 1_000_000
_PRIVATE = "rlm_tool_"  # the bridge's own name for a tool; the model calls the wrapper of the tool's name


@dataclass(frozen=True)
class Tool:
    """One function offered to the model's code: its name there, the callable, and how the prompt shows it."""

    name: str
    function: Callable[..., Any]
    signature: str  # "(query: str, limit: int = 5) -> list"
    summary: str  # the first line of its docstring
    reference: str  # "module:function", as the run records it
    kind: ActionKind = "tool"  # what approvals call it: "tool" (may change things) or "read" (asked about in no mode)

    def wrapper_source(self) -> str:
        """Sandbox-side Python defining ``name`` with the function's parameters and docstring, calling the bridge
        (a signature whose defaults are not plain literals is passed through as ``*args, **kwargs``)."""
        params, call = _parameters(self.function)
        doc = (inspect.getdoc(self.function) or self.summary or "").replace('"""', "'''")
        return (f"def {self.name}({params}):\n    {json.dumps(doc)}\n"
                f"    return {_PRIVATE}{self.name}({call})\n")


def resolve_tools(items: Iterable[Any], *, where: str = "tools") -> tuple[Tool, ...]:
    """``Tool``s from callables, ``"module:function"`` / ``"name=module:function"`` strings and ``(name, target)``
    pairs; anything not importable, not callable, with a reserved or invalid name, or given twice is one
    ConfigError naming it (exit 2, before the run)."""
    tools: dict[str, Tool] = {}
    for item in items:
        name, target = item if isinstance(item, (tuple, list)) else (None, item)
        if isinstance(target, str):
            given, eq, ref = target.partition("=")
            if eq and ":" not in given:
                name, target = given.strip(), ref.strip()
            function, reference = _import(target, where), target
        else:
            function, reference = target, tool_spec(target)
        if not callable(function):
            raise ConfigError(f"{where}: {reference} is not callable")
        name = name or getattr(function, "__name__", "")
        if not name.isidentifier() or name.startswith(("_", _PRIVATE)) or keyword.iskeyword(name):
            raise ConfigError(f"{where}: {name!r} is not a usable function name",
                              hint="give it one: name=module:function")
        if name in RESERVED_NAMES:
            raise ConfigError(f"{where}: {name!r} is a name the REPL defines itself",
                              hint="rename it: tools={'my_name': fn} or --tool my_name=module:function")
        if name in tools:
            raise ConfigError(f"{where}: two tools are named {name!r}")
        tools[name] = Tool(name, function, str(signature_of(function) or "(*args, **kwargs)"), _summary(function),
                           reference)
    return tuple(tools.values())


def plan_toolboxes(host: Any, run: Any, folder: Path, home: Path) -> tuple[Callable[[], Any], ...]:
    """The toolboxes this run turns on (``ToolboxSpec``: a run option set, such as ``mcp_servers``), each checked
    now (a bad value is a ConfigError before the run) and returned as the call that opens it for the run tree."""
    from rlm_host.services import HostServices

    openers = []
    for spec in host.toolboxes():
        value = getattr(run, spec.option, None) if spec.option else None
        if value in (None, "", {}, []):
            continue
        toolbox = spec.create(None, HostServices(home=home))
        toolbox.check(value, folder)
        openers.append(functools.partial(toolbox.open, value, folder))
    return tuple(openers)


def tools_prompt(tools: Iterable[Tool]) -> str:
    """The prompt's section on the user's functions, one line each (empty without tools)."""
    lines = [f"- `{tool.name}{tool.signature}`" + (f": {tool.summary}" if tool.summary else "") for tool in tools]
    return ("Functions the user gave you, callable from REPL code like llm_query (arguments and results are JSON "
            "data; a failure raises an exception you can catch):\n" + "\n".join(lines)) if lines else ""


@dataclass(eq=False)
class ToolCalls:
    """The host side of the user's tools for one run: approvals, a timeout per call, JSON bounds, and the
    ``sub_call_start`` / ``sub_call`` events (kind ``tool_call``) the trajectory, the live view and sinks see."""

    tools: tuple[Tool, ...]
    emit: Callable[[str, dict[str, Any]], None]
    approvals: Any
    timeout: float

    def functions(self) -> dict[str, Callable[..., Any]]:
        """Bridge name → host function, for ``SandboxSession.register_functions``."""
        return {f"{_PRIVATE}{tool.name}": self._host_function(tool) for tool in self.tools}

    def source(self) -> str:
        """The sandbox-side definitions of every tool (run once in the session, after ``functions`` are registered)."""
        return "\n\n".join(tool.wrapper_source() for tool in self.tools)

    def _host_function(self, tool: Tool) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.call(tool, args, kwargs)

    def call(self, tool: Tool, args: tuple, kwargs: dict[str, Any]) -> Any:
        started = time.monotonic()
        arguments = {"args": list(args), "kwargs": kwargs} if args else dict(kwargs)
        shown = _json_text(arguments, f"the arguments of {tool.name}")
        event: dict[str, Any] = {"kind": "tool_call", "tool": tool.name, "arguments": sub_call_text(shown)}
        self.emit("sub_call_start", dict(event))
        try:
            refusal = self.approvals.check(ApprovalRequest(tool.name, tool.kind, f"{tool.name}({shown[:200]})",
                                                           {"arguments": arguments}))
            if refusal is not None:
                raise PermissionError(refusal)
            result = _within(self.timeout, tool, args, kwargs)
            event["result"] = sub_call_text(_json_text(result, f"the result of {tool.name}"))
            return result
        except Exception as exc:
            event["error"] = tool_error_text(exc)
            raise
        finally:
            event["seconds"] = round(time.monotonic() - started, 3)
            self.emit("sub_call", event)


def tool_error_text(exc: BaseException) -> str:
    """A tool's exception as the model is shown it (and the ``tool_call`` event records it): type and message."""
    return f"{type(exc).__name__}: {exc}"


def _within(timeout: float, tool: Tool, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``tool(*args, **kwargs)`` on a helper thread, waited for at most ``timeout`` seconds (a tool that hangs is
    left behind, and the model's code gets a TimeoutError)."""
    future = submit(functools.partial(tool.function, *args, **kwargs), f"rlm-tool-{tool.name}")
    if not wait([future], timeout).done:
        raise TimeoutError(f"{tool.name} did not return within {timeout:g} s")
    error = future.exception()
    if error is None:
        return future.result()
    if not isinstance(error, Exception):
        raise RuntimeError(f"{tool.name} stopped: {type(error).__name__}")
    raise error.with_traceback(None)


def _json_text(value: Any, what: str) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON data ({exc})") from None
    if len(text) > MAX_JSON_CHARS:
        raise ValueError(f"{what} is {len(text):,} characters of JSON, more than {MAX_JSON_CHARS:,}")
    return text


def _import(reference: str, where: str) -> Any:
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigError(f"{where}: {reference!r} is not module:function", hint="e.g. --tool mypkg.search:find")
    try:
        return import_object(reference)
    except MissingAttribute:
        raise ConfigError(f"{where}: {module_name!r} has no {attribute!r}") from None
    except Exception as exc:  # noqa: BLE001 - whatever the import raised, said in one line
        raise ConfigError(f"{where}: cannot import {module_name!r} for {reference}: {type(exc).__name__}: {exc}") \
            from None


def _summary(function: Callable[..., Any]) -> str:
    return ((inspect.getdoc(function) or "").strip().splitlines() or [""])[0].strip()


def signature_of(function: Callable[..., Any]) -> Optional[inspect.Signature]:
    """``function``'s signature with annotations written as strings (``from __future__ import annotations``)
    evaluated to the types they name where they can be, else as written; None when it has none."""
    for evaluate in (True, False):
        try:
            return inspect.signature(function, eval_str=evaluate)
        except Exception:  # noqa: BLE001 - an annotation that cannot be evaluated: tried as written, then none
            continue
    return None


def _parameters(function: Callable[..., Any]) -> tuple[str, str]:
    """(parameter list, call arguments) for the sandbox wrapper: the real parameters when every default is a plain
    literal and no parameter is positional-only, else ``*args, **kwargs``."""
    signature = signature_of(function)
    parameters = list(signature.parameters.values()) if signature is not None else []
    if signature is None or not all(_plain(p) for p in parameters):
        return "*args, **kwargs", "*args, **kwargs"
    bare = inspect.Signature([p.replace(annotation=p.empty) for p in parameters])  # defaults shown as their repr
    passed = [f"*{p.name}" if p.kind is p.VAR_POSITIONAL else f"**{p.name}" if p.kind is p.VAR_KEYWORD
              else f"{p.name}={p.name}" for p in parameters]
    return str(bare)[1:-1], ", ".join(passed)


def _plain(parameter: inspect.Parameter) -> bool:
    if parameter.kind is parameter.POSITIONAL_ONLY:
        return False
    if parameter.default is parameter.empty:
        return True
    try:
        return ast.literal_eval(repr(parameter.default)) == parameter.default
    except (ValueError, SyntaxError):
        return False
