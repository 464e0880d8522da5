"""Patterns (and substrings) a model writes, matched on the host in bounded time: RE2 (google-re2), whose
matching is linear in the text whatever the pattern, so ``(a+)+b`` cannot backtrack for minutes as Python's ``re`` does. RE2 has no
backreferences or look-around: such a pattern is an InputError the model sees, as is one too long or too large.
Callers check their deadline between texts; one search is linear in one text, itself bounded by the line limit.
"""

from __future__ import annotations

from typing import Callable, Optional

from rlm_host import InputError

#: The longest pattern accepted.
MAX_PATTERN_CHARS = 2_000
#: RE2's memory budget per compiled pattern (its program and DFA cache); a larger pattern fails to compile.
RE2_MAX_MEM = 8 << 20

Search = Callable[[str], Optional[tuple[int, int]]]


def compile_pattern(pattern: str, regex: bool) -> Search:
    """A case-insensitive search for ``pattern`` (a regex when ``regex``, else a substring): a function giving
    the (start, end) of the first match in a text, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(f"pattern is {len(pattern):,} characters; at most {MAX_PATTERN_CHARS:,} are accepted")
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
        compiled = _compile(re2, pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "rejected"
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise InputError(f"bad or unsupported regex {pattern!r}: {reason}",
                         hint="RE2 syntax: no backreferences or look-around; or search for a substring") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad regex {pattern!r}: {exc}") from None

    def search(text: str) -> Optional[tuple[int, int]]:
        hit = compiled.search(text)
        return None if hit is None else hit.span()

    return search


def _compile(re2: object, pattern: str, options: object) -> object:
    """The compiled pattern, kept out of re2's module cache when possible (128 patterns at 8 MB each is 1 GB)."""
    uncached = getattr(re2, "_Regexp", None)
    return uncached(pattern, options) if uncached is not None else re2.compile(pattern, options)  # type: ignore
