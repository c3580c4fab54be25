"""The suite registry's types: ``SuiteBuild`` and ``build_suite``; the record
(``SuiteInfo``) and the name -> suite catalog (``SUITES``) live in ``junction.suites`` and
are re-exported here.

Builders (``bfcl``, ``jsonl``, ``toy``) import ``SuiteBuild`` from here, and the package's
``__init__`` registers them, so no module imports the package it belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from junction.suites import SUITES, SuiteInfo, get_suite, register_suite, suite_names
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
    reference_set: str | None = None
    """The reference strategies a suite file declares for its tasks (its lines'
    ``reference_set``, ``datasets/jsonl.py``); None: none, or a registered suite's build
    (its record's ``SuiteInfo.reference_set`` says)."""


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
        raise ValueError(f"suite {name!r} has no training part (only a suite with a family, "
                         "SuiteInfo.family, has one)")
    else:
        built = info.build(seed=seed, size=size, **data)
    if isinstance(built, SuiteBuild):
        return built
    if isinstance(built, (list, tuple)):
        return SuiteBuild(tasks=list(built), rows_loaded=len(built))
    raise TypeError(f"suite {name!r}: its builder returned a {type(built).__name__}, "
                    "not a SuiteBuild or a list of tasks")
