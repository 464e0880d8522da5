"""The ``deepagents`` framework: a LangChain deep agent runs the task, with rlm's models and sandbox.

- the agent's model is :class:`~rlm_adapter_deepagents.model.RlmChatModel` over ``ctx.root`` (text-only, tool
  calls through the text protocol);
- its tools are ``run_code(code)`` (the run's sandbox session, ``context`` loaded there, ``llm_query`` inside
  the code; ``FINAL(answer)`` in the code ends the run) and ``llm_query(prompt)``, next to deepagents' own:
  ls / read_file / write_file / edit_file / delete / glob / grep on the chosen backend, ``execute`` (``sh -c``
  inside the run's sandbox with backend ``local_shell``; elsewhere it answers that it cannot) and ``task``: its
  ``general-purpose`` sub-agent is a child run of rlm (``rlm_query``: a deep agent again, one level deeper, with the
  run's context, the shared budget and ``max_depth``; recorded as a child run with its own steps; at the depth
  limit a plain sub-model call), plus ``write_todos`` (LangChain's TodoListMiddleware, no longer a deepagents
  default in 0.7: setting ``planning``); and the user's own functions (``--tool``, ``RLM(tools=[fn])``:
  ``ctx.tools.user_tools``) as LangChain tools of their own (name, parameters and description from the function),
  each call through the run's approvals, timeout and ``tool_call`` event; a tool's exception is an error
  ToolMessage the model sees (``ToolException``), never the end of the run;
- with an output type (``[run] output_type``, ``--output-schema``) the system prompt states its JSON Schema and the
  answer is checked against it (a middleware after the model): one that does not match is recorded as a
  ``final_rejected`` step and sent back to the model, within ``max_steps`` (LangChain's ``response_format`` needs
  a model with native structured output or tool choice; this one speaks the text protocol);
- it is streamed (``stream_mode="updates"``) and each message is recorded with ``ctx.step`` as it arrives:

  ==================  ======================================================  ===============================
  step action         when                                                    reward (its settings)
  ==================  ======================================================  ===============================
  model_text          the prose of a reply beside its tool call, or a         reward_model_text
                      malformed reply (sent back to the model)
  tool_call           a reply calls a tool (observation: tool, args)          reward_tool_call
  planning_tool_call  a reply calls write_todos / read_todos                  reward_planning_tool_call
  tool_result         a ToolMessage came back (``ok`` False: an error         reward_tool_result /
                      ToolMessage: the code raised, unknown tool, bad args)   reward_tool_error
  final               the agent's answer, or FINAL() called in run_code       final_reward
  final_rejected      an answer that does not match the run's output type     reward_retry
  ==================  ======================================================  ===============================

``StepLimitReached`` (from the root model) and the budget's exceptions (from ``ctx.step``) propagate out of
LangGraph untouched (LangChain's ToolNode turns only tool-invocation errors and ``ToolException`` into error
ToolMessages), so the runner records ``max_steps`` or the budget's reason. LangGraph's recursion limit is set
high enough that ``max_steps`` is always the limit that applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from deepagents import create_deep_agent
from langchain.agents.middleware import TodoListMiddleware, after_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException

from rlm_adapter_deepagents.model import INVALID_KEY, REPLY_KEY, RlmChatModel
from rlm_adapter_deepagents.settings import DeepAgentsSettings
from rlm_host import ConfigError
from rlm_host.sdk.frameworks import (
    ANSWER_REJECTED, TOOL_DESCRIPTIONS, FrameworkContext, FrameworkOutcome, OutputInvalid, agent_instructions,
    check_tool_names, tool_error_text, tool_result_text, truncate, typed_answer,
)


PLANNING_TOOLS = ("write_todos", "read_todos")
#: The agent's own tools (deepagents' and ours): no tool of the user's may take their names.
OWN_TOOLS = ("run_code", "llm_query", "ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep",
             "execute", "task", *PLANNING_TOOLS)
SUB_AGENT_DESCRIPTION = ("An agent like you, with the same tools and the same context, for a self-contained part of "
                         "the task: give it a complete description of what to find or do; it answers in one message.")


#: The framework's own sentence in the agent's instructions (rlm_host.sdk.frameworks.agent_instructions).
EXTRA_INSTRUCTIONS = (" The file tools (ls, read_file, write_file…) are a scratch space for notes, not where the "
                      "context is.")


def create(settings: Optional[DeepAgentsSettings], ctx: FrameworkContext) -> "DeepAgentsFramework":
    """The framework factory (``factory(settings, FrameworkContext)``)."""
    return DeepAgentsFramework(settings, ctx)


class DeepAgentsFramework:
    name = "deepagents"

    def __init__(self, settings: Optional[DeepAgentsSettings], ctx: FrameworkContext) -> None:
        self.settings = settings or DeepAgentsSettings()
        self.ctx = ctx
        self._final: Optional[str] = None  # FINAL() called in run_code
        self._final_rejected: Optional[str] = None  # … with an answer of the wrong type: its problems
        self._seen: set[str] = set()  # ids of messages already recorded
        self._invalid_left = self.settings.invalid_reply_retries
        self._model_calls = 0
        self.root = self._file_root()  # checked now: a bad root is refused before the run (exit 2)
        check_tool_names(ctx.tools.user_tools, OWN_TOOLS, "deepagents")  # so is a tool's name taken by the agent

    # ------------------------------------------------------------------ the run

    def run(self) -> FrameworkOutcome:
        agent = self.agent()
        config = {"recursion_limit": 10 * self.ctx.max_steps + 20}  # max_steps (root turns) is the run's limit
        last: Optional[AIMessage] = None
        for update in agent.stream({"messages": [HumanMessage(self.ctx.task)]}, config, stream_mode="updates"):
            for message in _messages(update):
                if isinstance(message, AIMessage):
                    last = message
                self._record(message)
            if self._final is not None:  # FINAL() in run_code: the run ends here, whatever the agent would do next
                self._step("final", {"answer": self._final, "via": "FINAL() in run_code"}, "final")
                return FrameworkOutcome(self._final, True, self._metadata())
        if last is None or last.tool_calls:
            return FrameworkOutcome(None, False, self._metadata())
        answer = typed_answer(self.ctx.output, last.text.strip())  # held to the type by the middleware already
        self._step("final", {"answer": answer}, "final", reply=last.additional_kwargs.get(REPLY_KEY))
        return FrameworkOutcome(answer, True, self._metadata())

    def close(self) -> None:
        pass  # the sandbox session is the runner's (closed with the run); the agent holds nothing else

    def agent(self) -> Any:
        """The deep agent: our root model, the sandbox's tools, the RLM instructions, the chosen backend."""
        tools = [
            StructuredTool.from_function(self._run_code, name="run_code", description=TOOL_DESCRIPTIONS["run_code"],
                                         handle_tool_error=True),
            StructuredTool.from_function(self._llm_query, name="llm_query",
                                         description=TOOL_DESCRIPTIONS["llm_query"], handle_tool_error=True),
            *self.user_tools(),
        ]
        middleware: list[Any] = [TodoListMiddleware()] if self.settings.planning else []  # not a default in 0.7
        middleware.append(self._resend_invalid())
        if self.ctx.output is not None:
            middleware.append(self._hold_to_type())
        options: dict[str, Any] = {}
        backend = self.backend()
        if backend is not None:
            options["backend"] = backend
        model = RlmChatModel(role=self.ctx.root, brief_tools=self.settings.brief_tool_descriptions)
        prompt = agent_instructions(self.ctx, preview_chars=self.settings.preview_chars, extra=EXTRA_INSTRUCTIONS,
                                    user_instructions=self.settings.instructions)
        return create_deep_agent(model=model, tools=tools, system_prompt=prompt, middleware=middleware, name="rlm",
                                 subagents=[self._sub_agent()], **options)

    def user_tools(self) -> list[Any]:
        """The user's functions as LangChain tools; a tool's exception is an error ToolMessage (``ToolException``)."""
        limit = self.settings.max_output_chars

        def failed(exc: Exception) -> Any:
            raise ToolException(f"error: {tool_error_text(exc)}")

        functions = self.ctx.tools.user_tools.functions(result=lambda value: truncate(tool_result_text(value), limit),
                                                        error=failed)
        return [StructuredTool.from_function(function, name=function.__name__, handle_tool_error=True,
                                             description=function.__doc__ or f"The function {function.__name__}.")
                for function in functions]

    def _sub_agent(self) -> Any:
        """The ``general-purpose`` sub-agent of ``task``: a child run (see the module docstring)."""
        from deepagents import CompiledSubAgent
        from langchain_core.runnables import RunnableLambda

        def delegate(state: dict[str, Any]) -> dict[str, Any]:
            asked = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)]
            description = asked[-1].text if asked else ""
            try:
                answer = self.ctx.tools.sub_calls.rlm_query(description, self.ctx.context)
            except RuntimeError as exc:  # the child ended without an answer, or was refused: the agent is told
                answer = f"The sub-agent could not finish: {exc}"
            return {"messages": [AIMessage(content=answer)]}

        return CompiledSubAgent(name="general-purpose", description=SUB_AGENT_DESCRIPTION,
                                runnable=RunnableLambda(delegate))

    def backend(self) -> Any:
        """The file tools' backend: deepagents' default (state), a folder on the host confined to it, or a shell
        and files inside the run's sandbox session."""
        if self.settings.backend == "state":
            return None
        if self.settings.backend == "filesystem":
            from rlm_adapter_deepagents.filesystem import ConfinedFilesystemBackend

            assert self.root is not None
            return ConfinedFilesystemBackend(self.root)  # virtual paths under root, no escape, metadata read-only
        if self.settings.backend == "local_shell":  # deepagents' LocalShellBackend would run on the host: not that
            from rlm_adapter_deepagents.backends import SandboxShellBackend

            return SandboxShellBackend(self.ctx.tools, timeout=self.settings.shell_timeout)
        raise ConfigError(f"[framework.deepagents] backend {self.settings.backend!r} is not offered")

    def _file_root(self) -> Optional[Path]:
        """The 'filesystem' backend's folder: an existing folder, never a home, documents or system folder (the
        host's guard: ``--allow-any-workdir`` lets one through); None for the other backends."""
        if self.settings.backend != "filesystem":
            return None
        root = self.ctx.guarded_folder(Path(self.settings.root or "."), "read and write files in")
        if not root.is_dir():
            raise ConfigError(f"[framework.deepagents] root {root} is not a folder",
                              hint="create it, or use backend = 'state'")
        return root

    def _resend_invalid(self) -> Any:
        """A middleware sending a malformed reply back to the model (a few times per run) instead of ending."""

        @after_model(can_jump_to=["model"], name="RlmInvalidReply")
        def resend(state: Any, runtime: Any) -> Optional[dict[str, Any]]:
            messages = state["messages"]
            last = messages[-1] if messages else None
            if not isinstance(last, AIMessage) or not last.additional_kwargs.get(INVALID_KEY):
                return None
            if self._invalid_left <= 0:
                return None
            self._invalid_left -= 1
            note = HumanMessage(f"Your reply was not understood: {last.additional_kwargs[INVALID_KEY]}")
            return {"messages": [note], "jump_to": "model"}

        return resend

    def _hold_to_type(self) -> Any:
        """A middleware sending an answer that does not match the run's output type back to the model, with the
        problems (a ``final_rejected`` step), as a native run does: within ``max_steps``."""

        @after_model(can_jump_to=["model"], name="RlmOutputType")
        def check(state: Any, runtime: Any) -> Optional[dict[str, Any]]:
            messages = state["messages"]
            last = messages[-1] if messages else None
            if not isinstance(last, AIMessage) or last.tool_calls or last.additional_kwargs.get(INVALID_KEY):
                return None
            answer = last.text.strip()
            try:
                typed_answer(self.ctx.output, answer)
            except OutputInvalid as invalid:
                self._step("final_rejected", {"answer": answer, "final_rejected": str(invalid)}, "retry",
                           reply=last.additional_kwargs.get(REPLY_KEY))
                return {"messages": [HumanMessage(ANSWER_REJECTED.format(problems=invalid))], "jump_to": "model"}
            return None

        return check

    def _metadata(self) -> dict[str, Any]:
        return {"deepagents_backend": self.settings.backend}

    # ------------------------------------------------------------------ steps as they arrive

    def _step(self, action: str, observation: dict[str, Any], kind: str, *, ok: bool = True,
              code: Optional[str] = None, reply: Optional[str] = None) -> None:
        """Record one step now (``kind``: its event kind in the reward table); the budget's refusals propagate."""
        self.ctx.step(action, observation, self.ctx.reward_for(kind, ok), code=code, reply=reply)

    def _record(self, message: Any) -> None:
        key = message.id or str(id(message))
        if key in self._seen:
            return
        self._seen.add(key)
        if isinstance(message, AIMessage):
            reply = message.additional_kwargs.get(REPLY_KEY)
            if message.additional_kwargs.get(INVALID_KEY):
                self._step("model_text", {"text": message.text, "invalid": message.additional_kwargs[INVALID_KEY]},
                           "model_text", reply=reply)
                return
            if not message.tool_calls:
                return  # the answer: recorded as ``final`` when the stream ends
            if message.text.strip():
                self._step("model_text", {"text": message.text.strip()}, "model_text", reply=reply)
                reply = None  # the reply is on the step of its first part
            for call in message.tool_calls:
                args = call.get("args") or {}
                code = args.get("code") if isinstance(args.get("code"), str) else None
                kind = "planning_tool_call" if call["name"] in PLANNING_TOOLS else "tool_call"
                self._step(kind, {"tool": call["name"], "args": args}, kind, code=code, reply=reply)
                reply = None
        elif isinstance(message, ToolMessage):
            ok = message.status != "error"
            observation: dict[str, Any] = {"tool": message.name, "ok": ok, "output": truncate(message.text, 2000)}
            if message.name == "run_code" and self._final is not None:
                observation["final"] = self._final
            if message.name == "run_code" and self._final_rejected is not None:
                observation["final_rejected"], self._final_rejected = self._final_rejected, None
            self._step("tool_result" if ok else "tool_error", observation, "tool_result", ok=ok)

    # ------------------------------------------------------------------ the tools

    def _run_code(self, code: str) -> str:
        """Run Python code in the REPL; `context`, llm_query(), llm_query_batched() and FINAL() are defined."""
        outcome = self.ctx.tools.run_code(code)
        text = truncate(outcome.text, self.settings.max_output_chars)
        if outcome.final is not None:
            self._final = outcome.final
        self._final_rejected = outcome.rejected  # FINAL() with an answer of the wrong type: the text says so
        if not outcome.ok and outcome.final is None:
            raise ToolException(text)  # an error ToolMessage: the model sees it and goes on
        return text

    def _llm_query(self, prompt: str) -> str:
        """Ask a language model one question (the whole question, with the text it is about)."""
        try:
            return self.ctx.tools.llm_query(prompt)
        except RuntimeError as exc:  # how a sub-call failure is reported (model error, max_llm_calls…)
            raise ToolException(f"error: {exc}") from exc


def _messages(update: Any) -> list[Any]:
    """The messages of one streamed update (``{node: {"messages": [...]}}``; middleware nodes may add none)."""
    found: list[Any] = []
    if not isinstance(update, dict):
        return found
    for value in update.values():
        messages = value.get("messages") if isinstance(value, dict) else None
        messages = getattr(messages, "value", messages)  # an Overwrite(...) of the whole list
        if isinstance(messages, (list, tuple)):
            found.extend(m for m in messages if isinstance(m, (AIMessage, ToolMessage)))
    return found
