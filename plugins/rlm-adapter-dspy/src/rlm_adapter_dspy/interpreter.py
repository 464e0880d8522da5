"""dspy's ``CodeInterpreter`` protocol over the run's sandbox session, reporting each iteration as a step.

``dspy.RLM`` drives its loop through an interpreter: ``start()``, ``execute(code, variables)`` once per
iteration, ``shutdown()``; it fills the interpreter's ``tools`` dict (its ``llm_query`` / ``llm_query_batched``,
user tools) and sets ``output_fields`` before the first ``execute``. ``execute`` returns the printed output, or a
``FinalOutput(fields)`` when the code called ``SUBMIT``, and raises ``CodeExecutionError`` for an error in the
code, which dspy shows the model as ``[Error] …`` before the next iteration. Anything else it raises ends
``dspy.RLM.forward`` (dspy catches only ``CodeExecutionError`` and ``SyntaxError`` there), which is how budget
errors from ``ctx.step`` (``max_llm_calls`` used up, time, tokens, cost) stop the framework.

Here the code runs in the run's own session (``ctx.tools.session``: Monty, Docker, process), where ``context`` is
already bound, once, by the host; dspy's per-iteration ``variables`` are bound only when new or changed, so a step never
re-sends the context. dspy's tools become host functions of the session, but the user's own (dspy.RLM's ``tools=``): the
run defines those in the session already, each call through the run's host-side tool path. With an output type, a SUBMIT
whose answer does not match it is a ``final_rejected`` step and a ``CodeExecutionError`` naming the problems (dspy shows
it and goes on); one that matches carries the answer as JSON text. ``SUBMIT`` is the session's own REPL builtin (it ends
the code and carries its fields back as JSON), wrapped once so that it also takes the positional form dspy's prompt
shows (``SUBMIT(answer)``) and checks the field names as dspy's interpreters do. ``FINAL(x)`` / ``FINAL_VAR(name)``,
which models trained on rlm's prompts write, count as ``SUBMIT(answer=x)``.

dspy's sandbox ``dspy`` facade (sub-agents built in the REPL and run on the host) is declined: dspy then drops
it from the prompt and carries on.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from dspy.primitives.code_interpreter import CodeExecutionError, FinalOutput

from rlm_host import SandboxError
from rlm_host.sdk.frameworks import ANSWER_REJECTED, FrameworkContext, truncate

from rlm_adapter_dspy.models import ANSWER_FIELD, RootEngine

#: What a step's observation keeps of the code's output (the model sees up to ``max_output_chars``).
OBSERVATION_CHARS = 4000
#: The code dspy.RLM "runs" (and shows in its REPL history) for a root reply it could not parse.
NO_CODE = "# (no code ran: the reply could not be read)"
FACADE_DECLINED = ("dspy sub-agents (the sandbox `dspy` facade) are not available in rlm's sandbox; "
                   "use llm_query / llm_query_batched")


def submit_source(names: list[str]) -> str:
    """Sandbox code wrapping the session's SUBMIT: positional or keyword fields, exactly ``names``."""
    return (
        "_rlm_submit_fields = SUBMIT\n"
        "def SUBMIT(*args, **kwargs):\n"
        f"    names = {names!r}\n"
        "    if args and kwargs:\n"
        "        raise TypeError('SUBMIT accepts positional or keyword values, not both')\n"
        "    values = dict(zip(names, args)) if args else dict(kwargs)\n"
        "    if len(args) > len(names) or set(values) != set(names):\n"
        "        raise TypeError('SUBMIT expects the output fields ' + ', '.join(names) + ', e.g. SUBMIT('\n"
        "                        + ', '.join(n + '=...' for n in names) + ')')\n"
        "    _rlm_submit_fields(**values)\n"
    )


def execution_instructions(info: Any, names: list[str]) -> str:
    """What dspy.RLM's prompt says about the runtime (its "Execution environment" section)."""
    fields = ", ".join(f"{n}=..." for n in names)
    text = (
        f"Code runs in rlm's `{info.name}` sandbox ({info.isolation}); variables persist between steps. "
        "The inputs are already defined there: inspect `context` with code, never print it whole. "
        f"SUBMIT({fields}) ends the step at once with the final output. Also defined: chunk_text(text, size, "
        "overlap=0) and chunk_indices(length, size, overlap=0); when the context is a set of files it is a list "
        "of documents, list_files() gives their names and load_file(name) one document. "
        "Each step's code must finish within the sandbox's time limit."
    )
    if info.python_notes:
        text += f"\nPython in this sandbox: {info.python_notes}"
    return text


