"""The run loop: ``RLMRunner.run_task``.

Per step: the environment's prompt → the root model → the environment acts on the reply (runs code, detects
the final answer, computes the raw reward) → the reward is clamped and scaled → the step is recorded as an
event → done? A run stops on its final answer, max steps (then one extra call synthesises the best answer),
the wall-clock limit, the token or cost budget, max_llm_calls, an error, or cancellation (Ctrl-C). Every run
ends with a ``final`` event, so a trajectory always says how it ended.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import fields, replace
from functools import partial
from itertools import accumulate
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from rlm_host.approvals import ALLOW_ALL, Approvals, Approver
from rlm_host.engine.budget import Budget
from rlm_host.engine.carry import VariableCarrier
from rlm_host.engine.model_client import ModelClient, ModelTime
from rlm_host.engine.recursion import RecursionGuard
from rlm_host.context import describe_context
from rlm_host.engine.scope import RunScope, new_run_id
from rlm_host.engine.plan import RunPlan, plan_run
from rlm_host.engine.sandbox_plan import memory_for, plan_sandbox
from rlm_host.environments.protocol import EnvironmentContext, reply_format_of
from rlm_host.errors import BudgetExceeded, ConfigError, RlmError
from rlm_host.frameworks.protocol import FrameworkContext, FrameworkOutcome, StepLimitReached, TurnLimitedRole
from rlm_host.frameworks.synthesis import synthesize
from rlm_host.engine.branching import best_of
from rlm_host.frameworks.tools import SandboxTools
from rlm_host.events import EventBus, RunEvent, check_event_types
from rlm_host.event_types import error_line, live_text
from rlm_host.models.protocol import ModelConnector
from rlm_host.sandbox.protocol import SandboxError, SandboxLimits, SandboxSession
from rlm_host import logs
from rlm_host.redact import redact
from rlm_host.signals import interruption
from rlm_host.trajectory.active import ActiveRuns
from rlm_host.results import RunResult, RunUsage, StepRecord, TerminationReason

#: The ends after which the runner asks the model for a synthesised answer (a replay expects one more reply).
SYNTHESIS_REASONS = ("max_steps", "max_llm_calls", "max_errors")


class RLMRunner:
    """Runs tasks with the installed plugins and the effective settings.

    ``loaded`` are the loaded settings (read from every source when None), ``home`` overrides their run home.
    ``connectors`` (``{"root": …, "sub": …}``) of ``run_task`` lets a program pass ready model connectors
    instead of model strings (used by tests and by embedding code).
    """

    def __init__(self, *, loaded: Any = None, host: Any = None, home: Optional[Path] = None) -> None:
        from rlm_host.config import load_settings
        from rlm_host.plugins import get_host

        self.host = host or get_host()
        self.loaded = loaded or load_settings(host=self.host)
        self.home = Path(home).expanduser() if home is not None else self.loaded.home

    def run_task(self, task: str, *, context: Any = None, settings: Any = None,
                 cancel: Optional[threading.Event] = None, on_event: Optional[Callable[[RunEvent], None]] = None,
                 event_types: Optional[Iterable[str]] = None, connectors: Optional[dict[str, ModelConnector]] = None,
                 shared_budget: Optional[Budget] = None, carry: Optional[VariableCarrier] = None,
                 approver: Optional[Approver] = None, question: Optional[str] = None,
                 connector_pool: Optional[dict[Any, ModelConnector]] = None, **options: Any) -> RunResult:
        """Run ``task`` over ``context``: a value (str, list of documents, JSON) or ``ContextFiles`` (paths the plan
        loads as the environment needs), or None.

        ``settings``: the ``LoadedSettings`` of this run (the front doors pass theirs, run options merged in with
        ``with_run``); default this runner's. ``options`` (any ``[run]`` setting by name) override them, for programs
        and tests that call the runner directly. ``shared_budget`` is a ``Budget`` this run draws from as well (runs of
        one ``RLM(shared_budget=True)``); ``event_types`` limits what ``on_event`` receives to those event types (the
        trajectory and the sinks still get every event); ``carry`` (a ``VariableCarrier``) binds earlier variables in
        the root run's sandbox and saves them after; ``approver`` is asked before actions that change things when
        ``[run] approve`` (or a rule) says ask (``rlm_host.approvals``). ``question``: the user's own question when
        ``task`` wraps it (a chat turn), recorded and listed in its place; ``connector_pool`` keeps the model connectors
        for the next run given it (``plan_run``'s ``pool``).
        """
        from rlm_host.config.run_options import keyword_label

        wanted = check_event_types(event_types)  # a misspelt type fails before anything starts
        loaded = (settings or self.loaded).with_run(options, {name: keyword_label(name) for name in options})
        plan = plan_run(self.host, loaded, self.home, context, connectors, connector_pool)
        if on_event is None:  # no live view (--quiet, a plain API call): a cost budget's warnings still reach stderr
            for warning in plan.warnings:
                logs.get_logger("rlm.budget").warning(warning)
        for connector in {id(c): c for c in (plan.root_connector, plan.sub_connector)}.values():
            getattr(connector, "warm_up", lambda: None)()  # the SDK loads while the sandbox starts, takes the context
        run = plan.run
        budget = Budget(timeout=run.timeout, max_llm_calls=run.max_llm_calls, max_tokens=run.max_tokens,
                        max_cost=run.max_cost, cancel=cancel, shared=shared_budget)
        plan, closers = _with_toolboxes(plan)
        bus = EventBus()
        closers += plan.attach_observers(bus)
        if on_event is not None:
            bus.subscribe("on_event", on_event, wanted)
        scope = RunScope(plan.run_id, plan.run_id, 0, bus)
        registration = ActiveRuns().register(  # `rlm runs cancel` from any process and folder sets budget.cancel
            plan.run_id, budget.cancel, home=str(self.home), task=question or task, environment=run.environment,
            model=plan.root_connector.name, trajectory=str(plan.writer.path))
        closers[:0] = [registration.close] if registration is not None else []  # closed first
        approvals = Approvals(run.approve, run.approval_rules, approver)
        _log_run("run started", run_id=plan.run_id, environment=run.environment, framework=run.framework,
                 model=plan.root_connector.name, sandbox=plan.sandbox_name,
                 task=live_text(task if question is None else question, 80))
        try:
            result = self._run(scope, task, plan.context, plan, budget, RecursionGuard(run.max_depth), carry,
                               approvals, question)
        finally:
            _close_all(closers)
        writer = plan.writer
        if writer.failed is not None:  # the answer survives a record that could not be written
            result = result.model_copy(update={"record_error": f"the trajectory {writer.path} is incomplete: "
                                               f"{writer.failed} ({writer.dropped} event(s) not written)"})
        _log_run("run finished", run_id=result.run_id, reason=result.termination_reason, steps=result.steps,
                 tokens=result.usage.total_tokens, cost=result.cost, seconds=result.duration_s,
                 trajectory=result.trajectory_path)
        return result

    def open_sandbox(self, *, sandbox: Optional[str] = None, environment: Optional[str] = None,
                     workspace: Optional[Path] = None, exec_timeout: Optional[float] = None) -> SandboxSession:
        """A fresh, unstarted sandbox session chosen as a run of ``environment`` would choose it (the same planner:
        workspace and packages included): for work done outside any run, such as scoring a benchmark case's project
        with its hidden tests where the model's code never ran. The caller starts and shuts it down."""
        run = self.loaded.settings.run
        env_spec = self.host.environments().get(environment or run.environment)
        limits = SandboxLimits(exec_timeout=exec_timeout or run.exec_timeout, memory_mb=memory_for({}))
        return plan_sandbox(self.host, self.loaded, self.home, env_spec, sandbox or run.sandbox, limits,
                            workspace).open()

    def _build_environment(self, plan: RunPlan, name: str, ctx: EnvironmentContext) -> Any:
        """``EnvironmentContext.build_environment`` (``plan`` bound): a registered environment with the run's
        ``[environment.NAME]`` settings."""
        spec = self.host.environments().get(name)
        return spec.create(plan.settings.component("environment", spec.name), ctx)

    # ------------------------------------------------------------------ one run (root or child)

    def _run(self, scope: RunScope, task: str, context: Any, plan: RunPlan, budget: Budget,
             guard: RecursionGuard, carry: Optional[VariableCarrier] = None,
             approvals: Approvals = ALLOW_ALL, question: Optional[str] = None) -> RunResult:
        """One run of the tree. Its usage is its own: a child's whole usage counts as its parent's sub usage."""
        started = time.monotonic()
        usage, usage_lock = RunUsage(), threading.Lock()
        waited = ModelTime()  # every model call of the run, its clients under usage_lock: a step's model_seconds

        def client(connector: ModelConnector, role: str) -> ModelClient:
            """A connector bound to a role of this run: usage counted, retries emitted on it, costs priced."""
            return ModelClient(connector, role, getattr(usage, role), budget, usage_lock, scope=scope,
                               prices=plan.prices, reply_format_mode=plan.run.reply_format, waited=waited)

        root, sub = client(plan.root_connector, "root"), client(plan.sub_connector, "sub")
        meta = plan.context_meta if scope.depth == 0 else describe_context(context)
        scope.emit("run_start", plan.describe(task, meta, question))
        fingerprint = guard.enter(plan.run.environment, task)
        ctx = EnvironmentContext(
            task=task, context=context, scope=scope, root=root, sub=sub, budget=budget, rewards=plan.rewards,
            limits=plan.limits, open_sandbox=(lambda: carry.wrap(plan.open_sandbox())) if carry else plan.open_sandbox,
            spawn_child=partial(self._spawn_child, scope, plan, budget, guard, approvals, usage, usage_lock),
            sub_model_for=lambda model: client(plan.sub_models.connector(model), "sub"),
            max_steps=plan.run.max_steps, max_depth=plan.run.max_depth,
            context_meta=meta, workdir=plan.workdir, carry=carry, instructions=plan.run.instructions,
            environment_builder=partial(self._build_environment, plan), approvals=approvals,
            tools=plan.tools if scope.depth == 0 else plan.sub_tools, tool_timeout=plan.run.tool_timeout,
            nudge_first_answer=plan.run.nudge_first_answer, output=plan.output if scope.depth == 0 else None,
            allow_any_workdir=plan.run.allow_any_workdir,
        )
        steps = _Steps(ctx, plan, budget, usage, waited)
        completed, answer, error = False, None, None
        reason: TerminationReason = "max_steps"
        closers: list[Callable[[], None]] = []
        # An environment that cannot be built (bad input it checks at once) fails the run before it starts.
        environment = (plan.environment_factory(plan.environment_settings, ctx)
                       if plan.framework_factory is None else None)
        try:
            if environment is None:
                completed, answer, reason = self._drive_framework(ctx, plan, steps, closers)
            else:
                closers.append(environment.close)
                completed, answer, reason = self._drive_environment(environment, ctx, plan, steps)
            if answer is None and reason in SYNTHESIS_REASONS and steps.synthesizer is not None:
                answer = steps.synthesize()  # one extra root call for the best answer, whoever drove the run
        except _NotBuilt as refused:  # a framework that cannot be built fails the run before it starts
            raise refused.error from None
        except BudgetExceeded as exc:
            reason, error = exc.reason, str(exc)
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
            budget.cancel.set()
            reason, error = "cancelled", interruption(exc)
        except (RlmError, SandboxError) as exc:
            reason, error = ("timeout", str(exc)) if budget.remaining() <= 0 else ("error", str(exc))
            scope.emit("error", {"message": error, "where": type(exc).__name__})
        except Exception as exc:  # an environment, framework or plugin bug: recorded, never a lost trajectory
            reason, error = "error", f"{type(exc).__name__}: {exc}"
            scope.emit("error", {"message": error, "where": "internal"})
        finally:
            guard.leave(fingerprint)
            _close_all(closers[::-1], lambda exc: scope.emit(  # closing must not hide the run's own outcome
                "error", {"message": f"closing the run's parts failed: {exc}", "where": "close"}))
        result = RunResult(
            run_id=scope.run_id, parent_run_id=scope.parent_run_id, depth=scope.depth, task=task,
            environment=plan.run.environment, framework=plan.run.framework, model=root.name, sandbox=plan.sandbox_name,
            completed=completed, final_response=answer, steps=len(steps.records),
            total_reward=round(steps.total_reward, 6), usage=usage, cost=usage.cost,
            cost_complete=not usage.unpriced_calls, duration_s=round(time.monotonic() - started, 4),
            termination_reason=reason, error=redact(error), trajectory_path=str(plan.writer.path),
            over_budget=steps.over_budget() if scope.depth == 0 else None,
            framework_metadata=steps.metadata, output=_typed_output(ctx.output, answer),
        )
        scope.emit("final", result.model_dump(mode="json"))
        return result

    def _spawn_child(self, scope: RunScope, plan: RunPlan, budget: Budget, guard: RecursionGuard,
                     approvals: Approvals, usage: RunUsage, usage_lock: threading.Lock, child_task: str,
                     child_context: Any) -> RunResult:
        """``spawn_child(task, context)`` of a run (the rest bound): a child run one level deeper, on the same plan,
        budget and guard, announced by ``child_run_start`` / ``child_run_end``; its whole usage counts as the
        parent's sub usage."""
        guard.check(scope.depth + 1, plan.run.environment, child_task)
        child_scope = scope.child(new_run_id())
        scope.emit("child_run_start", {"child_run_id": child_scope.run_id, "task": live_text(child_task),
                                       "depth": child_scope.depth})
        child_started = time.monotonic()
        end: dict[str, Any] = {"child_run_id": child_scope.run_id}
        try:
            child = self._run(child_scope, child_task, child_context, plan, budget, guard, approvals=approvals)
            end |= {"completed": child.completed, "termination_reason": child.termination_reason, "cost": child.cost}
        except BaseException as exc:
            end["error"] = error_line(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            scope.emit("child_run_end", {**end, "seconds": round(time.monotonic() - child_started, 3)})
        with usage_lock:
            usage.sub.merge(child.usage.root)
            usage.sub.merge(child.usage.sub)
        return child

    def _drive_environment(self, environment: Any, ctx: EnvironmentContext, plan: RunPlan,
                           steps: "_Steps") -> tuple[bool, Optional[str], TerminationReason]:
        """The native loop: the environment's prompt, the root model's reply, the environment's verdict."""
        width = plan.run.branch_width
        if width > 1 and ctx.carry is not None:
            raise ConfigError(f"--branch-width {width}: a chat session's REPL cannot be copied yet",
                              hint="branching works in single runs (rlm run, RLM.completion, benchmarks)")
        environment.start()
        if ctx.carry is not None:
            ctx.carry.after_setup()  # the environment's helpers exist now: earlier variables go in after them
        steps.mark()  # the first step's time and usage are counted from here, as every later step's
        steps.synthesizer = environment.synthesize
        failures = 0  # failed steps in a row, for [run] max_errors
        for _ in range(plan.run.max_steps):
            step = steps.start()
            ask = partial(ctx.root.complete, environment.messages(step), reply_format=reply_format_of(environment))
            completion = ask()
            if width > 1 and ctx.scope.depth == 0:  # candidates tried in copies of the REPL, the best kept
                completion, result = best_of(environment, completion, width, ask, step, ctx.scope,
                                             plan.rewards.apply_global_scale)
            else:
                result = environment.execute(completion, step)
            if completion.raw.get("malformed"):
                result.observation.setdefault("malformed_reply", completion.raw["malformed"])
            steps.record(result.action, result.observation, result.reward, result.code, completion.text)
            if result.done:
                return True, result.final_response, "final"
            if steps.budget.llm_calls_refused:
                return False, None, "max_llm_calls"
            failed = result.action == "malformed_reply" or result.observation.get("success") is False
            failures = failures + 1 if failed else 0
            if plan.run.max_errors is not None and failures >= plan.run.max_errors:
                return False, None, "max_errors"
        return False, None, "max_steps"

    def _drive_framework(self, ctx: EnvironmentContext, plan: RunPlan, steps: "_Steps",
                         closers: list[Callable[[], None]]) -> tuple[bool, Optional[str], Any]:
        """A framework drives the loop; the steps it reports (``FrameworkContext.step``) go to the run's recorder."""

        def step(action: str, observation: Optional[dict[str, Any]] = None, reward: float = 0.0,
                 code: Optional[str] = None, reply: Optional[str] = None) -> float:
            steps.budget.check()
            kept = steps.record(action, observation or {}, reward, code, reply).reward
            if steps.budget.llm_calls_refused:  # a sub-call was refused: the run ends
                raise BudgetExceeded("max_llm_calls", f"max_llm_calls ({steps.budget.max_llm_calls}) reached")
            return kept

        tools = SandboxTools(ctx)
        closers.append(tools.close)
        fctx = FrameworkContext(**{f.name: getattr(ctx, f.name) for f in fields(EnvironmentContext)} | {
            "root": TurnLimitedRole(ctx.root, plan.run.max_steps, steps.start), "tools": tools, "step": step,
            "settings": plan.framework_settings})  # the run's context, with the framework's tools and steps
        assert plan.framework_factory is not None
        try:
            framework = plan.framework_factory(plan.framework_settings, fctx)
        except ConfigError as exc:  # bad input the framework checks at once: refused, as an environment's is
            raise _NotBuilt(exc) from None
        closers.append(framework.close)
        try:
            outcome = framework.run()
        except StepLimitReached:  # the framework wanted another root turn: the steps are used up
            outcome = FrameworkOutcome(None, completed=False, termination_reason="max_steps")
        if not steps.records:  # RLM Code's rule: a run that reported no step still gets one
            kind = "model_response" if outcome.final_response else "empty_response"
            step(kind, {"final_response": outcome.final_response}, fctx.reward_for(kind))
        completed = bool(outcome.completed and outcome.final_response is not None)
        steps.metadata = json.loads(json.dumps(outcome.metadata, default=str)) if outcome.metadata else None
        if not fctx.root.synthesized:  # type: ignore[attr-defined]  # else the framework made its own (dspy's extract)
            steps.synthesizer = lambda: synthesize(ctx.root, ctx.task, steps.records)
        return completed, outcome.final_response, "final" if completed else (outcome.termination_reason or "max_steps")


class _Steps:
    """The one step recorder of a run, whoever drives it (the native loop, a framework through ``ctx.step``): the
    budget checked and ``step_start`` said once before each step; each step numbered, its reward scaled, its usage
    and time since the step before it counted, recorded as a ``step`` event, and the cost budget's crossing noted."""

    def __init__(self, ctx: EnvironmentContext, plan: RunPlan, budget: Budget, usage: RunUsage,
                 waited: ModelTime) -> None:
        self.ctx, self.plan, self.budget, self.usage, self.waited = ctx, plan, budget, usage, waited
        self.records: list[StepRecord] = []
        self.total_reward = 0.0
        self.metadata: Optional[dict[str, Any]] = None  # FrameworkOutcome.metadata of a framework run
        self.synthesizer: Optional[Callable[[], Optional[str]]] = None  # the best answer when the steps ran out
        self.started, self.lock = 0, threading.Lock()  # started: the step whose step_start was said
        self.mark()

    def mark(self) -> None:
        """Count the next step's usage, time and model time from now."""
        self.since = (self.usage.model_copy(deep=True), time.monotonic(), self.waited.seconds)

    def start(self) -> int:
        """The next step's number, its ``step_start`` said once (after the budget's check: a stopped run starts
        none)."""
        with self.lock:
            step = len(self.records) + 1
            if self.started != step:
                self.budget.check()
                self.started = step
                self.ctx.scope.emit("step_start", {"step": step})
            return step

    def record(self, action: str, observation: dict[str, Any], reward: float, code: Optional[str],
               reply: Optional[str]) -> StepRecord:
        """Record one step: ``reward`` is the raw one, clamped and scaled here."""
        with self.lock:
            kept = self.plan.rewards.apply_global_scale(reward)
            before, since, model_before = self.since
            self.mark()
            record = StepRecord(
                step=len(self.records) + 1, action=action, code=code, reply=reply, observation=observation,
                reward=round(kept, 6), cumulative_reward=round(self.total_reward + kept, 6),
                usage=_usage_delta(before, self.usage), model_seconds=round(self.since[2] - model_before, 4),
                duration_s=round(self.since[1] - since, 4),
            )
            self.records.append(record)
            self.total_reward = record.cumulative_reward
            self.ctx.scope.emit("step", record.model_dump(mode="json"))
            return record

    def over_budget(self) -> Optional[dict[str, Any]]:
        """The run's over-budget note (see ``RunResult.over_budget``) when its cost ended above ``--max-cost`` (a
        call's cost is known only once it returns, so the call that crosses the limit is paid in full): the figures,
        the step whose calls crossed it, and one sentence, said once as a warning on stderr too. None when within."""
        limit, spent = self.plan.run.max_cost, self.usage.cost
        if limit is None or spent is None or spent <= limit:
            return None
        costs = accumulate(record.usage.cost or 0.0 for record in self.records)
        step = next((record.step for record, cost in zip(self.records, costs) if cost > limit), None)
        which = f"the model call(s) of step {step}" if step else "the last model call"
        message = (f"{which} crossed --max-cost ${limit:g}: ${spent:.4f} spent, ${spent - limit:.4f} over (a call's "
                   "cost is known only once it returns)")
        logs.get_logger("rlm.budget").warning(message)
        return {"limit": limit, "spent": round(spent, 6), "over": round(spent - limit, 6), "step": step,
                "message": message}

    def synthesize(self) -> Optional[str]:
        """One extra root call for the best answer when the run ended without one; failures are recorded."""
        assert self.synthesizer is not None
        try:
            return self.synthesizer()
        except (RlmError, BudgetExceeded) as exc:
            self.ctx.scope.emit("error", {"message": f"synthesising an answer failed: {exc}", "where": "synthesize"})
            return None


def _usage_delta(before: RunUsage, after: RunUsage) -> RunUsage:
    delta = RunUsage()
    for role in ("root", "sub"):
        old, new, out = getattr(before, role), getattr(after, role), getattr(delta, role)
        out.add(new.input_tokens - old.input_tokens, new.output_tokens - old.output_tokens,
                None if new.cost is None else new.cost - (old.cost or 0.0), calls=new.calls - old.calls,
                unpriced_calls=new.unpriced_calls - old.unpriced_calls)
    return delta


def _typed_output(output: Any, final_response: Optional[str]) -> Any:
    """The final answer as the run's output type (None without one, or when the answer does not match it: an
    answer synthesised at the step limit is not held to the type)."""
    if output is None or final_response is None:
        return None
    try:
        return output.parse(final_response)
    except ValueError:
        return None


def _with_toolboxes(plan: RunPlan) -> tuple[RunPlan, list[Callable[[], None]]]:
    """Open the plan's toolboxes (MCP servers…) for this run tree: their functions join the tools of the root run
    and of its child runs, what they say joins the run's notices; returns what closes them."""
    opened: list[Any] = []
    try:
        for open_toolbox in plan.toolboxes:
            opened.append(open_toolbox())
    except BaseException:
        _close_all([toolbox.close for toolbox in opened])
        raise
    taken = {tool.name for tool in (*plan.tools, *plan.sub_tools)}
    extra, notices = [], list(plan.notices)
    for toolbox in opened:
        notices += list(toolbox.notices)
        for tool in toolbox.tools:
            if tool.name in taken:
                notices.append(f"{tool.name} is left out: one of your tools has that name")
                continue
            taken.add(tool.name)
            extra.append(tool)
    plan = replace(plan, tools=(*plan.tools, *extra), sub_tools=(*plan.sub_tools, *extra), notices=notices,
                   toolboxes=())
    return plan, [toolbox.close for toolbox in opened]


def _close_all(closers: list[Callable[[], None]], failed: Optional[Callable[[Exception], Any]] = None) -> None:
    """Call every closer, in order, even when one raises: ``failed(error)`` is told of each error, or the first is
    raised at the end (and anything that is not an ``Exception``, Ctrl-C, always)."""
    failure: Optional[BaseException] = None
    for close in closers:
        try:
            close()
        except BaseException as exc:  # noqa: BLE001 - the trajectory must still be closed
            if failed is not None and isinstance(exc, Exception):
                failed(exc)
            else:
                failure = failure or exc
    if failure is not None:
        raise failure


def _log_run(message: str, **fields: Any) -> None:
    """rlm's info lines at a run's start (what runs, with what) and end (how it ended, its size and cost, where its
    trajectory is): ``rlm -v``, or ``[logging] level = "info"``."""
    if logs.enabled(logging.INFO):
        logs.get_logger("rlm.run").info(message, **fields)


class _NotBuilt(Exception):
    """A framework's factory refused its settings (a ``ConfigError``): carried past the run's own error handling,
    so the front door reports it as bad input (exit 2), as it does an environment that cannot be built."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(str(error))
        self.error = error
