"""The ``rlm`` command: global options and a command group whose sub-commands load lazily.

Built-in sub-commands and plugin-contributed ones are both listed by name and help text, and imported only
when they run (or their own ``--help`` is asked for), so ``rlm --help`` stays fast with every plugin installed.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer import _click as click  # typer vendors its click; commands must come from the same module
from typer.core import TyperCommand, TyperGroup

from rlm_host import logs
from rlm_host.errors import PluginError
from rlm_host.text import json_for_terminal, terminal_safe

if TYPE_CHECKING:
    from rlm_host.config import LoadedSettings
    from rlm_host.services import CommandServices


class CliState:
    """Global options, shared with every sub-command through ``ctx.obj``. (A plain class, not a dataclass: building
    one costs 1 ms at every ``rlm`` start, ``--help`` included.)"""

    def __init__(self, config_file: Optional[Path] = None, debug: bool = False, verbose: int = 0,
                 log_json: bool = False, trust_config: bool = False) -> None:
        self.config_file, self.debug, self.verbose, self.log_json = config_file, debug, verbose, log_json
        self.trust_config = trust_config
        self._settings: Any = None

    def settings(self) -> "LoadedSettings":
        """Settings from every source, component sections validated against the installed plugins (once); the
        config file's [logging] section applies, unless -v / --log-json said otherwise."""
        from rlm_host.config import load_settings
        from rlm_host.plugins import get_host

        if self._settings is None:
            self._settings = load_settings(config_file=self.config_file, host=get_host(), trust=self.trust_config)
            section = self._settings.settings.logging
            logs.configure(level=section.level, verbose=self.verbose, json=self.log_json or section.json_lines)
            self._settings.warn_untrusted()
        return self._settings

    def command_services(self) -> "CommandServices":
        """What ``CommandServices.of(ctx)`` returns to a plugin's sub-command: the run home and these settings."""
        from rlm_host.services import CommandServices

        return CommandServices(home=self.settings().home, settings=self.settings(), config_file=self.config_file,
                               trust_config=self.trust_config)


#: The ``--json`` option of a command that prints a table for a person, or JSON (``echo_json``) for a program.
AS_JSON = typer.Option(False, "--json", help="Print JSON.")


def group(help_text: str) -> typer.Typer:
    """A command group of ``rlm`` (``rlm runs``, ``rlm models``…): its sub-commands, and its help without one."""
    commands = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)
    commands.callback(help=help_text)(lambda: None)
    return commands


def echo(text: str) -> None:
    """Print ``text`` for a person, its control characters shown, never sent (``terminal_safe``): the printer of
    what came from runs, so no run's text reaches the terminal raw."""
    typer.echo(terminal_safe(text))


def echo_json(value: Any) -> None:
    """``value`` as indented JSON on stdout, every command's ``--json`` (``json_for_terminal``: no control character
    a terminal acts on)."""
    typer.echo(json_for_terminal(value))


def cli_state(ctx: Optional[click.Context] = None) -> CliState:
    """The running ``rlm`` command's global options and settings (``ctx``: default, the current click context)."""
    state = (ctx or click.globals.get_current_context()).find_root().obj
    if not isinstance(state, CliState):
        raise RuntimeError("cli_state() and command_settings() are for sub-commands of `rlm`")
    return state


def command_settings(ctx: Optional[click.Context] = None) -> "LoadedSettings":
    """The settings of the running ``rlm`` command (``--config`` and the global flags honoured), for the built-in
    commands. Deprecated for plugins: a sub-command reads ``CommandServices.of(ctx)`` (``rlm_host.services``)."""
    return cli_state(ctx).settings()


def _to_click(target: Any, name: str) -> click.Command:
    """A typer app, a click command (typer's copy or the click package's) or a plain function, as a command of
    the ``rlm`` group called ``name``."""
    from rlm_host.cli.click_commands import delegate, is_click_command

    if isinstance(target, typer.Typer):
        command = typer.main.get_command(target)
    elif isinstance(target, click.Command):
        command = target
    elif is_click_command(target):
        command = delegate(target, name)
    elif callable(target):
        wrapper = typer.Typer(rich_markup_mode=None, add_completion=False)
        wrapper.command(name=name)(target)
        command = typer.main.get_command(wrapper)
    else:
        raise PluginError(f"command {name!r}: expected a typer.Typer, a click command or a function, "
                          f"got {type(target).__name__}")
    command.name = name
    return command


