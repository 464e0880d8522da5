"""The reply formats of the host's environments, for the tests of providers that enforce them: each format with
the check the environment's own reader makes of a reply (pure_rlm: code blocks or a final answer; generic: an
action object naming a known action)."""

from __future__ import annotations

from typing import Callable

from rlm_host.environments.generic import ACTION_SCHEMA
from rlm_host.environments.kit import parse_action
from rlm_host.environments.generic import REPLY_FORMAT as GENERIC_REPLY_FORMAT
from rlm_host.environments.pure_rlm.parsing import parse_reply
from rlm_host.environments.pure_rlm.reply_format import REPLY_FORMAT as PURE_RLM_REPLY_FORMAT
from rlm_host.llm.protocol import ReplyFormat


def _pure_rlm_acts_on(reply: str) -> bool:
    """Whether pure_rlm finds code to run or a final answer in ``reply``."""
    parsed = parse_reply(reply)
    return bool(parsed.code_blocks) or parsed.final_kind is not None


def _generic_acts_on(reply: str) -> bool:
    """Whether the generic environment finds an action object naming one of its actions in ``reply``."""
    action = parse_action(reply)
    return action is not None and action.get("action") in ACTION_SCHEMA["properties"]["action"]["enum"]


#: Environment name → (its reply format, whether the environment can act on a reply).
ENVIRONMENT_REPLY_FORMATS: dict[str, tuple[ReplyFormat, Callable[[str], bool]]] = {
    "pure_rlm": (PURE_RLM_REPLY_FORMAT, _pure_rlm_acts_on),
    "generic": (GENERIC_REPLY_FORMAT, _generic_acts_on),
}

__all__ = ["ENVIRONMENT_REPLY_FORMATS"]
