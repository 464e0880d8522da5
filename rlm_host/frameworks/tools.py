"""The run's sandbox as tools for a framework: the same session, context and sub-calls a native run has.

``run_code`` executes Python in one persistent sandbox session (the run's runtime: Monty, Docker…) where
``context`` holds the run's context and ``llm_query`` / ``llm_query_batched`` / ``rlm_query`` reach the sub-model
through the run's budget; ``rlm_query`` starts a child run one level deeper (the same framework, the shared
budget, ``max_depth``), as in a native run. So a native run and a framework run of one task differ only in who
drives the loop.

The user's own functions (``RLM(tools=[fn])``, ``--tool``, ``[run] tools``) are in that REPL too, and
:class:`UserTools` (``ctx.tools.user_tools``) gives them to a framework that takes tools of its own as plain Python
callables, each call going through the same host-side path. The run's output type (``[run] output_type``:
``ctx.output``) holds a FINAL given in ``run_code`` and, through :func:`typed_answer`, a framework's own answer.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from rlm_host.environments.kit import answer_text, execute_code, tool_result_text as tool_result_text, truncate
from rlm_host.environments.output_type import OutputInvalid
from rlm_host.environments.repl import SubCalls
from rlm_host.environments.repl_tools import Tool, ToolCalls, signature_of, tool_error_text as tool_error_text
from rlm_host.errors import ConfigError
from rlm_host.results import ExecResult
from rlm_host.sandbox.protocol import SandboxSession

#: What a tool result shows of a code run's output.
TOOL_OUTPUT_CHARS = 8000

TOOL_DESCRIPTIONS = {
    "run_code": "Run Python code in a persistent sandboxed REPL. The variable `context` holds the task's context "
                "(do not print it whole: inspect it). Variables persist between calls. Inside the code, "
                "llm_query(prompt) and llm_query_batched(prompts) ask a language model. Returns what the code "
                "printed, or its error. Call FINAL(answer) in the code to give the final answer.",
    "llm_query": "Ask a language model one question (for reading or summarising a piece of text).",
}


#: What the model is told when its final answer does not match the run's output type (``{problems}``: one a line);
#: the native loop's words.
ANSWER_REJECTED = ("Your final answer does not match the required type, so the run goes on:\n{problems}\n"
                   "Fix it and give the final answer again.")


@dataclass
class CodeOutcome:
    """One ``run_code``: the sandbox's result, the text a framework shows the model, and a FINAL answer if any
    (``rejected``: a FINAL the run's output type refused, its problems; ``final`` is then None)."""

    result: ExecResult
    text: str
    final: Optional[str]
    rejected: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.result.ok


class SandboxTools:
    """The sandbox session of a framework run (``ctx``: its ``EnvironmentContext``), opened on first use
    (thread-safe) and closed by the runner; its sub-calls go through the run's budget, events, child runs, and the
    user's tools with the run's approvals."""

    def __init__(self, ctx: Any, concurrency: int = 32) -> None:
        self._ctx = ctx
        self.output = ctx.output  # the run's OutputType (None: any answer): a FINAL in run_code is held to it
        self.sub_calls = SubCalls(ctx, concurrency=concurrency)
        self._session: Optional[SandboxSession] = None
        self._lock = threading.Lock()
        self.user_tools = UserTools(self.sub_calls.tools)

    @property
    def session(self) -> SandboxSession:
        with self._lock:
            if self._session is None:
                session = self._ctx.open_sandbox()
                session.start()
                self.sub_calls.install(session)
                session.execute(self.sub_calls.helpers_source())
                self._session = session
            return self._session

    def run_code(self, code: str) -> CodeOutcome:
        """Run ``code`` in the session; the text shows stdout, stderr and the error, cut to a readable size."""
        # the sandbox's own failure raises
        result = execute_code(self._ctx.scope, self.session, code, self._ctx.step_timeout())
        final = answer_text(result.final) if result.final is not None else None
        rejected = None
        if final is not None and self.output is not None:
            try:
                final = typed_answer(self.output, final)
            except OutputInvalid as invalid:
                final, rejected = None, str(invalid)
        parts = [result.stdout.rstrip(), result.stderr.strip() and "stderr:\n" + result.stderr.rstrip(),
                 result.error and "error:\n" + result.error.rstrip(),
                 final is not None and f"FINAL answer given: {final}",
                 rejected is not None and ANSWER_REJECTED.format(problems=rejected)]
        text = truncate("\n".join(part for part in parts if part) or "(no output)", TOOL_OUTPUT_CHARS)
        return CodeOutcome(result, text, final, rejected)

    def llm_query(self, prompt: str) -> str:
        return self.sub_calls.llm_query(prompt)

    def close(self) -> None:
        with self._lock:
            if self._session is not None:
                self._session.shutdown()
                self._session = None


class UserTools:
    """The user's own functions (``RLM(tools=[fn])``, ``rlm run --tool module:function``, ``[run] tools``) for a
    framework whose agent takes tools of its own (``ctx.tools.user_tools``).

    :meth:`functions` gives each as a plain Python callable with the tool's name, signature (annotations evaluated)
    and docstring, which every agent framework reads to declare a tool; a call goes through the run's
    ``ToolCalls``, as a call from the REPL does: the run's approvals, the tool timeout, the JSON bounds of its
    arguments and result, and the ``sub_call_start`` / ``sub_call`` events (kind ``tool_call``) the trajectory, the
    live view and the sinks see. The same functions stay callable inside ``run_code``. A framework maps the tool's
    result and its exception into its own tool result and tool error (``result=``, ``error=``), so that a failing
    tool is something the model is shown, never the end of the run.
    """

    def __init__(self, calls: ToolCalls) -> None:
        self._calls = calls

    @property
    def tools(self) -> tuple[Tool, ...]:
        return self._calls.tools

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self._calls.tools)

    def functions(self, *, result: Optional[Callable[[Any], Any]] = None,
                  error: Optional[Callable[[Exception], Any]] = None,
                  asynchronous: bool = False) -> list[Callable[..., Any]]:
        """One callable per tool, in order. ``result(value)`` turns what the tool returned into what the
        framework's tool returns (default: the value); ``error(exc)`` turns the tool's exception (its own, a refusal
        of the approvals, a timeout, arguments or a result that are not JSON) into what the framework's tool returns,
        or raises the framework's own tool-error exception (default: the exception propagates). ``asynchronous``:
        coroutine functions, the call made on a worker thread (for a framework running tools on its event loop)."""
        return [self._function(tool, result, error, asynchronous) for tool in self._calls.tools]

    def _function(self, tool: Tool, result: Optional[Callable[[Any], Any]],
                  error: Optional[Callable[[Exception], Any]], asynchronous: bool) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                value = self._calls.call(tool, args, kwargs)
            except Exception as exc:
                if error is None:
                    raise
                return error(exc)
            return result(value) if result is not None else value

        async def acall(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(call, *args, **kwargs)

        return _dressed(acall if asynchronous else call, tool)


def check_tool_names(tools: UserTools, taken: Any, framework: str) -> None:
    """ConfigError (before the run: exit 2) when one of the user's tools has the name of one of ``taken``, the
    framework's own tools."""
    taken = set(taken)
    for name in tools.names:
        if name in taken:
            raise ConfigError(f"the tool {name!r} has the name of one of {framework}'s own tools",
                              hint=f"rename it: tools={{'my_{name}': fn}} or "
                                   f"--tool my_{name}=module:function")


def _dressed(function: Callable[..., Any], tool: Tool) -> Callable[..., Any]:
    """``function`` carrying the tool's name, docstring, module and signature (annotations evaluated where they can
    be: an agent framework builds the tool's JSON schema from them)."""
    function.__name__ = function.__qualname__ = tool.name
    function.__doc__ = inspect.getdoc(tool.function) or tool.summary or None
    function.__module__ = getattr(tool.function, "__module__", None) or __name__
    signature = signature_of(tool.function)
    if signature is not None:
        function.__signature__ = signature  # type: ignore[attr-defined]
        returns = {} if signature.return_annotation is signature.empty else {"return": signature.return_annotation}
        function.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()
                                    if p.annotation is not p.empty} | returns
    return function


