"""``rlm models list``: every model provider with its key status, base URL and readiness, and which models
``rlm run`` would use here.

Key variables are reported by name with ``set`` / ``not set``; their values are never read into the output.
A credential written into a base URL (``https://user:secret@host``) is masked.
"""

from __future__ import annotations

import os
from typing import Any

from rlm_host.cli.app import AS_JSON, command_settings, echo, echo_json, group
from rlm_host.errors import RlmError
from rlm_host.redact import redact

app = group("Model providers: what is installed, which keys are set, what --model auto picks.")


@app.command("list")
def list_models(as_json: bool = AS_JSON) -> None:
    """Every provider (built-in and plugins): description, default model, key, base URL, readiness."""
    from rlm_host.models import loopback
    from rlm_host.models.resolve import auto_model
    from rlm_host.plugins import get_host

    host = get_host()
    loaded: Any = command_settings()  # (mypy reads Settings without its run section)
    rows = [provider_row(spec, owner, loaded.component("provider", spec.name))
            for spec, owner in host.providers().items()]
    # a provider otherwise ready whose base URL is on this machine is ready only if something listens there (a TCP
    # connect, all at once, 0.3 s at most); else "not running", with how to start it
    local = {row["name"]: url for row in rows
             if row["status"] == "ready" and (url := row["base_url"]) and loopback.is_loopback(url)}
    answers = loopback.probe(list(local.values()), 0.3)
    for row in rows:
        row["base_url"] = redact(row["base_url"])  # probed as configured, shown with any credential in it masked
        row["listening"] = answers[local[row["name"]]] if row["name"] in local else None
        if row["listening"] is False:
            row["status"], row["ready"] = "not running", False
            row["detail"] = f"nothing listens at {row['base_url']}"
            row["hint"] = loopback.start_hint(row["base_url"] or "", row["name"])
    run: dict[str, Any] = {"model": loaded.settings.run.model, "sub_model": loaded.settings.run.sub_model,
                           "auto": None, "auto_notice": "", "auto_error": ""}
    try:  # what --model auto resolves to in this environment
        run["auto"], run["auto_notice"] = auto_model(host)
    except RlmError as exc:
        run["auto_error"] = exc.message + (f" ({exc.hint})" if exc.hint else "")
    if as_json:
        return echo_json({"providers": rows, "run": run})
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        echo(f"{row['name']:<{width}} {row['status']:<11} {row['description']}")
        example = f"e.g. {row['name']}:{row['example_model']}" if row["example_model"] else "no default model"
        keys = ", ".join(f"{k['variable']} ({'set' if k['set'] else 'not set'})" for k in row["keys"])
        details = [f"default model: {row['default_model']}" if row["default_model"] else example,
                   *([f"key: {keys}"] if keys else []), *([f"base URL: {row['base_url']}"] if row["base_url"] else [])]
        echo(f"{'':<{width}} {' · '.join(details)}  ({row['plugin']})" + (f"\n{'':<{width}} hint: {row['hint']}"
                                                                           if row["hint"] else ""))
    auto = (f"{run['auto']}" + (f"  ({run['auto_notice']})" if run["auto_notice"] else "") if run["auto"]
            else f"none: {run['auto_error']}")
    echo(f"\nrun.model      {run['model']}\nrun.sub_model  {run['sub_model'] or '(the root model)'}\n"
         f"auto           {auto}")


def provider_row(spec: Any, owner: str, settings: Any) -> dict[str, Any]:
    """One provider as ``rlm models list`` shows it (no key value is ever included). Its key may be in its configured
    ``api_key_env`` first, then in its ``key_env``; a local server needs none, and neither does a provider pointed at
    another server than its default. Its ``base_url``: where it sends requests, when that is a URL (configured, its
    variable, else its default), not yet redacted."""
    variables = list(spec.key_env)
    configured = getattr(settings, "api_key_env", None)
    if isinstance(configured, str) and configured and configured not in variables:
        variables.insert(0, configured)
    keys = [{"variable": name, "set": bool(os.environ.get(name))} for name in variables]
    url = getattr(settings, "base_url", None)
    from_env = os.environ.get(spec.base_url_env) if spec.base_url_env else None
    key_optional = spec.key_optional or bool(spec.base_url_env and (url or from_env))
    readiness = spec.readiness(settings)
    status = ("not ready" if not readiness.ok else "no key" if keys and not any(k["set"] for k in keys)
              and not key_optional else "ready")
    hint = f"export {variables[0]}=… to use it" if status == "no key" else readiness.hint if not readiness.ok else ""
    return {"name": spec.name, "aliases": list(spec.aliases), "description": spec.description, "plugin": owner,
            "default_model": spec.default_model, "example_model": spec.example_model, "keys": keys,
            "base_url": (url if isinstance(url, str) else None) or from_env or spec.base_url or None,
            "ready": readiness.ok, "status": status, "detail": readiness.detail, "hint": hint}
