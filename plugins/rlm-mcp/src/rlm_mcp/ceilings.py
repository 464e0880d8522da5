"""What the operator passed to ``rlm mcp serve`` is a ceiling for clients: the sandbox, the models and the limits.

A client may pick a sandbox at least as isolating as the server's (any security boundary; one that is not, such
as ``process``, only when it is the server's own or the operator allowed it with ``--allow-client-sandbox``), a
model from the operator's allow-list only (never a spelling that names a file), and lower a numeric limit but
never raise it. Everything a client may not have is a ``CeilingError`` naming what it may.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

#: The numeric run limits a client may lower (never raise).
LIMITS = ("max_steps", "max_depth", "timeout", "max_cost")


class CeilingError(ValueError):
    """A client's choice above what the operator allowed."""


@dataclass(frozen=True)
class Ceilings:
    """The operator's choices. ``sandbox``: the server's sandbox (``auto`` or a name); ``boundaries``: names of
    the installed sandboxes that are security boundaries; ``weak_allowed``: sandboxes that are not boundaries but
    that a client may still pick (the server's own, ``--allow-client-sandbox``); ``models``: the allow-list (the
    server's model first); ``limits``: the operator's value of each of ``LIMITS`` (None: no limit)."""

    sandbox: str
    boundaries: frozenset[str]
    weak_allowed: frozenset[str] = frozenset()
    models: tuple[str, ...] = ()
    limits: dict[str, Optional[float]] = field(default_factory=dict)

    def sandbox_choices(self) -> list[str]:
        """What a client may ask for, ``auto`` (the server's choice) first."""
        return ["auto", *sorted(self.boundaries | self.weak_allowed)]

    def check_sandbox(self, asked: Optional[str], canonical: Any = None) -> Optional[str]:
        """The sandbox to run ``asked`` in (None: the server's); ``canonical(name)`` maps an alias to the
        runtime's name (None when unknown)."""
        if asked is None or asked.strip().lower() == "auto":
            return None
        name = canonical(asked) if canonical is not None else asked
        if name is not None and (name in self.boundaries or name in self.weak_allowed):
            return name
        why = "is not a security boundary" if name is not None else "is not an installed sandbox"
        raise CeilingError(f"sandbox {asked!r} {why}; this server allows: {', '.join(self.sandbox_choices())} "
                           "(the operator allows more with rlm mcp serve --allow-client-sandbox NAME)")

    def check_model(self, asked: Optional[str]) -> Optional[str]:
        """``asked`` when it is on the allow-list (None: the server's default model)."""
        if asked is None or asked == "":
            return None
        if asked in self.models:
            return asked
        if not self.models:
            raise CeilingError(f"model {asked!r} refused: this server lets clients choose no model (its default "
                               "applies); the operator allows some with rlm mcp serve --model / --allow-model")
        raise CeilingError(f"model {asked!r} is not allowed; this server allows: {', '.join(self.models)} "
                           "(the operator allows more with rlm mcp serve --allow-model NAME)")

    def limit(self, name: str, asked: Optional[float]) -> Optional[float]:
        """The effective value of limit ``name``: min(client, operator); None when the client gave none."""
        if asked is None:
            return None
        smallest = 0 if name == "max_depth" else 1e-9
        if isinstance(asked, bool) or not isinstance(asked, (int, float)) or not smallest <= asked < math.inf:
            raise CeilingError(f"{name} must be a {'non-negative' if smallest == 0 else 'positive'} number, "
                               f"not {asked!r}")
        ceiling = self.limits.get(name)
        return asked if ceiling is None else min(asked, ceiling)

    def run_options(self, *, model: Optional[str] = None, sandbox: Optional[str] = None, canonical: Any = None,
                    **limits: Optional[float]) -> dict[str, Any]:
        """The options a client's call adds to the server's: each choice checked, each limit capped."""
        options: dict[str, Any] = {"model": self.check_model(model), "sandbox": self.check_sandbox(sandbox, canonical)}
        options.update({name: self.limit(name, value) for name, value in limits.items()})
        return {key: value for key, value in options.items() if value is not None}


def allow_list(model: Optional[str], sub_model: Optional[str], allowed: Iterable[str] = ()) -> tuple[str, ...]:
    """The operator's models: ``--model``, ``--sub-model`` and each ``--allow-model``, once each, in that order."""
    names = [model, sub_model, *allowed]
    return tuple(dict.fromkeys(name.strip() for name in names if name and name.strip()))


def operator_ceilings(rlm: Any, given: dict[str, Any], allow_models: Iterable[str],
                      client_sandboxes: Iterable[str]) -> tuple[Ceilings, list[str]]:
    """A server's ceilings from its flags (``given``) and the settings ``rlm`` resolved (a limit no flag sets is
    the configured one), and the sub-models its runs may call: the allow-list plus ``[run] allowed_sub_models``.
    An unknown sandbox name raises the host's error."""
    run = rlm.runner.loaded.settings.run
    registry = rlm.runner.host.sandboxes()
    server_sandbox = given.get("sandbox") or run.sandbox
    named = [server_sandbox] if server_sandbox != "auto" else []
    weak = frozenset(registry.get(name).name for name in [*named, *client_sandboxes])
    boundaries = frozenset(spec.name for spec in registry if spec.security_boundary)
    models = allow_list(given.get("model"), given.get("sub_model"), allow_models)
    limits = {name: given[name] if given.get(name) is not None else getattr(run, name) for name in LIMITS}
    subs = list(dict.fromkeys([*models, *(getattr(run, "allowed_sub_models", None) or [])]))
    return Ceilings(server_sandbox, boundaries, weak, models, limits), subs
