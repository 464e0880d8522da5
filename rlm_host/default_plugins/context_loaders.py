"""Built-in context loaders: ``json`` (a ``.json`` file as the JSON value it holds) and ``text`` (any other file
that is text). Other formats (PDF, DOCX, HTML…) are plugins registering their own."""

from __future__ import annotations

from rlm_host.components import ContextLoaderSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_context_loaders() -> list[ContextLoaderSpec]:
    return [
        ContextLoaderSpec("json", "A .json file as the JSON value it holds", "rlm_host.context:JsonLoader",
                          suffixes=(".json",)),
        ContextLoaderSpec("text", "Any other text file as its text (UTF-8, undecodable bytes replaced)",
                          "rlm_host.context:TextLoader", priority=-100),
    ]  # fmt: skip
