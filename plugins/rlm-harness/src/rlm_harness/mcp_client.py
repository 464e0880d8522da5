"""The MCP client of a harness run: the configured servers started, their tools listed, calls with timeouts.

Built on the official ``mcp`` SDK (``stdio_client``, ``streamable_http_client``, ``ClientSession``), on a private
asyncio loop in a background thread so the synchronous environment can call it. Each server lives in one task
that enters the SDK's context managers, initializes, lists its tools and then waits to be stopped (the SDK's
contexts must be left by the task that entered them): stopping it closes the session and, for stdio, closes the
server's stdin, then terminates and kills its process tree (the SDK's shutdown, bounded).

Nothing here may hang a run: start-up (spawn, initialize, list tools) has a timeout per server, every call has
its own, and a server that fails to start, crashes or stops answering becomes an error *for its tools* (the
model reads it as the call's observation), never an exception out of the run. A stdio server is a host program
the user configured: it starts in the workdir (or its ``cwd``) with PATH, HOME, LANG, USER, SHELL and TERM and
only the variables its ``env`` names — never the rest of the user's environment (API keys stay out).

What a server says (its tool names, descriptions, schemas, results, its stderr) is hostile text: names are
reduced to ``[A-Za-z0-9_-]``, descriptions and results clipped and stripped of control characters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from rlm_host.sdk.commands import terminal_safe

from rlm_harness.settings import McpServer

#: Tools taken from one server (the rest are left out, said in its status).
MAX_TOOLS_PER_SERVER = 64
#: Characters of a tool's description and of its JSON schema kept for the prompt.
DESCRIPTION_CHARS = 1200
SCHEMA_CHARS = 4000
#: Variables of the user's environment every stdio server gets (the SDK adds HOME, LOGNAME, PATH, SHELL, TERM, USER).
PASSED_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
STOP_TIMEOUT = 10.0
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class McpTool:
    """One tool of one server as the model sees it: ``name`` is ``mcp__<server>__<tool>``."""

    server: str
    tool: str  # its own name on the server
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool  # annotations.readOnlyHint, believed only with the server's trust_annotations
    destructive: bool  # annotations.destructiveHint (MCP's default when not read-only: true); true when not believed

    @property
    def kind(self) -> Literal["read", "tool"]:
        """The approval kind: ``read`` for a read-only tool, ``tool`` (asked in ``ask`` mode) otherwise."""
        return "read" if self.read_only else "tool"


@dataclass
class ServerState:
    name: str
    config: McpServer
    tools: list[McpTool] = field(default_factory=list)
    error: Optional[str] = None  # why it is not available (start-up failed, crashed…)
    session: Any = None
    stop: Optional[asyncio.Event] = None
    task: Optional[concurrent.futures.Future[None]] = None  # _serve on the pool's loop (run_coroutine_threadsafe)
    started_s: Optional[float] = None  # seconds start-up took
    errlog: Any = None
    note: str = ""


class McpPool:
    """The servers of one run. ``start()`` starts them all (concurrently, each with its start-up timeout);
    ``tools`` lists what they offer; ``call(name, args)`` returns an observation dict; ``close()`` stops them."""

    def __init__(self, servers: dict[str, McpServer], workdir: Optional[Path]) -> None:
        self.workdir = Path(workdir).resolve() if workdir is not None else Path.cwd()
        self.states = {name: ServerState(name, config) for name, config in servers.items() if not config.disabled}
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if not self.states or self._loop is not None:
            return
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="rlm-harness-mcp", daemon=True)
        self._thread.start()
        waits = []
        for state in self.states.values():
            ready: concurrent.futures.Future = concurrent.futures.Future()
            state.task = asyncio.run_coroutine_threadsafe(self._serve(state, ready), self._loop)
            waits.append((state, ready))
        for state, ready in waits:  # each _serve bounds its own start-up; this is a last resort
            try:
                ready.result(timeout=state.config.startup_timeout + 15)
            except concurrent.futures.TimeoutError:
                state.error = state.error or f"did not start within {state.config.startup_timeout:g} s"

    def close(self) -> None:
        """Stop every server (idempotent); bounded: a server that will not stop is killed by the SDK."""
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        self._loop = None
        for state in self.states.values():
            if state.stop is not None:
                loop.call_soon_threadsafe(state.stop.set)
        deadline = time.monotonic() + STOP_TIMEOUT
        for state in self.states.values():
            if state.task is not None:
                try:
                    state.task.result(timeout=max(0.1, deadline - time.monotonic()))
                except BaseException:  # noqa: BLE001 - stopping: whatever it ended with, it ended
                    state.task.cancel()
            if state.errlog is not None:
                state.errlog.close()
                state.errlog = None
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(STOP_TIMEOUT)
        if not loop.is_running():
            loop.close()

    def __enter__(self) -> "McpPool":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ what the model sees

    @property
    def tools(self) -> list[McpTool]:
        return [tool for state in self.states.values() for tool in state.tools]

    def status(self) -> list[dict[str, Any]]:
        """Per server: its transport, tools or error, start-up seconds (``rlm harness tools``)."""
        rows = []
        for state in self.states.values():
            rows.append({"server": state.name, "transport": state.config.transport, "error": state.error,
                         "tools": [t.name for t in state.tools], "startup_s": state.started_s,
                         **({"note": state.note} if state.note else {})})
        return rows

    def find(self, name: str) -> Optional[McpTool]:
        return next((tool for tool in self.tools if tool.name == name), None)

    def unavailable(self, name: str) -> Optional[str]:
        """Why ``mcp__<server>__…`` cannot be called when its server is configured but not available, else None."""
        for state in self.states.values():
            if name.startswith(f"mcp__{state.name}__") and state.error is not None:
                return f"MCP server {state.name!r} is not available: {state.error}"
        return None

    def call(self, name: str, args: dict[str, Any], timeout: Optional[float] = None) -> dict[str, Any]:
        """Call the tool ``name`` (``mcp__server__tool``): an observation, ``success`` False on any failure; a
        result's structured content (JSON data) is under ``structured`` too."""
        tool = self.find(name)
        if tool is None:
            return {"success": False, "error": f"no MCP tool {name!r}"}
        state = self.states[tool.server]
        if state.error is not None or state.session is None or self._loop is None:
            return {"success": False, "error": f"MCP server {tool.server!r} is not available: {state.error}"}
        limit = float(timeout or state.config.call_timeout)
        started = time.monotonic()
        future = asyncio.run_coroutine_threadsafe(self._call(state, tool.tool, args, limit), self._loop)
        try:
            result = future.result(timeout=limit + 5)
        except (concurrent.futures.TimeoutError, TimeoutError):
            future.cancel()
            return {"success": False, "error": f"MCP tool {name} did not answer within {limit:g} s (cancelled)",
                    "seconds": round(time.monotonic() - started, 3)}
        except BaseException as exc:  # noqa: BLE001 - a crashed server, a protocol error: the call's observation
            why = _reason(exc)
            if _connection_lost(exc) or not self._alive(state):
                state.error = f"the server stopped ({why})"
            return {"success": False, "error": f"MCP tool {name} failed: {why}",
                    "seconds": round(time.monotonic() - started, 3)}
        return {**_render_result(result), "seconds": round(time.monotonic() - started, 3)}

    # ------------------------------------------------------------------ the loop's side

    async def _serve(self, state: ServerState, ready: concurrent.futures.Future) -> None:
        from contextlib import AsyncExitStack

        import anyio
        from mcp import ClientSession

        state.stop = asyncio.Event()
        started = time.monotonic()
        try:
            async with AsyncExitStack() as stack:
                # the SDK's contexts hold task groups: entered here, outside any cancel scope of ours
                read, write = await stack.enter_async_context(self._transport(state))
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(max(0.1, state.config.startup_timeout - (time.monotonic() - started))):
                    await session.initialize()
                    listed = await session.list_tools()
                state.tools = self._tools_of(state, getattr(listed, "tools", []) or [])
                state.session = session
                state.started_s = round(time.monotonic() - started, 3)
                ready.set_result(True)
                await state.stop.wait()
                state.session = None
        except BaseException as exc:  # noqa: BLE001 - a start-up failure is this server's error, not the run's
            state.session = None
            if not ready.done():
                why = "start-up timed out" if isinstance(_leaf(exc), TimeoutError) else _reason(exc)
                state.error = f"could not start ({why}{self._stderr_tail(state)})"
                state.tools = []
                ready.set_result(False)
            elif state.error is None and not state.stop.is_set():
                state.error = f"the server stopped ({_reason(exc)})"
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise

    def _transport(self, state: ServerState) -> Any:
        config = state.config
        if config.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            cwd = Path(config.cwd) if config.cwd else self.workdir
            cwd = cwd if cwd.is_absolute() else self.workdir / cwd
            env = {k: os.environ[k] for k in PASSED_VARIABLES if k in os.environ}
            params = StdioServerParameters(command=config.command, args=list(config.args), cwd=str(cwd),
                                           env={**env, **config.env})
            state.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return stdio_client(params, errlog=state.errlog)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        return _http_transport(config, httpx2, streamable_http_client)

    async def _call(self, state: ServerState, tool: str, args: dict[str, Any], limit: float) -> Any:
        import anyio

        with anyio.fail_after(limit):
            return await state.session.call_tool(tool, args, read_timeout_seconds=limit)

    def _alive(self, state: ServerState) -> bool:
        return state.session is not None and state.task is not None and not state.task.done()

    def _stderr_tail(self, state: ServerState) -> str:
        if state.errlog is None:
            return ""
        try:
            state.errlog.flush()
            state.errlog.seek(0)
            tail = terminal_safe(state.errlog.read()[-600:]).strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr: {tail}" if tail else ""

    def _tools_of(self, state: ServerState, listed: list[Any]) -> list[McpTool]:
        tools: list[McpTool] = []
        seen: set[str] = set()
        for raw in listed:
            if len(tools) >= MAX_TOOLS_PER_SERVER:
                state.note = f"{len(listed) - len(tools)} more tools left out (the limit is {MAX_TOOLS_PER_SERVER})"
                break
            own = str(getattr(raw, "name", "") or "")
            name = f"mcp__{state.name}__{_NAME_CHARS.sub('_', own)[:64]}"
            if not own or name in seen:
                continue
            seen.add(name)
            read_only, destructive = _approval_hints(getattr(raw, "annotations", None), state.config.trust_annotations)
            description = terminal_safe(str(getattr(raw, "description", "") or getattr(raw, "title", "") or ""))
            tools.append(McpTool(state.name, own, name, description[:DESCRIPTION_CHARS],
                                 _schema(getattr(raw, "input_schema", None)), read_only, destructive))
        return tools


