"""The ``harness`` environment: a tool-using coding agent over the run's project folder (``--workdir``).

Each reply is one tool call in the text tool protocol (``rlm_host.sdk.tools``). File tools (``list_files``,
``read_file``, ``write_file``, ``patch_file``) act on the host through ``ProjectFiles``, confined to the folder
(no ``..``, no absolute path outside, no symlink out, no write to ``.git``/``.envrc``…); everything that runs
something the model wrote (``run_command``, ``run_tests``, and ``search``'s regex) runs inside the run's sandbox,
whose working directory is the same folder: Docker (a security boundary) or an explicit ``--sandbox process``
(not one, said so by the host); Monty cannot mount a folder and is refused before the run. ``llm_query`` is a
sub-call of the host (budget, events, replay). MCP tools go to the configured servers (``mcp_client``).

Before a write, a command or an MCP tool that is not read-only, ``ctx.approvals.check`` asks (``[run] approve``):
a refusal is the step's observation, never an error. Rewards come from ``[rewards]``: a tool that worked earns
``run_python_base``, one that failed that minus ``run_python_failure_penalty``, a command or tests the code-step
reward, ``final`` the final reward, a refusal 0.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

from rlm_host import ActionResult, InputError, SandboxError
from rlm_host.sdk.environments import (
    ApprovalRequest,
    EnvironmentContext,
    PathRefused,
    ProjectFiles,
    StepHistory,
    SubCalls,
    truncate,
)
from rlm_host.sdk.tools import (
    FinalAnswer,
    InvalidReply,
    format_tool_call,
    format_tool_result,
    parse_tool_reply,
)
from rlm_host.sdk.models import Completion, Message, ReplyFormat
from rlm_host.sdk.commands import terminal_safe
from rlm_host.sdk.frameworks import tool_error_text, tool_result_text

from rlm_harness import sandbox_ops, tools
from rlm_harness.mcp_client import McpPool
from rlm_harness.settings import HarnessSettings

#: Folders the search skips, and the most files it reads.
SKIPPED = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules", ".rlm",
           "_rlm_hidden_tests"}
MAX_SEARCH_FILES = 2000


class HarnessEnvironment:
    """One run's agent over the project folder ``ctx.workdir``."""

    name = "harness"

    def __init__(self, settings: Optional[HarnessSettings], ctx: EnvironmentContext) -> None:
        if ctx.workdir is None:
            raise InputError("the harness works in a project folder", hint="rlm harness run TASK --workdir DIR")
        self.settings = settings or HarnessSettings()
        self.ctx = ctx
        self.files = ProjectFiles(ctx.workdir)
        self.session: Any = None
        self.mcp = McpPool(self.settings.mcp_servers, ctx.workdir)
        self.history = StepHistory()
        self.turns: list[tuple[str, str]] = []  # (the call as the model should write it, the result)
        self.specs = list(tools.BUILTIN_TOOLS)
        self._step: Optional[int] = None
        self._sub_calls = SubCalls(ctx, concurrency=4)

    # ------------------------------------------------------------------ the Environment protocol

    @property
    def reply_format(self) -> ReplyFormat:
        return tools.reply_format(self.specs)

    def start(self) -> None:
        self.session = self.ctx.open_sandbox()
        self.session.start()
        self.mcp.start()  # each server bounded by its start-up timeout; a failure is that server's error
        self.specs = tools.tool_specs(self.mcp.tools, self._sub_calls.tools.tools)

    def close(self) -> None:
        self.mcp.close()
        if self.session is not None:
            self.session.shutdown()
            self.session = None

    def sandbox_label(self) -> str:
        """How an approval names where a command runs: "sandbox" only for a security boundary."""
        info = getattr(self.session, "info", None)
        if info is not None and not info.security_boundary:
            return f"{info.name} runtime (NOT a security boundary: runs as your user)"
        return f"{info.name} sandbox" if info is not None else "sandbox"

    def messages(self, step: int) -> list[Message]:
        lines = [f"Task: {self.ctx.task}", f"Step: {step} of {self.ctx.max_steps}",
                 "Project folder: " + self._overview()]
        unavailable = [f"{s['server']}: {s['error']}" for s in self.mcp.status() if s["error"]]
        if unavailable:
            lines.append("MCP servers not available: " + "; ".join(unavailable))
        shown = self.turns[-self.settings.history_steps:]
        if len(self.turns) > len(shown):
            lines.append("Earlier steps:\n" + "\n".join(f"- {note}" for note in self.history.memory))
        system = tools.system_prompt(self.specs, self.ctx.instructions)
        messages: list[Message] = [{"role": "system", "content": system},
                                   {"role": "user", "content": "\n\n".join(lines)}]
        for call, result in shown:
            messages += [{"role": "assistant", "content": call}, {"role": "user", "content": result}]
        return messages

    def execute(self, reply: Completion, step: int) -> ActionResult:
        self._step = step
        parsed = parse_tool_reply(reply.text, self.specs)
        if isinstance(parsed, InvalidReply):
            result = ActionResult(action="malformed_reply", observation={"success": False, "error": parsed.reason},
                                  reward=-self.ctx.rewards.no_action_penalty)
            return self._record(reply.text or "", result, status="retry")
        if isinstance(parsed, FinalAnswer):  # {"final": …} or plain text: the answer
            return self._final(parsed.text, reply.text or "")
        name, args = parsed.name, parsed.args
        call_text = format_tool_call(name, args)
        if name == "final":
            answer = args.get("answer") if isinstance(args, dict) else args
            return self._final(answer if isinstance(answer, str) else json.dumps(answer), call_text)
        run_tool = next((tool for tool in self._sub_calls.tools.tools if tool.name == name), None)
        if run_tool is not None and isinstance(args, dict):
            return self._record(call_text, self._run_tool(run_tool, args))
        handler = self._handlers().get(name)
        if handler is None and self.mcp.find(name) is None:
            down = self.mcp.unavailable(name)
            if down is not None:  # a tool of a server that did not start or stopped: that server's error
                result = ActionResult(action=name, reward=self._failure(), observation={"success": False,
                                                                                         "error": down})
                return self._record(call_text, result)
            known = ", ".join(spec.name for spec in self.specs)
            result = ActionResult(action="unsupported_action", reward=-self.ctx.rewards.unsupported_action_penalty,
                                  observation={"success": False,
                                               "error": f"unknown tool {name!r}; tools: {known}"})
            return self._record(call_text, result, status="retry")
        if not isinstance(args, dict):
            result = ActionResult(action=name, reward=self._failure(),
                                  observation={"success": False, "error": "'args' must be a JSON object"})
            return self._record(call_text, result, status="retry")
        refusal = self._refusal(name, args)
        if refusal is not None:  # [run] approve: read-only, or ask and the user said no: a step, not an error
            result = ActionResult(action=name, reward=0.0, observation={"success": False, "refused": True,
                                                                        "error": refusal,
                                                                        "notes": [refusal]})
            return self._record(call_text, result, status="error")
        try:
            result = handler(args) if handler is not None else self._mcp(name, args)
        except PathRefused as refused:
            result = ActionResult(action=name, observation={"success": False, "error": str(refused)},
                                  reward=self._failure())
        except SandboxError as exc:
            result = ActionResult(action=name, observation={"success": False, "error": f"sandbox: {exc}"},
                                  reward=self._failure())
        return self._record(call_text, result)

    def synthesize(self) -> Optional[str]:
        messages = self.messages(self.ctx.max_steps) + [
            {"role": "user", "content": "Steps are used up. Say in plain text what you changed and what passed."}]
        completion = self.ctx.root.complete(messages, purpose="synthesis")
        return completion.text.strip() if completion.text else None

    # ------------------------------------------------------------------ approvals

    def _refusal(self, name: str, args: dict[str, Any]) -> Optional[str]:
        """Why ``[run] approve`` stops this call, or None (reads are never asked about)."""
        run_id = self.ctx.scope.run_id
        kind = tools.KINDS.get(name)
        if kind == "write":
            content = args.get("content") if name == "write_file" else args.get("replace")
            request = ApprovalRequest(name, "write", f"{name} {args.get('path')}", {"content": content}, run_id=run_id)
        elif name == "run_command":
            where = f"the {self.sandbox_label()}"
            request = ApprovalRequest(name, "command", str(args.get("command")), {"in": where}, run_id=run_id)
        elif name == "run_tests":
            selection = args.get("selection") or []
            shown = " ".join(map(str, selection if isinstance(selection, list) else [selection]))
            request = ApprovalRequest(name, "command", f"pytest {shown}".strip(), run_id=run_id)
        elif name.startswith("mcp__"):
            tool = self.mcp.find(name)
            if tool is None:
                return None
            request = ApprovalRequest(name, tool.kind, f"{name} {json.dumps(args, ensure_ascii=False)[:300]}",
                                      {"server": tool.server, "destructive": tool.destructive},
                                      run_id=run_id)
        else:
            return None
        return self.ctx.approvals.check(request)

    # ------------------------------------------------------------------ the tools

    def _handlers(self) -> dict[str, Callable[[dict[str, Any]], ActionResult]]:
        return {"list_files": self._list, "read_file": self._read, "write_file": self._write,
                "patch_file": self._patch, "search": self._search, "run_command": self._command,
                "run_tests": self._tests, "llm_query": self._llm_query}

    def _list(self, args: dict[str, Any]) -> ActionResult:
        listing = self.files.list_tree(args.get("path") or ".", args.get("depth", 2))
        return self._ok("list_files", listing, f"listed {listing['path']}: {len(listing['entries'])} entries")

    def _read(self, args: dict[str, Any]) -> ActionResult:
        shown = self.files.read_lines(args.get("path"), args.get("start_line", 1), args.get("end_line"))
        shown["content"] = truncate(shown["content"], self.settings.max_output_chars)
        return self._ok("read_file", shown)

    def _write(self, args: dict[str, Any]) -> ActionResult:
        written = self.files.write_text(args.get("path"), args.get("content"))
        return self._ok("write_file", written, f"wrote {written['path']} ({written['bytes']} bytes)")

    def _patch(self, args: dict[str, Any]) -> ActionResult:
        patched = self.files.patch(args.get("path"), args.get("search"), args.get("replace"))
        return self._ok("patch_file", patched, f"patched {patched['path']}")

    def _search(self, args: dict[str, Any]) -> ActionResult:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise PathRefused("search needs a 'pattern' (a Python regular expression)")
        files = searchable_files(self.files, args.get("path") or ".")
        found = sandbox_ops.search(self.ctx.scope, self.session, pattern, files,
                                   timeout=self._seconds(self.settings.search_timeout),
                                   ignore_case=bool(args.get("ignore_case")), step=self._step)
        ok = "error" not in found
        observation = {"success": ok, "pattern": pattern, **found}
        return ActionResult(action="search", observation=observation, reward=self._success() if ok else self._failure())

    def _command(self, args: dict[str, Any]) -> ActionResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise PathRefused("run_command needs a 'command' (a shell command line)")
        limit = self.settings.command_timeout
        asked = args.get("timeout")
        if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked > 0:
            limit = min(limit, float(asked))
        done = sandbox_ops.run_shell(self.ctx.scope, self.session, command, timeout=self._seconds(limit),
                                     keep=self.settings.max_output_chars, step=self._step)
        ok = done.get("exit_code") == 0 and not done.get("timed_out") and not done.get("error")
        observation = {"success": ok, "command": command, **done}
        how = "timed out" if done.get("timed_out") else f"exit {done.get('exit_code')}"
        return ActionResult(action="run_command", observation=observation, memory_note=f"$ {command[:100]}: {how}",
                            reward=self.ctx.rewards.code_step(ok=ok, stderr=bool(done.get("stderr"))))

    def _tests(self, args: dict[str, Any]) -> ActionResult:
        selection = args.get("selection") or []
        selection = [selection] if isinstance(selection, str) else selection
        if not isinstance(selection, list) or any(not isinstance(s, str) or s.startswith("-") for s in selection):
            raise PathRefused("'selection' is a list of test files or node ids (no options)")
        for item in selection:
            self.files.resolve(item.split("::", 1)[0])  # each selected file must be in the project
        done = sandbox_ops.run_argv(self.ctx.scope, self.session, sandbox_ops.PYTEST + selection,
                                    timeout=self._seconds(self.settings.test_timeout),
                                    keep=self.settings.max_output_chars, step=self._step)
        passed = done.get("exit_code") == 0
        summary = (done.get("stdout") or "").strip().splitlines()[-1:] or [str(done.get("error") or "")]
        observation = {"success": passed, "passed": passed, "no_tests": done.get("exit_code") == 5, **done}
        return ActionResult(action="run_tests", observation=observation, memory_note=f"pytest: {summary[0][:120]}",
                            reward=self.ctx.rewards.code_step(ok=passed, stderr=False))

    def _llm_query(self, args: dict[str, Any]) -> ActionResult:
        prompt = args.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise PathRefused("llm_query needs a 'prompt'")
        try:
            answer = self._sub_calls.llm_query(prompt, args.get("model"))
        except RuntimeError as exc:  # the sub-call failed (model error, budget): the step says so
            return ActionResult(action="llm_query", observation={"success": False, "error": str(exc)},
                                reward=self._failure())
        return self._ok("llm_query", {"response": truncate(answer, self.settings.max_output_chars)})

    def _run_tool(self, tool: Any, args: dict[str, Any]) -> ActionResult:
        """One of the run's functions (``--tool``, ``[mcp_servers]``), through the run's tool bridge: its approvals,
        timeout and ``tool_call`` record; a refusal or an exception is the step's observation."""
        try:
            value = self._sub_calls.tools.call(tool, (), args)
        except PermissionError as refused:
            return ActionResult(action=tool.name, reward=0.0, observation={"success": False, "refused": True,
                                                                            "error": str(refused)})
        except Exception as exc:  # noqa: BLE001 - the function's own failure: what the model reads
            return ActionResult(action=tool.name, reward=self._failure(),
                                observation={"success": False, "error": tool_error_text(exc)})
        text = truncate(tool_result_text(value), self.settings.max_output_chars)
        return self._ok(tool.name, {"content": text}, f"{tool.name}: ok")

    def _mcp(self, name: str, args: dict[str, Any]) -> ActionResult:
        tool = self.mcp.find(name)
        limit = tool and self.mcp.states[tool.server].config.call_timeout
        observation = self.mcp.call(name, args, timeout=self._seconds(limit) if limit else None)
        observation.pop("structured", None)  # the text already says it, and only the text is bounded here
        if "content" in observation:
            observation["content"] = truncate(observation["content"], self.settings.max_output_chars)
        ok = bool(observation.get("success"))
        note = f"{name}: {'ok' if ok else str(observation.get('error'))[:100]}"
        return ActionResult(action=name, observation=observation, memory_note=note,
                            reward=self._success() if ok else self._failure())

    # ------------------------------------------------------------------ helpers

    def _final(self, answer: str, call_text: str) -> ActionResult:
        result = ActionResult(action="final", observation={"success": True}, reward=self.ctx.rewards.final_reward,
                              done=True, final_response=answer)
        return self._record(call_text, result)

    def _ok(self, action: str, observation: dict[str, Any], note: Optional[str] = None) -> ActionResult:
        return ActionResult(action=action, observation={"success": True, **observation}, reward=self._success(),
                            memory_note=note)

    def _success(self) -> float:
        return self.ctx.rewards.run_python_base

    def _failure(self) -> float:
        return self.ctx.rewards.run_python_base - self.ctx.rewards.run_python_failure_penalty

    def _seconds(self, limit: float) -> float:
        """``limit``, within what the run's wall clock has left."""
        return max(1.0, min(limit, self.ctx.budget.remaining()))

    def _record(self, call_text: str, result: ActionResult, status: Optional[str] = None) -> ActionResult:
        observation = dict(result.observation)
        status = status or ("ok" if observation.get("success", True) else "error")
        shown = truncate(json.dumps(observation, ensure_ascii=False, default=str), self.settings.max_output_chars)
        if result.action == "malformed_reply":  # not a call of anything: say what was wrong with the reply
            error = terminal_safe(str(observation.get("error")))
            text = f"Your reply could not be read ({error}). Reply with one tool call."
        else:
            text = format_tool_result(result.action, terminal_safe(shown), status=status)
        self.turns.append((call_text, text))
        return self.history.record(result)

    def _overview(self) -> str:
        try:
            entries = self.files.list_tree(".", 2)["entries"]
        except PathRefused:
            return "(unreadable)"
        return ", ".join(entries[:80]) + (" …" if len(entries) > 80 else "") if entries else "(empty)"


def searchable_files(files: ProjectFiles, raw: Any) -> list[str]:
    """The regular files under ``raw`` the search may read (relative paths): never a link, to a file or a folder,
    and no cache or metadata folder (``SKIPPED``); at most ``MAX_SEARCH_FILES``. PathRefused for a path out."""
    base = files.resolve(raw)
    if base.is_file():
        return [files.relative(base)]
    found: list[str] = []
    for folder, dirs, names in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        for name in sorted(names):
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file():
                found.append(files.relative(path))
            if len(found) >= MAX_SEARCH_FILES:
                return found
    return found
