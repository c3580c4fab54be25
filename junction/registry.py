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

Plug-ins (``load_plugins``): the entry points of Junction's own distribution load first
(the built-in suites), then every other distribution's, sorted by distribution and entry
point name. A name is registered once: ``register(name, record)`` refuses a name its
catalog already holds, and ``register(name, record, replace=True)`` is how a plug-in says
that it replaces one on purpose; the run then records it (``Plugin.replaces``, in
``run.json``'s ``plugins`` and the report's Run section). A plug-in that fails to import,
names a module or an attribute that does not exist, or takes a registered name without
``replace=True`` raises ``PluginError``, one line naming its entry point and
distribution, on that lookup and on every later one: no catalog is then usable, so a
run never proceeds with some of the records a user installed.

``load("module:attribute")`` imports ``module`` and returns the attribute; a record names
its functions that way so that a catalog can list what exists without importing every
implementation (and its dependencies) up front.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import threading
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from junction.errors import JunctionError, UnknownNameError

__all__ = ["OWN_DISTRIBUTION", "PLUGINS", "Catalog", "Plugin", "PluginError", "load",
           "load_plugins"]

R = TypeVar("R")

PLUGINS = "junction.plugins"
"""The entry-point group every catalog loads on its first lookup (module docstring)."""

OWN_DISTRIBUTION = "junction"
"""The distribution whose entry points are Junction's own (the built-in suites): loaded
before any other, and not listed as plug-ins."""

CATALOG_MODULES = ("junction.suites", "junction.strategies.catalog", "junction.verifiers",
                   "junction.agent.graders", "junction.candidates")
"""The modules that define the catalogs and register the built-in records: imported before
any plug-in loads, so every built-in name is in place (and known as built-in) when a
plug-in registers its own."""


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


class PluginError(JunctionError):
    """A plug-in (an entry point of ``PLUGINS``) cannot be used: its module raised on import,
    it names a module or an attribute that does not exist, or it registers a name its
    catalog already holds without ``replace=True``. The message is one line naming the
    entry point, its distribution and how to remove it."""


@dataclass
class Plugin:
    """One loaded entry point of another distribution than ``OWN_DISTRIBUTION``.

    ``entry_point``: its name; ``value``: what it loads (``"module"`` or
    ``"module:attribute"``); ``distribution`` and ``version``: the installed package it
    belongs to (``"unknown"`` when the entry point has none); ``location``: the folder the
    package is installed in (``sys.path`` entry; "" unknown); ``replaces``: the registered
    names it replaced with ``replace=True``, each ``"<kind> '<name>'"``."""

    entry_point: str
    value: str
    distribution: str
    version: str
    location: str = ""
    replaces: list[str] = field(default_factory=list)

    def label(self) -> str:
        """``plug-in 'NAME' (distribution D V, entry point NAME = VALUE)``: how every
        message names it."""
        return (f"plug-in {self.entry_point!r} (distribution {self.distribution} "
                f"{self.version}, entry point {self.entry_point} = {self.value})")

    def removal(self) -> str:
        """How a user takes the plug-in away: ``pip uninstall D`` and where it lives."""
        where = f" (installed under {self.location})" if self.location else ""
        return f"pip uninstall {self.distribution}{where}"

    def record(self) -> dict[str, Any]:
        """The plug-in as ``run.json`` records it: entry_point, value, distribution,
        version, replaces (a list of ``"<kind> '<name>'"``)."""
        return {"entry_point": self.entry_point, "value": self.value,
                "distribution": self.distribution, "version": self.version,
                "replaces": list(self.replaces)}


@dataclass
class _Group:
    """The load state of one entry-point group: None until loaded, then the plug-ins, or
    the error every later lookup raises again."""

    plugins: list[Plugin] | None = None
    error: PluginError | None = None
    loader: int | None = None  # the thread loading it now (its own lookups see the records)


_LOCK = threading.RLock()
_GROUPS: dict[str, _Group] = {}
_LOADING = threading.local()  # .plugin: the other distribution's plug-in importing now


def _current_plugin() -> Plugin | None:
    """The plug-in whose module this thread is importing now, or None."""
    return getattr(_LOADING, "plugin", None)


def _describe(point: importlib.metadata.EntryPoint) -> Plugin:
    dist = point.dist
    if dist is None:
        return Plugin(point.name, point.value, "unknown", "unknown")
    try:
        location = str(dist.locate_file(""))
    except (NotImplementedError, TypeError):  # a Distribution that is not on a path
        location = ""
    return Plugin(point.name, point.value, dist.name, dist.version, location)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_plugins(group: str = PLUGINS) -> list[Plugin]:
    """Load every entry point of ``group`` once per process (module docstring) and return
    the plug-ins of other distributions, in load order; Junction's own entry points load
    first and are not listed. Raises ``PluginError`` naming the entry point and its
    distribution when one cannot be imported or takes a registered name without
    ``replace=True`` (on this call and every later one). A lookup made by a plug-in's own
    import (same thread, group still loading) gets the plug-ins loaded so far."""
    with _LOCK:
        state = _GROUPS.setdefault(group, _Group())
        if state.error is not None:
            raise state.error
        if state.plugins is not None:
            return list(state.plugins)
        if state.loader == threading.get_ident():  # a plug-in's import looks a name up
            return []
        state.loader = threading.get_ident()
        try:
            state.plugins = _load_group(group)
        except PluginError as exc:
            state.error = exc
            raise
        finally:
            state.loader = None
        return list(state.plugins)


