"""The commands kit: for plugin sub-commands and servers that start runs or print for a person
(``rlm_register_commands``: ``rlm harness``, ``rlm bench``, ``rlm mcp``, the TUI).

``run_command(name, defaults=, exclude=, params=, prepare=)`` is ``rlm run``'s own command for a plugin's run
command: the task, every run option as a flag, ``--json``, ``-q``, the live view, the exit codes (``rlm harness
run`` is ``run_command("run", defaults={"environment": "harness"}, …)``). A command that offers only some run
options declares each with ``run_option("max_steps")`` (flag, help and default from the one declaration,
``RunSettings``) and merges what the user gave with ``apply_run_flags(settings, {"max_steps": value})`` (errors and
provenance name the flag); a front door speaking JSON Schema types its parameters with
``run_option_type("max_steps")`` (the MCP tool). ``TerminalApprover.if_attended(view)`` asks the person at the
controlling terminal under ``--approve ask``. Whatever a command prints that came from a run or a server goes
through ``terminal_safe`` (control characters shown, never sent), its ``--json`` output through
``json_for_terminal`` (C1 controls escaped); its one-line notices through ``say`` (JSON with ``--log-json``). A
server that listens checks the ``Host`` of each request with ``is_loopback_host``.

Reference plugins to copy: ``plugins/rlm-harness`` (``run_command``), ``plugins/rlm-bench`` (``run_option`` and
``apply_run_flags`` in ``rlm bench run``), ``plugins/rlm-mcp`` (``run_option_type``, ``is_loopback_host``).
"""

from rlm_host.cli.app import echo, echo_json
from rlm_host.cli.approve_prompt import TerminalApprover
from rlm_host.cli.render import step_lines
from rlm_host.cli.run_cmd import ContextsCommand, run_and_show, run_command, run_params
from rlm_host.cli.run_flags import apply as apply_run_flags
from rlm_host.cli.run_flags import run_option
from rlm_host.config.run_options import run_option_type
from rlm_host.models.loopback import is_loopback_host
from rlm_host.logs import say
from rlm_host.text import clip, json_for_terminal, terminal_safe

__all__ = ["run_command", "run_option", "apply_run_flags", "run_option_type", "TerminalApprover", "terminal_safe",
           "json_for_terminal", "say", "is_loopback_host", "run_params", "run_and_show", "ContextsCommand", "echo",
           "echo_json", "step_lines", "clip"]
