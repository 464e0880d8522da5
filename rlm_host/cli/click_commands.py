"""Plugin sub-commands written with the ``click`` package, as simonw/llm plugin authors write them.

``rlm`` is built on typer, which carries its own copy of click: a command object of the real ``click`` package
is of other classes, so it cannot join the command group directly. It runs as its own program instead, with the
rest of the command line, its own ``--help`` and errors, and the same ``ctx.obj`` (so ``CommandServices.of(ctx)``
works in it too).
"""

from __future__ import annotations

import sys
from typing import Any

import typer

#: Everything after NAME goes to the click command untouched, ``--help`` included.
_PASS_THROUGH = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


def is_click_command(target: Any) -> bool:
    """Whether ``target`` is a command of the ``click`` package (imported by the plugin that made it)."""
    package = sys.modules.get("click")
    return package is not None and isinstance(target, package.Command)


def delegate(foreign: Any, name: str) -> Any:
    """A command of the ``rlm`` group that runs ``foreign`` (a ``click.Command``) on the arguments after NAME."""
    package = sys.modules["click"]
    wrapper = typer.Typer(rich_markup_mode=None, add_completion=False)

    @wrapper.command(name=name, help=foreign.help, short_help=foreign.get_short_help_str(),
                     context_settings=_PASS_THROUGH, add_help_option=False)
    def run(ctx: typer.Context) -> None:
        try:
            code = foreign.main(args=list(ctx.args), prog_name=f"rlm {name}", standalone_mode=False,
                                obj=ctx.find_root().obj)
        except package.exceptions.ClickException as exc:  # a usage error of the command: its own message
            exc.show()
            raise typer.Exit(exc.exit_code) from None
        except package.exceptions.Abort:
            raise KeyboardInterrupt from None
        if isinstance(code, int) and code:  # what click's main returns for ctx.exit(code)
            raise typer.Exit(code)

    return typer.main.get_command(wrapper)
