"""The ``rlms`` environment: the authors' RLM loop on rlm's engine.

The REPL has their names: ``context`` (and ``context_0`` …, ``history_0`` … / ``history`` for a persistent
``RLM``), ``llm_query`` / ``llm_query_batched`` (rlm's sub-calls), ``rlm_query`` / ``rlm_query_batched`` with
their signatures (``recursion.py``), ``SHOW_VARS`` and the ``answer`` dict. A turn's ```repl blocks run in order
in the run's sandbox session; the run ends when code sets ``answer["ready"]`` (its ``content`` is the answer, as
``str()`` makes it), when code calls ``FINAL`` / ``FINAL_VAR``, or with a ``FINAL(...)`` line outside code.
Code's output goes back with the next turn's prompt; a reply without code gets the next turn's prompt only.

rlm's strengths stay underneath: every turn is a step of the run's trajectory (blocks with their output, sub-calls,
child runs), the budget and limits are the run's, the sandbox is whichever the run has, and with
``compaction`` the older turns fold into a summary (rlm's ``ChatCompactor``) near the root model's window, the
full conversation then being the REPL's ``history``. ``max_errors`` stops the run after that many iterations in a
row whose code failed (``ErrorThresholdReached``)."""

from __future__ import annotations

import json
from typing import Any, Optional

from rlm_host import ActionResult, RlmError
from rlm_host.sdk.environments import SubCalls, answer_text, execute_code, tools_prompt, truncate
from rlm_host.sdk.frameworks import REPL_REPLY_FORMAT, ChatCompactor

from rlm_compat_rlms.loop import prompts
from rlm_compat_rlms.loop.recursion import Recursion
from rlm_compat_rlms.loop.replies import read_reply
from rlm_compat_rlms.loop.settings import RlmsLoopSettings
from rlm_compat_rlms.loop.turn import ErrorStreak, Turn

EMPTY_ANSWER = {"content": "", "ready": False}


class ErrorThresholdReached(RlmError):
    """``max_errors`` iterations in a row had code that failed: the run stops (the front raises rlms' exception)."""


