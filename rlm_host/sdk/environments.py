"""The environments kit: for environment plugins (``rlm_register_environments``, an ``EnvironmentSpec`` whose
factory is called as ``factory(settings, ctx: EnvironmentContext)`` and returns an ``Environment``).

Each step the runner asks the environment's ``messages()``, sends them to the root model and hands the reply to
``execute()``, which returns an ``ActionResult``. The context lends the run: models, budget, a sandbox
(``ctx.open_sandbox()``), child runs, and ``ctx.build_environment(name, inner_ctx)`` to build another
registered environment with its configured settings (to wrap or drive it). The REPL kit is what a REPL-style
environment puts in its sandbox: ``HELPERS_SOURCE``, ``document_names`` and the sub-call functions ``SubCalls``
(``llm_query``, ``llm_query_batched``, ``rlm_query``). A JSON-action environment reads replies with
``reply_action`` / ``parse_action``; ``StepHistory`` and ``truncate`` shape what the next prompt shows,
``render_description(ctx.context_meta)`` describes the context and ``with_instructions`` adds the user's
``--instructions`` to a system prompt; ``answer_text`` is a ``FinalSignal``'s answer as text and
``synthesized_answer`` a synthesis reply's (a ``FINAL(...)`` line in it read the REPL's way);
``execute_code(ctx.scope, session, code, timeout)`` runs model code with the ``code_start`` / ``code_end`` events a
live view shows; ``ProjectFiles(ctx.workdir)`` reads, writes, patches and lists the project's files for the model,
confined to the folder (a hostile path is a ``PathRefused`` whose message the model sees).

Reference plugins to copy: ``plugins/rlm-env-generic`` (JSON actions, delegation), ``plugins/rlm-env-traces``
(pure_rlm given extra host functions, through ``build_environment``), ``plugins/rlm-env-dspy`` (its own loop over a
project folder). Contract suite: ``rlm_host.testing.EnvironmentContract``.
"""

from rlm_host.environments.kit import (StepHistory, answer_text, execute_code, parse_action, render_description,
                                      reply_action, truncate, with_instructions)
from rlm_host.approvals import ApprovalRequest
from rlm_host.environments.case_folders import CaseFolders
from rlm_host.environments.project_files import PathRefused, ProjectFiles
from rlm_host.environments.protocol import Environment, EnvironmentContext
from rlm_host.environments.repl import HELPERS_SOURCE, SubCalls, document_names, gather_calls
from rlm_host.environments.repl_format import synthesized_answer
from rlm_host.environments.repl_tools import Tool, tools_prompt
from rlm_host.results import ActionResult
from rlm_host.text import json_object_spans

__all__ = [
    # the protocol
    "Environment", "EnvironmentContext", "ActionResult",
    # JSON actions in a reply
    "parse_action", "reply_action", "json_object_spans",
    # what the next prompt shows; the final answer as text
    "truncate", "StepHistory", "render_description", "with_instructions", "answer_text", "synthesized_answer",
    # the project folder's files, confined (read, write, patch, list; paths from the model are hostile)
    "ProjectFiles", "PathRefused",
    # before an action that changes things: ctx.approvals.check(ApprovalRequest(tool, kind, summary)) -> refusal
    "ApprovalRequest",
    # coding benchmark cases kept as folders in a plugin package (starter, hidden tests, reference, wrong)
    "CaseFolders",
    # the REPL kit; model code run with its live events
    "SubCalls", "HELPERS_SOURCE", "document_names", "execute_code", "gather_calls",
    # the user's own functions in the REPL (ctx.tools): their prompt lines; a toolbox's functions (ToolboxSpec)
    "tools_prompt", "Tool",
]
