"""A run tree as one HTML page: the events become a tree of runs and steps, embedded as JSON data and drawn by
the page's own script (``page.js``) a page of steps at a time, so a 10,000-step run opens as fast as a short one.

Nothing in a run is trusted: every text reaches the page as JSON inside a data block (``<`` written ``\\u003c``,
so no text can close it) and is drawn with ``textContent``, never as markup; a Content-Security-Policy lets only
the page's own script and style run (by their hashes), loads nothing from the network, and would stop an
injected script even if one got through. Nothing is cut: every step, reply and output of the trajectory is in
the file, and long runs are paged.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from typing import Any, Iterable, TextIO

#: Step fields drawn by the page; the rest of a step is shown as its raw JSON.
_STEP_KEYS = ("step", "action", "reply", "code", "observation", "reward", "cumulative_reward", "usage",
              "model_seconds", "duration_s")
#: run_start fields shown in a run's header.
_START_KEYS = ("task", "question", "environment", "framework", "model", "sub_model", "sandbox", "notices", "context",
               "settings", "sampling")


def create(settings: Any = None, services: Any = None):
    """The ``html`` exporter's factory: ``write(events, out)``."""
    return write


def write(events: Iterable[Any], out: TextIO) -> None:
    """Write the page of the run tree ``events`` (``RunEvent`` s, as loaded) to ``out``."""
    tree = run_tree(events)
    script = resources.files(__package__).joinpath("page.js").read_text(encoding="utf-8")
    style = resources.files(__package__).joinpath("page.css").read_text(encoding="utf-8")
    policy = (f"default-src 'none'; script-src '{_digest(script)}'; style-src '{_digest(style)}'; img-src 'none'; "
              "base-uri 'none'; form-action 'none'; connect-src 'none'")
    root = tree["runs"].get(tree["root"], {}) if tree["root"] else {}
    title = "rlm run " + (tree["root"] or "(empty)") + (": " + str(root.get("start", {}).get("task", ""))[:80]
                                                        if root else "")
    out.write("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
              "<meta name=\"referrer\" content=\"no-referrer\">\n"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
              f"<title>{html.escape(_visible(title))}</title>\n<style>{style}</style>\n</head>\n<body>\n"
              "<noscript>This page draws the run with its own script: open it in a browser with JavaScript on (it "
              "loads nothing from the network).</noscript>\n<main id=\"app\"></main>\n"
              "<script id=\"run-data\" type=\"application/json\">")
    out.write(_data_block(tree))
    out.write(f"</script>\n<script>{script}</script>\n</body>\n</html>\n")


def run_tree(events: Iterable[Any]) -> dict[str, Any]:
    """``{"root": id, "runs": {id: run}}``: each run its start, steps and end; each step the sub-calls made and the
    child runs started while it ran, and the errors said during it. Events after a run's last step (a run that
    stopped mid-step) become a last step of their own, ``(unfinished)``, so nothing is dropped."""
    runs: dict[str, dict[str, Any]] = {}
    root = None
    for event in events:
        item = event.model_dump(mode="json") if hasattr(event, "model_dump") else dict(event)
        kind, run_id, data = item.get("type"), str(item.get("run_id") or ""), item.get("data") or {}
        run = runs.get(run_id)
        if kind == "run_start" or run is None:
            run = runs.setdefault(run_id, _new_run(run_id, item))
            root = root or (run_id if not item.get("parent_run_id") else None)
            parent = runs.get(str(item.get("parent_run_id") or ""))
            if parent is not None and run_id not in parent["pending"]["children"]:
                parent["pending"]["children"].append(run_id)
        if kind == "run_start":
            run["start"] = {key: data[key] for key in _START_KEYS if key in data}
        elif kind == "step":
            step = {key: data.get(key) for key in _STEP_KEYS}
            step["extra"] = {key: value for key, value in data.items() if key not in _STEP_KEYS}
            run["steps"].append({**step, **run["pending"]})
            run["pending"] = _pending()
        elif kind == "sub_call":
            run["pending"]["sub_calls"].append(data)
        elif kind in ("error", "model_retry", "compaction", "sink_error", "branch"):
            run["pending"]["events"].append({"type": kind, **data})
        elif kind == "final":
            run["final"] = data
    for run in runs.values():
        pending = run.pop("pending")
        if any(pending.values()):
            run["steps"].append({"step": None, "action": "(unfinished)", **pending})
    if root is None and runs:
        root = next(iter(runs))
    return {"root": root, "runs": runs}


def _new_run(run_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"id": run_id, "parent": item.get("parent_run_id"), "depth": item.get("depth", 0), "start": {},
            "steps": [], "final": None, "pending": _pending()}


def _pending() -> dict[str, list[Any]]:
    return {"sub_calls": [], "children": [], "events": []}


def _data_block(tree: dict[str, Any]) -> str:
    """JSON that cannot leave its ``<script type="application/json">`` block: ``<``, ``>`` and ``&`` escaped."""
    try:
        text = json.dumps(tree, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: JSON has no word for it, so it is written as text
        text = json.dumps(_finite(tree), ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _visible(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)
