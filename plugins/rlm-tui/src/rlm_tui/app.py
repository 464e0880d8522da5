"""``RlmTui``: the app — views (runs, run, compare, bench, help), a message line and the command line.

One screen holds the views in a ``ContentSwitcher``, so the command line and the keys work everywhere:
F1 help, F2 runs, F3 the live run, F4 benchmarks, ``/`` or ``:`` the command line (esc leaves it), ctrl+x
abort the run shown, ``q`` back to the runs, ctrl+q quit. Slash commands (``rlm_tui.slash``) are carried out
through the host's API (``rlm_tui.workspace``, ``rlm_tui.bench``); anything that goes wrong is one line in the
message bar, never a traceback. Everything from a trajectory is shown as plain text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import ContentSwitcher, Footer, Static

from rlm_tui.bench import Bench, BenchUnavailable
from rlm_tui.bench_view import BENCHMARKS, RUNS, RUNS_KEYS, BenchView, case_count
from rlm_tui.cmdline import CommandLine, SlashSuggester
from rlm_tui.compare_view import CompareView
from rlm_tui.render import clean
from rlm_tui.run_view import RunView
from rlm_tui.runs_view import RunsView
from rlm_tui.slash import HELP, Slash, SlashError, parse
from rlm_tui.workspace import Workspace, error_text


def printable(names: Any) -> list[str]:
    """The names that show as they are (no control character): what completion may put on the command line."""
    return [str(name) for name in names if clean(str(name)) == str(name)]


class RlmTui(App):
    TITLE = "rlm"
    CSS = """
    #message { height: 1; background: $panel; padding: 0 1; }
    #command { height: 1; border: none; padding: 0 1; background: $boost; }
    #command:focus { background: $primary 30%; }
    ContentSwitcher { height: 1fr; }
    #help, #doctor-text { padding: 0 1; }
    """
    BINDINGS = [
        Binding("f1", "view('help')", "Help"),
        Binding("f2", "show_runs", "Runs"),
        Binding("f3", "live", "Live"),
        Binding("f4", "bench", "Bench"),
        Binding("colon", "command_line", "Command", show=False),
        Binding("slash", "command_line", "Command", show=False),
        Binding("ctrl+x", "abort", "Abort"),
        Binding("q", "back", "Back", show=False),
        Binding("escape", "leave_command_line", "Back", show=False),
        Binding("ctrl+q", "quit", "Quit"),
    ]

    def __init__(self, workspace: Workspace, bench: Optional[Bench] = None, *, open_run: Optional[str] = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.bench = bench or Bench()
        self.initial_run = open_run
        self.last_started: Optional[Path] = None  # the newest run started here (F3 follows it)
        self.presets: list[dict[str, Any]] = []
        self.run_ids: list[str] = []
        self.last_message = ""

    def compose(self) -> ComposeResult:
        with ContentSwitcher(initial="runs"):
            yield RunsView(id="runs")
            yield RunView(id="run")
            yield CompareView(id="compare")
            yield BenchView(id="bench")
            yield Static(Text(HELP), id="help", markup=False)
            with VerticalScroll(id="doctor"):  # /rlm doctor: longer than a small screen
                yield Static(id="doctor-text", markup=False)
        yield Static(id="message", markup=False)
        yield CommandLine(SlashSuggester(lambda: self.run_ids, lambda: printable(p.get("name") for p in self.presets)),
                          id="command")
        yield Footer()

    def on_mount(self) -> None:
        from rlm_tui.approval import TuiApprover

        self.workspace.approver = TuiApprover(self)  # approve=ask: a modal for each write, command or tool
        self.say("F1 help · F2 runs · F3 live · F4 bench · / command line · ctrl+q quit")
        self.show_runs()
        if self.initial_run:
            self.open_run(self.initial_run)

    # ------------------------------------------------------------------ messages and views

    def say(self, text: str, error: bool = False) -> None:
        """One line in the message bar (plain text, never markup)."""
        self.last_message = text
        self.query_one("#message", Static).update(Text(clean(text).replace("\n", " "), style="red" if error else ""))

    def from_thread(self, callback: Any, *args: Any) -> None:
        """Run ``callback`` in the app's thread, from a run's or a benchmark's thread; nothing once the app has
        closed (a run started here may still be ending)."""
        try:
            self.call_from_thread(callback, *args)
        except RuntimeError:
            pass

    def action_view(self, name: str) -> None:
        self.query_one(ContentSwitcher).current = name
        self.focus_view()

    @property
    def view(self) -> str:
        return str(self.query_one(ContentSwitcher).current)

    def show_runs(self) -> None:
        """Reload the saved runs into the browser and show it."""
        try:
            runs = self.workspace.list_runs()
            active = {run.run_id for run in self.workspace.active() if run.status != "dead"}
        except Exception as exc:  # noqa: BLE001 - an unreadable home is a message, not a crash
            self.say(f"cannot list runs: {error_text(exc)}", error=True)
            runs, active = [], set()
        self.run_ids = printable(run.run_id for run in runs)  # offered by completion: never a control character
        self.query_one(RunsView).load(runs, active)
        self.action_view("runs")
        self.query_one("#runs-table").focus()

    def action_show_runs(self) -> None:
        self.show_runs()

    def open_run(self, ref: str) -> bool:
        """Open a saved (or running) run by id, prefix or ``latest``; False with a message when none matches."""
        try:
            path = self.workspace.resolve(ref)
        except Exception as exc:  # noqa: BLE001 - RunNotFoundError, AmbiguousRunError…
            self.say(error_text(exc), error=True)
            return False
        self.follow(path)
        return True

    def follow(self, path: Path) -> None:
        view = self.query_one(RunView)
        self.action_view("run")
        view.open(path)
        self.say(f"{path.stem}: n/p next/prev · g jump · e next error · E errors only · f follow · o child run")

    def action_live(self) -> None:
        """Follow the newest run started here, else the newest registered active run, else the newest saved."""
        if self.last_started is not None:
            self.follow(self.last_started)
            return
        active = [run for run in self.workspace.active() if run.status == "active" and run.trajectory]
        if active:
            self.follow(Path(active[-1].trajectory))
            return
        self.open_run("latest")

    async def action_back(self) -> None:  # textual's is async (pop a screen): this one shows the runs
        if self.view != "runs":
            self.show_runs()

    def action_command_line(self) -> None:
        self.query_one("#command").focus()

    def action_leave_command_line(self) -> None:
        if self.focused is self.query_one("#command"):
            self.focus_view()

    def focus_view(self) -> None:
        """Give the keyboard to the visible view's main list."""
        target = {"runs": "#runs-table", "run": "#steps", "compare": "#side-a VirtualList", "bench": "#bench-tabs Tabs",
                  "doctor": "#doctor"}
        if self.view in target:
            self.query_one(target[self.view]).focus()
        else:
            self.set_focus(None)

    def prefill(self, text: str) -> None:
        command = self.query_one("#command", CommandLine)
        command.value = text
        command.cursor_position = len(text)
        command.focus()

    def action_bench(self) -> None:
        self.action_view("bench")
        self.say("enter runs a preset · l leaderboard · r runs/benchmarks · m metric · x stop")
        self.load_presets()
        self.load_leaderboard()

    def action_abort(self) -> None:
        view = self.query_one(RunView)
        if self.view == "run" and view.index is not None and view.index.root_id:
            self.do_abort(view.index.root_id)
        else:
            self.say("open a run to abort it, or give one: /rlm abort ID|all", error=True)

    # ------------------------------------------------------------------ the command line

    def on_input_submitted(self, message: CommandLine.Submitted) -> None:
        if message.input.id != "command":
            return
        line = message.value.strip()
        command = self.query_one("#command", CommandLine)
        command.remember(line)
        command.value = ""
        if not line:
            return
        if not line.startswith("/"):
            line = "/" + line
        self.execute(line)

    def execute(self, line: str) -> None:
        """Carry out one command line; every failure is one message."""
        try:
            if line.startswith("/goto"):
                self._goto(line)
                return
            self.carry_out(parse(line))
        except SlashError as exc:
            self.say(str(exc), error=True)
        except Exception as exc:  # noqa: BLE001 - bad input is a message, never a traceback
            self.say(error_text(exc), error=True)

    def _goto(self, line: str) -> None:
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            raise SlashError("usage: /goto STEP_NUMBER")
        if self.view != "run" or not self.query_one(RunView).goto(int(words[1])):
            raise SlashError(f"no step {words[1]} in the run shown")
        self.query_one("#steps").focus()

    def carry_out(self, slash: Slash) -> None:
        name = slash.name
        if name == "help":
            self.action_view("help")
        elif name == "quit":
            self.exit()
        elif name == "runs":
            self.show_runs()
        elif name == "replay":
            self.open_run(slash.args[0])
        elif name == "abort":
            if slash.args:
                self.do_abort(slash.args[0])
            else:
                self.action_abort()  # the run shown; every run only when asked: /rlm abort all
        elif name == "connect":
            self.workspace.choose("model", slash.args[0])
            self.say(f"next runs use model {slash.args[0]}")
        elif name == "sandbox":
            self.workspace.choose("sandbox", slash.args[0])
            self.say(f"next runs use sandbox {slash.args[0]}")
        elif name == "compare":
            self.compare(*slash.args)
        elif name in ("run", "chat", "harness"):
            self.start(slash)
        elif name == "doctor":
            self.say("rlm plugins doctor: checking…")
            self.doctor()
        elif name == "bench":
            self.run_bench(slash.options)
        elif name == "bench_report":
            self.bench_report(slash.options["candidate"], slash.options.get("baseline"))
        elif name == "leaderboard":
            self.leaderboard(slash)

    def do_abort(self, ref: str) -> None:
        try:
            self.say(self.workspace.abort(ref))
        except Exception as exc:  # noqa: BLE001 - NoActiveRunError (exit code 2) and friends
            self.say(error_text(exc), error=True)

    # ------------------------------------------------------------------ runs

    def start(self, slash: Slash) -> None:
        task = slash.args[0]

        def started(run_id: str, path: Path) -> None:
            self.from_thread(self._started, run_id, path)

        def finished(result: Any, error: Optional[str]) -> None:
            self.from_thread(self._finished, result, error)

        if slash.name == "run":
            self.workspace.start_run(task, slash.context, slash.options, started, finished)
        elif slash.name == "harness":
            self.workspace.start_harness(task, slash.options, started, finished)
        else:
            self.workspace.ask(task, slash.context, slash.options, started, finished)
        self.say(f"starting: {task}")

    def _started(self, run_id: str, path: Path) -> None:
        self.last_started = path
        self.follow(path)
        self.say(f"running {run_id} · ctrl+x abort · F2 runs")

    def _finished(self, result: Any, error: Optional[str]) -> None:
        if error is not None:
            self.say(f"run failed: {error}", error=True)
            return
        answer = clean(result.final_response or result.error or "")
        self.say(f"{result.run_id}: {result.termination_reason} · {answer[:200]}")

    def compare(self, a: str, b: str) -> None:
        from rlm_host.sdk.embedding import Replay
        from rlm_runs import compare_runs, render_comparison

        path_a, path_b = self.workspace.resolve(a), self.workspace.resolve(b)
        store = self.workspace.store
        comparison = compare_runs(Replay(store.load(path_a)), Replay(store.load(path_b)))
        view = self.query_one(CompareView)
        self.action_view("compare")
        view.load(path_a, path_b, comparison, render_comparison(comparison))
        where = f"step {comparison.divergence.step}" if comparison.divergence else "nowhere (the same steps)"
        self.say(f"runs diverge at {where} · n/p move both · d back to the divergence")

    # ------------------------------------------------------------------ benchmarks (in a subprocess)

    @work(thread=True, exclusive=True, group="presets", exit_on_error=False)
    def load_presets(self) -> None:
        try:
            presets = self.bench.presets()
        except BenchUnavailable as exc:
            self.call_from_thread(self.say, str(exc), True)
            return
        self.presets = presets
        self.call_from_thread(self.query_one(BenchView).show_presets, presets)

    @work(thread=True, exclusive=True, group="leaderboard", exit_on_error=False)
    def load_leaderboard(self) -> None:
        """The leaderboard shown: the benchmarks' (``rlm leaderboard --json``) or the runs' (``--runs``, with the
        view's metric and filters)."""
        view = self.query_one(BenchView)
        kind, request = view.board, (view.run_metric, view.run_filters)
        try:
            if kind == RUNS:
                board = self.bench.run_leaderboard(*request)
            else:
                board = self.bench.leaderboard()
        except BenchUnavailable as exc:
            self.call_from_thread(self.say, str(exc), True)
            return
        if kind == RUNS:
            self.call_from_thread(view.show_run_board, board, request)
        else:
            self.call_from_thread(view.show_leaderboard, board)

    def leaderboard(self, slash: Slash) -> None:
        """``/leaderboard [runs] [metric=…] [KEY=VALUE…]``: the benchmarks' leaderboard (``metric=`` its chart's) or
        the runs' ranked by ``metric=`` and filtered as ``rlm runs list --filter``."""
        view = self.query_one(BenchView)
        self.action_view("bench")
        if slash.args == ["runs"]:
            view.run_metric = slash.options.get("metric", view.run_metric)
            view.run_filters = tuple(slash.filters)
            view.run_board = {}
            view.show_board(RUNS)
            self.say(f"runs ranked by {view.run_metric} · {RUNS_KEYS}")
        else:
            view.metric = slash.options.get("metric", view.metric)
            view.show_board(BENCHMARKS)
            self.say("benchmarks' leaderboard · m chart metric · r runs")
        view.action_leaderboard()
        self.query_one("#run-board" if view.board == RUNS else "#board").focus()

    def run_bench(self, options: dict[str, str]) -> None:
        preset = options["preset"]
        known = {str(p.get("name")): p for p in self.presets}
        total = case_count(known[preset]) if preset in known else 0
        if options.get("limit"):
            total = min(total, int(options["limit"])) if total else int(options["limit"])
        view = self.query_one(BenchView)

        def changed(progress: Any) -> None:
            self.from_thread(self._bench_changed, progress)

        self.workspace.check_bench(options)  # a browser session's ceilings; its refusal is the message
        try:
            progress = self.bench.run(preset, total, options, changed)
        except BenchUnavailable as exc:
            self.say(str(exc), error=True)
            return
        self.action_view("bench")
        view.show_progress(progress)
        self.say(f"benchmark {preset} running · x: stop · l: leaderboard")

    def _bench_changed(self, progress: Any) -> None:
        self.query_one(BenchView).show_progress(progress)
        if progress.finished:
            if progress.error:
                self.say(progress.error, error=True)
            else:
                self.say(f"benchmark {progress.preset} finished: {progress.summary.get('benchmark_id')}")
                self.load_leaderboard()

    @work(thread=True, exclusive=True, group="doctor", exit_on_error=False)
    def doctor(self) -> None:
        """``/rlm doctor``: ``rlm plugins doctor`` of this invocation, its lines shown in the doctor view."""
        text, ready = self.bench.doctor()
        self.call_from_thread(self._show_doctor, text, ready)

    def _show_doctor(self, text: str, ready: bool) -> None:
        self.query_one("#doctor-text", Static).update(Text(clean(text)))
        self.action_view("doctor")
        self.say("rlm plugins doctor: " + ("everything this setup uses is ready" if ready else
                                           "something this setup uses is not ready (FAIL lines)"), error=not ready)

    @work(thread=True, exclusive=True, group="report", exit_on_error=False)
    def bench_report(self, candidate: str, baseline: Optional[str]) -> None:
        try:
            text = self.bench.report(candidate, baseline)
        except BenchUnavailable as exc:
            self.call_from_thread(self.say, str(exc), True)
            return
        self.call_from_thread(self.action_view, "bench")
        self.call_from_thread(self.query_one(BenchView).show_report, text)
