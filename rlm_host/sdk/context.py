"""The context kit: for context loader plugins (``rlm_register_context_loaders``, a ``ContextLoaderSpec`` whose
factory is called with ``HostServices`` and returns a loader: ``load(path)`` → text, JSON or ``Documents``), and
for any plugin that reads a run's context.

``Documents`` is a set of named texts; ``load_context`` / ``load_file`` read a context as ``rlm run --context``
does (``load_context_with_loaders``, ``loader_lookup`` and ``media_type`` with the installed loaders);
``describe_context`` is the description a prompt shows; ``TextFile`` a context left on disk. Work on untrusted
bytes (a PDF, an archive) runs in a bounded child process (``run_bounded``, ``BoundedLimits``); what rlm reads back
later (a cache) is signed with the user's key (``user_signature``, ``verify_user_signature``). A small file a
user or a project names (``@FILE`` guidance) is read with ``read_regular``: regular files only, bounded, never
blocking on a FIFO; a file rlm keeps (a cache entry) is written with ``write_atomic``: a new file renamed over
the name, so a link planted there is replaced, never written through.

Reference plugin to copy: ``plugins/rlm-context-documents``. Contract suite:
``rlm_host.testing.ContextLoaderContract``.
"""

from rlm_host.bounded import BoundedError, BoundedLimits, ChildFailed, LimitExceeded, bounded_start_method, run_bounded
from rlm_host.config.user_key import user_signature, verify_user_signature
from rlm_host.context import (ContextFiles, Documents, TextFile, context_value, describe_context, load_context,
                              load_file, read_regular, write_atomic)
from rlm_host.engine.context_loading import load_context_with_loaders, loader_lookup, media_type

__all__ = [
    # a run's context
    "Documents", "load_context", "load_file", "describe_context", "TextFile", "context_value", "ContextFiles",
    # with the installed loaders
    "loader_lookup", "load_context_with_loaders", "media_type",
    # host-side work on untrusted bytes: a bounded child process
    "run_bounded", "BoundedLimits", "BoundedError", "LimitExceeded", "ChildFailed", "bounded_start_method",
    # what rlm reads back, signed with the user's key
    "user_signature", "verify_user_signature",
    # a small file named by a user or a project, read safely
    "read_regular", "write_atomic",
]
