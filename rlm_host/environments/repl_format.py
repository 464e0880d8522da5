"""The shape of a REPL-loop reply (pure_rlm's, and adk-rlm's in a framework run) as a GBNF grammar, for connectors
that enforce it while the model writes (llama.cpp in-process or served, vLLM, SGLang): an optional line of prose,
then one or two ```repl blocks (prose between them allowed) optionally followed by a ``FINAL(...)`` /
``FINAL_VAR(...)`` line, or that line alone.

Every reply it allows is read by :func:`rlm_host.environments.pure_rlm.parsing.parse_reply` as code blocks, a
final answer, or both (the code runs first, as it does for any reply), so even a tiny model's every step runs code
or ends the run. Lines, blocks and names are bounded: a model that loops stops at the grammar's end or, before it,
at its ``max_tokens``. Two blocks, not more: a small model copying the prompt's example otherwise repeats its last
block, and a larger one that wants a third writes it in its next step, having seen the first two run.
"""

from __future__ import annotations

from rlm_host.models.protocol import ReplyFormat

GRAMMAR = r"""
root   ::= (prose "\n")? (blocks ("\n" final)? | final)
prose  ::= [^`\n]{1,200}
blocks ::= block ("\n" (prose "\n")? block)?
block  ::= "```repl\n" line{1,40} "```"
line   ::= [^`\n]{0,200} "\n"
final  ::= "FINAL(" [^\n]{1,500} ")" | "FINAL_VAR(" name ")"
name   ::= [a-zA-Z_] [a-zA-Z0-9_]{0,63}
"""

REPLY_FORMAT = ReplyFormat("pure_rlm", gbnf=GRAMMAR.strip() + "\n")
