"""One redaction for everything rlm prints, logs, records, exports or sends to a sink.

It masks the password of a URL (``https://user:***@host``) and secret-looking query parameters, and scrubs every
secret value this process knows of: API keys and tokens found in the environment (variables whose name says
key, token, secret, password…), keys given as flags or settings (``register`` them), and the passwords of
configured URLs. A server that echoes a key in an error body, a base URL with a password, a sink endpoint with
a token: none of them reaches a terminal, a log, a trajectory or a sink in clear. Text cut for an event, a span or
a log goes through ``redacted_clip``: redacted first, since a secret the cut falls inside is no longer recognised.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any, Mapping, Optional, overload

from rlm_host.text import Style, clip

MASK = "***"
#: Shorter values are not scrubbed from text (too likely to be ordinary words or numbers).
MIN_SECRET_CHARS = 8
#: Words in an environment variable's name that say its value is a secret.
SECRET_NAME_WORDS = frozenset({"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "CREDENTIALS", "AUTH",
                               "APIKEY", "COOKIE", "SESSION"})
#: Names that contain such a word but hold no secret.
NOT_SECRET_NAMES = frozenset({"RLM_TRUST_CONFIG", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KEYTIMEOUT"})

_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:\"'<>]*:)(?P<password>[^\s/@\"'<>]+)@")
_QUERY_SECRET = re.compile(r"(?P<head>[?&](?:api[_-]?key|key|token|access[_-]?token|secret|password|sig|"
                           r"signature|auth)=)(?P<value>[^&#\s\"'<>]+)", re.IGNORECASE)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: Optional[re.Pattern[str]] = None
_environ_read = False


def register(*values: Optional[str]) -> None:
    """Scrub these values (keys from flags, settings, backend kwargs) from everything redacted from now on."""
    global _pattern
    added = {v.strip() for v in values if isinstance(v, str) and len(v.strip()) >= MIN_SECRET_CHARS}
    with _lock:
        if added - _secrets:
            _secrets.update(added)
            _pattern = None


def register_url(url: Optional[str]) -> None:
    """Scrub a configured URL's password (it may reappear alone, e.g. echoed by the server)."""
    if isinstance(url, str):
        match = _URL_PASSWORD.search(url)
        if match:
            register(match.group("password"))


def secrets_in_environ(environ: Mapping[str, str]) -> list[str]:
    """The values of variables whose names say they are secrets."""
    # a short word ("disabled") is not a key: scrubbing it would garble text
    return [value for name, value in environ.items() if name.upper() not in NOT_SECRET_NAMES
            and set(re.split(r"[_\W]+", name.upper())) & SECRET_NAME_WORDS and not value.startswith(("/", "~"))
            and not (value.isalpha() and len(value) < 16)]


def redact(text: Any) -> Any:
    """``text`` with URL passwords masked and every known secret replaced by ``***``; non-strings as they are."""
    if not isinstance(text, str) or not text:
        return text
    pattern = _compiled()
    if pattern is not None and pattern.search(text):
        text = pattern.sub(MASK, text)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK + "@", text)
    if "=" in text and ("?" in text or "&" in text):
        text = _QUERY_SECRET.sub(lambda m: m.group("head") + MASK, text)
    return text


@overload
def redacted_clip(text: str, limit: int, style: Style = ..., *, one_line: bool = ...) -> str: ...
@overload
def redacted_clip(text: Optional[str], limit: int, style: Style = ..., *, one_line: bool = ...) -> Optional[str]: ...
def redacted_clip(text: Optional[str], limit: int, style: Style = "count", *,
                  one_line: bool = False) -> Optional[str]:
    """``text`` redacted, then clipped to ``limit`` in ``style`` (``rlm_host.text.clip``); None stays None. Never
    the other way round: a secret the cut falls inside would keep its prefix in clear."""
    return None if text is None else clip(redact(text), limit, style, one_line=one_line)


def redacted_head(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text`` with every secret that starts in them masked, without redacting
    the whole of a huge text: the window redacted reaches past the cut by more than the longest secret, so a secret
    straddling the cut is masked whole before the cut is made."""
    with _lock:
        longest = max((len(secret) for secret in _secrets), default=0)
    return redact(text[: chars + max(longest, 512)])[:chars]


def redact_data(value: Any) -> Any:
    """``redact`` applied to every string of a JSON-like value (dicts, lists, tuples), keys included.

    A value whose JSON text shows nothing to redact (no known secret, no URL with a password, no query string) is
    returned as it is, without walking it: one C-speed dump and search instead of a Python call per string (every
    run event passes here)."""
    if isinstance(value, str):
        return redact(value)
    if type(value) is dict and len(value) <= _FLAT_ITEMS:
        flat = _redact_flat(value)
        if flat is not None:
            return flat
    if isinstance(value, (dict, list, tuple)) and not _may_hold_secret(value):
        return value
    return _walk(value)


_FLAT_ITEMS = 16
_SCALARS = (int, float, bool, type(None))


def _redact_flat(value: dict) -> Optional[dict]:
    """A dict of strings and numbers (a live event's data) redacted string by string, cheaper than a JSON dump;
    None when it holds anything else."""
    out: Optional[dict] = None
    for key, item in value.items():
        if type(item) is str:
            clean = redact(item)
        elif isinstance(item, _SCALARS):
            clean = item
        else:
            return None
        clean_key = redact(key) if type(key) is str else key
        if clean is not item or clean_key is not key:
            if out is None:
                out = dict(value)
            out.pop(key, None)
            out[clean_key] = clean
    return value if out is None else out


def _may_hold_secret(value: Any) -> bool:
    """Whether ``value``'s JSON text could hold something ``redact`` changes (True when it cannot be told)."""
    if not _dump_is_faithful():
        return True
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return True
    pattern = _compiled()
    return bool((pattern is not None and pattern.search(text)) or ("://" in text and "@" in text)
                or ("=" in text and ("?" in text or "&" in text)))


def _dump_is_faithful() -> bool:
    """A secret JSON would escape (a quote, a backslash, a control character) cannot be searched in a dump."""
    _compiled()
    return all(s.isprintable() and '"' not in s and "\\" not in s for s in _secrets)


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): _walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_walk(v) for v in value)
    return value


def _compiled() -> Optional[re.Pattern[str]]:
    global _pattern, _environ_read
    if not _environ_read:
        _environ_read = True
        register(*secrets_in_environ(os.environ))
    pattern = _pattern
    if pattern is None and _secrets:
        with _lock:
            ordered = sorted(_secrets, key=len, reverse=True)  # a longer secret before its own prefix
            pattern = _pattern = re.compile("|".join(re.escape(s) for s in ordered))
    return pattern
