"""The ``dspy`` environment (the seeds' DSPyCodingRLMEnvironment): an agent that writes, patches, tests and
improves DSPy programs in a project folder, rewarded by a verifier that runs inside the sandbox.

Each reply is one JSON action. File actions (``write_file``, ``patch_file``, ``read_file``, ``list_tree``) are
done on the host through :class:`~rlm_host.sdk.environments.ProjectFiles`, confined to the run's ``--workdir``; every
check that runs code or a model-given regex (compile, pytest, the analysis, ``search_code``) runs in the
sandbox, whose working directory is that same folder mounted read-write. ``run_python``, ``delegate`` and
``delegate_batch`` are the built-in generic environment's own, run on the same session; ``llm_query`` and
``llm_query_batched`` are the host's sub-calls (budget, events, replay). Rewards come from ``[rewards]`` (what
every environment shares) and the verifier's weights from ``[environment.dspy]`` (``DSPySettings``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ActionResult, InputError, SandboxError
from rlm_host.sdk.environments import (EnvironmentContext, StepHistory, SubCalls, reply_action, truncate,
                                       with_instructions)
from rlm_host.sdk.models import Completion, Message, ReplyFormat

from rlm_env_dspy import verifier
from rlm_host.sdk.environments import ApprovalRequest, PathRefused, ProjectFiles

SYSTEM_PROMPT = """\
You are an RLM coding agent that writes, tests and improves DSPy programs in a project folder.
Reply with ONE JSON object per turn, no markdown. Keys: "action" plus the action's own keys, and "rationale".
Actions:
- {"action": "list_tree", "path": ".", "depth": 2}
- {"action": "read_file", "path": "qa.py", "start_line": 1, "end_line": 80}
- {"action": "search_code", "pattern": "regex", "path": "."}   (over the project's .py files)
- {"action": "write_file", "path": "qa.py", "content": "..."}   (create or replace; then verified: compile, its \
tests, analysis)
- {"action": "patch_file", "path": "qa.py", "search": "exact old text", "replace": "new text"}   (or "content" \
for a full rewrite; verified the same way)
- {"action": "run_tests", "selection": ["tests/test_qa.py"]}   (pytest; selection optional)
- {"action": "analyze_dspy", "path": "qa.py"} or {"action": "analyze_code"}   (a 0-100 quality score with reasons)
- {"action": "run_python", "code": "..."}   (a persistent REPL whose working directory is the project folder)
- {"action": "llm_query", "prompt": "..."} / {"action": "llm_query_batched", "prompts": ["...", "..."]}
- {"action": "delegate", "task": "...", "context": "..."} / {"action": "delegate_batch", "tasks": ["..."]}
- {"action": "final", "final_response": "what you did and how it was verified"}
DSPy 3: typed class signatures (dspy.Signature subclasses with dspy.InputField/dspy.OutputField and desc=...), \
modules that subclass dspy.Module and implement forward(), predictors such as dspy.Predict and \
dspy.ChainOfThought, dspy.LM and dspy.configure for models. Write tests with dspy.utils.DummyLM; nothing has \
network access. Finish with final once the tests pass."""

ACTIONS = ("run_python", "write_file", "patch_file", "read_file", "search_code", "list_tree", "run_tests",
           "analyze_dspy", "analyze_code", "llm_query", "llm_query_batched", "delegate", "delegate_batch",
           "final")
_GENERIC = ("run_python", "delegate", "delegate_batch")

#: One action object, every key present (null where unused) as OpenAI's strict structured outputs want; llama.cpp
#: turns it into a grammar. Replies that break it are still read (``reply_action``).
_TEXT, _INT = {"type": ["string", "null"]}, {"type": ["integer", "null"]}
_TEXTS = {"type": ["array", "null"], "items": {"type": "string"}}
_KEYS = {"rationale": _TEXT, "path": _TEXT, "content": _TEXT, "search": _TEXT, "replace": _TEXT,
         "start_line": _INT, "end_line": _INT, "depth": _INT, "pattern": _TEXT, "selection": _TEXTS, "code": _TEXT,
         "prompt": _TEXT, "prompts": _TEXTS, "task": _TEXT, "tasks": _TEXTS, "context": _TEXT,
         "final_response": _TEXT}
ACTION_SCHEMA = {"type": "object", "properties": {"action": {"type": "string", "enum": list(ACTIONS)}, **_KEYS},
                 "required": ["action", *_KEYS], "additionalProperties": False}
REPLY_FORMAT = ReplyFormat("dspy_action", json_schema=ACTION_SCHEMA)


class DSPySettings(BaseModel):
    """``[environment.dspy]``."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(4000, ge=200, description="output shown per step")
    test_timeout: float = Field(120.0, gt=0, description="seconds for one pytest or compile run in the sandbox")
    verify_after_write: bool = Field(True, description="compile, test and analyse every written or patched file")
    validation_min_score: int = Field(60, ge=0, le=100, description="analysis score a written file needs to pass "
                                      "validation")
    batch_concurrency: int = Field(8, ge=1, le=64, description="llm_query_batched calls in flight at once")
    sandbox_packages: list[str] = Field(default_factory=list, description="what the project's tests need besides "
                                        "dspy and pytest (its declared test dependencies): pip requirements added "
                                        "to the sandbox (Docker: `rlm sandbox build-image --with …`)")
    # the verifier's rewards, after a file is written or patched (with [rewards] run_python_base as the base)
    verifier_compile_bonus: float = Field(0.20, description="the written file compiles")
    verifier_compile_penalty: float = Field(0.20, description="the written file does not compile")
    verifier_pytest_bonus: float = Field(0.25, description="its tests (or run_tests) pass")
    verifier_pytest_penalty: float = Field(0.25, description="its tests (or run_tests) fail")
    verifier_validation_bonus: float = Field(0.15, description="the code analysis finds it sound")
    verifier_validation_penalty: float = Field(0.15, description="the code analysis finds problems")
    dspy_pattern_match_bonus: float = Field(0.05, description="per DSPy pattern in written or run code "
                                            "(import dspy, Signature, InputField, OutputField, Module, forward)")
    dspy_pattern_bonus_cap: float = Field(0.20, description="the most the DSPy patterns of one step earn")


class DSPyCodingEnvironment:
    """One run's agent over the project folder ``ctx.workdir``."""

    name = "dspy"
    reply_format = REPLY_FORMAT  # enforced where the connector can (llama.cpp, vLLM, OpenAI json_schema)

    def __init__(self, settings: Optional[DSPySettings], ctx: EnvironmentContext) -> None:
        if ctx.workdir is None:
            raise InputError("the dspy environment needs a project folder", hint="rlm run --env dspy --workdir DIR")
        self.settings = settings or DSPySettings()
        self.ctx = ctx
        self.workspace = ProjectFiles(ctx.workdir)
        self.session: Any = None
        self.history = StepHistory()
        inner_ctx = replace(ctx, open_sandbox=self._open_session)
        self._generic = ctx.build_environment("generic", inner_ctx)  # with its [environment.generic] settings
        self._sub_calls = SubCalls(ctx, concurrency=self.settings.batch_concurrency)

    def _open_session(self) -> Any:
        self.session = self.ctx.open_sandbox()
        return self.session

    # ------------------------------------------------------------------ the Environment protocol

    def start(self) -> None:
        self._generic.start()  # opens the session (our _open_session) and sets `context` when there is one

    def close(self) -> None:
        self._generic.close()
        self.session = None

    def messages(self, step: int) -> list[Message]:
        lines = [f"Task: {self.ctx.task}", f"Step: {step} of {self.ctx.max_steps}",
                 "Project files: " + (", ".join(self.workspace.python_files()[:60]) or "(none yet)")]
        lines += self.history.prompt_sections()
        system = with_instructions(SYSTEM_PROMPT, self.ctx.instructions)  # the user's guidance, after ours
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(lines)}]

    def execute(self, reply: Completion, step: int) -> ActionResult:
        action, _ = reply_action(reply)
        if action is None:  # an empty reply: the generic environment's verdict (a malformed_reply step)
            return self._record(self._generic.execute(reply, step))
        name = str(action.get("action", "")).strip()
        if name in _GENERIC or name == "final":
            result = self._generic.execute(reply.model_copy(update={"text": json.dumps(action)}), step)
            if result.action == "run_python" and result.code:
                patterns = verifier.dspy_patterns(result.code)
                result = result.model_copy(update={"reward": result.reward + verifier.pattern_bonus(
                    self.settings, patterns)})
            return self._record(result)
        handler = self._handlers().get(name)
        refusal = self._refusal(name, action) if handler is not None else None
        if refusal is not None:  # [run] approve: read-only, or ask and the user said no: a step, not an error
            return self._record(ActionResult(action=name, reward=0.0, observation={
                "success": False, "refused": True, "error": refusal, "notes": [refusal]}))
        if handler is None:
            return self._record(ActionResult(
                action="unsupported_action", reward=-self.ctx.rewards.unsupported_action_penalty,
                observation={"error": f"unknown action {name!r}; valid actions: {', '.join(ACTIONS)}"}))
        try:
            result = handler(action)
        except PathRefused as refused:
            result = ActionResult(action=name, observation={"success": False, "error": str(refused),
                                                            "notes": [f"refused: {refused}"]},
                                  reward=self._failure())
        except SandboxError as exc:
            result = ActionResult(action=name, observation={"success": False, "error": f"sandbox: {exc}",
                                                            "notes": [f"sandbox: {exc}"]},
                                  reward=self._failure())
        return self._record(result)

    def synthesize(self) -> Optional[str]:
        messages = self.messages(self.ctx.max_steps) + [
            {"role": "user", "content": "Steps are used up. Say in plain text what you built and what passed."}]
        completion = self.ctx.root.complete(messages, purpose="synthesis")
        return completion.text.strip() if completion.text else None

    # ------------------------------------------------------------------ actions

    def _refusal(self, name: str, action: dict[str, Any]) -> Optional[str]:
        """Why ``[run] approve`` stops this action (a write or the tests), or None."""
        if name in ("write_file", "patch_file"):
            content = action.get("content") if name == "write_file" else action.get("replace", action.get("content"))
            request = ApprovalRequest(name, "write", f"{name} {action.get('path')}", {"content": content},
                                      run_id=self.ctx.scope.run_id)
        elif name == "run_tests":
            request = ApprovalRequest(name, "command", f"pytest {' '.join(map(str, action.get('selection') or []))}",
                                      run_id=self.ctx.scope.run_id)
        else:
            return None
        return self.ctx.approvals.check(request)

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], ActionResult]]:
        return {"write_file": self._write, "patch_file": self._write, "read_file": self._read,
                "list_tree": self._list_tree, "search_code": self._search, "run_tests": self._run_tests,
                "analyze_dspy": self._analyze, "analyze_code": self._analyze, "llm_query": self._llm_query,
                "llm_query_batched": self._llm_query_batched}

    def _write(self, action: dict[str, Any]) -> ActionResult:
        name = action["action"]
        if name == "write_file":
            written = self.workspace.write_text(action.get("path"), action.get("content"))
        else:
            written = self.workspace.patch(action.get("path"), action.get("search"), action.get("replace"),
                                           action.get("content"))
        path = written["path"]
        _, text = self.workspace.read_text(path)
        patterns = verifier.dspy_patterns(text)
        check = verifier.Verification()
        if self.settings.verify_after_write:
            check = verifier.verify_file(self.session, path, self.workspace.python_files(),
                                         timeout=self.settings.test_timeout, keep=self.settings.max_output_chars // 2,
                                         min_score=self.settings.validation_min_score)
        observation = {"success": check.compiled is not False and check.tests_passed is not False, **written,
                       "verifier": check.as_observation(), "dspy_patterns": patterns,
                       "notes": [f"{path}: {check.summary()}"]}
        note = f"{name} {path}: compile={check.compiled} tests={check.tests_passed} validation={check.validated}"
        return ActionResult(action=name, observation=observation, memory_note=note,
                            reward=verifier.reward_of(self.ctx.rewards, self.settings, check, patterns))

    def _read(self, action: dict[str, Any]) -> ActionResult:
        shown = self.workspace.read_lines(action.get("path"), action.get("start_line", 1), action.get("end_line"))
        shown["content"] = truncate(shown["content"], self.settings.max_output_chars)
        return ActionResult(action="read_file", observation={"success": True, **shown}, reward=self._success())

    def _list_tree(self, action: dict[str, Any]) -> ActionResult:
        listing = self.workspace.list_tree(action.get("path") or ".", action.get("depth", 2))
        return ActionResult(action="list_tree", observation={"success": True, **listing}, reward=self._success())

    def _search(self, action: dict[str, Any]) -> ActionResult:
        pattern = action.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise PathRefused("search_code needs a 'pattern' (a regular expression)")
        base = self.workspace.relative(self.workspace.resolve(action.get("path") or "."))
        files = [f for f in self.workspace.python_files() if base == "." or f.startswith(base.rstrip("/") + "/")
                 or f == base]
        found = verifier.search(self.session, pattern, files, timeout=self.ctx.limits.exec_timeout)
        ok = "error" not in found
        return ActionResult(action="search_code", observation={"success": ok, "pattern": pattern, **found},
                            reward=self._success() if ok else self._failure())

    def _run_tests(self, action: dict[str, Any]) -> ActionResult:
        selection = action.get("selection") or []
        selection = [selection] if isinstance(selection, str) else selection
        if not isinstance(selection, list) or any(not isinstance(s, str) or s.startswith("-") for s in selection):
            raise PathRefused("'selection' is a list of test files or node ids (no options)")
        for item in selection:
            self.workspace.resolve(item.split("::", 1)[0])  # each selected file must be in the project
        tests = verifier.run_tests(self.session, selection, self.settings.test_timeout, self.settings.max_output_chars)
        weights = self.settings
        reward = self.ctx.rewards.run_python_base
        if not tests["no_tests"]:
            reward += weights.verifier_pytest_bonus if tests["passed"] else -weights.verifier_pytest_penalty
        note = f"run_tests {' '.join(selection) or '(all)'}: {tests['counts'] or tests['exit_code']}"
        return ActionResult(action="run_tests", observation={"success": tests["passed"], **tests, "notes": [note]},
                            reward=reward, memory_note=note)

    def _analyze(self, action: dict[str, Any]) -> ActionResult:
        raw = action.get("path") or action.get("paths")
        paths = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        files = [self.workspace.relative(self.workspace.resolve(p)) for p in paths] or self.workspace.python_files()
        if not files:
            raise PathRefused("the project has no .py files to analyse yet")
        report = verifier.analyze(self.session, files, timeout=self.settings.test_timeout)
        text = truncate(json.dumps(report, ensure_ascii=False), self.settings.max_output_chars)
        shown = json.loads(text) if len(text) < self.settings.max_output_chars else {"summary": text}
        note = f"analysis {report.get('score')}/100 over {len(files)} file(s), DSPy {report.get('dspy_version')}"
        return ActionResult(action=action["action"], observation={"success": True, "report": shown, "notes": [note]},
                            reward=self._success(), memory_note=note)

    def _llm_query(self, action: dict[str, Any]) -> ActionResult:
        prompt = action.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise PathRefused("llm_query needs a 'prompt'")
        try:
            answer = self._sub_calls.llm_query(prompt, action.get("model"))
        except RuntimeError as exc:  # the sub-call failed (model error, budget): the step says so
            return ActionResult(action="llm_query", observation={"success": False, "error": str(exc)},
                                reward=self._failure())
        return ActionResult(action="llm_query", reward=self._success(),
                            observation={"success": True,
                                         "response": truncate(answer, self.settings.max_output_chars)})

    def _llm_query_batched(self, action: dict[str, Any]) -> ActionResult:
        prompts = action.get("prompts")
        if not isinstance(prompts, list) or not prompts:
            raise PathRefused("llm_query_batched needs 'prompts', a list of strings")
        try:
            answers = self._sub_calls.llm_query_batched(prompts, action.get("model"))
        except RuntimeError as exc:
            return ActionResult(action="llm_query_batched", observation={"success": False, "error": str(exc)},
                                reward=self._failure())
        each = max(200, self.settings.max_output_chars // len(answers))
        return ActionResult(action="llm_query_batched", reward=self._success(),
                            observation={"success": True,
                                         "responses": [truncate(a, each) for a in answers]})

    # ------------------------------------------------------------------ rewards and history

    def _success(self) -> float:
        return self.ctx.rewards.run_python_base

    def _failure(self) -> float:
        return self.ctx.rewards.run_python_base - self.ctx.rewards.run_python_failure_penalty

    def _record(self, result: ActionResult) -> ActionResult:
        return self.history.record(result)