class RlmsEnvironment:
    """One run of the loop (see the module docstring); ``ctx.carry`` is a ``Turn`` for a completion's root run."""

    name = "rlms"
    reply_format = REPL_REPLY_FORMAT  # prose, then ```repl code or a FINAL line: enforced where the provider can

    def __init__(self, settings: Optional[RlmsLoopSettings], ctx: Any) -> None:
        self.ctx = ctx
        self.settings = settings or RlmsLoopSettings()
        self.turn: Optional[Turn] = ctx.carry if isinstance(ctx.carry, Turn) else None
        self.session: Any = None
        self.conversation: list[dict[str, str]] = []
        self.pending = ""  # the last turn's REPL output, sent with the next turn's prompt
        self.failures_in_a_row = 0
        self.compactor: Optional[ChatCompactor] = None
        self.contexts = 1
        self.histories = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        session = self.session = self.ctx.open_sandbox()
        session.start()
        calls = SubCalls(self.ctx, concurrency=self.settings.batch_concurrency)
        recursion = Recursion(self.ctx, calls, self.settings.max_concurrent_subcalls)
        session.register_functions({"llm_query": calls.llm_query, "llm_query_batched": calls.llm_query_batched,
                                    **recursion.functions(), **calls.tools.functions()})
        contexts = self._bind_names(session)
        if calls.tools.tools:  # custom_tools: each a function of its name (the host's bridge), listed in the prompt
            defined = session.execute(calls.tools.source())
            if not defined.ok:
                raise RlmError(f"custom_tools could not be defined in the sandbox: {defined.error}")
        if self.turn is not None and self.turn.setup_code:
            result = session.execute(self.turn.setup_code)
            if not result.ok:
                raise RlmError(f"environment_kwargs['setup_code'] failed: {result.error or 'it timed out'}")
        system = prompts.system_prompt(self.settings.system_prompt, self.settings.orchestrator, self.ctx.instructions,
                                       tools_prompt(self.ctx.tools))
        first = prompts.opening(self._question(), contexts[-1], self.settings.user_prologue)
        self.conversation = [{"role": "system", "content": system}, {"role": "user", "content": first}]
        if self.turn is not None:
            self.turn.conversation = self.conversation
        if self.settings.compaction:
            self.compactor = ChatCompactor(_Windowed(self.ctx.root, self.settings.context_window),
                                           threshold=self.settings.compaction_threshold)

    def _bind_names(self, session: Any) -> list[Any]:
        """``context`` / ``context_N``, ``history`` / ``history_N`` and ``answer`` in the REPL; the contexts."""
        turn = self.turn
        contexts = turn.contexts if turn is not None and turn.contexts else [self.ctx.context]
        if contexts[0] is not None:
            for index, value in enumerate(contexts):
                session.set_variable(f"context_{index}", value)
            session.set_variable("context", contexts[0])
        histories = turn.histories if turn is not None else []
        for index, history in enumerate(histories):
            session.set_variable(f"history_{index}", history)
        if histories:
            session.set_variable("history", histories[0])
        session.set_variable("answer", dict(EMPTY_ANSWER))
        self.contexts, self.histories = len(contexts), len(histories)
        return contexts

    def close(self) -> None:
        if self.session is not None:
            self.session.shutdown()
            self.session = None

    # ------------------------------------------------------------------ a turn

    def messages(self, step: int) -> list[dict[str, str]]:
        prompt = prompts.turn_prompt(step, self.ctx.max_steps, self.contexts, self.histories)
        if step == 1 and self.turn is not None and self.turn.not_carried:
            prompt += (" Not carried over from earlier completions (only data is; rebuild them if you need them): "
                       f"{', '.join(self.turn.not_carried)}.")
        self._say("\n\n".join(part for part in (self.pending, prompt) if part))
        self.pending = ""
        shown = self._shown()
        if self.turn is not None:
            self.turn.prompts[step] = list(shown)
        return shown

    def execute(self, reply: Any, step: int) -> ActionResult:
        text = reply.text or ""
        rewards = self.ctx.rewards
        self.conversation.append({"role": "assistant", "content": text})
        if not text.strip():
            detail = reply.raw.get("malformed", "the reply was empty")
            self.pending = f"Your reply was empty ({detail})."
            return ActionResult(action="malformed_reply", observation={"error": detail},
                                reward=-rewards.no_action_penalty)
        if self.turn is not None:
            self.turn.partial_answer = text
        parsed = read_reply(text)
        results, records, answer, source = [], [], None, None
        for number, code in enumerate(parsed.blocks, 1):
            result = execute_code(self.ctx.scope, self.session, code, self.ctx.step_timeout(), step=step, block=number)
            results.append(result)
            answer = answer_text(result.final) if result.final is not None else self._submitted()
            records.append(_block_record(code, result, answer))
            if answer is not None:
                source = "code"
                break
        notes = []
        if parsed.unclosed:
            notes.append("Your last ```repl block was not closed with ``` at the start of a line, so it did not run.")
        if answer is None and parsed.final is not None:
            answer, note = self._final_in_text(*parsed.final)
            source = "text" if answer is not None else None
            notes += [note] if note else []
        observation: dict[str, Any] = {"blocks": records, "success": all(r.ok for r in results)}
        if notes:
            observation["notes"] = notes
        ran_code = "\n\n".join(parsed.blocks) or None
        if answer is not None:
            observation["final_source"] = source
            if self.turn is not None:
                self.turn.final_answer = answer
            return ActionResult(action="final", observation=observation, reward=rewards.final_reward, done=True,
                                final_response=answer, code=ran_code)
        outputs = [self._output(result) for result in results]
        self.pending = "\n\n".join([prompts.repl_output(outputs)] * bool(outputs) + notes)
        self._count_failures(results)
        if not results:
            return ActionResult(action="no_code", observation=observation, reward=-rewards.no_action_penalty)
        failed = not all(r.ok for r in results)
        reward = rewards.code_step(ok=not failed, stderr=any(r.stderr for r in results))
        return ActionResult(action="run_code", observation=observation, reward=reward, code=ran_code)

    def synthesize(self) -> Optional[str]:
        """Turns used up: one more call for the answer the conversation supports (rlms' default answer)."""
        self._say("\n\n".join(part for part in (self.pending, prompts.SYNTHESIS_PROMPT) if part))
        self.pending = ""
        completion = self.ctx.root.complete(self._shown(), purpose="synthesis")
        text = (completion.text or "").strip()
        final = read_reply(text).final  # an answer in the loop's own form is the answer it names
        if final is not None:
            answer, _ = self._final_in_text(*final)
            return answer
        return text or None

    # ------------------------------------------------------------------ helpers

    def _question(self) -> Optional[str]:
        """The question the first message states: the caller's (None: none) for a completion; a child's task
        only when it is not its context (rlm_query gives the prompt as both)."""
        if self.turn is not None:
            return self.turn.question
        task = self.ctx.task
        return None if isinstance(self.ctx.context, str) and task == self.ctx.context else task

    def _say(self, text: str) -> None:
        """A user message: added to the previous one when that is the user's too (never two in a row)."""
        last = self.conversation[-1]
        if last["role"] == "user":
            self.conversation[-1] = {"role": "user", "content": f"{last['content']}\n\n{text}"}
        else:
            self.conversation.append({"role": "user", "content": text})

    def _shown(self) -> list[dict[str, str]]:
        """The messages the model is sent: the conversation, older turns folded into a summary near the window
        (the whole conversation is then the REPL's ``history``)."""
        if self.compactor is None:
            return list(self.conversation)
        shown = self.compactor.fit(self.conversation)
        if shown != self.conversation:  # folded: the REPL keeps what the model no longer sees
            self.session.set_variable("history", list(self.conversation))
        return list(shown)

    def _submitted(self) -> Optional[str]:
        """``answer["content"]`` once code set ``answer["ready"]`` (a rebound ``answer`` is made a dict again)."""
        try:
            value = self.session.get_variable("answer")
        except KeyError:
            value = None
        if isinstance(value, dict):
            return str(value.get("content", "")) if value.get("ready") else None
        self.session.set_variable("answer", dict(EMPTY_ANSWER))
        return None

    def _final_in_text(self, kind: str, argument: str) -> tuple[Optional[str], Optional[str]]:
        if kind == "text":
            return argument, None
        try:
            value = self.session.get_variable(argument)
        except KeyError:
            return None, (f"FINAL_VAR({argument}) failed: there is no variable named {argument!r} in the REPL "
                          "(SHOW_VARS() lists them).")
        return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)), None

    def _output(self, result: Any) -> str:
        limit = self.settings.max_output_chars
        parts = [result.stdout, result.stderr, result.error or ("the code block timed out" if result.timed_out else "")]
        text = "\n".join(part.rstrip("\n") for part in parts if part)
        return truncate(text, limit) if text else "(nothing printed)"

    def _count_failures(self, results: list[Any]) -> None:
        """Count iterations in a row whose code failed; stop the run at ``max_errors`` (rlms' error threshold)."""
        failed = [r for r in results if r.stderr or not r.ok]
        self.failures_in_a_row = self.failures_in_a_row + 1 if failed else 0
        limit = self.settings.max_errors
        if limit is None or self.failures_in_a_row < limit:
            return
        last = failed[-1]
        error = last.error or last.stderr or "the code block timed out"
        if self.turn is not None:
            self.turn.error_streak = ErrorStreak(self.failures_in_a_row, limit, error)
        raise ErrorThresholdReached(f"{self.failures_in_a_row} iterations in a row had failing code (max_errors "
                                    f"{limit}); the last error: {truncate(error, 500)}")


