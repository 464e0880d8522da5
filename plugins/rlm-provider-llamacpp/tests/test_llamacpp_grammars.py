"""Reply formats as llama.cpp grammars, with the real embedded model (it loads in well under a second): the
environments' formats compile against its vocabulary, once; a grammar llama.cpp cannot parse is a ModelError
rather than the abort llama-cpp-python would give at the first token; the connector enforces a format by default.
"""

from __future__ import annotations

import llama_cpp
import pytest
from rlm_host import ModelError
from rlm_host.sdk.models import ModelOptions, ReplyFormat
from rlm_host.testing import ENVIRONMENT_REPLY_FORMATS

from rlm_provider_llamacpp.connector import LlamaCppConnector
from rlm_provider_llamacpp.grammars import compiled_grammar, grammar_text

MESSAGES = [{"role": "user", "content": "Is the sky blue?"}]
PURE_RLM, GENERIC = (ENVIRONMENT_REPLY_FORMATS[name][0] for name in ("pure_rlm", "generic"))


@pytest.fixture(scope="module")
def connector() -> LlamaCppConnector:
    return LlamaCppConnector("smollm2", ModelOptions(max_tokens=8))


@pytest.mark.parametrize("reply_format", [PURE_RLM, GENERIC], ids=["pure_rlm", "generic"])
def test_the_environments_formats_compile_once(connector, reply_format):
    llama = connector.load().llama
    grammar = compiled_grammar(llama_cpp, llama, reply_format)
    assert isinstance(grammar, llama_cpp.LlamaGrammar)
    assert compiled_grammar(llama_cpp, llama, reply_format) is grammar


def test_a_json_schema_becomes_llama_cpps_grammar_for_it():
    text = grammar_text(llama_cpp, GENERIC)
    assert "root ::=" in text and "action-kv" in text and '"\\"run_python\\""' in text  # a required key, an action
    assert grammar_text(llama_cpp, PURE_RLM) == PURE_RLM.gbnf
    with pytest.raises(ModelError, match="neither a grammar nor a JSON schema"):
        grammar_text(llama_cpp, ReplyFormat("empty"))


def test_a_grammar_llama_cpp_cannot_parse_is_a_model_error_not_an_abort(connector):
    with pytest.raises(ModelError, match="cannot parse the grammar of reply format 'broken'"):
        connector.complete(MESSAGES, reply_format=ReplyFormat("broken", gbnf='root ::= ("unclosed"\n'))
    assert connector.complete(MESSAGES).output_tokens > 0  # the process and the model are fine


def test_the_connector_enforces_a_format_and_says_so(connector):
    assert connector.reply_formats == {"gbnf", "json_schema"} and connector.reply_format_by_default
    shaped = connector.complete(MESSAGES, reply_format=ReplyFormat("digits", gbnf='root ::= [0-9]{3}\n'))
    assert shaped.text is not None and len(shaped.text) == 3 and shaped.text.isdigit(), shaped.text
    assert shaped.raw["reply_format"] == "digits"
    assert "reply_format" not in connector.complete(MESSAGES).raw


def test_a_timeout_under_a_grammar_stops_where_the_grammar_lets_the_reply_end(connector):
    """Forcing the end-of-sequence token where the grammar forbids it would abort the process (no token left)."""
    with pytest.raises(ModelError, match="no answer within"):
        connector.complete(MESSAGES, timeout=0.001, reply_format=PURE_RLM)
    assert connector.complete(MESSAGES).output_tokens > 0


def test_a_hostile_tool_name_or_argument_name_cannot_break_the_tool_grammar(connector):
    """Tool names reach the grammar from frameworks and MCP servers: quotes, backslashes, newlines and GBNF syntax
    in a name stay one escaped literal (the grammar compiles, with no rule of the name's making); an argument name
    that is not a plain key falls back to any object instead of entering the grammar."""
    import json

    from rlm_host.sdk.tools import ToolSpec, tool_reply_format

    hostile = 'x"\\\nroot ::= "owned" | ['
    weird_arg = {"type": "object", "properties": {'k" ::= [': {"type": "string"}}, "required": ['k" ::= [']}
    shape = tool_reply_format([ToolSpec(hostile, "", weird_arg)])
    assert 'k\\" ::=' not in shape.gbnf  # the odd argument name took the any-object rule
    llama = connector.load().llama
    compiled_grammar(llama_cpp, llama, shape)  # compiles: no ModelError
    rules = [line.split("::=")[0].strip() for line in shape.gbnf.splitlines() if "::=" in line]
    assert rules.count("root") == 1 and json.dumps(json.dumps(hostile)) in shape.gbnf  # one literal, escaped
