"""The ``adk-rlm-agent`` framework (mode ``agent``): seed 003's conversational root agent, on ADK 2.13.

::

    rlm_agent (LlmAgent)                       our root model (RlmLlm: tool calls through the text protocol)
      tools: rlm_execute_code(code)            code in the run's sandbox session (ctx.tools.run_code)
             rlm_load_context(path, variable)  a file of the project folder into a REPL variable, confined
                                               (ProjectFiles: model-named paths are hostile)
             rlm_query_context(query, variable) an RLM sub-query over a REPL variable: ``rlm_query`` on the run's
                                               sub-call path (a child run; at max_depth a plain llm_query)
             the user's functions (--tool)
      ├─ context_loader (LlmAgent, mode single_turn)  called like a tool (ADK runs it inline in the session and
      │                                          returns its answer): rlm_list_files, rlm_load_context
      └─ rlm_workflow (the adk-rlm loop)        a transfer_to_agent target: code generator, REPL executor,
                                                 completion checker; its FINAL is the run's answer
      callbacks: the bundles of [framework.adk-rlm-agent] callbacks (``rlm_adapter_adk.bundles``) on both
      LlmAgents: approvals (always), metadata, logging, or a program's own

Steps are recorded as ADK's events arrive, as in ``google-adk`` (``tool_call``, ``tool_result`` / ``tool_error``,
``model_text``, ``retry``, ``final``, ``final_rejected``); the context loader's carry ``agent: context_loader``; the
workflow records its own (``run_code``, ``no_code``, ``final``). A tool result's ``metadata`` (the ``metadata``
bundle: :class:`~rlm_adapter_adk.metadata.ToolMetadata`, with the loaded context's
:class:`~rlm_adapter_adk.metadata.ContextMetadata` and each sub-LM call's
:class:`~rlm_adapter_adk.metadata.SubLMCallMetadata`) is in the step's observation; the session's totals are in
the run's ``framework_metadata``.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import json
import keyword
import os
import re
import stat
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from google.adk.agents import LlmAgent
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext

from rlm_adapter_adk.agent_settings import AdkAgentSettings
from rlm_adapter_adk.bundles import agent_callbacks, build_bundles
from rlm_adapter_adk.framework import APP, AdkFramework
from rlm_adapter_adk.metadata import ContextMetadata, SessionMetrics
from rlm_adapter_adk.model import RlmLlm
from rlm_adapter_adk.rlm_loop import STATE_FINAL, AdkRlmFramework
from rlm_adapter_adk.rlm_settings import AdkRlmSettings
from rlm_host import ConfigError, RlmError
from rlm_host.sdk.context import describe_context
from rlm_host.sdk.environments import HELPERS_SOURCE, PathRefused, ProjectFiles, document_names
from rlm_host.sdk.frameworks import (
    FrameworkContext, answer_type_instructions, describe_context_briefly, truncate,
)
from rlm_host.sdk.sandbox import open_in_workspace

ROOT, LOADER, WORKFLOW = "rlm_agent", "context_loader", "rlm_workflow"
#: Names the user's tools may not take.
OWN_TOOLS = ("rlm_execute_code", "rlm_load_context", "rlm_query_context", "rlm_list_files", LOADER, WORKFLOW,
             "transfer_to_agent")
#: Sub-LM calls listed in ``framework_metadata`` (the count is always whole).
MAX_LISTED_CALLS = 200

ROOT_INSTRUCTION = """\
You answer a task about data too large to read at once, as the root agent of a recursive language model (RLM). \
The data is NOT in this conversation: it is in a persistent Python REPL. {description}

Your tools:
- rlm_execute_code(code): run Python in the REPL. Inside the code, llm_query(prompt) and \
llm_query_batched(prompts) ask a language model about a piece of text you pass it, and rlm_query(prompt, context) \
asks a recursive sub-agent. Only printed output comes back to you, cut to a readable size; variables persist \
between calls. Call FINAL(answer) in the code to give the final answer.
- rlm_load_context(path, variable): load a file of the project folder into the REPL as `variable` (default \
`context`): its text, or the data of a .json / .jsonl file. It answers with what was loaded, never the content.
- rlm_query_context(query, variable): ask a recursive RLM sub-run `query` about a REPL variable (default \
`context`), which it gets as its own context; its answer comes back.{helpers}

