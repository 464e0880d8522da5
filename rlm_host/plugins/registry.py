"""One registry per component kind: resolves names and aliases, and refuses ambiguous names."""

from __future__ import annotations

from typing import Generic, Iterator, Protocol, TypeVar

from rlm_host.components import normalize_name
from rlm_host.errors import ComponentClashError, UnknownComponentError
from rlm_host.text import did_you_mean


class Named(Protocol):
    """What a registry holds: a record with a name and its aliases (``Component``, ``CommandSpec``, ``DoctorCheck``)."""

    @property
    def name(self) -> str: ...

    @property
    def names(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """Components of one kind with the distribution that registered each.

    A name (or alias) claimed by two distributions is poisoned: asking for it raises an error naming both,
    so a user never silently gets the wrong implementation.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._records: list[tuple[T, str]] = []
        self._by_key: dict[str, tuple[T, str]] = {}
        self._clashes: dict[str, tuple[str, str]] = {}

    def add(self, record: T, owner: str) -> tuple[str, str] | None:
        """Register ``record`` for distribution ``owner``.

        When a name is taken, nothing is registered and ``(message, other owner)`` is returned instead.
        """
        names = record.names
        for name in names:
            key = normalize_name(name)
            taken = self._by_key.get(key)
            if taken is not None:
                by = f"by both {taken[1]} and {owner}" if taken[1] != owner else f"twice by {owner}"
                message = f"{self.kind} {name!r} is registered {by}"
                self._clashes[key] = (taken[1], owner)
                return message, taken[1]
        for name in names:
            self._by_key[normalize_name(name)] = (record, owner)
        self._records.append((record, owner))
        return None

    def get(self, name: str, *, other_choices: tuple[str, ...] = (), where_more: str = "") -> T:
        """The component called ``name`` (or one of its aliases); a clear error listing the choices if none, with
        the closest one ("did you mean"). ``other_choices`` are valid names the caller handles itself (listed first:
        ``native`` beside the frameworks); ``where_more`` ends the hint (where more come from)."""
        key = normalize_name(name)
        if key in self._clashes:
            first, second = self._clashes[key]
            raise ComponentClashError(f"{self.kind} {name!r} is registered by both {first} and {second}",
                                      hint="uninstall one of them, or choose plugins with RLM_PLUGINS "
                                      f"(e.g. RLM_PLUGINS={first})")
        found = self._by_key.get(key)
        if found is None:
            choices = [*other_choices, *self.names()]
            listed = ("choose one of: " + ", ".join(choices)) if choices else f"no {self.kind} is installed"
            raise UnknownComponentError(f"unknown {self.kind} {name!r}{did_you_mean(name, choices)}",
                                        hint=listed + where_more)
        return found[0]

    def owner(self, name: str) -> str:
        """The distribution that registered ``name``."""
        self.get(name)
        return self._by_key[normalize_name(name)][1]

    def names(self) -> list[str]:
        """Primary names, in registration order (built-ins first)."""
        return [record.name for record, _ in self._records]

    def usable_names(self) -> set[str]:
        """Primary names that resolve (not refused because of a clash)."""
        return {name for name in self.names() if normalize_name(name) not in self._clashes}

    def items(self) -> list[tuple[T, str]]:
        """(record, owning distribution) pairs in registration order."""
        return list(self._records)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize_name(name) in self._by_key

    def __iter__(self) -> Iterator[T]:
        return (record for record, _ in self._records)

    def __len__(self) -> int:
        return len(self._records)