class LazyCommand(TyperCommand):
    """Stands in for a listed sub-command (its name and help); imports the real one when it is invoked."""

    def make_context(self, info_name: Any, args: list[str], parent: Any = None, **extra: Any) -> click.Context:
        return _load_listed(str(self.name)).make_context(info_name, args, parent=parent, **extra)


class RlmGroup(TyperGroup):
    """The root group: every sub-command (the default plugins' and the installed plugins') comes from the
    ``rlm_register_commands`` registry, is listed by name and help, and is loaded on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(_listing(ctx)))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        listing = _listing(ctx)
        if cmd_name not in listing:
            return None
        return LazyCommand(cmd_name, help=listing[cmd_name], short_help=listing[cmd_name])

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        # click resolves the sub-command (which loads the plugins) before the group's callback runs: apply the
        # logging flags first, so plugin loading logs at the level asked for.
        logs.configure(verbose=ctx.params.get("verbose") or 0, json=bool(ctx.params.get("log_json")))
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as exc:
            if args and "Did you mean" not in exc.message:
                if close := difflib.get_close_matches(args[0], self.list_commands(ctx), n=2):
                    exc.message = exc.message.rstrip(".") + ". Did you mean " + ", ".join(map(repr, close)) + "?"
            raise


_REFUSED = "(refused: two plugins register this command)"


def _listing(ctx: click.Context) -> dict[str, str]:
    """Command name → help of every registered sub-command, once per command line: the user's cache of this
    installation's listing when it still holds (no plugin imported: ``rlm --help`` stays fast), else the registry's,
    which a healthy load writes to that cache (see ``rlm_host.plugins.command_cache``)."""
    meta = ctx.find_root().meta
    if "rlm.listing" not in meta:
        from rlm_host.plugins import command_cache  # the host (pluggy, every plugin) only when the cache misses

        meta["rlm.listing"] = command_cache.read()
        if not meta["rlm.listing"]:
            from rlm_host.plugins import get_host

            registry = get_host().commands()
            usable = registry.usable_names()  # a name claimed twice is listed, and running it says so, naming both
            meta["rlm.listing"] = {name: registry.get(name).help if name in usable else _REFUSED
                                   for name in registry.names()}
            command_cache.write(get_host(), meta["rlm.listing"])
    return meta["rlm.listing"]


def _load_listed(name: str) -> click.Command:
    """The real command ``name``, from the loaded registry (which raises for a name claimed twice or gone)."""
    from rlm_host.components import resolve
    from rlm_host.plugins import get_host

    spec = get_host().commands().get(name)  # raises for a name two plugins claim, or one gone since the listing
    return _to_click(resolve(spec.app, what=f"command {name!r}"), name)


def _print_version(value: bool) -> None:
    if not value:
        return
    from rlm_host.plugins import discovery

    typer.echo(f"rlm-host {discovery.host_version()}")
    for dist in discovery.discover():
        typer.echo(f"  {dist.name} {dist.version}")
    raise typer.Exit()


app = typer.Typer(name="rlm", cls=RlmGroup, help="rlm: run, compare, benchmark and observe Recursive Language Model "
                  "agents.", rich_markup_mode=None, pretty_exceptions_enable=False, add_completion=False,
                  no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})


@app.callback()
def main_options(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Show versions of rlm and its plugins."),
    config: Optional[Path] = typer.Option(None, "--config", help="Project config file (default: ./rlm.toml)."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    verbose: int = typer.Option(0, "--verbose", "-v", count=True, show_default=False,
                                help="More log output (-vv for debug)."),
    log_json: bool = typer.Option(False, "--log-json", help="Log JSON lines on stderr."),
    trust_config: bool = typer.Option(False, "--trust-config", envvar="RLM_TRUST_CONFIG", help="Trust the project's "
                                      "rlm.toml / [tool.rlm] for this command (see `rlm config trust`)."),
) -> None:
    # (the logging flags are applied already: RlmGroup.resolve_command runs before this callback)
    ctx.obj = CliState(config_file=config, debug=debug, verbose=verbose, log_json=log_json, trust_config=trust_config)
