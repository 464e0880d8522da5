"""``--context a.txt b.md``: several paths after one ``--context``, for ``rlm run`` and ``rlm chat``.

click gives an option one value; :class:`ContextsCommand` rewrites the words after a ``--context`` value into
more ``--context`` options before click parses them: every following word that names an existing path (for a
command without arguments, such as ``rlm chat``, every following word that is not an option). A word left over
that is no task gets an ``error:`` naming it and a ``hint:`` saying how to pass several contexts.
"""

from __future__ import annotations

import os
import re

from typer import _click as click
from typer.core import TyperCommand

from rlm_host.errors import InputError

NAMES = ("--context", "-c")
HINT = ("several contexts: --context a.txt b.md (each an existing path) or --context a.txt --context b.md; "
        "quote a task that has spaces")  # fmt: skip


class ContextsCommand(TyperCommand):
    """A command whose ``--context`` takes one or more paths."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, spread(args, self))
        except click.exceptions.UsageError as exc:
            extra = re.search(r"unexpected extra argument(?:s|\(s\))? \((.*)\)", exc.message)
            if not extra:
                raise
            words = extra.group(1)
            missing = [w for w in words.split() if not os.path.lexists(w)]
            why = f" (no such file: {', '.join(missing)})" if missing else ""
            raise InputError(f"unexpected argument(s): {words}{why}", hint=HINT) from None


def spread(args: list[str], command: click.Command) -> list[str]:
    """``args`` with each word that follows a ``--context`` value and is one more context turned into
    ``--context WORD``; the command's last argument word is never taken (it is the task)."""
    valued = {name for p in command.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
              and not getattr(p, "count", False) for name in p.opts + p.secondary_opts}  # fmt: skip
    takes_arguments = any(p.param_type_name == "argument" for p in command.params)
    out: list[str] = []
    taken: list[int] = []  # where in ``out`` each spread word went
    free = 0  # argument words left for the command
    following, index = False, 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            out.extend(args[index - 1:])
            free += len(args) - index
            break
        if following and not word.startswith("-") and (not takes_arguments or os.path.lexists(word)):
            taken.append(len(out))
            out += ["--context", word]
            continue
        following = word in NAMES or word.startswith("--context=")
        out.append(word)
        if (word in valued or word in NAMES) and index < len(args):
            out.append(args[index])
            index += 1
        elif not word.startswith("-") or word == "-":
            free += 1
    if takes_arguments and taken and not free:  # the task named a file: the last word is the task after all
        at = taken[-1]
        out[at:at + 2] = [out[at + 1]]
    return out

