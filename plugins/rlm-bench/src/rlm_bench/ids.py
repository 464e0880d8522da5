"""Ids of the bench and sweep stores are names, never paths: a resume id, and every id a stored record holds (a
cloned project may ship a ``.rlm`` whose manifest says ``benchmark_id = "../../x"``), is used only in the form new
ids take, as the host treats chat session ids (``rlm_host.api.session.SESSION_ID``)."""

from __future__ import annotations

import re
from typing import Any

from rlm_host import InputError

#: ``bench_YYYYMMDD_HHMMSS_ffffff_xxxx`` (``rlm_bench.store.new_benchmark_id``) and ``sweep_`` with the same tail.
STORE_ID = re.compile(r"(bench|sweep)_[0-9]{8}_[0-9]{6}_[0-9]{6}_[0-9a-f]{4}")
KINDS = {"bench": "benchmark", "sweep": "sweep"}


def is_store_id(value: Any, prefix: str) -> bool:
    """Whether ``value`` is an id of the kind ``prefix`` (``bench`` or ``sweep``) in the form new ids take."""
    return isinstance(value, str) and bool(STORE_ID.fullmatch(value)) and value.startswith(prefix + "_")


def checked_id(value: Any, prefix: str) -> str:
    """``value`` when it is such an id; else an InputError (exit 2) that names it without using it."""
    if is_store_id(value, prefix):
        return value
    kind = KINDS[prefix]
    raise InputError(f"not a {kind} id: {repr(value)[:80]}",
                     hint=f"{kind} ids look like {prefix}_20260101_120000_000000_ab12 (a name, never a path)")
