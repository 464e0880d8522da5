"""A sweep record keeps no secret in clear: it is masked as everything rlm writes is (``rlm_host.redact``: a URL's
password as ``user:***@host``, every known key as ``***``), on disk and in ``--json``. A resume of a sweep whose
record masks something takes the clear values again from the sweep file it names, if that file still says what the
record says where nothing is masked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlm_bench.sweep.file import expand, load_sweep
from rlm_host import InputError
from rlm_host.sdk.embedding import MASK, redact_data

if TYPE_CHECKING:
    from rlm_bench.sweep.record import SweepRecord


def masked(data: Any) -> Any:
    """JSON data as a sweep record is written and printed: passwords and known keys masked."""
    return redact_data(data)


def holds_mask(data: Any) -> bool:
    return MASK in json.dumps(data, ensure_ascii=False, default=str)


def same_but_masked(masked_data: Any, clear: Any) -> bool:
    """Whether ``clear`` is what ``masked_data`` was before masking: equal, every ``***`` standing for some text."""
    if isinstance(masked_data, dict) and isinstance(clear, dict):
        return masked_data.keys() == clear.keys() and all(same_but_masked(v, clear[k]) for k, v in masked_data.items())
    if isinstance(masked_data, list) and isinstance(clear, list):
        return len(masked_data) == len(clear) and all(map(same_but_masked, masked_data, clear))
    if isinstance(masked_data, str) and isinstance(clear, str) and MASK in masked_data:
        pattern = ".+?".join(re.escape(part) for part in masked_data.split(MASK))
        return re.fullmatch(pattern, clear, re.S) is not None
    return bool(masked_data == clear)


def with_secrets(record: "SweepRecord") -> "SweepRecord":
    """``record`` with what its masks hide read again from its sweep file (unchanged when nothing is masked)."""
    if not holds_mask(record.spec) and not any(holds_mask(point.point.get("run")) for point in record.points):
        return record
    why = ""
    try:
        spec = load_sweep(Path(record.file))
    except InputError as exc:
        why = f"cannot be read ({exc.message})"
    else:
        clear = spec.model_dump(mode="json")
        runs = {point.key: point.run for point in expand(spec)}
        if not same_but_masked(record.spec, clear) or not all(
                same_but_masked(point.point.get("run"), runs.get(point.key)) for point in record.points):
            why = "says something else now"
    if why:
        raise InputError(f"sweep {record.sweep_id} masks a password or key in its record (none is stored in clear), "
                         f"and its sweep file {record.file}, where a resume reads it again, {why}",
                         hint="put the sweep file back as it was, or start a new sweep from it")
    restored = record.model_copy(deep=True, update={"spec": clear})
    for point in restored.points:
        point.point["run"] = runs[point.key]
    return restored
