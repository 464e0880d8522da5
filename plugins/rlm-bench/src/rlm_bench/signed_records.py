"""Records this user's rlm writes and would act on again (a benchmark's manifest, a sweep's record) carry this
user's signature, so a resume can tell them from records that merely sit in a project (a cloned repository may
ship ``.rlm``): HMAC-SHA256 with the per-user key (``rlm_host.sdk.context.user_signature``, as chat sessions and
the trace index sign theirs) over the record's JSON exactly as written, minus the ``signature`` field itself."""

from __future__ import annotations

import json
from typing import Any

from rlm_host.sdk.context import user_signature, verify_user_signature

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
