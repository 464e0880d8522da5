"""Entry point of the ``rlm`` console script: runs the app and turns errors into one clear message.

Errors a user can cause (``RlmError``, usage errors) print ``error: …`` and an optional ``hint: …`` line, and
exit non-zero. Anything else prints one line pointing at ``--debug``; only ``--debug`` (or ``RLM_DEBUG=1``)
shows tracebacks.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Sequence

from typer import _click as click
from typer.exceptions import Abort, Exit

from rlm_host.errors import RlmError

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rlm`` with ``argv`` (default: the process arguments) and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("RLM_DEBUG", "") not in ("", "0")
    from typer.main import get_command

    from rlm_host.cli.app import app

    command = get_command(app)
    try:
        result = command.main(args=args, prog_name="rlm", standalone_mode=False)
        return result if isinstance(result, int) else 0
    except Exit as exc:
        return exc.exit_code
    except Abort:
        _error("aborted")
        return EXIT_INTERRUPTED
    except click.exceptions.ClickException as exc:
        exc.show()
        return exc.exit_code
    except RlmError as exc:
        if debug:
            traceback.print_exc()
        _error(exc.message, exc.hint)
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:  # an unexpected failure: one line unless --debug
        if debug:
            traceback.print_exc()
            return 1
        _error(f"internal error: {type(exc).__name__}: {exc}", "run again with --debug for the traceback")
        return 1


def _error(message: str, hint: str = "") -> None:
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


def run() -> None:
    """Console-script wrapper: exit with ``main()``'s code."""
    sys.exit(main())


if __name__ == "__main__":
    run()
