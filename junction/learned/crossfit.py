"""Cross-fitting folds: which tasks of a suite each repetition holds out together.

A suite registered with ``cross_fit=True`` (``junction_datasets.SuiteInfo``; τ-Knowledge,
97 tasks) is not
split once into training and evaluation rows. Every task is evaluated, in each repetition,
by a learned model fitted on the other ``folds - 1`` folds (K-fold cross-fitting repeated
R times with different fold draws; Nadeau and Bengio 2003, Bouckaert and Frank 2004).
BFCL families keep their fixed split (``junction_datasets.split.split_of``): they have
thousands of rows, so one split already leaves enough of them on both sides, and a refit
per fold would multiply the learned fit of four suites.

The draw (``fold_assignment``): tasks ordered by the sha256 of
``"junction-folds:<repetition>:<task id>"``, then dealt to folds 0, 1, ..., K−1 in turn,
so each repetition puts every task in exactly one fold, fold sizes differ by at most one,
and the same (ids, K, repetition) always gives the same folds (no clock, no global random
state). A repetition of a run is its seed (``RunPlan.seeds``): seed r draws the folds of
repetition r.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DEFAULT_FOLDS", "MIN_FOLDS", "CrossFitFold", "fold_assignment", "held_out"]

DEFAULT_FOLDS = 5
"""K: the common 5-fold choice: each fit sees 80% of the tasks,
and the corrected t-test's test/train ratio is 1/4."""

MIN_FOLDS = 2
"""Fewest folds that leave a task to train on for every fold."""


def _key(repetition: int, task_id: str) -> str:
    return hashlib.sha256(f"junction-folds:{repetition}:{task_id}".encode()).hexdigest()


def fold_assignment(task_ids: Iterable[str], folds: int, repetition: int) -> dict[str, int]:
    """task id -> fold in [0, ``folds``) for ``repetition`` (module docstring), in the
    given id order.

    Raises ``ValueError`` for fewer than ``MIN_FOLDS`` folds, more folds than tasks, or a
    repeated task id.
    """
    ids = list(task_ids)
    if len(set(ids)) != len(ids):
        raise ValueError("fold_assignment: task ids must be unique")
    if folds < MIN_FOLDS:
        raise ValueError(f"folds must be >= {MIN_FOLDS}, got {folds}")
    if folds > len(ids):
        raise ValueError(f"folds ({folds}) must not exceed the tasks ({len(ids)})")
    order = sorted(ids, key=lambda t: (_key(repetition, t), t))
    dealt = {t: i % folds for i, t in enumerate(order)}
    return {t: dealt[t] for t in ids}


def held_out(task_ids: Iterable[str], folds: int, repetition: int, fold: int) -> frozenset[str]:
    """The task ids of ``fold`` in ``repetition``: the tasks its model must not train on."""
    assignment = fold_assignment(task_ids, folds, repetition)
    if not 0 <= fold < folds:
        raise ValueError(f"fold must be in [0, {folds}), got {fold}")
    return frozenset(t for t, f in assignment.items() if f == fold)


@dataclass(frozen=True)
class CrossFitFold:
    """One cell of a cross-fitted run: ``fold`` of ``folds`` in ``repetition`` (the run's
    seed). A unit of a learned strategy on a cross-fitted suite evaluates the tasks of this
    fold with a model fitted on the family's other folds."""

    repetition: int
    fold: int
    folds: int

    def __post_init__(self) -> None:
        if self.folds < MIN_FOLDS:
            raise ValueError(f"folds must be >= {MIN_FOLDS}, got {self.folds}")
        if not 0 <= self.fold < self.folds:
            raise ValueError(f"fold must be in [0, {self.folds}), got {self.fold}")
        if self.repetition < 0:
            raise ValueError(f"repetition must be >= 0, got {self.repetition}")

    def held_out(self, task_ids: Iterable[str]) -> frozenset[str]:
        """The ids of ``task_ids`` in this fold (``held_out``)."""
        return held_out(task_ids, self.folds, self.repetition, self.fold)
