"""Entry point of the ``rlm`` console script: runs the app and turns errors into one clear message.

Errors a user can cause (``RlmError``, usage errors) print ``error: …`` and an optional ``hint: …`` line, and
exit non-zero. Anything else prints one line pointing at ``--debug``; only ``--debug`` (or ``RLM_DEBUG=1``)
shows tracebacks. A command asked for ``--json`` also gets the error as one JSON object on stdout,
``{"error": …, "hint": …, "exit_code": …}``, so a script reads what went wrong without parsing prose.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Sequence

from typer import _click as click
from typer.exceptions import Abort, Exit

from rlm_host.errors import RlmError

EXIT_INTERRUPTED = 130
#: pydantic loads every installed pydantic plugin (entry-point group ``pydantic``) when it builds its first model,
#: and one may import a whole SDK then (0.3 s and 17 MB for one seen): rlm turns on no pydantic instrumentation, so
#: the command line loads none unless the user chose otherwise (``PYDANTIC_DISABLE_PLUGINS`` set).
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rlm`` with ``argv`` (default: the process arguments) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("RLM_DEBUG", "") not in ("", "0")
    as_json = "--json" in args
    from typer.main import get_command

    from rlm_host.signals import handle_termination

    handle_termination()

    from rlm_host.cli.app import app

    try:
        result = get_command(app).main(args=args, prog_name="rlm", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except Exit as exc:
        return exc.exit_code
    except Abort:
        return _error("aborted", "", EXIT_INTERRUPTED, as_json)
    except click.exceptions.ClickException as exc:
        exc.show()
        return _error(exc.format_message(), "", exc.exit_code, as_json, shown=True)
    except (Exception, KeyboardInterrupt) as exc:
        return report(exc, debug=debug, as_json=as_json)
    finally:  # every command's output is out: now its runs' sinks finish delivering (each within its deadline)
        if "rlm_host.observability.delivery" in sys.modules:
            from rlm_host.observability.delivery import wait_for_sinks

            wait_for_sinks()


def report(exc: BaseException, *, debug: bool = False, as_json: bool = False) -> int:
    """Say what went wrong as ``rlm`` does (``error:`` and ``hint:`` lines; an unexpected failure in one line unless
    ``debug``, which shows its traceback) and return the exit code: for a command's end, and an ``rlm chat`` turn's."""
    if isinstance(exc, RlmError):
        if debug:
            traceback.print_exc()
        return _error(exc.message, exc.hint, exc.exit_code, as_json)
    if isinstance(exc, KeyboardInterrupt):  # Ctrl-C, or SIGTERM / SIGHUP (rlm_host.signals.Terminated)
        return _error(str(exc) or "interrupted", "", getattr(exc, "exit_code", EXIT_INTERRUPTED), as_json)
    if debug:
        traceback.print_exc()
        return 1
    message = f"internal error: {type(exc).__name__}: {exc}"
    return _error(message, "run again with --debug for the traceback", 1, as_json)


def _error(message: str, hint: str, code: int, as_json: bool, *, shown: bool = False) -> int:
    """Say what went wrong on stderr (unless click already did) and, for ``--json``, on stdout; the exit code."""
    if not shown:
        from rlm_host import logs

        text = f"error: {message}" + (f"\nhint: {hint}" if hint else "")
        logs.say(text, event="error", level="error", error=message, hint=hint or None, exit_code=code)
    if as_json:
        print(json.dumps({"error": message, "hint": hint or None, "exit_code": code}))
    return code


def run() -> None:
    """Console-script wrapper: exit with ``main()``'s code."""
    sys.exit(main())


if __name__ == "__main__":
    run()
