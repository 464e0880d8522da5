"""The embedding kit: for programs that run rlm (and plugin commands that run it: a benchmark, an MCP server).

``RLM`` is the front door (``RLM(model=...).completion(context, query)``, ``acompletion``, ``stream``,
``astream``, ``session`` → ``ChatSession``; also in the root). Below it, ``RLMRunner`` runs a task with given plugins
and settings (``load_settings`` → ``LoadedSettings``; ``PluginHost`` the installed plugins), ``Budget`` is a run
tree's limits (shareable between runs), ``VariableCarrier`` the REPL variables a front door keeps from one run to
the next (``RLM.completion(..., carry=)``), ``RunStore`` reads the recorded runs of a home (``select_runs`` filters
their summaries by the ``RUN_FILTERS`` keys as ``rlm runs list --filter`` does; ``parse_moment`` reads a ``since``
/ ``until`` date), ``Replay`` walks one run tree (what an exporter, ``rlm_register_exporters``, writes out),
``ActiveRuns()`` lists this user's runs in progress on this machine, whatever folder they run in, and cancels one or
all of them from any process (``rlm runs active`` / ``cancel``). A command reading a settings-like file the user
names (a sweep file) screens it as a project file is screened: ``is_trusted(path, table, environ)`` (``rlm config
trust PATH``), ``risk_of("run.base_url", value, folder)``. What
such a command writes is masked like everything rlm writes (``redact_data``: registered keys, a URL's password as
``user:***@host``). The command side — run options as flags, ``rlm run``'s own command, the terminal — is the
commands kit, ``rlm_host.sdk.commands``.

Reference plugins to copy: ``plugins/rlm-mcp`` (an MCP server over ``RLM`` and ``RunStore``),
``plugins/rlm-bench`` (benchmarks over ``RLMRunner``).
"""

from rlm_host.api.client import RLM, RunStream
from rlm_host.config.schema import RunSettings
from rlm_host.config.trust import is_trusted, risk_of, screen
from rlm_host.api.session import ChatSession
from rlm_host.config import LoadedSettings, load_settings
from rlm_host.engine.budget import Budget
from rlm_host.engine.carry import VariableCarrier
from rlm_host.engine.runner import SYNTHESIS_REASONS, RLMRunner
from rlm_host.plugins.host import PluginHost, get_host
from rlm_host.redact import MASK, redact_data
from rlm_host.trajectory.active import ActiveRun, ActiveRuns
from rlm_host.trajectory.store import RUN_FILTERS, RunStore, parse_moment, select_runs
from rlm_host.trajectory.tree import Replay, ReplayStep, RunTrace, run_labels

__all__ = ["RLM", "RunStream", "ChatSession", "RLMRunner", "SYNTHESIS_REASONS", "Budget", "VariableCarrier",
           "load_settings", "LoadedSettings", "RunSettings", "PluginHost", "get_host", "RunStore", "select_runs",
           "RUN_FILTERS", "parse_moment", "Replay", "ReplayStep", "RunTrace", "run_labels", "is_trusted", "risk_of",
           "screen", "ActiveRuns", "ActiveRun", "redact_data", "MASK"]