class _Windowed:
    """The root model's role with a context window when its connector knows none (rlms' default), for compaction."""

    def __init__(self, role: Any, window: int) -> None:
        self._role = role
        self.context_window = role.context_window or window

    def __getattr__(self, name: str) -> Any:
        return getattr(self._role, name)


def _block_record(code: str, result: Any, answer: Optional[str]) -> dict[str, Any]:
    """A block as the step's observation keeps it (what ``rlm runs show`` and the rlms exporter read)."""
    record: dict[str, Any] = {"code": code, "stdout": truncate(result.stdout, 4000),
                              "duration_s": round(result.duration_s, 4)}
    for key in ("stderr", "error"):
        if getattr(result, key):
            record[key] = truncate(getattr(result, key), 4000)
    if result.timed_out:
        record["timed_out"] = True
    if result.restarted:
        record["restarted"] = True
    if answer is not None:
        record["final"] = result.final.model_dump() if result.final is not None else {"kind": "answer", "value": answer}
    return record


def create(settings: Optional[RlmsLoopSettings], ctx: Any) -> RlmsEnvironment:
    """The ``EnvironmentSpec`` factory: ``create(settings, ctx)``."""
    return RlmsEnvironment(settings, ctx)


__all__ = ["RlmsEnvironment", "ErrorThresholdReached", "create"]
