"""The Langfuse SDK, imported once for this package, without its import-time logging changes.

Importing ``langfuse`` sets the ``httpx`` logger to WARNING and gives it a console handler of its own: every httpx
warning would be printed twice in Langfuse's format, and ``rlm -vv`` would no longer show requests. Importing it
through this module undoes both, so rlm's logging stays in charge of what is shown.
"""

from __future__ import annotations

import logging

import langfuse.logger
from langfuse import Langfuse, LangfuseOtelSpanAttributes

_httpx = logging.getLogger("httpx")
_httpx.removeHandler(langfuse.logger.console_handler)
_httpx.setLevel(logging.NOTSET)

__all__ = ["Langfuse", "LangfuseOtelSpanAttributes"]
