"""The ``dspy-rlm`` framework: a task run by DSPy's own ``dspy.RLM`` loop, on the run's models, sandbox and budget.

How dspy.RLM's pieces map onto the run (``FrameworkContext``):

- its main LM is ``ctx.root``, its ``sub_lm`` is ``ctx.sub`` (``models``: dspy LMs over custom engines);
- its interpreter is the run's sandbox session (``interpreter``): each iteration's code runs there, with
  ``context`` and ``query`` bound once, dspy's ``llm_query`` / ``llm_query_batched`` as host functions, and
  ``SUBMIT`` ending the code; each iteration is recorded as a step as it runs (``run_code``, ``final``…);
- ``max_iters`` is the run's ``max_steps`` (root turns); the prompt's sub-call allowance is the run's
  ``max_llm_calls``, which the run's budget enforces as in a native run (dspy's own counter is set out of its
  way: a refused sub-call ends the run with ``max_llm_calls`` at the end of that step);
- the signature is ``context, query -> answer``: the run's context and task in, the answer out; with an output type
  (``[run] output_type``, ``--output-schema``) its instructions state the JSON Schema, and a SUBMIT whose answer
  does not match is refused in the interpreter (a ``final_rejected`` step; dspy shows the model the problems as the
  step's error and goes on), so the answer is JSON of that type (``RunResult.output``);
- the user's own functions (``--tool``, ``RLM(tools=[fn])``: ``ctx.tools.user_tools``) are dspy.RLM's ``tools=``:
  dspy lists them in its prompt, and the code calls them in the sandbox, where the run defines them (the host-side
  call: approvals, timeout, JSON bounds, a ``tool_call`` event); an exception of one is an exception in that code.

Two of dspy.RLM's predictors are wrapped (they are public attributes of the module): ``generate_action``, so
that a root reply dspy cannot parse becomes a ``malformed_reply`` step shown to the model instead of an
exception ending the run; and ``extract``, dspy's extra root call for an answer once ``max_iters`` are used,
which is made as the run's one ``purpose="synthesis"`` call (as a native run synthesises at its step limit): the
run ends ``max_steps``, not completed, with extract's answer.

An exception from our side (``StepLimitReached``, ``BudgetExceeded``, ``ModelError``, ``SandboxError``) that
dspy wrapped on its way out (its LM layer turns an engine's exception into ``LMUnexpectedError``) is unwrapped
and re-raised as itself, so the runner records the right termination reason.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from typing import Any, Iterator, Optional

import dspy
from dspy.utils.exceptions import AdapterParseError

from rlm_host import BudgetExceeded, RecursionRefused, RlmError, SandboxError
from rlm_host.sdk.frameworks import (
    FrameworkContext, FrameworkOutcome, answer_type_instructions, check_tool_names, truncate,
)

from rlm_adapter_dspy.interpreter import NO_CODE, InterpreterFactory, SandboxInterpreter, execution_instructions
from rlm_adapter_dspy.models import ANSWER_FIELD, RootEngine, SubEngine, role_lm
from rlm_adapter_dspy.settings import DspyRlmSettings

SIGNATURE = f"context, query -> {ANSWER_FIELD}"
#: dspy.RLM's per-forward sub-call counter, once its prompt states the run's allowance: the run's budget counts.
UNCOUNTED = 1 << 62
#: dspy.RLM's log lines that this framework reports in its own way (a step, the run's end).
_QUIET = ("RLM sub-agents are unavailable", "RLM reached max iterations")
OURS = (RlmError, BudgetExceeded, SandboxError, RecursionRefused)
#: Names dspy.RLM keeps for itself besides the REPL's: its signature's inputs and its sandbox facade.
DSPY_NAMES = ("context", "query", "dspy", "SUBMIT", "print")


class DspyRlmFramework:
    """One run of ``dspy.RLM`` (the ``Framework`` protocol: ``run()``, ``close()``)."""

    name = "dspy-rlm"

    def __init__(self, settings: DspyRlmSettings, ctx: FrameworkContext) -> None:
        self.settings = settings
        self.ctx = ctx
        check_tool_names(ctx.tools.user_tools, DSPY_NAMES, "dspy.RLM")  # refused before the run (exit 2)
        self.root = RootEngine(ctx)
        self.interpreter = SandboxInterpreter(ctx, self.root, preset={"context": ctx.context})

    def build(self) -> Any:
        """The dspy.RLM module of this run (opens the sandbox: its description goes into the prompt)."""
        info = self.ctx.tools.session.info
        factory = InterpreterFactory(lambda: self.interpreter, execution_instructions(info, [ANSWER_FIELD]))
        rlm = dspy.RLM(
            self.signature(), max_iters=self.ctx.max_steps, max_llm_calls=self.ctx.budget.max_llm_calls,
            max_output_chars=self.settings.max_output_chars, verbose=self.settings.verbose,
            sub_lm=role_lm(SubEngine(self.ctx), self.ctx.sub.name), interpreter_factory=factory,
            tools=self.ctx.tools.user_tools.functions() or None,  # listed by dspy; run in the sandbox
        )
        rlm.max_llm_calls = UNCOUNTED  # the prompt (built above) says max_llm_calls; the run's budget enforces it
        rlm.generate_action = ActionPredictor(rlm.generate_action, self.interpreter)
        rlm.extract = Extract(rlm.extract, self.interpreter)
        return rlm

    def signature(self) -> Any:
        """``context, query -> answer``; with an output type, its instructions say the answer's JSON Schema."""
        typed = answer_type_instructions(self.ctx.output, how=f"Give it with SUBMIT({ANSWER_FIELD}=value), the "
                                                              "value a dict or list built in the REPL")
        if not typed:
            return SIGNATURE
        plain = dspy.Signature(SIGNATURE)
        return plain.with_instructions(f"{plain.instructions}\n\n{typed}")

    def run(self) -> FrameworkOutcome:
        rlm = self.build()
        adapter = dspy.ChatAdapter(use_json_adapter_fallback=self.settings.json_fallback)
        with _quiet_dspy(), dspy.context(lm=role_lm(self.root, self.ctx.root.name), adapter=adapter,
                                         disable_history=True, track_usage=False):
            try:
                prediction = rlm(context=self.ctx.context, query=self.ctx.task)
            except Exception as exc:
                ours = our_error(exc)
                if ours is None or ours is exc:
                    raise
                raise ours from None
        answer = getattr(prediction, ANSWER_FIELD, None)
        metadata = {"final_reasoning": getattr(prediction, "final_reasoning", None),
                    "iterations": len(getattr(prediction, "trajectory", None) or [])}
        return FrameworkOutcome(answer_text(answer), completed=self.interpreter.submitted, metadata=metadata)

    def close(self) -> None:
        """Nothing of its own to free: the sandbox session and the models are the runner's."""


