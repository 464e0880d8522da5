"""Reply formats as llama.cpp grammars: an environment's GBNF as given, a JSON schema through llama.cpp's own
schema-to-GBNF conversion; each checked and compiled once per process (a run asks for the same one every turn).

The check matters: llama-cpp-python accepts any text as a grammar and the process then aborts at the first token,
so a grammar is first parsed by llama.cpp against the model's vocabulary, and a bad one is a ModelError.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from rlm_host import ModelError
from rlm_host.sdk.models import ReplyFormat

_COMPILED: dict[str, Any] = {}
_LOCK = threading.Lock()


def grammar_text(llama_cpp: Any, reply_format: ReplyFormat) -> str:
    """The GBNF enforcing ``reply_format``: its own grammar when it has one, else its JSON schema converted."""
    if reply_format.gbnf is not None:
        return reply_format.gbnf
    if reply_format.json_schema is None:
        raise ModelError(f"llamacpp: reply format {reply_format.name!r} has neither a grammar nor a JSON schema")
    return llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(dict(reply_format.json_schema)))


def compiled_grammar(llama_cpp: Any, llama: Any, reply_format: ReplyFormat) -> Any:
    """The ``llama_cpp.LlamaGrammar`` of ``reply_format`` for the loaded model ``llama``, checked and compiled on
    first use; ModelError when llama.cpp cannot parse it."""
    text = grammar_text(llama_cpp, reply_format)
    with _LOCK:
        grammar = _COMPILED.get(text)
        if grammar is None:
            sampler = llama_cpp.llama_sampler_init_grammar(
                llama_cpp.llama_model_get_vocab(llama.model), text.encode("utf-8"), b"root"
            )
            if not sampler:  # a NULL pointer: llama.cpp printed the parse error on stderr
                raise ModelError(f"llamacpp: llama.cpp cannot parse the grammar of reply format {reply_format.name!r}")
            llama_cpp.llama_sampler_free(sampler)
            grammar = _COMPILED[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
    return grammar
