"""Plugin sub-commands in every form authors write them: a typer app, a function, and a command or group of the
``click`` package (simonw/llm's convention), each with its help, options, exit codes and the command's settings."""

from __future__ import annotations

import pytest

pytest.importorskip("click")  # the click package itself (typer carries its own copy); installed with llm here

COMMANDS = '''
import click
import typer

from rlm_host import CommandServices, CommandSpec, hookimpl


@click.group(help="A click group.")
def clicky():
    pass


@clicky.command(help="Greet someone.")
@click.argument("who")
@click.option("--shout", is_flag=True)
@click.pass_context
def hello(ctx, who, shout):
    home = CommandServices.of(ctx).home.name
    click.echo(f"hello {who.upper() if shout else who} from {home}")


@click.command(help="Fail on purpose.")
@click.option("--code", type=int, default=3)
def failing(code):
    raise click.exceptions.Exit(code)


typed = typer.Typer(help="A typer app.")


@typed.command()
def ping(times: int = 1):
    typer.echo("pong " * times)


def plain(name: str = "x"):
    """A plain function."""
    typer.echo(f"plain {name}")


@hookimpl
def rlm_register_commands():
    return [CommandSpec("clicky", "A click group.", clicky), CommandSpec("failing", "Fail on purpose.", failing),
            CommandSpec("typed", "A typer app.", typed), CommandSpec("plain", "A plain function.", plain)]
'''


@pytest.fixture
def run(cli, tmp_path, monkeypatch):
    (tmp_path / "my_commands.py").write_text(COMMANDS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "my_commands")
    return cli


def test_a_click_package_group_runs_with_its_options_help_and_settings(run):
    code, out, err = run("clicky", "hello", "ada", "--shout")
    assert (code, out) == (0, "hello ADA from .rlm\n"), err
    code, out, _ = run("clicky", "--help")
    assert code == 0 and "Usage: rlm clicky" in out and "hello" in out
    code, out, _ = run("clicky", "hello", "--help")
    assert code == 0 and "--shout" in out
    code, _, err = run("clicky", "hello")
    assert code == 2 and "Missing argument 'WHO'" in err
    code, out, _ = run("--help")
    assert "clicky" in out and "A click group." in out


def test_click_exit_codes_come_through(run):
    assert run("failing", "--code", "4")[0] == 4
    assert run("failing", "--code", "0")[0] == 0


def test_typer_apps_and_plain_functions_run_too(run):
    assert run("typed", "--times", "2")[:2] == (0, "pong pong \n")
    assert run("plain", "--name", "y")[:2] == (0, "plain y\n")