def _load_group(group: str) -> list[Plugin]:
    points = importlib.metadata.entry_points(group=group)
    own = sorted((p for p in points if p.dist is not None and p.dist.name == OWN_DISTRIBUTION),
                 key=lambda p: p.name)
    others = sorted((p for p in points if p not in own),
                    key=lambda p: (p.dist.name if p.dist is not None else "", p.name))
    if others:  # every built-in name in place before another distribution registers
        for module in CATALOG_MODULES:
            importlib.import_module(module)
    for point in own:
        point.load()  # imports the module, which registers its records
    loaded: list[Plugin] = []
    for point in others:
        plugin = _describe(point)
        _LOADING.plugin = plugin
        try:
            point.load()
        except PluginError:
            raise
        except Exception as exc:  # its import, a missing module or attribute: one line
            raise PluginError(
                f"{plugin.label()} failed to load: {_first_line(exc)}; fix the plug-in or "
                f"remove it: {plugin.removal()}") from None
        finally:
            _LOADING.plugin = None
        loaded.append(plugin)
    return loaded


def _definition(value: object) -> object:
    """What identifies ``value`` across two runs of its module: a function or class by its
    source file and qualified name (the module name may differ), anything else itself."""
    if callable(value) and hasattr(value, "__qualname__"):
        try:
            source = inspect.getsourcefile(value)
        except TypeError:
            source = None
        return ("callable", source, value.__qualname__)
    return value


def _same_definition(held: object, record: object) -> bool:
    """Whether ``record`` is ``held`` made again by the same source: the same record type
    and, field by field, equal values or functions of the same file and qualified name.
    That is a module executed twice under two names (the suite builders' folder,
    ``datasets/``, imported as ``datasets`` as well as ``junction_datasets`` when the
    checkout is first on ``sys.path`` and a library asks for Hugging Face's ``datasets``),
    not a second registration."""
    if type(held) is not type(record) or not dataclasses.is_dataclass(record):
        return False
    try:
        return all(_definition(getattr(held, f.name)) == _definition(getattr(record, f.name))
                   for f in dataclasses.fields(record))
    except Exception:  # a field whose values cannot be compared: not the same
        return False


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
        self._owners: dict[str, Plugin] = {}  # names a plug-in registered, by plug-in

    def _ready(self) -> dict[str, R]:
        if self._group is not None:
            load_plugins(self._group)
        return self._records

    def _owner(self, name: str) -> str:
        plugin = self._owners.get(name)
        return "a built-in" if plugin is None else f"which {plugin.label()} registered"

    def _refuse(self, plugin: Plugin, name: str, what: str) -> PluginError:
        return PluginError(
            f"{plugin.label()} {what} {self.kind} {name!r}, {self._owner(name)}; a plug-in "
            "replaces a registered name only when it says so, with register(..., "
            "replace=True), which the run then records; change the plug-in or remove it: "
            f"{plugin.removal()}")

    def register(self, name: str, record: R, *, replace: bool = False) -> None:
        """Add ``record`` under ``name``. A name the catalog already holds (another record)
        is replaced only with ``replace=True``; without it ``PluginError`` (during a
        plug-in's import: naming the plug-in, its distribution and the name) or
        ``ValueError`` (any other caller). A plug-in's replacement is recorded on its
        ``Plugin.replaces``."""
        plugin = _current_plugin()
        held = self._records.get(name)
        if name in self._records and held is not record:
            if not replace and _same_definition(held, record):
                return  # one module run twice under two names (module docstring)
            if not replace:
                if plugin is not None:
                    raise self._refuse(plugin, name, "tried to take")
                raise ValueError(f"{self.kind} {name!r} is already registered "
                                 f"({self._owner(name)}); register(..., replace=True) "
                                 "replaces it")
            if plugin is not None:
                plugin.replaces.append(f"{self.kind} {name!r}")
        self._records[name] = record
        if plugin is not None:
            self._owners[name] = plugin
        else:
            self._owners.pop(name, None)

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
        """Set a record (a test's ``monkeypatch.setitem``); during a plug-in's import it is
        ``register(name, record)``, so a plug-in cannot replace a name this way."""
        if _current_plugin() is not None:
            self.register(name, record)
            return
        self._ready()[name] = record
        self._owners.pop(name, None)

    def __delitem__(self, name: str) -> None:
        """Remove a record; a plug-in's import may not remove one (``PluginError``)."""
        plugin = _current_plugin()
        if plugin is not None and name in self._records:
            raise self._refuse(plugin, name, "tried to remove")
        del self._ready()[name]
        self._owners.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())
