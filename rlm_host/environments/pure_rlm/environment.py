"""The pure_rlm environment: the paper-faithful RLM loop.

``context`` lives in a persistent sandbox session and the root model sees only its metadata. Each reply's
```repl blocks run in order; their (truncated) output is fed back; the run ends with FINAL / FINAL_VAR / SUBMIT
called in code, or FINAL(...) / FINAL_VAR(...) at the start of a line of the reply.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from rlm_host.environments.kit import (answer_text, execute_code, render_description, truncate, variable_snapshot,
                                      with_instructions)
from rlm_host.environments.protocol import EnvironmentContext
from rlm_host.environments.repl import SubCalls, document_names
from rlm_host.environments.output_type import OutputInvalid
from rlm_host.environments.repl_tools import tools_prompt
from rlm_host.environments.pure_rlm import prompts
from rlm_host.environments.pure_rlm.history import History
from rlm_host.environments.repl_format import REPLY_FORMAT, parse_reply, synthesized_answer
from rlm_host.errors import SandboxError
from rlm_host.models.protocol import Completion, Message
from rlm_host.sandbox.protocol import SandboxSession
from rlm_host.results import ActionResult, ExecResult, FinalSignal
from rlm_host.tokens import CHARS_PER_TOKEN, count_tokens


class PureRLMSettings(BaseModel):
    """``[environment.pure_rlm]``."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(8000, ge=200, description="REPL output fed back per block (head + tail)")
    preview_chars: int = Field(200, ge=0, le=2000, description="characters of context shown as a preview")
    batch_concurrency: int = Field(32, ge=1, le=256, description="cap of llm_query_batched calls in flight at once "
                                   "(a batch runs all its calls together up to this and the provider's limit)")
    compaction: bool = Field(True, description="summarise old turns when the history nears the context window")
    compaction_threshold: float = Field(0.85, gt=0, le=1, description="share of the context window")
    context_window: Optional[int] = Field(None, ge=1024,
                                          description="root model's window, tokens (default: provider's, else 32768)")
    keep_last_turns: int = Field(4, ge=0, description="turns kept verbatim when compacting")
    record_variables: bool = Field(True, description="record the REPL's variables (name, type, size, short repr) "
                                   "after each step that ran code, for replay")


DEFAULT_CONTEXT_WINDOW = 32768


