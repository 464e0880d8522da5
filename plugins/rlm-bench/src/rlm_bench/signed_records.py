"""Records this user's rlm writes and would act on again (a benchmark's manifest, a sweep's record) carry this
user's signature, so a resume can tell them from records that merely sit in a project (a cloned repository may
ship ``.rlm``): HMAC-SHA256 with the per-user key (``rlm_host.sdk.context.user_signature``, as chat sessions and
the trace index sign theirs) over the record's JSON exactly as written, minus the ``signature`` field itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from rlm_host.sdk.context import read_regular, user_signature, verify_user_signature

ModelT = TypeVar("ModelT", bound=BaseModel)

FIELD = "signature"


def _claim(kind: str, content: dict[str, Any]) -> dict[str, Any]:
    """What is signed: the record with its kind, so a manifest's signature never vouches for a sweep record."""
    return {"rlm_bench_record": kind, "content": content}


def signed_json(kind: str, content: dict[str, Any]) -> str:
    """``content`` (JSON data) as indented JSON text with this user's signature (none when no key can be had:
    the record is then screened when read back, as any unsigned one)."""
    body = {key: value for key, value in content.items() if key != FIELD}
    try:
        body[FIELD] = user_signature(_claim(kind, body))
    except OSError:
        pass
    return json.dumps(body, indent=2, ensure_ascii=False)


def read_signed(kind: str, text: str) -> tuple[dict[str, Any], bool]:
    """A record's JSON data without its signature, and whether this user's rlm signed it as it is (ValueError when
    the text is not a JSON object)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    signature = data.pop(FIELD, None)
    return data, verify_user_signature(_claim(kind, data), signature)


#: A record is a few kilobytes of JSON (a sweep's, one line a point): a larger file is not one of ours.
MAX_RECORD_BYTES = 16 * 1024 * 1024


def load_signed(kind: str, path: Path, model: type[ModelT], what: str, error: type[Exception]) -> tuple[ModelT, bool]:
    """The record at ``path`` validated as ``model``, and whether this user signed it. The file is read only if it
    is a regular file of bounded size (a FIFO planted as a record never hangs a resume); anything unreadable or
    invalid is one ``error`` naming the file as ``what`` ("a sweep record")."""
    try:
        data, signed = read_signed(kind, read_regular(path, MAX_RECORD_BYTES, follow_links=True).decode("utf-8"))
        return model.model_validate(data), signed
    except (OSError, ValueError) as exc:  # pydantic's ValidationError and UnicodeDecodeError are ValueErrors
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise error(f"{path}: not {what}: {detail}") from None
