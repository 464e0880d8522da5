"""What a browser session (``rlm tui --web``) may choose: the launching user's settings are its ceilings, as the
operator's are an MCP client's (``rlm mcp serve``).

A run option from the browser (``/rlm run … key=value``, ``/connect``, ``/sandbox``, a benchmark's model and
sandbox) is compared with the user's own settings after the host validated it. It may lower a limit, never raise
one; it may name only the models the user's settings name (``model``, ``sub_model``, ``allowed_sub_models``);
anything else it changes is screened as the host screens an untrusted project file (``risk_of``: no sandbox that
is not a security boundary, no ``base_url``, no path outside the working folder, no ``approve=auto``…). A value
the user chose is always allowed. A ``context=`` file must be inside the working folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from rlm_host import InputError
from rlm_host.sdk.embedding import risk_of

#: Numeric limits a browser session may lower but not raise (None, for the user: no limit).
LIMITS = ("max_steps", "max_depth", "timeout", "max_cost", "max_tokens", "max_llm_calls", "exec_timeout")
HINT = ("a browser session has your settings as ceilings; name the model in [run] model, sub_model or "
        "allowed_sub_models, or run it from a terminal (rlm run, or rlm tui without --web)")


class BrowserRefused(InputError):
    """A browser session asked for more than the launching user allowed; the message names each option."""


def allowed_models(run: Any) -> list[str]:
    """The models the user's settings name: the model, the sub-model and each allowed sub-model."""
    return list(dict.fromkeys(name for name in [run.model, run.sub_model, *run.allowed_sub_models] if name))


@dataclass(frozen=True)
class BrowserCeilings:
    """The working folder the app was served from (paths must stay inside it)."""

    project: Path

    def check(self, own: Any, asked: Any, host: Any = None) -> None:
        """Raise ``BrowserRefused`` naming every option of ``asked`` (RunSettings) that ``own`` (the user's
        RunSettings) does not allow; ``host`` (the PluginHost) says which sandboxes are security boundaries."""
        refused = []
        for name in type(asked).model_fields:
            mine, theirs = getattr(own, name), getattr(asked, name)
            why = self.why_not(name, mine, theirs, allowed_models(own), host) if theirs != mine else ""
            if why:
                refused.append(f"{slash_name(name)}={shown(theirs)} ({why})")
        if refused:
            raise BrowserRefused("a browser session may not set " + "; ".join(refused), hint=HINT)

    def why_not(self, name: str, mine: Any, theirs: Any, models: list[str], host: Any) -> str:
        """Why the browser may not change option ``name`` from ``mine`` to ``theirs`` ("" when it may)."""
        if name in LIMITS:
            lower = mine is None or (theirs is not None and theirs <= mine)
            return "" if lower else f"above your limit of {mine}"
        if name in ("model", "sub_model"):
            return "" if theirs is None or theirs in models else "not a model your settings name"
        if name == "allowed_sub_models":
            extra = [model for model in theirs if model not in models]
            return f"{', '.join(extra)}: not models your settings name" if extra else ""
        return risk_of(f"run.{name}", theirs, self.project.resolve(), host)

    def check_context(self, value: Optional[str]) -> None:
        """Refuse a ``context=`` that names a file or folder outside the working folder (text is text)."""
        if value is None:
            return
        path = Path(value).expanduser()
        if not path.exists():
            return
        project = self.project.resolve()
        resolved = path.resolve()
        if resolved != project and not resolved.is_relative_to(project):
            raise BrowserRefused(f"a browser session may not read context={value} (outside {project})", hint=HINT)


def slash_name(field: str) -> str:
    """A RunSettings field as the command line names it (``max_steps`` → ``steps``)."""
    from rlm_tui.slash import ALIASES

    return {value: key for key, value in ALIASES.items()}.get(field, field)


def shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)