def typed_answer(output: Any, value: Any) -> str:
    """A final answer as the run's text, held to the run's output type (``ctx.output``; None: any answer): data (a
    dict, a list, a pydantic model, a dataclass…) becomes JSON, text stays as it is; ``OutputInvalid`` (a
    ValueError whose message lists the problems, one a line) when it does not match. The runner reads the text back
    as the typed object (``RunResult.output``)."""
    text = value
    if not isinstance(value, str):
        import pydantic_core

        try:
            text = pydantic_core.to_json(value).decode()
        except Exception:  # noqa: BLE001 - a value pydantic cannot write: as the REPL's answers are written
            text = json.dumps(value, ensure_ascii=False, default=str)
    if output is not None:
        output.parse(text)
    return text


def answer_type_instructions(output: Any, how: str = "Give it as your final answer") -> str:
    """What an agent is told about the answer's type (empty without one): its JSON Schema, how to give it
    (``how``), and that an answer that does not match comes back with the errors."""
    return "" if output is None else output.prompt(how)


#: The instructions every tool-calling agent framework gives its agent (``{description}``:
#: :func:`describe_context_briefly`; ``{extra}``: a sentence of the framework's own, or nothing).
AGENT_INSTRUCTIONS = """\
You answer a task about a context that is too large to read at once. The context is NOT in this conversation: \
it is loaded in a persistent Python REPL as the variable `context` ({description}).

Work in steps with your tools. Use run_code to look at `context` (its length, slices, searches, splitting it \
into parts) and to compute; inside the code, llm_query(prompt) asks a language model about a piece of text you \
pass it, and llm_query_batched(prompts) asks about several at once. Print what you need to see: only printed \
output comes back to you, cut to a readable size. Variables persist between run_code calls.{extra}

When you know the answer, give it as the final answer (or call FINAL(answer) inside run_code). You have \
{max_steps} turns (replies) in all."""


