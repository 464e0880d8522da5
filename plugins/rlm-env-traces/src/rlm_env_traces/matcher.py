"""Patterns (and substrings) a model writes, matched on the host in bounded time: RE2 (google-re2), whose
matching is linear in the text whatever the pattern, so ``(a+)+b`` cannot backtrack for minutes as Python's
``re`` does. RE2 has no backreferences or look-around: such a pattern is an InputError the model sees, as is one
too long or too large. Linear is not fast, though: a pattern whose DFA thrashes runs RE2's NFA at a few
nanoseconds per byte and instruction (80 s over a 16 MB span for ``(?:a|b)*a(?:a|b){999}c``). So a regex search
whose worst case (text bytes × program size) exceeds ``INLINE_WORK`` runs in a bounded child process
(``rlm_host.run_bounded``) killed at the caller's deadline; smaller ones run in-process, and callers check their
deadline between texts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Optional

from rlm_host import InputError

#: The longest pattern accepted.
MAX_PATTERN_CHARS = 2_000
#: RE2's memory budget per compiled pattern (its program and DFA cache); a larger pattern fails to compile.
RE2_MAX_MEM = 4 << 20
#: Compiled patterns kept for reuse (a REPL loop searches thousands of traces for one pattern).
CACHED = 16
#: Text bytes × RE2 program size searched in-process: at RE2's slowest (≈ 5 ns each), about half a second.
INLINE_WORK = 100_000_000
#: Memory a child search may add: RE2's budget, the text's UTF-8 copy, slack.
CHILD_MB = 64

Search = Callable[[str, float], Optional[tuple[int, int]]]


def compile_pattern(pattern: str, regex: bool) -> Search:
    """A case-insensitive search for ``pattern`` (a regex when ``regex``, else a substring): a function of a text
    and the seconds it may take, giving the (start, end) of the first match or None; TraceLimitError when the
    time runs out. The last ``CACHED`` patterns stay compiled."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(f"pattern is {len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,} are accepted")
    compiled = _compiled(pattern, regex)
    program = _program_size(compiled) if regex else 0  # a literal's DFA stays small: always in-process

    def search(text: str, seconds: float) -> Optional[tuple[int, int]]:
        if len(text) * 4 * program > INLINE_WORK:  # (4: UTF-8 bytes per character at most)
            return _in_child(pattern, text, seconds)
        hit = compiled.search(text)
        return None if hit is None else hit.span()

    return search


def _program_size(compiled: Any) -> int:
    size = getattr(getattr(compiled, "_regexp", None), "ProgramSize", None)
    return int(size()) if size is not None else MAX_PATTERN_CHARS  # unknown: assume a large program


def _in_child(pattern: str, text: str, seconds: float) -> Optional[tuple[int, int]]:
    """The search in a bounded child process, killed after ``seconds``."""
    from rlm_host.sdk.context import BoundedError, BoundedLimits, LimitExceeded, run_bounded

    from rlm_env_traces.reader import TraceLimitError

    if seconds <= 0:
        raise TraceLimitError("no time left for the search")
    limits = BoundedLimits(memory_mb=CHILD_MB + 4 * len(text) // (1 << 20), cpu_seconds=seconds + 1,
                           wall_seconds=seconds, output_bytes=4096)
    try:
        found = run_bounded(search_in_child, pattern, text, limits=limits)
    except LimitExceeded as exc:
        raise TraceLimitError(f"the regex search went past its limit ({exc.limit}: {exc})") from None
    except BoundedError as exc:
        raise InputError(f"the regex search failed: {exc}") from None
    return None if found is None else (int(found[0]), int(found[1]))


def search_in_child(pattern: str, text: str) -> Optional[list[int]]:
    """In the child: the first match's span (module-level and JSON in, JSON out, as a fork server needs)."""
    hit = _compiled(pattern, True).search(text)
    return None if hit is None else list(hit.span())


@lru_cache(maxsize=CACHED)
def _compiled(pattern: str, regex: bool) -> Any:
    try:
        import re2
    except ImportError:  # pragma: no cover - a dependency of this plugin
        raise InputError("searching needs google-re2: pip install google-re2") from None
    options = re2.Options()
    options.literal = not regex
    options.case_sensitive = False
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    try:
        uncached = getattr(re2, "_Regexp", None)  # re2's own cache keeps 128 patterns: ours is smaller
        return uncached(pattern, options) if uncached is not None else re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "rejected"
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise InputError(f"bad or unsupported regex {pattern!r}: {reason}",
                         hint="RE2 syntax: no backreferences or look-around; or search for a substring") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad regex {pattern!r}: {exc}") from None
