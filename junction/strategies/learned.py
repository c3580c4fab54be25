"""``learned_exact`` and ``learned_split``: selection on utilities learned from training rows.

Both use the same fitted family model (``junction.learned.utility``): calibrated p(gold)
per candidate and the expected-value unary u = p − lam · tokens / budget tokens.
``learned_exact`` solves the joint objective exactly (``AutoJointSelector``) with the
learned interactions; ``learned_split`` runs the adaptive split baseline
(``AdaptiveSplitBaseline``) on the same unaries and no pairs. Side by side with ``exact``
and ``adaptive_split`` they separate "better utilities" from "joint selection".

Training: the strategy is given a ``TrainingSource`` (the caller builds it from the suite
builders: ``family(suite)`` names the suite's family or None, ``tasks(family)`` builds the
family's training part, which no benchmark run evaluates). The model is fitted on first use
per (training source, family, pool limit, seed) and kept for the process (the source
also says how the fit searches λ × τ: ``TrainingSource.fit_search``), shared by both
strategies (the fit is deterministic, so sharing changes no result, only the time). A suite
without a family (toy, synthetic, user files), or a strategy made without a source, keeps
the task's own utilities and pairs
(so ``learned_exact`` selects as ``exact`` there) and its traces say
``learned_fallback``. Traces name the model by ``learned_model`` (the sha256 of its stored
record), with ``learned_family``, ``learned_lambda``, ``learned_pairs`` (interactions in
the task's problem) and ``learned_p`` (p(gold) per candidate, 6 decimals).

Cross-fitting (``junction.learned.crossfit``): on a family whose suite is cross-fitted
(``TrainingSource.cross_fitted``), the strategy must be bound to one fold
(``for_fold``); its model is then fitted on every task of the family
(``TrainingSource.all_tasks``) outside that fold, and a view of a task outside the fold
raises ``CrossFitError`` (its model may have trained on it). Such traces add
``learned_fold``, ``learned_repetition`` and ``learned_training_tasks``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from junction.candidates import (
    DEFAULT_POOL_RULE,
    PoolLimit,
    PoolRequest,
    candidate_pools,
    check_pool_rule,
)
from junction.errors import JunctionError
from junction.learned.crossfit import CrossFitFold
from junction.learned.grid import OPTIMAL_SEARCH, check_search
from junction.learned.utility import LearnedUtility, fit_learned_utility
from junction.select import AdaptiveSplitBaseline, AutoJointSelector, JointProblem, Selector
from junction.strategies.base import StrategyResult, joint_problem
from junction.tasks import BenchmarkTask, RouterView

__all__ = ["CrossFitError", "FoldFitted", "LearnedStrategy", "TrainingSource",
           "make_learned_strategy"]


class CrossFitError(JunctionError):
    """A cross-fitted family's model asked for without a fold, or for a task outside its
    fold (the model may have trained on it)."""


@dataclass(frozen=True)
class TrainingSource:
    """Where training rows come from: ``family(suite) -> str | None`` and
    ``tasks(family) -> list[BenchmarkTask]`` (the family's training part); for
    cross-fitting, ``cross_fitted(family) -> bool`` and ``all_tasks(family)`` (every task
    of the family, dealt into folds; None: no family is cross-fitted); ``fit_search``: how
    the fits on these rows search λ × τ (``junction.learned.grid.SEARCHES``; default
    ``optimal``, the exact selector). Raises ``UnknownNameError`` for an unknown
    ``fit_search``."""

    family: Callable[[str], str | None]
    tasks: Callable[[str], list[BenchmarkTask]]
    all_tasks: Callable[[str], list[BenchmarkTask]] | None = None
    cross_fitted: Callable[[str], bool] | None = None
    fit_search: str = OPTIMAL_SEARCH

    def __post_init__(self) -> None:
        check_search(self.fit_search)

    def is_cross_fitted(self, family: str) -> bool:
        """Whether ``family``'s learned models are fitted per fold."""
        return self.cross_fitted is not None and self.cross_fitted(family)


_FITTED: dict[tuple[object, ...], object] = {}
_FITTED_LOCK = threading.Lock()

M = TypeVar("M")


class FoldFitted(Generic[M]):
    """What every strategy with a fitted model shares: its ``training`` source, its
    cross-fitting ``fold`` (None: unbound), the process-wide cache of fitted models (one
    fit per key, thread-safe) and the record of the models it used (``artifacts``, shared
    with the strategies ``for_fold`` binds)."""

    training: TrainingSource | None
    fold: CrossFitFold | None
    _used: dict[tuple[object, ...], M]

    def _training_tasks(self, family: str) -> tuple[list[BenchmarkTask], frozenset[str]]:
        """(training tasks, held-out task ids) for ``family`` and this strategy's fold:
        the family's training part, or for a cross-fitted family every task outside the
        fold. Raises ``CrossFitError`` for a cross-fitted family and no fold."""
        assert self.training is not None
        if not self.training.is_cross_fitted(family):
            return self.training.tasks(family), frozenset()
        if self.fold is None or self.training.all_tasks is None:
            raise CrossFitError(f"family {family!r} is cross-fitted: a learned strategy "
                                f"must be bound to a fold ({type(self).__name__}.for_fold)")
        every = _family_tasks(self.training, family)
        out = self.fold.held_out([t.task_id for t in every])
        return [t for t in every if t.task_id not in out], out

    def _fitted(self, key: tuple[object, ...], fit: Callable[[], M]) -> M:
        """The model cached under ``key`` (this class's name is part of it), fitted by
        ``fit`` on first use in the process; recorded as used."""
        key = (type(self).__name__, *key)
        with _FITTED_LOCK:
            if key not in _FITTED:
                _FITTED[key] = fit()
            model = cast(M, _FITTED[key])  # the key holds the class: its own model type
            self._used[key] = model
            return model

    def artifacts(self) -> list[M]:
        """Every model this strategy has used, in first-use order."""
        with _FITTED_LOCK:
            return list(self._used.values())

    def _fold_extra(self, view: RouterView, family: str,
                    training: Mapping[str, Any]) -> dict[str, Any]:
        """The trace fields of a cross-fitted family's fold (empty otherwise), given the
        model's ``training`` record. Raises ``CrossFitError`` when the model trained on
        the viewed task."""
        if self.training is None or not self.training.is_cross_fitted(family):
            return {}
        assert self.fold is not None  # _training_tasks refused an unbound strategy
        if view.task_id in set(training.get("task_ids", ())):
            raise CrossFitError(
                f"task {view.task_id} is not in fold {self.fold.fold} of repetition "
                f"{self.fold.repetition}: the fold's model trained on it")
        return {"learned_fold": self.fold.fold, "learned_repetition": self.fold.repetition,
                "learned_training_tasks": training.get("n_tasks")}


GRID_NAMES = ("lambdas", "taus", "pair_weights")
"""The grids a ``LearnedStrategy`` may set (``fit_learned_utility``'s arguments)."""


class LearnedStrategy(FoldFitted[LearnedUtility]):
    """A ``Strategy`` on learned utilities; its artifacts are the models it used (module
    docstring)."""

    def __init__(self, joint: bool, training: TrainingSource | None = None,
                 seed: int = 0, fold: CrossFitFold | None = None,
                 _used: dict[tuple[object, ...], LearnedUtility] | None = None,
                 pool: str | None = None, link: bool = False,
                 grids: tuple[tuple[str, tuple[float, ...]], ...] = ()) -> None:
        self.joint = joint
        self.link = link
        unknown = sorted({name for name, _ in grids} - set(GRID_NAMES))
        if unknown:
            raise ValueError(f"grids: unknown grid {', '.join(unknown)} "
                             f"(known: {', '.join(GRID_NAMES)})")
        self.grids = grids
        self.training = training
        self.seed = seed
        self.fold = fold
        self.pool = None if pool is None else check_pool_rule(pool)
        self.selector: Selector = AutoJointSelector() if joint else AdaptiveSplitBaseline()
        self._used: dict[tuple[object, ...], LearnedUtility] = {} if _used is None else _used

    def for_fold(self, fold: CrossFitFold | None) -> LearnedStrategy:
        """This strategy bound to one cross-fitting ``fold`` (None: unbound); the bound one
        shares this one's record of the models used (``artifacts``)."""
        return LearnedStrategy(self.joint, self.training, self.seed, fold, self._used,
                               self.pool, self.link, self.grids)

    def _rule(self, run_rule: str) -> str:
        """The pool rule this strategy ranks and fits by: its own, else the run's."""
        return self.pool or run_rule

    def model(self, family: str, pool_limit: PoolLimit,
              run_rule: str = DEFAULT_POOL_RULE) -> LearnedUtility:
        """The family's fitted model (fitted on first call in the process; thread-safe):
        on the family's training part, or for a cross-fitted family on every task outside
        this strategy's fold, on pools of this strategy's own pool rule, else ``run_rule``.
        Raises ``LearnedModelError`` when the family has no training task,
        ``CrossFitError`` for a cross-fitted family and no fold."""
        if self.training is None:
            raise ValueError("a learned strategy made without a training source has no model")
        fold = self.fold if self.training.is_cross_fitted(family) else None
        rule = self._rule(run_rule)
        key = (self.training, family, pool_limit, self.seed, fold, rule, self.link,
               self.grids)
        training = self.training

        def fit() -> LearnedUtility:
            tasks, _ = self._training_tasks(family)
            grid = dict(self.grids)
            return fit_learned_utility(
                family, tasks, pool_limit, self.seed, link=self.link,
                lambdas=grid.get("lambdas"), taus=grid.get("taus"),
                pair_weights=grid.get("pair_weights", (1.0,)), rule=rule,
                search=training.fit_search)

        return self._fitted(key, fit)

    def select(self, view: RouterView, pool: PoolRequest | PoolLimit) -> StrategyResult:
        """The selection on the family's learned utilities (module docstring)."""
        pool = PoolRequest.of(pool)
        pools = candidate_pools(view, pool, self._rule(pool.rule))
        family = self.training.family(view.suite) if self.training is not None else None
        if family is None:
            problem = joint_problem(view, pools)
            if not self.joint:
                problem = JointProblem(problem.contexts, problem.tools, problem.budget,
                                       problem.unary, {})
            reason = ("no training source" if self.training is None
                      else f"suite {view.suite!r} has no training part: the task's utilities")
            return StrategyResult(self.selector.select(problem), pools,
                                  {"learned_fallback": reason})
        model = self.model(family, pool.limit, pool.rule)
        extra = self._fold_extra(view, family, model.training)
        problem, p = model.problem(view, pools, pairs=self.joint)
        extra.update({
            "learned_model": model.sha256, "learned_family": family,
            "learned_lambda": model.lam, "learned_pairs": len(problem.interactions),
            **({"learned_pair_weight": model.pair_weight} if model.grids else {}),
            "learned_p": {rid: round(v, 6) for rid, v in sorted(p.items())},
        })
        if self.pool is not None:
            extra["strategy_pool_rule"] = self.pool
        return StrategyResult(self.selector.select(problem), pools, extra)


_ALL_TASKS: dict[tuple[object, str], list[BenchmarkTask]] = {}


def _family_tasks(training: TrainingSource, family: str) -> list[BenchmarkTask]:
    """``training.all_tasks(family)``, built once per process (callers hold the lock)."""
    key = (training, family)
    if key not in _ALL_TASKS:
        assert training.all_tasks is not None
        _ALL_TASKS[key] = training.all_tasks(family)
    return _ALL_TASKS[key]


def make_learned_strategy(joint: bool, training: TrainingSource | None = None,
                          pool: str | None = None, link: bool = False,
                          grids: tuple[tuple[str, tuple[float, ...]], ...] = (),
                          ) -> LearnedStrategy:
    """``learned_exact`` (``joint=True``) or ``learned_split`` (``joint=False``); with
    ``pool`` (a pool rule, ``junction.candidates.POOL_RULES``) the strategy ranks its
    candidates and fits its model by that rule whatever the run's; with ``link`` its lane
    models also read ``junction.learned.features.LINK_FEATURES``; ``grids``: (name, values)
    of ``fit_learned_utility``'s ``lambdas``, ``taus``, ``pair_weights`` (the fit's
    defaults where absent). Raises ``UnknownNameError`` for an unknown pool rule,
    ``ValueError`` for a grid name outside ``GRID_NAMES``."""
    return LearnedStrategy(joint, training, pool=pool, link=link, grids=grids)
