"""``rlm config show``: the effective settings and where each value came from; ``rlm config trust`` /
``untrust``: whether a project's own file may set what moves secrets or weakens isolation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer

from rlm_host.cli.app import AS_JSON, command_settings, echo, echo_json, group
from rlm_host.config.trust import record_trust
from rlm_host.errors import InputError

app = group("Inspect the settings rlm reads from flags, environment variables and config files.")


@app.command("show")
def show(
    as_json: bool = AS_JSON,
    all_: bool = typer.Option(False, "--all", help="Also every installed component's default settings."),
) -> None:
    """Every setting with its value and source (flag, environment variable, file or default)."""
    loaded = command_settings()
    rows = loaded.rows(all_components=all_)
    if as_json:
        return echo_json({"files": [str(p) for p in loaded.files],
                          "settings": {key: {"value": value, "source": source} for key, value, source in rows}})
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        echo(f"{key:<{width}}  = {json.dumps(value, default=str):<24}  # {source}")


@app.command("trust")
def trust(
    file: Optional[Path] = typer.Argument(None, help="The project file (default: ./rlm.toml, else the "
                                          "[tool.rlm] table of ./pyproject.toml)."),
) -> None:
    """Trust a project's config file as it is now: its endpoints, keys, sandbox and paths then apply. A change
    to the file needs trust again."""
    from rlm_host.config.loader import _flatten
    from rlm_host.config.trust import risk_of
    from rlm_host.plugins import get_host

    path, table = _project_file(file)
    store = record_trust(path, table, os.environ)

    risky = [key for key, value in _flatten(table) if risk_of(key, value, path.parent.resolve(), get_host())]
    echo(f"trusted {path.resolve()} (recorded in {store})")
    if risky:
        echo("it now sets: " + ", ".join(risky))


@app.command("untrust")
def untrust(
    file: Optional[Path] = typer.Argument(None, help="The project file (default: the one in this folder)."),
) -> None:
    """Forget the trust given to a project's config file."""
    path, _ = _project_file(file)
    record_trust(path, None, os.environ)
    echo(f"no longer trusted: {path.resolve()}")


def _project_file(file: Optional[Path]) -> tuple[Path, dict]:
    from rlm_host.config.loader import find_project_file, project_table

    if (path := file if file is not None else find_project_file(Path.cwd())) is None:
        raise InputError("no project config here: no rlm.toml, and no [tool.rlm] table in pyproject.toml",
                         hint="name the file: rlm config trust PATH")
    if not path.is_file():
        raise InputError(f"config file not found: {path}")
    return path, project_table(path)
