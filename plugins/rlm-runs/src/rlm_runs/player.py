"""``rlm replay RUN_ID``: step through a saved run.

On a terminal it is interactive (``n``/Enter next, ``p`` previous, ``e`` next error, ``g N`` go to step N,
``q`` quit); with ``--no-interactive``, or when stdin is not a terminal, it prints the steps and exits. What it
prints goes through ``rlm runs``' printer (``echo``): a run's text never sends control characters to the terminal.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer

from rlm_host import InputError, RlmError
from rlm_host.sdk.commands import echo  # the printer that shows control characters, never sends them
from rlm_host.sdk.embedding import Replay
from rlm_runs.commands import RUN_ID, store_of
from rlm_runs.render import render_step, render_summary

KEYS = "n/Enter next · p previous · e next error · g N go to step N · q quit"
PROMPT = "replay> "

app = typer.Typer(rich_markup_mode=None, add_completion=False)


class Player:
    """A cursor over the root steps of a saved run (``cursor``: a 0-based step index)."""

    def __init__(self, replay: Replay) -> None:
        self.replay, self.steps, self.cursor = replay, replay.steps, 0

    def goto(self, index: int) -> Any:
        """Move the cursor to ``index`` and return that step (IndexError out of range)."""
        step, self.cursor = self.replay.step(index), index
        return step

    def next(self) -> Any:
        """Advance one step; None (cursor unchanged) at the last step."""
        return self.goto(self.cursor + 1) if self.cursor + 1 < len(self.steps) else None

    def prev(self) -> Any:
        """Go back one step; None (cursor unchanged) at the first step."""
        return self.goto(self.cursor - 1) if self.cursor > 0 else None

    def index_of(self, number: int) -> Optional[int]:
        """The index of the step recorded with step number ``number``."""
        return next((i for i, s in enumerate(self.steps) if s.number == number), None)

    def next_error(self) -> Any:
        """Move to the next error step after the cursor; None (cursor unchanged) when there is none."""
        following = next((i for i in self.replay.errors() if i > self.cursor), None)
        return None if following is None else self.goto(following)


@app.command()
def replay(
    run_id: str = RUN_ID,
    step: Optional[int] = typer.Option(None, "--step", help="Start at this step number."),
    errors: bool = typer.Option(False, "--errors", help="Only the steps that ended in an error."),
    successes: bool = typer.Option(False, "--successes", help="Only the steps that did not end in an error "
                                   "(printed, not interactive)."),
    no_interactive: bool = typer.Option(False, "--no-interactive", help="Print the steps and exit."),
) -> None:
    """Step through a saved run: each step's code, output, reward, tokens, sub-calls and child runs."""
    run = Replay(store_of().load(run_id))
    player = Player(run)
    if (start := 0 if step is None else player.index_of(step)) is None:
        span = f"steps {player.steps[0].number}–{player.steps[-1].number}" if player.steps else "no steps"
        raise RlmError(f"run {run.root.run_id} has no step {step}", hint=f"it has {span}")
    echo(render_summary(run))
    if not player.steps:
        return echo("\nno steps recorded")
    if successes and errors:
        raise InputError("--errors and --successes exclude each other", hint="choose one")
    if not (successes or no_interactive or not sys.stdin.isatty()):
        return _interactive(player, start, errors)
    shown = [i for i in range(start, len(player.steps)) if successes == errors or player.steps[i].is_error == errors]
    if not shown:
        echo("\nno error steps" if errors else "\nno steps to show")
    for index in shown:
        _show(player, index)


def _show(player: Player, index: int) -> None:
    echo("\n" + render_step(player.steps[index], total=len(player.steps)))


def _interactive(player: Player, start: int, only_errors: bool) -> None:
    """Read one command per line and move through the steps until ``q`` or end of input."""
    following = [i for i in player.replay.errors() if i >= start]
    if only_errors and not following:
        echo("\nno error steps")
    player.goto(following[0] if only_errors and following else start)
    echo(f"\n{KEYS}")
    _show(player, player.cursor)
    while True:
        try:
            command = input(PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            return echo("")
        if command in ("q", "quit", "exit"):
            return
        if _move(player, command):
            _show(player, player.cursor)


def _move(player: Player, command: str) -> bool:
    """Apply one command; True when the cursor moved and the new step should be shown."""
    moves = {"n": (player.next, "at the last step (p goes back, q quits)"), "p": (player.prev, "at the first step"),
             "e": (player.next_error, "no error step after this one")}
    key = {"": "n", "next": "n", "prev": "p", "error": "e"}.get(command, command)
    if key in moves:
        if not (moved := moves[key][0]() is not None):
            echo(moves[key][1])
        return moved
    if command.startswith("g"):
        argument = (command[2:] if command.startswith("go") else command[1:]).strip()
        if (index := player.index_of(int(argument)) if argument.isdigit() else None) is None:
            echo(f"usage: g N, with N a step number from {player.steps[0].number} to {player.steps[-1].number}")
            return False
        player.goto(index)
        return True
    echo(KEYS if command in ("?", "h", "help") else f"unknown command {command!r}; {KEYS}")
    return False
