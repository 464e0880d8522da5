"""Where an OpenAI-compatible service takes a reply format (:class:`rlm_host.models.protocol.ReplyFormat`) in a chat
request, so the ``openai`` connector can enforce an environment's reply shape on the servers that support it.

Services differ: llama.cpp's server reads a GBNF grammar from ``grammar``, vLLM from ``structured_outputs.grammar``
and SGLang from ``ebnf``; a JSON schema goes in OpenAI's ``response_format`` of type ``json_schema``, except on
llama.cpp's server (llama-cpp-python's as well as the C++ one), which takes ``{"type": "json_object", "schema": …}``.
Each OpenAI-compatible service (the rlm-provider-compatible plugin) gives its connector one :class:`ReplyFormatFields`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rlm_host.models.protocol import ReplyFormat


@dataclass(frozen=True)
class ReplyFormatFields:
    """How one service takes a reply format: ``grammar`` is the dotted path of the request-body field holding a
    GBNF grammar ("" when it takes none); ``json_schema`` the ``response_format`` type carrying a JSON schema ("" when
    it takes none); ``by_default`` says the connector enforces a format unless the run says ``off``."""

    grammar: str = ""
    json_schema: Literal["", "json_schema", "json_object"] = ""
    by_default: bool = False

    @property
    def kinds(self) -> frozenset[str]:
        """The ReplyFormat kinds this service can enforce (``gbnf``, ``json_schema``)."""
        return frozenset(kind for kind, field in (("gbnf", self.grammar), ("json_schema", self.json_schema)) if field)

    def apply(self, request: dict[str, Any], reply_format: "ReplyFormat") -> None:
        """Add ``reply_format`` to ``request`` (the keyword arguments of ``chat.completions.create``): its grammar
        when the service takes one and the format has one, else its JSON schema."""
        if self.grammar and reply_format.gbnf is not None:
            body = request.setdefault("extra_body", {})
            *parents, leaf = self.grammar.split(".")
            for key in parents:
                body = body.setdefault(key, {})
            body[leaf] = reply_format.gbnf
        elif self.json_schema and reply_format.json_schema is not None:
            schema = dict(reply_format.json_schema)
            request["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": reply_format.name, "schema": schema, "strict": True}}
                if self.json_schema == "json_schema"
                else {"type": "json_object", "schema": schema}
            )


#: OpenAI's own API, and services that follow it: JSON schemas through ``response_format``, no grammars.
OPENAI_STYLE = ReplyFormatFields(json_schema="json_schema")

__all__ = ["OPENAI_STYLE", "ReplyFormatFields"]
