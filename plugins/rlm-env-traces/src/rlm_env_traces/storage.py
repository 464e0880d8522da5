"""The stored index: bound to the trace file's content and signed with this user's key, or not used at all.

A stored index is read back only when (1) it is a regular file, opened without following links and at most
``MAX_INDEX_BYTES``, (2) it carries this user's signature (``rlm_host.user_signature``: HMAC-SHA256 with the
per-user key) of its SHA-256, so an index planted beside a trace file by anyone else is never used, (3) its
fingerprint of the trace file (size, mtime and sampled blocks of content) matches the file now, and (4) every
count and byte range passes ``checks.problems``.
Anything else means a rebuild. Stored as ``MAGIC``, the signature (64 hex digits), then the msgpack of the index.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from rlm_host.sdk.context import read_regular, user_signature, verify_user_signature

MAGIC = b"rlm-trace-index 3\n"
MAC_BYTES = 64  # the signature, hex
HEX_DIGITS = frozenset("0123456789abcdef")
#: A stored index larger than this is not read (2 M traces take about 160 MB).
MAX_INDEX_BYTES = 256 << 20
#: The fingerprint reads the first and last HEAD_BYTES of the file and SAMPLES blocks between.
HEAD_BYTES = 64 << 10
SAMPLES = 30
SAMPLE_BYTES = 4 << 10


def fingerprint(path: Path, found: os.stat_result) -> str:
    """A digest of the file's size, mtime, head, tail and evenly spaced blocks: what ties an index to content."""
    digest = hashlib.blake2b(f"{found.st_size}:{found.st_mtime_ns}".encode(), digest_size=20)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        size = found.st_size
        digest.update(os.pread(fd, HEAD_BYTES, 0))
        for number in range(1, SAMPLES + 1):
            digest.update(os.pread(fd, SAMPLE_BYTES, size * number // (SAMPLES + 1)))
        digest.update(os.pread(fd, HEAD_BYTES, max(0, size - HEAD_BYTES)))
    finally:
        os.close(fd)
    return digest.hexdigest()


def _claim(payload: bytes | memoryview) -> dict[str, str]:
    """What a signature covers: the kind of file and the SHA-256 of the index's bytes."""
    return {"kind": "rlm-trace-index", "version": MAGIC.decode().strip(), "sha256": hashlib.sha256(payload).hexdigest()}


def seal(payload: bytes) -> Optional[bytes]:
    """The stored form of an encoded index, or None when this user has no key to sign it with."""
    try:
        signature = user_signature(_claim(payload))
    except OSError:
        return None  # no key, no trust: the index is built each time and not stored
    return MAGIC + signature.encode() + payload


def unseal(candidate: Path) -> Optional[memoryview]:
    """The payload of a stored index this user signed, else None (missing, a link, not a regular file, too
    large, unsigned, or signed by someone else)."""
    try:
        data = read_regular(candidate, MAX_INDEX_BYTES)  # the kit's: no final link, no FIFO, at most the limit
    except OSError:
        return None
    head = len(MAGIC) + MAC_BYTES
    if not data.startswith(MAGIC):
        return None
    payload = memoryview(data)[head:]
    signature = data[len(MAGIC):head]
    if not all(chr(byte) in HEX_DIGITS for byte in signature):
        return None  # (verify_user_signature raises TypeError on a non-ASCII one)
    return payload if verify_user_signature(_claim(payload), signature.decode()) else None
