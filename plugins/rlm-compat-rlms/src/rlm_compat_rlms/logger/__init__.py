"""The authors' ``rlm.logger``: ``RLMLogger`` (a completion's trajectory, in memory or as their JSON-lines log) and
``VerbosePrinter`` (what ``verbose=True`` prints)."""

from rlm_compat_rlms.logger.rlm_logger import RLMLogger
from rlm_compat_rlms.logger.verbose import VerbosePrinter

__all__ = ["RLMLogger", "VerbosePrinter"]