class PureRLMEnvironment:
    name = "pure_rlm"
    reply_format = REPLY_FORMAT  # prose, then ```repl blocks or a FINAL line: enforced where the connector can

    def __init__(self, settings: Optional[PureRLMSettings], ctx: EnvironmentContext) -> None:
        self.ctx = ctx
        self.settings = settings or PureRLMSettings()
        self.session: Optional[SandboxSession] = None
        self.nudged = False
        self.history: Optional[History] = None
        self.baseline: set[str] = set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        session, calls = self._new_session()
        self.session = session
        helpers = session.execute(calls.helpers_source())
        if not helpers.ok:
            raise RuntimeError(f"the sandbox could not define the REPL helpers: {helpers.error}")
        self.baseline = set(session.list_variables())  # the environment's own names: not the model's variables
        notes = session.info.python_notes
        system = prompts.SYSTEM_PROMPT.format(
            files_help=prompts.FILES_HELP if len(document_names(self.ctx.context)) > 1 else "",
            max_steps=self.ctx.max_steps, max_llm_calls=self.ctx.budget.max_llm_calls,
            python_notes=f"\n\nThe REPL's Python: {notes}" if notes else "")
        extra = [part for part in (tools_prompt(self.ctx.tools), self.ctx.output and self.ctx.output.prompt()) if part]
        system = with_instructions("\n\n".join([system, *extra]), self.ctx.instructions)
        description = render_description(self.ctx.context_meta, self.settings.preview_chars)
        opening = prompts.FIRST_USER_MESSAGE.format(task=self.ctx.task, description=description)
        self.history = History({"role": "system", "content": system}, {"role": "user", "content": opening},
                               count=lambda text: count_tokens(text, self.ctx.root))

    def _new_session(self) -> tuple[SandboxSession, SubCalls]:
        """A started session with the REPL's functions and the context bound, and those functions (the helpers
        are not run yet)."""
        session = self.ctx.open_sandbox()
        session.start()
        keep_cells = getattr(session, "keep_cells_for_rebuild", None)
        if keep_cells is not None:  # the REPL has no outside effects: a lost worker is rebuilt by replaying cells
            keep_cells()
        calls = SubCalls(self.ctx, concurrency=self.settings.batch_concurrency)
        calls.install(session)
        return session, calls

    def close(self) -> None:
        if self.session is not None:
            self.session.shutdown()
            self.session = None

    def trial(self, reply: Completion, step: int) -> "Trial":
        """What ``execute(reply, step)`` gives, run in a throwaway copy of the REPL (its cells run again, their
        sub-calls answered from the record) with a copy of the history: ``commit()`` makes the copy this
        environment's state (the step is then taken), ``discard()`` drops it (``branch_width``)."""
        import copy as copying

        assert self.session is not None and self.history is not None, "start() first"
        fresh, _ = self._new_session()
        take_cells = getattr(fresh, "take_cells", None)
        if take_cells is None:
            fresh.shutdown()
            raise SandboxError(f"the {fresh.info.name} sandbox cannot copy a REPL: --branch-width needs one that "
                               "keeps its cells (the built-in process runtime, Monty, Docker)")
        lost = take_cells(self.session)
        twin = copying.copy(self)  # this environment on the copied REPL and history: it takes the step
        twin.session = fresh
        twin.history = copying.deepcopy(self.history)
        try:
            result = twin.execute(reply, step)
        except BaseException:
            fresh.shutdown()
            raise
        if lost:
            result.observation.setdefault("notes", []).append(f"the copy of the REPL was incomplete: {lost}")
        return Trial(result, lambda: self._adopt(twin), fresh.shutdown)

    def _adopt(self, twin: "PureRLMEnvironment") -> None:
        old = self.session
        self.__dict__.update(twin.__dict__)
        if old is not None:
            old.shutdown()

    # ------------------------------------------------------------------ the step

    def messages(self, step: int) -> list[Message]:
        assert self.history is not None, "start() first"
        window = self._window()
        if self.settings.compaction and self.history.needs_compaction(window, self.settings.compaction_threshold):
            before, after = self.history.compact(self._summarise, self.settings.keep_last_turns, window)
            self.ctx.scope.emit("compaction", {"step": step, "turns_before": before, "turns_after": after,
                                               "summary": self.history.summary})
        return self.history.messages()

    def execute(self, reply: Completion, step: int) -> ActionResult:
        assert self.history is not None and self.session is not None, "start() first"
        if reply.input_tokens:
            self.history.last_prompt_tokens = reply.input_tokens + reply.output_tokens
        text = reply.text
        if not text or not text.strip():
            detail = reply.raw.get("malformed", "the reply was empty")
            self.history.add_turn(text or "", f"Your reply was empty ({detail}). {prompts.NO_CODE}")
            return ActionResult(action="malformed_reply", observation={"error": detail},
                                reward=-self.ctx.rewards.no_action_penalty)

        parsed = parse_reply(text)
        results: list[ExecResult] = []
        final: Optional[FinalSignal] = None
        for block, cell in enumerate(parsed.code_blocks, 1):
            # a sandbox failure raises
            result = execute_code(self.ctx.scope, self.session, cell, self.ctx.step_timeout(), step=step, block=block)
            results.append(result)
            if result.final is not None:
                final = result.final
                break
        unclosed = "Your last code block was not closed with ```; it ran up to the end of your reply."
        notes: list[str] = [unclosed] if parsed.unclosed_fence else []
        if final is None and parsed.final_kind is not None:
            final, note = self._final_from_text(parsed.final_kind, parsed.final_text or "", step,
                                                ran_code=bool(results))
            if note:
                notes.append(note)

        code, ok = "\n\n".join(parsed.code_blocks) or None, all(r.ok for r in results)
        observation = {"blocks": [_block_record(c, r) for c, r in zip(parsed.code_blocks, results)], "success": ok}
        if results and self.settings.record_variables:
            observation["variables"] = variable_snapshot(self.session, self.baseline)
        if notes:
            observation["notes"] = notes
        rejected = self._rejected(final)
        if rejected is not None:
            observation["final_rejected"] = rejected
            self.history.add_turn(text, f"Your final answer does not match the required type, so the run goes on:\n"
                                        f"{rejected}\nFix it and give the final answer again.")
            return ActionResult(action="final_rejected", observation=observation, code=code,
                                reward=-self.ctx.rewards.no_action_penalty)
        if final is not None:
            observation["final_source"] = "code" if results and results[-1].final is not None else "text"
            self.history.add_turn(text, "Final answer received.")
            return ActionResult(action="final", observation=observation, reward=self.ctx.rewards.final_reward,
                                done=True, final_response=answer_text(final), code=code)
        if not results and not notes:
            self.history.add_turn(text, prompts.NO_CODE)
            return ActionResult(action="no_code", observation=observation, reward=-self.ctx.rewards.no_action_penalty)
        feedback = "\n\n".join([*(self._render(i, r) for i, r in enumerate(results, 1)), *notes]) or prompts.NO_CODE
        self.history.add_turn(text, feedback)
        reward = self.ctx.rewards.code_step(ok=ok, stderr=any(r.stderr for r in results)) if results else 0.0
        # [run] nudge_first_answer: a FINAL at step 1 before any code looked at the context, refused once
        action = "run_code" if results else "first_answer_refused" if prompts.NUDGE_FIRST_ANSWER in notes else "nudge"
        return ActionResult(action=action, observation=observation, reward=reward, code=code)

    def _rejected(self, final: Optional[FinalSignal]) -> Optional[str]:
        """Why a final answer does not match the run's output type (None: it does, or the run has none)."""
        if final is None or self.ctx.output is None:
            return None
        try:
            self.ctx.output.parse(answer_text(final))
        except OutputInvalid as invalid:
            return str(invalid)
        return None

    def synthesize(self) -> Optional[str]:
        assert self.history is not None
        messages = self.history.messages() + [{"role": "user", "content": prompts.SYNTHESIS_PROMPT}]
        return synthesized_answer(self.ctx.root.complete(messages, purpose="synthesis").text, self.session)

    # ------------------------------------------------------------------ helpers

    def _final_from_text(self, kind: str, argument: str, step: int, *,
                         ran_code: bool) -> tuple[Optional[FinalSignal], Optional[str]]:
        assert self.session is not None
        if kind == "direct" and step == 1 and not ran_code and not self.nudged and self.ctx.nudge_first_answer \
                and self.ctx.context is not None:
            self.nudged = True
            return None, prompts.NUDGE_FIRST_ANSWER
        if kind == "variable":
            try:
                return FinalSignal(kind="variable", var=argument, value=self.session.get_variable(argument)), None
            except KeyError:
                return None, (f"FINAL_VAR({argument}) failed: there is no variable named {argument!r} in the REPL. "
                              "Create it with code first (SHOW_VARS() lists your variables).")
        return FinalSignal(kind="direct", value=argument), None

    def _window(self) -> int:
        return self.settings.context_window or self.ctx.root.context_window or DEFAULT_CONTEXT_WINDOW

    def _render(self, index: int, result: ExecResult) -> str:
        # a block's output may take at most a tenth of the window: small local models would otherwise overflow
        # their context after a single noisy step
        limit = max(200, min(self.settings.max_output_chars, self._window() * CHARS_PER_TOKEN // 10))
        parts = [f"[block {index}] output:\n{truncate(result.stdout, limit) if result.stdout else '(nothing printed)'}"]
        parts += [f"[block {index}] {key}:\n{truncate(value, limit // 2)}" for key in ("stderr", "error")
                  if (value := getattr(result, key))]
        return "\n".join(parts)

    def _summarise(self, messages: list[Message]) -> str:
        completion = self.ctx.root.complete(messages + [{"role": "user", "content": prompts.COMPACTION_PROMPT}],
                                            purpose="compaction")
        return (completion.text or "").strip() or "(the model returned no summary)"


class Trial:
    """A reply tried in a copy of the REPL: its ``result``, and the calls that keep or drop the copy."""

    def __init__(self, result: ActionResult, commit: Any, discard: Any) -> None:
        self.result, self.commit, self.discard = result, commit, discard


def _block_record(code: str, result: ExecResult) -> dict[str, Any]:
    record: dict[str, Any] = {"code": code, "stdout": truncate(result.stdout, 4000),
                              "duration_s": round(result.duration_s, 4)}
    record.update({key: truncate(value, 4000) for key in ("stderr", "error") if (value := getattr(result, key))})
    record.update({key: True for key in ("timed_out", "restarted") if getattr(result, key)})
    if result.final is not None:
        record["final"] = result.final.model_dump()
    return record