Look at the data with code before you answer. When you know the answer, give it as the final answer. You have \
{max_steps} turns (replies) in all."""
LOADER_HELP = ("\n- context_loader(request): a helper agent that lists the project folder and loads the files your "
               "request describes into the REPL.")
WORKFLOW_HELP = ("\n\nYou may also hand the whole task to the agent rlm_workflow (transfer_to_agent): the RLM loop, "
                 "which writes ```repl code, runs it and ends with FINAL; its answer is the final answer.")
LOADER_INSTRUCTION = """\
You load data into the Python REPL of an RLM agent, as its request asks. rlm_list_files(folder, depth) lists the \
files of the project folder; rlm_load_context(path, variable) loads one file into the REPL as `variable` (default \
`context`). Load what the request names (list the folder first when you do not know the exact path), then answer \
with one short line per file loaded: its variable and what it holds. Do not answer the task itself."""

DESCRIPTIONS = {
    "rlm_execute_code": "Run Python code in the persistent REPL (the RLM's sandbox). `context` holds the task's data "
                        "(inspect it, do not print it whole); llm_query(prompt), llm_query_batched(prompts) and "
                        "rlm_query(prompt, context) are there. Returns what the code printed, or its error. "
                        "FINAL(answer) in the code gives the final answer.",
    "rlm_load_context": "Load a file of the project folder into the REPL as the variable `variable` (default "
                        "`context`): text, or the data of a .json / .jsonl file. Returns a description of what was "
                        "loaded (type, size, chunks, keys), never the content.",
    "rlm_query_context": "Ask a recursive RLM sub-run `query` about the REPL variable `variable` (default `context`), "
                         "given to it as its context. Returns its answer.",
    "rlm_list_files": "List the files and folders under `folder` of the project folder (default: all of it), down to "
                      "`depth` levels.",
}
_ERROR_TYPE = re.compile(r"\b([A-Z][A-Za-z]+(?:Error|Exception|Exit|Interrupt))\b")


def create(settings: Optional[AdkAgentSettings], ctx: FrameworkContext) -> "AdkAgentFramework":
    """The framework factory (``factory(settings, FrameworkContext)``)."""
    return AdkAgentFramework(settings, ctx)


class AdkAgentFramework(AdkFramework):
    """The root agent, its context loader and workflow, and the callback bundles; the run loop is ``google-adk``'s
    (invocations of an ``InMemoryRunner``, each event recorded as it arrives)."""

    name = "adk-rlm-agent"
    own_tools = OWN_TOOLS
    root_name = ROOT

    def __init__(self, settings: Optional[AdkAgentSettings], ctx: FrameworkContext) -> None:
        super().__init__(settings or AdkAgentSettings(), ctx)
        self.settings: AdkAgentSettings
        # what the bundles use (rlm_adapter_adk.bundles)
        self.run_id = ctx.scope.run_id
        self.approvals = ctx.tools.sub_calls.tools.approvals  # the run's ([run] approve, approval_rules)
        self.tool_kinds = {name: "read" for name in ("rlm_execute_code", "rlm_load_context", "rlm_query_context",
                                                     "rlm_list_files")}
        self.metrics = SessionMetrics()
        self.facts: dict[str, dict[str, Any]] = {}  # what a tool found, by function call id, for the metadata bundle
        self.contexts: list[dict[str, Any]] = []  # ContextMetadata of every load, in order
        self.meter = SubCallMeter(ctx.tools.sub_calls)  # before the sandbox session opens: it registers the functions
        self._loaded: dict[str, ContextMetadata] = {}
        self._context_meta = dict(ctx.context_meta)  # what the instructions say `context` is
        self._files: Optional[ProjectFiles] = None
        self._state: dict[str, Any] = {}
        self._metadata_on = "metadata" in self.settings.callbacks
        self.workflow = None
        if self.settings.workflow:
            self.workflow = AdkRlmFramework(AdkRlmSettings(max_output_chars=self.settings.max_output_chars,
                                                           preview_chars=self.settings.preview_chars,
                                                           instructions=self.settings.instructions), ctx)
        self.bundles = build_bundles(self.settings.callbacks, self)  # ConfigError (exit 2) for an unknown name

    # ------------------------------------------------------------------ the agent tree

    def agent(self) -> LlmAgent:
        sub_agents: list[Any] = []
        if self.settings.context_loader:
            sub_agents.append(LlmAgent(
                name=LOADER, model=RlmLlm(self.ctx.root), mode="single_turn",
                instruction=lambda _context: LOADER_INSTRUCTION,  # a callable: no {placeholder} filling
                description="Loads the files a request describes into the REPL (lists the project folder, loads "
                            "each file as a variable); answers with what it loaded",
                tools=[FunctionTool(tool) for tool in self.loader_tools()],
                disallow_transfer_to_parent=True, disallow_transfer_to_peers=True,
                **agent_callbacks(self.bundles),
            ))
        if self.workflow is not None:
            sub_agents.append(self.workflow.agent(
                name=WORKFLOW, description="The RLM loop: writes ```repl code, runs it in the REPL, repeats until "
                                           "FINAL; answers the task itself"))
        return LlmAgent(
            name=ROOT,
            model=RlmLlm(self.ctx.root),
            instruction=lambda _context: self.instructions(),  # recomputed: a load changes what `context` is
            description="Answers a task about data loaded in a Python REPL, as an RLM",
            tools=[FunctionTool(tool) for tool in self.tools()],
            sub_agents=sub_agents,
            **agent_callbacks(self.bundles),
        )

    def instructions(self) -> str:
        meta = self._context_meta
        if meta.get("type") in (None, "none"):
            description = ("The variable `context` is None: no data was given yet (load a file, or answer from the "
                           "task).")
        else:
            description = f"The variable `context` holds {describe_context_briefly(meta, self.settings.preview_chars)}."
        others = [m.format_for_prompt() for name, m in self._loaded.items() if name != "context"]
        if others:
            description += " Loaded too: " + "; ".join(others) + "."
        helpers = LOADER_HELP if self.settings.context_loader else ""
        text = ROOT_INSTRUCTION.format(description=description, helpers=helpers, max_steps=self.ctx.max_steps)
        if self.workflow is not None:
            text += WORKFLOW_HELP
        extra = [answer_type_instructions(self.ctx.output), self.settings.instructions.strip()]
        return "\n\n".join([text, *(part for part in extra if part)])

    # ------------------------------------------------------------------ the tools

    def tools(self) -> list[Any]:
        async def rlm_execute_code(code: str, *, tool_context: ToolContext) -> dict[str, Any]:
            return await self._execute(code, tool_context)

        async def rlm_load_context(path: str, variable: str = "context", *,
                                   tool_context: ToolContext) -> dict[str, Any]:
            return await self._load(path, variable, tool_context)

        async def rlm_query_context(query: str, variable: str = "context", *,
                                    tool_context: ToolContext) -> dict[str, Any]:
            return await self._query(query, variable, tool_context)

        for function in (rlm_execute_code, rlm_load_context, rlm_query_context):
            function.__doc__ = DESCRIPTIONS[function.__name__]
        return [rlm_execute_code, rlm_load_context, rlm_query_context, *self._user_tools()]

    def loader_tools(self) -> list[Any]:
        async def rlm_list_files(folder: str = ".", depth: int = 2) -> dict[str, Any]:
            return await self._list(folder, depth)

        async def rlm_load_context(path: str, variable: str = "context", *,
                                   tool_context: ToolContext) -> dict[str, Any]:
            return await self._load(path, variable, tool_context)

        for function in (rlm_list_files, rlm_load_context):
            function.__doc__ = DESCRIPTIONS[function.__name__]
        return [rlm_list_files, rlm_load_context]

    def tool_summary(self, tool: str, args: dict[str, Any]) -> str:
        """The one line an approval request shows."""
        shown = {"rlm_execute_code": args.get("code"), "rlm_load_context": args.get("path"),
                 "rlm_query_context": args.get("query"),
                 "rlm_list_files": args.get("folder", ".")}.get(tool)
        return f"{tool}: {str(shown if shown is not None else json.dumps(args, default=str))[:200]}"

    async def _execute(self, code: str, tool_context: ToolContext) -> dict[str, Any]:
        before = await asyncio.to_thread(self._variables) if self._metadata_on else set()
        outcome = await asyncio.to_thread(self.ctx.tools.run_code, code)
        facts: dict[str, Any] = {}
        if self._metadata_on:
            facts["variables_created"] = sorted(await asyncio.to_thread(self._variables) - before)
        if not outcome.ok:
            found = _ERROR_TYPE.search(str(outcome.result.error or ""))
            facts["error_type"] = found.group(1) if found else "error"
        self._note(tool_context, facts)
        result: dict[str, Any] = {"ok": outcome.ok, "output": truncate(outcome.text, self.settings.max_output_chars)}
        if outcome.final is not None:
            result["final"] = outcome.final
        if outcome.rejected is not None:  # FINAL() with an answer of the wrong type: the output says so
            result["final_rejected"] = outcome.rejected
        return result

    async def _load(self, path: str, variable: str, tool_context: ToolContext) -> dict[str, Any]:
        try:
            name = self._variable_to_bind(variable)
            files = self._project_files()
            relative, data = await asyncio.to_thread(read_confined, files, path, self.settings.max_load_bytes)
            value = decode(relative, data)
            await asyncio.to_thread(self._bind, name, value)
        except (RlmError, PathRefused, ValueError, TypeError, OSError) as exc:
            self._note(tool_context, {"error_type": type(exc).__name__})
            return {"ok": False, "output": f"error: {getattr(exc, 'message', None) or exc}"}
        meta = ContextMetadata.of(value, variable=name, sources=[relative], chunk_chars=self.settings.chunk_chars)
        self._loaded[name] = meta
        if name == "context":  # the instructions (the root's and the workflow's) describe it from now on
            self._context_meta = describe_context(value, self.settings.preview_chars)
            if self.workflow is not None:
                self.workflow.context_meta = self._context_meta
        self._note(tool_context, {"context": meta})
        return {"ok": True, "output": f"Loaded {relative} into the REPL: {meta.format_for_prompt()}."}

    async def _query(self, query: str, variable: str, tool_context: ToolContext) -> dict[str, Any]:
        name = str(variable or "context").strip()
        if not name.isidentifier():
            return {"ok": False, "output": f"error: {name!r} is not a variable name"}
        try:
            value = await asyncio.to_thread(self.ctx.tools.session.get_variable, name)
        except KeyError:
            return {"ok": False, "output": f"error: the REPL has no variable {name!r} (load one with rlm_load_context)"}
        except Exception as exc:  # noqa: BLE001 - a value the sandbox cannot hand over (not JSON data)
            return {"ok": False, "output": f"error: {name} cannot be given to a sub-run: {exc}"}
        first, started, answer, error = len(self.meter.calls), time.monotonic(), None, None
        try:
            with self.meter.labelled("rlm_query at max_depth (a plain llm_query)"):
                answer = await asyncio.to_thread(self.ctx.tools.sub_calls.rlm_query, query, value)
        except RuntimeError as exc:  # how a sub-call failure is reported (the child's error, max_llm_calls…)
            error = str(exc)
        finally:
            if len(self.meter.calls) == first:  # a child run answered (its own calls are its own)
                self.meter.add(kind="rlm_query", model=getattr(self.ctx.root, "name", None), prompt=query,
                               response=answer or "", seconds=time.monotonic() - started, error=error)
        if error is not None:
            self._note(tool_context, {"error_type": "RuntimeError"})
            return {"ok": False, "output": f"error: {error}"}
        return {"ok": True, "output": truncate(str(answer), self.settings.max_output_chars)}

    async def _list(self, folder: str, depth: int) -> dict[str, Any]:
        try:
            listing = await asyncio.to_thread(self._project_files().list_tree, folder or ".", depth)
        except (RlmError, PathRefused, OSError) as exc:
            return {"ok": False, "output": f"error: {getattr(exc, 'message', None) or exc}"}
        lines = listing["entries"] or ["(empty)"]
        if listing["truncated"]:
            lines.append("… (more entries: list a sub-folder)")
        return {"ok": True, "output": truncate("\n".join(lines), self.settings.max_output_chars)}

    def _note(self, tool_context: ToolContext, facts: dict[str, Any]) -> None:
        if self._metadata_on:
            self.facts[str(tool_context.function_call_id or id(tool_context))] = facts

    def _project_files(self) -> ProjectFiles:
        """The folder files are loaded from, guarded as every folder opened for the model is (on first use: a run
        that loads nothing may start anywhere)."""
        if self._files is None:
            configured = self.settings.context_root
            root = self.ctx.guarded_folder(Path(configured) if configured else None, "load context files from")
            if not root.is_dir():
                raise ConfigError(f"[framework.adk-rlm-agent] context_root {root} is not a folder")
            self._files = ProjectFiles(root)
        return self._files

    def _variable_to_bind(self, variable: Any) -> str:
        name = str(variable if variable is not None else "context").strip() or "context"
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise ValueError(f"{name!r} is not a variable name the REPL can take (letters, digits, _; no leading _)")
        if name != "context" and name in self._reserved():
            raise ValueError(f"{name!r} is a name the REPL already uses (a built-in, a helper or a tool): pick another")
        return name

    def _reserved(self) -> set[str]:
        helpers = {node.name for node in ast.parse(HELPERS_SOURCE).body if isinstance(node, ast.FunctionDef)}
        system = {"FINAL", "FINAL_VAR", "SUBMIT", "SHOW_VARS", "context_names"}
        return (set(dir(builtins)) | set(self.ctx.tools.sub_calls.functions()) | helpers
                | set(self.ctx.tools.user_tools.names) | system)

    def _bind(self, name: str, value: Any) -> None:
        session = self.ctx.tools.session
        session.set_variable(name, value)
        if name == "context":
            session.set_variable("context_names", document_names(value))

    def _variables(self) -> set[str]:
        try:
            return set(self.ctx.tools.session.list_variables())
        except Exception:  # noqa: BLE001 - metadata only: a sandbox that cannot list gives none
            return set()

    # ------------------------------------------------------------------ the run's events

    def _record(self, event: Any, agent: Optional[str] = None) -> Optional[tuple[Optional[str], Optional[str]]]:
        if event.author == LOADER:  # the context loader's calls and answer, tagged: never the run's answer
            return super()._record(event, agent=LOADER)
        if event.author != ROOT:  # the workflow's agents: the loop records its own steps
            return None
        return super()._record(event, agent=agent)

    async def _invocation(self, runner: Any, session_id: str, message: str) -> tuple[Optional[str], Optional[str]]:
        answer, invalid = await super()._invocation(runner, session_id, message)
        session = await runner.session_service.get_session(app_name=APP, user_id="rlm", session_id=session_id)
        self._state = dict(session.state) if session is not None else {}
        if answer is None and invalid is None and self._rejected is None and self._state.get(STATE_FINAL) is not None:
            answer = str(self._state[STATE_FINAL])  # rlm_workflow's FINAL (its step is recorded)
        self.metrics.final_answer_found = self.metrics.final_answer_found or answer is not None
        return answer, invalid

    def _metadata(self) -> dict[str, Any]:
        metadata = {**super()._metadata(), "callbacks": list(self.settings.callbacks)}
        if self._metadata_on:
            metadata.update(session_metrics=self.metrics.to_dict(), contexts=list(self.contexts),
                            sub_lm_calls=self.meter.calls[:MAX_LISTED_CALLS])
        if self._state.get("rlm_iterations"):  # the workflow ran
            metadata["workflow_metrics"] = self._state.get("rlm_metrics")
        return metadata


# ---------------------------------------------------------------------------------------------- files


def read_confined(files: ProjectFiles, raw: Any, max_bytes: int) -> tuple[str, bytes]:
    """The bytes of the file ``raw`` names inside ``files``' folder, and its relative path: the host's guard
    (``ProjectFiles.resolve``: no ``..``, nothing outside, no link out), then opened as the host's file actions open
    (``open_in_workspace``: one folder at a time from the folder's descriptor, never through a link, without
    blocking: a swap after the check reaches nothing outside), a regular file, and at most ``max_bytes``."""
    path = files.resolve(raw)
    relative = files.relative(path)
    if path.is_dir():
        raise PathRefused(f"{relative} is a folder: name a file in it (rlm_list_files shows them)")
    try:
        fd = open_in_workspace(files.root, relative, os.O_RDONLY)
    except FileNotFoundError:
        raise PathRefused(f"{relative} does not exist") from None
    except OSError as exc:
        raise PathRefused(f"{relative}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PathRefused(f"{relative} is not a regular file")
        if info.st_size > max_bytes:
            raise PathRefused(f"{relative} is {info.st_size:,} bytes; the limit is {max_bytes:,} "
                              "([framework.adk-rlm-agent] max_load_bytes)")
        os.set_blocking(fd, True)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PathRefused(f"{relative} is larger than {max_bytes:,} bytes")
    return relative, data


def decode(relative: str, data: bytes) -> Any:
    """A file's value as the host's built-in loaders read it: JSON for .json, a list for .jsonl / .ndjson, else
    text (a binary file is refused)."""
    if b"\x00" in data[:8192]:
        raise ValueError(f"{relative} is a binary file: only text, .json and .jsonl files are loaded here (pass "
                         "other formats with --context, where the installed context loaders read them)")
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    suffix = Path(relative).suffix.lower()
    try:
        if suffix == ".json":
            return json.loads(text)
        if suffix in (".jsonl", ".ndjson"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ValueError(f"{relative}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    return text


# ---------------------------------------------------------------------------------------------- sub-LM calls


class SubCallMeter:
    """Each sub-LM call of the run's sub-call path, as :class:`~rlm_adapter_adk.metadata.SubLMCallMetadata` data:
    the model lookup of ``ctx.tools.sub_calls`` is wrapped (each ``complete`` timed and measured), and
    ``llm_query_batched`` marks the calls it makes as one batch. Installed before the sandbox session opens (it
    registers the sub-call functions then)."""

    def __init__(self, sub_calls: Any) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._batch: Optional[int] = None  # the size of the llm_query_batched call in progress
        self._label: Optional[str] = None
        lookup, batched = sub_calls.model_for, sub_calls.llm_query_batched

        def model_for(model: Optional[str] = None) -> Any:
            return _MeteredRole(lookup(model), self)

        def llm_query_batched(prompts: Any, model: Optional[str] = None) -> list[str]:
            self._batch = len(prompts) if isinstance(prompts, (list, tuple)) else None
            try:
                return batched(prompts, model)
            finally:
                self._batch = None

        sub_calls.model_for = model_for
        sub_calls.llm_query_batched = llm_query_batched

    @contextlib.contextmanager
    def labelled(self, kind: str) -> Iterator[None]:
        """Calls made meanwhile are of ``kind`` (rlm_query's own fallback at max_depth)."""
        self._label = kind
        try:
            yield
        finally:
            self._label = None

    def add(self, *, kind: Optional[str] = None, model: Optional[str], prompt: str, response: str, seconds: float,
            input_tokens: Optional[int] = None, output_tokens: Optional[int] = None,
            error: Optional[str] = None) -> None:
        batch = self._batch
        kind = kind or self._label or ("llm_query_batched" if batch else "llm_query")
        with self._lock:
            self.calls.append({"call_index": len(self.calls) + 1, "kind": kind, "model": model,
                               "prompt_length": len(prompt), "response_length": len(response or ""),
                               "latency_ms": round(seconds * 1000, 1), "is_batched": bool(batch),
                               "batch_size": batch or 1, "input_tokens": input_tokens,
                               "output_tokens": output_tokens, "error": error})


class _MeteredRole:
    """A model role whose ``complete`` calls the meter measures; everything else is the role's."""

    def __init__(self, role: Any, meter: SubCallMeter) -> None:
        self._role, self._meter = role, meter

    def complete(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        prompt = "".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
        started = time.monotonic()
        try:
            completion = self._role.complete(messages, *args, **kwargs)
        except Exception as exc:
            self._meter.add(model=getattr(self._role, "name", None), prompt=prompt, response="",
                            seconds=time.monotonic() - started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._meter.add(model=getattr(self._role, "name", None), prompt=prompt, response=completion.text or "",
                        seconds=time.monotonic() - started, input_tokens=completion.input_tokens,
                        output_tokens=completion.output_tokens)
        return completion

    def __getattr__(self, name: str) -> Any:
        return getattr(self._role, name)