def _approval_hints(notes: Any, trusted: bool) -> tuple[bool, bool]:
    """(read_only, destructive) of a tool for approvals: the server's ``readOnlyHint`` / ``destructiveHint`` when
    the user trusts its annotations, else (False, True), MCP's own default for a tool that says nothing."""
    if not trusted:
        return False, True
    read_only = getattr(notes, "read_only_hint", None) is True
    return read_only, not read_only and getattr(notes, "destructive_hint", None) is not False


def _http_transport(config: McpServer, httpx2: Any, streamable_http_client: Any) -> Any:
    """The streamable HTTP transport with its own HTTP client (the configured headers), closed with it."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def transport() -> Any:
        timeout = httpx2.Timeout(config.call_timeout, connect=min(config.startup_timeout, 30.0))
        async with httpx2.AsyncClient(headers=dict(config.headers), timeout=timeout) as http:
            async with streamable_http_client(str(config.url), http_client=http) as streams:
                yield streams[0], streams[1]

    return transport()


def _schema(value: Any) -> dict[str, Any]:
    """The tool's input schema as the prompt shows it: an object schema, or a bare one when it is too large."""
    if not isinstance(value, dict):
        return {"type": "object"}
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return {"type": "object"}
    if len(text) > SCHEMA_CHARS:
        return {"type": "object", "description": "(the server's schema is too large to show)"}
    return json.loads(terminal_safe(text))


def _render_result(result: Any) -> dict[str, Any]:
    """A CallToolResult as an observation: its text parts, other parts named, structured content as JSON."""
    parts = []
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(str(text) if text is not None else f"[resource {getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'content'} part: {getattr(block, 'mime_type', '') or 'binary'}]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    failed = bool(getattr(result, "is_error", False))
    text = terminal_safe("\n".join(parts))
    return {"success": not failed, "content": text, **({"error": text[:400] or "the tool failed"} if failed else {}),
            **({"structured": structured} if isinstance(structured, dict) and not failed else {})}


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    leaf = _leaf(exc)
    text = terminal_safe(str(leaf)).strip()[:400]
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _connection_lost(exc: BaseException) -> bool:
    leaf = _leaf(exc)
    text = str(leaf).lower()
    return isinstance(leaf, (ConnectionError, EOFError)) or "closed" in text or "connection" in text
