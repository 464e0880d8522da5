"""Moved: the REPL reply's reader is :mod:`rlm_host.environments.repl_format`, beside its grammar (kept here for
the callers of the old path)."""

from rlm_host.environments.repl_format import ParsedReply, parse_reply, synthesized_answer

__all__ = ["ParsedReply", "parse_reply", "synthesized_answer"]
