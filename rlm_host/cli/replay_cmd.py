"""``rlm replay RUN_ID``: step through a saved run.

On a terminal it is interactive (``n``/Enter next, ``p`` previous, ``e`` next error, ``g N`` go to step N,
``q`` quit); with ``--no-interactive``, or when stdin is not a terminal, it prints the steps and exits. What it
prints goes through ``rlm runs``' printer (``say``): a run's text never sends control characters to the terminal.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

import typer

from rlm_host.cli.runs_cmd import say  # the printer that shows control characters, never sends them
from rlm_host.errors import InputError, RlmError

if TYPE_CHECKING:
    from rlm_host.trajectory import Replay

KEYS = "n/Enter next · p previous · e next error · g N go to step N · q quit"
PROMPT = "replay> "

app = typer.Typer(rich_markup_mode=None, add_completion=False)


@app.command()
def replay(
    ctx: typer.Context,
    run_id: str = typer.Argument(..., help="A run id, a unique prefix of one, 'latest', or a .jsonl path."),
    step: Optional[int] = typer.Option(None, "--step", help="Start at this step number."),
    errors: bool = typer.Option(False, "--errors", help="Only the steps that ended in an error."),
    successes: bool = typer.Option(False, "--successes", help="Only the steps that did not end in an error "
                                   "(printed, not interactive)."),
    no_interactive: bool = typer.Option(False, "--no-interactive", help="Print the steps and exit."),
) -> None:
    """Step through a saved run: each step's code, output, reward, tokens, sub-calls and child runs."""
    from rlm_host.cli.runs_cmd import run_home
    from rlm_host.cli.render import render_summary
    from rlm_host.trajectory import Replay, RunStore

    store = RunStore(run_home(ctx))
    player = Replay(store.load(store.resolve(run_id)))
    start = _start_index(player, step)
    say(render_summary(player))
    if not player.steps:
        say("\nno steps recorded")
        return
    if successes:
        if errors:
            raise InputError("--errors and --successes exclude each other", hint="choose one")
        _print_all(player, start, False, only_successes=True)
    elif no_interactive or not sys.stdin.isatty():
        _print_all(player, start, errors)
    else:
        _interactive(player, start, errors)


def _start_index(player: "Replay", number: Optional[int]) -> int:
    if number is None:
        return 0
    index = player.index_of(number)
    if index is None:
        numbers = [s.number for s in player.steps]
        span = f"steps {numbers[0]}–{numbers[-1]}" if numbers else "no steps"
        raise RlmError(f"run {player.root.run_id} has no step {number}", hint=f"it has {span}")
    return index


def _show(player: "Replay", index: int) -> None:
    from rlm_host.cli.render import render_step

    say("")
    say(render_step(player.step(index), total=len(player.steps)))


def _print_all(player: "Replay", start: int, only_errors: bool, *, only_successes: bool = False) -> None:
    """Every step from ``start`` on (only the error steps with ``only_errors``, only the others with
    ``only_successes``)."""
    indices = [i for i in range(start, len(player.steps))
               if (not only_errors or player.steps[i].is_error) and (not only_successes or not player.steps[i].is_error)]  # fmt: skip
    if not indices:
        say("\nno error steps" if only_errors else "\nno steps to show")
    for index in indices:
        _show(player, index)


def _interactive(player: "Replay", start: int, only_errors: bool) -> None:
    """Read one command per line and move through the steps until ``q`` or end of input."""
    if only_errors:
        following = [i for i in player.errors() if i >= start]
        start = following[0] if following else start
        if not following:
            say("\nno error steps")
    player.goto(start)
    say(f"\n{KEYS}")
    _show(player, player.cursor)
    while True:
        try:
            command = input(PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            say("")
            return
        if command in ("q", "quit", "exit"):
            return
        if _move(player, command):
            _show(player, player.cursor)


def _move(player: "Replay", command: str) -> bool:
    """Apply one command; True when the cursor moved and the new step should be shown."""
    if command in ("", "n", "next"):
        return _moved(player.next() is not None, "at the last step (p goes back, q quits)")
    if command in ("p", "prev"):
        return _moved(player.prev() is not None, "at the first step")
    if command in ("e", "error"):
        return _moved(player.next_error() is not None, "no error step after this one")
    if command.startswith("g"):
        argument = command[2:] if command.startswith("go") else command[1:]
        argument = argument.strip()
        index = player.index_of(int(argument)) if argument.isdigit() else None
        if index is None:
            numbers = [s.number for s in player.steps]
            say(f"usage: g N, with N a step number from {numbers[0]} to {numbers[-1]}")
            return False
        player.goto(index)
        return True
    if command in ("?", "h", "help"):
        say(KEYS)
        return False
    say(f"unknown command {command!r}; {KEYS}")
    return False


def _moved(ok: bool, message: str) -> bool:
    if not ok:
        say(message)
    return ok
