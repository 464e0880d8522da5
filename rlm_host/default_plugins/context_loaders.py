"""Built-in context loaders: ``json`` (a ``.json`` file as the JSON value it holds), ``jsonl`` (a JSON Lines file
as the list of its values) and ``text`` (any other file that is text).
Other formats (PDF, DOCX, HTML…) are plugins registering their own."""

from __future__ import annotations

from rlm_host.components import ContextLoaderSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_context_loaders() -> list[ContextLoaderSpec]:
    return [
        ContextLoaderSpec("json", "A .json file as the JSON value it holds", "rlm_host.context:JsonLoader",
                          suffixes=(".json",)),
        ContextLoaderSpec("jsonl", "A JSON Lines file as the list of values its lines hold",
                          "rlm_host.context:JsonLinesLoader", suffixes=(".jsonl", ".ndjson")),
        ContextLoaderSpec("text", "Any other text file as its text (UTF-8, undecodable bytes replaced)",
                          "rlm_host.context:TextLoader", priority=-100),
    ]
