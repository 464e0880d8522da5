"""``rlm tui``: the terminal UI over the command's run home; ``--web`` serves the same app to a browser.

Textual (and textual-serve) are imported only here, when the command runs — never by ``rlm --help``.
"""

from __future__ import annotations

from typing import Optional

import typer

app = typer.Typer(help="A terminal UI: browse, follow, replay and compare runs; run benchmarks.",
                  rich_markup_mode=None, add_completion=False)


@app.command()
def tui(
    ctx: typer.Context,
    run: Optional[str] = typer.Option(None, "--run", "-r", help="Open this run first (an id, a prefix or latest)."),
    web: bool = typer.Option(False, "--web", help="Serve the app to a browser instead (textual-serve): open the URL "
                             "it prints, which carries a token made for this launch."),
    host: Optional[str] = typer.Option(None, "--host", help="--web: the one address to listen on (default "
                                       "127.0.0.1; another than loopback is plain HTTP: whoever has the printed URL "
                                       "reads your runs and starts runs)."),
    port: int = typer.Option(8766, "--port", "-p", min=0, max=65535, help="--web: port to listen on."),
    browser_session: bool = typer.Option(False, "--browser-session", hidden=True,
                                         help="Set by --web for the app it serves: the settings are ceilings."),
) -> None:
    """Browse saved runs, follow a live one, replay and compare runs, run benchmarks, start runs with /rlm run.

    Keys: F1 help, F2 runs, F3 live, F4 bench, / command line, ctrl+x abort, ctrl+q quit."""
    from rlm_host import CommandServices

    services = CommandServices.of(ctx)  # the command's settings (--config honoured) and its run home
    if web:
        from rlm_tui.web import serve

        serve(host, port, config_file=services.config_file, trust=services.trust_config, run=run)
        return
    if not browser_session:  # textual-serve runs the app it serves over pipes, with its own driver
        need_terminal()
    from pathlib import Path

    from rlm_tui.app import RlmTui
    from rlm_tui.bench import Bench
    from rlm_tui.browser_session import BrowserCeilings
    from rlm_tui.workspace import Workspace

    ceilings = BrowserCeilings(project=Path.cwd()) if browser_session else None
    workspace = Workspace(home=services.home, settings=services.settings, ceilings=ceilings)
    try:
        RlmTui(workspace, Bench(services.config_file, services.trust_config), open_run=run).run()
    finally:
        left = workspace.stop_own()  # runs started here end `cancelled`, not dead with the process
        if left:
            typer.echo(f"{len(left)} run(s) still stopping; they end when this process does", err=True)


def need_terminal() -> None:
    """Refuse to start without a terminal to draw on: Textual reads keys from stdin and draws on stderr, and with
    either redirected it would draw into the file and wait for keys that never come (exit 2, pointing at --web)."""
    import sys

    from rlm_host import InputError

    missing = [name for name, stream in (("stdin", sys.stdin), ("stderr", sys.stderr))
               if stream is None or not stream.isatty()]
    if missing:
        raise InputError(f"rlm tui needs a terminal: {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'}"
                         " not one (redirected or piped)",
                         hint="run it in a terminal, or serve it to a browser with `rlm tui --web`")
