"""``rlm replay RUN_ID``: step through a saved run.

On a terminal it is interactive (``n``/Enter next, ``p`` previous, ``e`` next error, ``g N`` go to step N,
``q`` quit); with ``--no-interactive``, or when stdin is not a terminal, it prints the steps and exits. What it
prints goes through ``rlm runs``' printer (``say``): a run's text never sends control characters to the terminal.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from rlm_host.cli.app import say  # the printer that shows control characters, never sends them
from rlm_host.cli.render import render_step, render_summary
from rlm_host.cli.runs_cmd import RUN_ID, store_of
from rlm_host.errors import InputError, RlmError
from rlm_host.trajectory import Replay

KEYS = "n/Enter next · p previous · e next error · g N go to step N · q quit"
PROMPT = "replay> "

app = typer.Typer(rich_markup_mode=None, add_completion=False)


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
    player = Replay(store_of().load(run_id))
    if (start := 0 if step is None else player.index_of(step)) is None:
        span = f"steps {player.steps[0].number}–{player.steps[-1].number}" if player.steps else "no steps"
        raise RlmError(f"run {player.root.run_id} has no step {step}", hint=f"it has {span}")
    say(render_summary(player))
    if not player.steps:
        return say("\nno steps recorded")
    if successes and errors:
        raise InputError("--errors and --successes exclude each other", hint="choose one")
    if not (successes or no_interactive or not sys.stdin.isatty()):
        return _interactive(player, start, errors)
    shown = [i for i in range(start, len(player.steps)) if successes == errors or player.steps[i].is_error == errors]
    if not shown:
        say("\nno error steps" if errors else "\nno steps to show")
    for index in shown:
        _show(player, index)


def _show(player: Replay, index: int) -> None:
    say("\n" + render_step(player.step(index), total=len(player.steps)))


def _interactive(player: Replay, start: int, only_errors: bool) -> None:
    """Read one command per line and move through the steps until ``q`` or end of input."""
    following = [i for i in player.errors() if i >= start]
    if only_errors and not following:
        say("\nno error steps")
    player.goto(following[0] if only_errors and following else start)
    say(f"\n{KEYS}")
    _show(player, player.cursor)
    while True:
        try:
            command = input(PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            return say("")
        if command in ("q", "quit", "exit"):
            return
        if _move(player, command):
            _show(player, player.cursor)


def _move(player: Replay, command: str) -> bool:
    """Apply one command; True when the cursor moved and the new step should be shown."""
    moves = {"n": (player.next, "at the last step (p goes back, q quits)"), "p": (player.prev, "at the first step"),
             "e": (player.next_error, "no error step after this one")}
    key = {"": "n", "next": "n", "prev": "p", "error": "e"}.get(command, command)
    if key in moves:
        if not (moved := moves[key][0]() is not None):
            say(moves[key][1])
        return moved
    if command.startswith("g"):
        argument = (command[2:] if command.startswith("go") else command[1:]).strip()
        if (index := player.index_of(int(argument)) if argument.isdigit() else None) is None:
            say(f"usage: g N, with N a step number from {player.steps[0].number} to {player.steps[-1].number}")
            return False
        player.goto(index)
        return True
    say(KEYS if command in ("?", "h", "help") else f"unknown command {command!r}; {KEYS}")
    return False