class _WrappedPredictor:
    """One of dspy.RLM's predictors, wrapped (dspy reads its ``signature``)."""

    def __init__(self, predict: Any, interpreter: SandboxInterpreter) -> None:
        self.predict = predict
        self.interpreter = interpreter

    @property
    def signature(self) -> Any:
        return self.predict.signature


class ActionPredictor(_WrappedPredictor):
    """dspy.RLM's ``generate_action`` predictor, with a reply it cannot parse turned into a turn of its own: the
    model is told what was wrong (as the output of a step whose code did not run) and the loop goes on."""

    def __call__(self, **kwargs: Any) -> Any:
        self.interpreter.file_unrun_replies()
        try:
            return self.predict(**kwargs)
        except AdapterParseError as exc:
            said = (exc.lm_response or "").strip()
            self.interpreter.malformed = (
                f"Your reply could not be read ({parse_problem(exc)}), so no code ran. Reply with the fields "
                "[[ ## reasoning ## ]] and [[ ## code ## ]] (a python code block), then [[ ## completed ## ]]."
            )
            return dspy.Prediction(reasoning=truncate(said, 2000) or "(an empty reply)", code=NO_CODE)


class Extract(_WrappedPredictor):
    """dspy.RLM's ``extract`` predictor, called once ``max_iters`` (the run's ``max_steps``) are used without
    SUBMIT: the run's synthesis call (``purpose="synthesis"``, allowed once past the turn limit). A reply dspy
    cannot parse gives the answer it holds (``unparsed_answer``): never an action reply shown as the answer."""

    def __call__(self, **kwargs: Any) -> Any:
        self.interpreter.file_unrun_replies()
        root = self.interpreter.root
        root.purpose = "synthesis"
        try:
            return self.predict(**kwargs)
        except AdapterParseError as exc:
            answer = unparsed_answer(exc.lm_response or "")
            return dspy.Prediction(**{ANSWER_FIELD: answer, "final_reasoning": "(extract's reply unparsed)"})
        finally:
            root.purpose = "turn"


_FIELD_HEADER = re.compile(r"^\[\[ ## (\w+) ## \]\]\s*$", re.MULTILINE)


def unparsed_answer(said: str) -> Optional[str]:
    """The answer in an extract reply dspy could not parse: plain text is the answer as it is (a small model
    answering in prose); a reply in dspy's field format gives its ``answer`` field, and one without that field (an
    action reply: reasoning and code, as a model still in its loop writes) gives none."""
    said = said.strip()
    headers = list(_FIELD_HEADER.finditer(said))
    if not headers:
        return said or None
    for index, header in enumerate(headers):
        if header.group(1) == ANSWER_FIELD:
            end = headers[index + 1].start() if index + 1 < len(headers) else len(said)
            return said[header.end():end].strip() or None
    return None


def our_error(exc: BaseException) -> Optional[BaseException]:
    """The first exception of the run's own kinds in ``exc``'s chain (dspy wraps what its LM layer sees)."""
    seen: set[int] = set()
    current: Optional[BaseException] = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OURS):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def answer_text(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def parse_problem(exc: AdapterParseError) -> str:
    """What dspy missed in a reply, in a line: the fields it expected and those it found."""
    expected = ", ".join(getattr(exc.signature, "output_fields", {}) or {})
    if not (exc.lm_response or "").strip():
        return f"the reply was empty; expected the fields {expected}"
    found = exc.parsed_result
    return f"expected the fields {expected}, found {', '.join(found) if isinstance(found, dict) and found else 'none'}"


class _DropRlmNotices(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_QUIET)


@contextlib.contextmanager
def _quiet_dspy() -> Iterator[None]:
    """dspy.RLM logs, as warnings, two things this framework reports itself: the declined sandbox facade and the
    end of its iterations."""
    logger, quiet = logging.getLogger("dspy.predict.rlm"), _DropRlmNotices()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def create(settings: DspyRlmSettings | dict | None, ctx: FrameworkContext) -> DspyRlmFramework:
    """The ``FrameworkSpec`` factory: ``create(settings, ctx) -> DspyRlmFramework``."""
    if not isinstance(settings, DspyRlmSettings):
        settings = DspyRlmSettings(**(settings or {}))
    return DspyRlmFramework(settings, ctx)