class InterpreterFactory:
    """The zero-argument factory dspy.RLM asks for; its ``execution_instructions`` reach the prompt."""

    def __init__(self, make: Callable[[], "SandboxInterpreter"], instructions: str) -> None:
        self._make = make
        self.execution_instructions = instructions

    def __call__(self) -> "SandboxInterpreter":
        return self._make()


class SandboxInterpreter:
    """dspy's ``CodeInterpreter`` over ``ctx.tools.session``; each ``execute`` is recorded as a step."""

    def __init__(self, ctx: FrameworkContext, root: RootEngine, *, preset: Optional[dict[str, Any]] = None) -> None:
        self.ctx = ctx
        self.root = root
        self.tools: dict[str, Callable[..., Any]] = {}
        self.output_fields: Optional[list[dict[str, Any]]] = None
        self.steps = 0
        self.submitted = False
        self._registered: dict[str, Callable[..., Any]] = {}
        self._bound: dict[str, int] = {name: id(value) for name, value in (preset or {}).items()}
        self._submit_names: Optional[list[str]] = None
        self._ended = False
        self.malformed: Optional[str] = None  # set by framework.ActionPredictor: what was wrong with the reply
        self._restart_note: Optional[str] = None

    # -- the CodeInterpreter protocol ---------------------------------------------------------------------
    def start(self) -> None:
        """Open the run's sandbox session (the runner closes it) and define SUBMIT for the output fields."""
        session = self.ctx.tools.session
        names = self.field_names()
        if self._submit_names != names:
            result = session.execute(submit_source(names))
            if result.error and result.restarted:  # a restart told now (the worker died between steps): the
                self._restart_note = _restart_note(result.error)  # model hears of it with its step's output
                result = session.execute(submit_source(names))
            if result.error:
                raise SandboxError(f"defining SUBMIT in the sandbox failed: {result.error}")
            self._submit_names = names

    def execute(self, code: str, variables: Optional[dict[str, Any]] = None) -> Any:
        variables = dict(variables or {})
        if any(name.startswith("_") for name in [*variables, *self.tools]):
            for name in [n for n in self.tools if n.startswith("_")]:
                self.tools.pop(name)
            raise CodeExecutionError(FACADE_DECLINED)
        self.submitted = False  # dspy runs no more code once it accepted a SUBMIT: only the last one counts
        replies = self.root.take_replies()
        for extra in replies[:-1]:  # dspy's ChatAdapter asked again (JSON) after a reply it could not parse
            self._step("retry", {"note": "dspy could not parse this reply and asked the model again"},
                       self.ctx.reward_for("retry"), reply=extra)
        reply = replies[-1] if replies else None
        if self.malformed is not None:
            message, self.malformed = self.malformed, None
            self._step("malformed_reply", {"error": message}, -self.ctx.rewards.no_action_penalty, reply=reply)
            raise CodeExecutionError(message)
        self.start()
        self._register_tools()
        self._bind(variables)
        outcome = self.ctx.tools.run_code(code)
        result = outcome.result
        if result.restarted:
            self._submit_names = None  # the namespace is gone: SUBMIT is defined again before the next step
        fields = self._final_fields(result.final)
        observation = _observation(code, result)
        note, self._restart_note = self._restart_note, None
        if note:
            observation["notes"] = [note]
        if outcome.rejected is not None:  # SUBMIT with an answer of the run's output type's wrong shape
            observation["final_rejected"] = outcome.rejected
            self._step("final_rejected", observation, -self.ctx.rewards.no_action_penalty, code=code, reply=reply)
            raise CodeExecutionError(ANSWER_REJECTED.format(problems=outcome.rejected))
        if fields is not None and outcome.final is not None and self.ctx.output is not None and len(fields) == 1:
            fields = {next(iter(fields)): outcome.final}  # the answer as JSON text of the type (dspy keeps a str)
        if fields is not None:
            self.submitted = True
            self._step("final", observation, self.ctx.reward_for("final"), code=code, reply=reply)
            return FinalOutput(fields)
        reward = self.ctx.rewards.code_step(ok=result.ok, stderr=bool(result.stderr.strip()))
        self._step("run_code", observation, reward, code=code, reply=reply)
        if not result.ok:
            raise CodeExecutionError("\n".join(filter(None, [note and f"Note: {note}", _error_text(result)])))
        output = result.stdout
        if result.stderr.strip():
            output = (output.rstrip("\n") + "\n" if output.strip() else "") + "stderr:\n" + result.stderr
        if note:
            output = f"Note: {note}\n{output}"
        return output or None

    def file_unrun_replies(self) -> None:
        """Root replies whose code dspy never handed to ``execute`` (it refused a non-Python code fence, say):
        each becomes a ``no_code`` step, so every root reply of the run is in its trajectory."""
        for reply in self.root.take_replies():
            self._step("no_code", {"error": "dspy.RLM ran no code for this reply (its REPL history says why)"},
                       -self.ctx.rewards.no_action_penalty, reply=reply)

    def shutdown(self) -> None:
        """dspy is done with the interpreter; the session itself is the runner's, closed with the run."""
        self._ended = True

    # -- helpers ------------------------------------------------------------------------------------------
    def field_names(self) -> list[str]:
        if not self.output_fields:
            return [ANSWER_FIELD]
        return [str(field["name"]) for field in self.output_fields]

    def _step(self, action: str, observation: dict[str, Any], reward: float, *, code: Optional[str] = None,
              reply: Optional[str] = None) -> None:
        self.ctx.step(action, observation, reward=reward, code=code, reply=reply)
        self.steps += 1

    def _register_tools(self) -> None:
        """dspy's tools (its llm_query, llm_query_batched) as host functions of the session."""
        own = set(self.ctx.tools.user_tools.names)  # defined by the run, called through its host-side path
        new = {name: tool for name, tool in self.tools.items()
               if not name.startswith("_") and name not in own and self._registered.get(name) is not tool}
        if new:
            self.ctx.tools.session.register_functions(new)
            self._registered.update(new)

    def _bind(self, variables: dict[str, Any]) -> None:
        """dspy passes its inputs at every step: bind each once (again only if dspy hands a new value)."""
        session = self.ctx.tools.session
        for name, value in variables.items():
            if self._bound.get(name) != id(value):
                session.set_variable(name, value)
                self._bound[name] = id(value)

    def _final_fields(self, final: Any) -> Optional[dict[str, Any]]:
        """SUBMIT's fields; FINAL(x) / FINAL_VAR(name) as the one output field (None: no final answer)."""
        if final is None:
            return None
        if final.kind == "submit":
            return final.value if isinstance(final.value, dict) else {self.field_names()[0]: final.value}
        names = self.field_names()
        return {names[0]: final.value} if len(names) == 1 else None


