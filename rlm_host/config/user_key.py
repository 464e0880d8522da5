"""A per-user secret in the user's config folder, to tell files this user's rlm wrote from files that merely sit
in a project (a cloned repository may ship ``.rlm/``): what rlm reads back and would act on is signed with it.

The key is 32 random bytes in ``<user config folder>/rlm/host.key``, created on first use with mode 0600 and
``O_EXCL`` (never through a planted link); signatures are HMAC-SHA256 of the canonical JSON of the value.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any, Mapping, Optional

from rlm_host.config.paths import user_config_dir
from rlm_host.context import open_regular

KEY_FILE = "host.key"
KEY_BYTES = 32


def user_key(env: Optional[Mapping[str, str]] = None) -> bytes:
    """This user's key, made on first use (a key that cannot be read or made raises OSError)."""
    path = user_config_dir(env) / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:  # another process made it first
        return _read(path)
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(KEY_BYTES))
    return _read(path)


def _read(path: Path) -> bytes:
    with open_regular(path, follow_links=False) as handle:  # never through a link, never a FIFO
        key = handle.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES:
        raise OSError(f"{path}: not an rlm key (delete it to make a new one)")
    return key


def sign(value: Any, env: Optional[Mapping[str, str]] = None) -> str:
    """The signature of a JSON-like value."""
    payload = json.dumps(value, sort_keys=True, default=str, separators=(",", ":")).encode()
    return hmac.new(user_key(env), payload, hashlib.sha256).hexdigest()


def verify(value: Any, signature: Any, env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether ``signature`` is this user's for ``value`` (False when it is not, or the key cannot be read)."""
    if not isinstance(signature, str) or not signature.isascii():  # compare_digest refuses non-ASCII text
        return False
    try:
        return hmac.compare_digest(sign(value, env), signature)
    except OSError:
        return False


#: The names plugins import from ``rlm_host.sdk.context`` (``sign`` and ``verify`` alone would say too little there).
user_signature = sign
verify_user_signature = verify
