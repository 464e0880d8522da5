# The REPL helpers every REPL-style session runs once, after `context` and `context_names` are set: sandbox-side
# source, read as text (rlm_host.environments.repl.HELPERS_SOURCE) and run in the sandbox, never imported by the
# host. It sticks to the Python subset every runtime supports (Monty: no generators, no class inheritance).

def chunk_indices(total_length, chunk_size, overlap=0):
    """(start, end) pairs covering range(total_length) in chunks of chunk_size, overlapping by overlap."""
    if chunk_size <= 0 or overlap < 0 or overlap >= chunk_size:
        raise ValueError("need chunk_size > 0 and 0 <= overlap < chunk_size")
    stop = max(total_length - overlap, 1) if total_length > 0 else 0  # the last chunk reaches the end
    return [(start, min(start + chunk_size, total_length)) for start in range(0, stop, chunk_size - overlap)]


def chunk_text(text, chunk_size, overlap=0):
    """text cut into chunks of chunk_size characters, overlapping by overlap."""
    return [text[s:e] for s, e in chunk_indices(len(text), chunk_size, overlap)]


try:  # the whole set of a file-set context, kept while `context` shows one document (switch_to)
    _documents = context if context_names else []
except NameError:  # no context
    _documents = []


def list_files():
    """Names of the documents when the context is a set of files."""
    return list(context_names)


def load_file(name):
    """The text of one document of a file-set context, by name."""
    if name not in context_names:
        raise KeyError("no file named " + repr(name) + "; list_files() shows the names")
    return _documents[context_names.index(name)]


def load_files(names=None):
    """The texts of several documents by name, in that order (all of them without names)."""
    return [load_file(name) for name in (list(context_names) if names is None else names)]


def switch_to(name=None):
    """Make `context` the document called name; switch_to() makes it the whole set again. Returns its length."""
    global context
    context = _documents if name is None else load_file(name)
    return len(context)


def _rlm_describe(pairs):
    """(name, type, size, short repr) of each variable: what a trajectory keeps of the REPL after a step."""
    described = []
    for name, value in pairs:
        try:
            size = len(value)
        except Exception:
            size = -1
        try:
            shown = _rlm_short(value, 80, 0)
        except Exception:
            shown = "?"
        described.append((name, type(value).__name__, size, shown))
    return described


def _rlm_short(value, limit, depth):
    """The start of repr(value), without building the whole repr of a huge string or collection (a 100 MB list of
    chunks would be copied into its repr only to be cut to 80 characters)."""
    if isinstance(value, (str, bytes)):
        return repr(value[:limit])[:limit]
    if not isinstance(value, (list, tuple, set, frozenset, dict)):
        return repr(value)[:limit]
    if depth > 3:
        return "..."
    parts = []
    used = 0
    for item in value:
        if len(parts) >= 8 or used > limit:
            break
        text = _rlm_short(item, limit, depth + 1)
        if isinstance(value, dict):
            text = text + ": " + _rlm_short(value[item], limit, depth + 1)
        parts.append(text)
        used = used + len(text) + 2
    more = "," if isinstance(value, tuple) and len(value) == 1 else ", ..." if len(parts) < len(value) else ""
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__ + "({" + ", ".join(parts) + more + "})")[:limit]
    ends = "[]" if isinstance(value, list) else "()" if isinstance(value, tuple) else "{}"
    return (ends[0] + ", ".join(parts) + more + ends[1])[:limit]


def remove_file(name):
    """Drop a document from the set (and from `context` when it shows the set). Returns how many are left."""
    global context, context_names, _documents
    if name not in context_names:
        raise KeyError("no file named " + repr(name) + "; list_files() shows the names")
    index = context_names.index(name)
    showing_all = context is _documents
    _documents = _documents[:index] + _documents[index + 1:]
    context_names = context_names[:index] + context_names[index + 1:]
    if showing_all:
        context = _documents
    return len(_documents)