def _observation(code: str, result: Any) -> dict[str, Any]:
    """The step's observation, shaped as a native pure_rlm step's (one code block), so every reader of
    trajectories (``rlm runs show``, replay, benchmarks) treats both alike."""
    block: dict[str, Any] = {"code": code, "stdout": truncate(result.stdout, OBSERVATION_CHARS),
                             "duration_s": round(result.duration_s, 4)}
    for key in ("stderr", "error"):
        value = getattr(result, key)
        if value:
            block[key] = truncate(value, OBSERVATION_CHARS)
    if result.timed_out:
        block["timed_out"] = True
    if result.restarted:
        block["restarted"] = True
    if result.final is not None:
        block["final"] = json.loads(result.final.model_dump_json())
    observation: dict[str, Any] = {"blocks": [block], "success": result.ok}
    if result.final is not None:
        observation["final_source"] = "code"
    return observation


def _restart_note(error: str) -> str:
    cause = error.partition("Cause: ")[2].strip()
    note = "the sandbox was restarted before this step: variables created in earlier steps are lost (the inputs "
    return note + "are still defined)." + (f" Cause: {cause}" if cause else "")


def _error_text(result: Any) -> str:
    """What the model reads for a failed step: the error, after what the code printed before it."""
    parts = []
    if result.stdout.strip():
        parts.append("Output before the error:\n" + result.stdout.rstrip())
    if result.stderr.strip():
        parts.append("stderr:\n" + result.stderr.rstrip())
    parts.append(result.error or "the step failed")
    return "\n".join(parts)
