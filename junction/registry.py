"""One name -> record catalog, and one ``"module:attribute"`` loader, for every kind of
record Junction looks up by name: suites (``junction.suites``), strategies
(``junction.strategies.catalog``), verifier kinds (``junction.verifiers``), agent graders
(``junction.agent.graders``) and pool rules (``junction.candidates``).

A ``Catalog`` is a ``MutableMapping`` (``catalog[name]``, ``name in catalog``,
``catalog.values()``; setting or deleting an item registers or removes a record, as a
test's ``monkeypatch.setitem`` does) plus ``register`` and ``get_record``, which raises
``UnknownNameError``
naming the kind and listing the valid names, the one wording every catalog shares. A
catalog made with ``entry_points="group"`` loads every entry point of that group (Python
packaging's plugin mechanism, ``importlib.metadata``) on its first lookup, so the records a
package registers when imported (the suite builders, ``junction_datasets``, register their
suites; pyproject.toml names them under ``PLUGINS``) are found by code that never imports
that package, and another installed package can add its own suites, strategies, verifier
kinds, graders and pool rules with one entry of its own.

``load("module:attribute")`` imports ``module`` and returns the attribute; a record names
its functions that way so that a catalog can list what exists without importing every
implementation (and its dependencies) up front.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from junction.errors import UnknownNameError

__all__ = ["PLUGINS", "Catalog", "load"]

R = TypeVar("R")

PLUGINS = "junction.plugins"
"""The entry-point group every catalog loads on its first lookup (module docstring)."""


def load(ref: str | Callable[..., Any]) -> Any:
    """``ref`` itself when it is not a string, else the attribute ``ref`` names as
    ``"module:attribute"`` (the module imported on the way). Raises ``ValueError`` for a
    string without ``:``, and what the import raises (``ImportError``,
    ``AttributeError``)."""
    if not isinstance(ref, str):
        return ref
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{ref!r} is not a \"module:attribute\" reference")
    return getattr(importlib.import_module(module), attr)


class Catalog(MutableMapping[str, R], Generic[R]):
    """Name -> record for one kind of record (module docstring).

    ``kind``: the singular noun errors use ("suite", "agent grader"); ``plural``: the
    listing's noun (default ``kind + "s"``); ``entry_points``: the entry-point group
    loaded on the first lookup, whose modules register records of this kind (None:
    records come only from ``register``)."""

    def __init__(self, kind: str, plural: str | None = None,
                 entry_points: str | None = None) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self._group = entry_points
        self._records: dict[str, R] = {}
        self._lock = threading.Lock()

    def _ready(self) -> dict[str, R]:
        if self._group is not None:
            with self._lock:
                group, self._group = self._group, None
            if group is not None:
                for point in sorted(importlib.metadata.entry_points(group=group),
                                    key=lambda p: p.name):
                    point.load()  # imports the module, which registers its records
        return self._records

    def register(self, name: str, record: R) -> None:
        """Add ``record`` under ``name`` (a later record of a name replaces it)."""
        self._records[name] = record

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._ready())

    def get_record(self, name: str) -> R:
        """The record of ``name``; ``UnknownNameError`` naming the kind and listing the
        valid names otherwise."""
        try:
            return self._ready()[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; valid {self.plural}: "
                                   f"{', '.join(self.names())}") from None

    def __getitem__(self, name: str) -> R:
        return self._ready()[name]

    def __setitem__(self, name: str, record: R) -> None:
        self._ready()[name] = record

    def __delitem__(self, name: str) -> None:
        del self._ready()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())