def agent_instructions(ctx: Any, *, preview_chars: int, extra: str = "", user_instructions: str = "") -> str:
    """What a tool-calling framework tells its agent: :data:`AGENT_INSTRUCTIONS` for the run's context and step
    limit (``extra``: the framework's own sentence), then the answer's type and the user's instructions, if any."""
    description = describe_context_briefly(ctx.context_meta, preview_chars)
    text = AGENT_INSTRUCTIONS.format(extra=extra, description=description, max_steps=ctx.max_steps)
    after = [part for part in (answer_type_instructions(ctx.output), user_instructions.strip()) if part]
    return "\n\n".join([text, *after])


def describe_context_briefly(meta: dict[str, Any], preview_chars: int) -> str:
    """The context's metadata in a few words for an agent's instructions (never the context: at most its
    preview's first ``preview_chars`` characters)."""
    kind = meta.get("type")
    if kind in (None, "none"):
        return "here None: there is no context, answer from the task alone"
    if kind == "path":
        return f"the path of the file {meta.get('path')}, {meta.get('bytes', 0):,} bytes"
    if kind == "str":
        text = f"a string of {meta.get('total_chars', 0):,} characters"
    elif kind == "list":
        text = f"a list of {meta.get('documents', 0):,} documents, {meta.get('total_chars', 0):,} characters in total"
        lengths = (meta.get("document_lengths") or [])[:10]
        more = ", …" if meta.get("documents", 0) > len(lengths) else ""
        text += f" (lengths: {', '.join(f'{n:,}' for n in lengths)}{more})" if lengths else ""
    else:
        text = f"a {kind} of {meta.get('total_chars', 0):,} characters as JSON"
        if meta.get("keys"):
            text += f", {meta.get('key_count', len(meta['keys'])):,} keys: {', '.join(meta['keys'][:20])}"
    preview = str(meta.get("preview") or "")[:preview_chars]
    if preview:
        text += f"; it begins: {json.dumps(preview, ensure_ascii=False)}"
    return text
