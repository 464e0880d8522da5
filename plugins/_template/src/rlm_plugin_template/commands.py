"""The plugin's sub-commands, imported only when ``rlm plugin-template …`` runs."""

import json
from importlib import metadata

import rlm_host
import typer

from rlm_plugin_template import PLUGIN_NAME

app = typer.Typer(help="Commands of the plugin template.", rich_markup_mode=None, no_args_is_help=True)


@app.callback()
def main() -> None:
    """Commands of the plugin template."""


@app.command()
def info(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Show this plugin's version and the rlm-host it runs under."""
    payload = {"plugin": PLUGIN_NAME, "version": metadata.version(PLUGIN_NAME), "host": rlm_host.__version__}
    typer.echo(json.dumps(payload) if as_json else " ".join(f"{k}={v}" for k, v in payload.items()))
