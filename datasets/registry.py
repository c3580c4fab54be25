"""The suite registry's types: ``SuiteBuild``, ``SuiteInfo`` and the name -> suite table.

Builders (``bfcl``, ``jsonl``, ``toy``) import ``SuiteBuild`` from here, and the package's
``__init__`` registers them, so no module imports the package it belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from junction.errors import UnknownNameError
from junction.tasks import BenchmarkTask

__all__ = [
    "SUITES",
    "SuiteBuild",
    "SuiteInfo",
    "build_suite",
    "get_suite",
    "register_suite",
    "suite_names",
]


@dataclass(frozen=True)
class SuiteBuild:
    """A built suite: its tasks, source rows loaded, and rows skipped per reason."""

    tasks: list[BenchmarkTask]
    rows_loaded: int
    rows_skipped: dict[str, int] = field(default_factory=dict)
    note: str = ""
    rows_held_out: int = 0
    """Loaded rows of the other part of a train / evaluation split (not in ``tasks``)."""


@dataclass(frozen=True)
class SuiteInfo:
    """A registered suite, its one record: its builder, its size in the default benchmark
    (``default_size``: tasks sampled without ``size`` or ``full``; None: every task), the
    candidate-pool limit per lane its strategies use (None: the whole pool; a pair
    ``(contexts, tools)``: one limit per lane), whether the
    default benchmark (no ``--suite``) runs it, and the family whose training part learned
    strategies fit on (None: no training part; the builder then takes no ``split``)."""

    name: str
    build: Callable[..., list[BenchmarkTask]]
    default_size: int | None
    pool_limit: int | None = 8
    description: str = ""
    in_default_run: bool = True
    family: str | None = None
    unavailable: Callable[..., str | None] | None = None
    """One line saying why the suite cannot be built now (its data is absent), or None;
    called with the suite's data folder (``data=``) when ``data_env`` is set."""
    data_env: str | None = None
    """For a suite read from a folder the user names (third-party data, never shipped): the
    environment variable that names it when a run does not (``data_folder``); the builder
    then takes the folder as ``path`` and ``unavailable`` as ``data``. None: no folder."""
    cross_fit: bool = False
    """Learned strategies are cross-fitted on this suite (``junction_datasets.split``):
    every task is evaluated, by a model fitted on the other folds; its default part is
    then ``"all"``, not ``"eval"``. Only for a suite that is its family's only suite."""

    def default_split(self) -> str:
        """The part a benchmark evaluates: ``"all"`` for a cross-fitted suite, else
        ``"eval"`` (a fixed split's evaluation rows; ignored without a family)."""
        return "all" if self.cross_fit else "eval"

    def data_folder(self, data_folders: Mapping[str, str] | None = None) -> str | None:
        """The data folder this suite reads: ``data_folders[name]``, else ``$data_env``
        (an empty value counts as unset), else None; always None without ``data_env``."""
        if self.data_env is None:
            return None
        given = (data_folders or {}).get(self.name)
        return given if given else os.environ.get(self.data_env) or None

    def unavailable_reason(self, data_folders: Mapping[str, str] | None = None) -> str | None:
        """Why the suite cannot run now (one line), or None when it can; a suite with a
        data folder is checked on ``data_folder(data_folders)``."""
        if self.unavailable is None:
            return None
        if self.data_env is None:
            return self.unavailable()
        return self.unavailable(data=self.data_folder(data_folders))


SUITES: dict[str, SuiteInfo] = {}


def register_suite(info: SuiteInfo) -> None:
    """Add a suite to the registry (a later registration of a name replaces it)."""
    SUITES[info.name] = info


def suite_names() -> list[str]:
    """Registered suite names, sorted."""
    return sorted(SUITES)


def get_suite(name: str) -> SuiteInfo:
    """The ``SuiteInfo`` for ``name``; ``UnknownNameError`` listing valid names otherwise."""
    try:
        return SUITES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown suite {name!r}; valid suites: {', '.join(suite_names())}"
        ) from None


def build_suite(name: str, seed: int = 0, size: int | None = None,
                split: str | None = None,
                data_folders: Mapping[str, str] | None = None) -> SuiteBuild:
    """Build suite ``name`` with ``seed``; ``size`` caps the number of tasks (None: full).

    ``split`` (``"eval"``, ``"train"``, ``"all"``; None: ``SuiteInfo.default_split()``)
    applies to suites with a family; a suite without one has a single part: asking it for
    ``"train"`` raises ``ValueError``. ``data_folders`` (suite name -> folder) names the
    folder a suite with ``SuiteInfo.data_env`` reads (``SuiteInfo.data_folder``).
    """
    info = get_suite(name)
    split = info.default_split() if split is None else split
    data = {} if info.data_env is None else {"path": info.data_folder(data_folders)}
    if info.family is not None:
        built = info.build(seed=seed, size=size, split=split, **data)
    elif split == "train":
        raise ValueError(f"suite {name!r} has no training part (only BFCL suites split)")
    else:
        built = info.build(seed=seed, size=size, **data)
    if isinstance(built, SuiteBuild):
        return built
    return SuiteBuild(tasks=list(built), rows_loaded=len(built))
