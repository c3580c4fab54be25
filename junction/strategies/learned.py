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
per (training source, family, pool limit, seed) and kept for the process, shared by both
strategies (the fit is deterministic, so sharing changes no result, only the time). A suite without a family (toy, synthetic,
user files), or a strategy made without a source, keeps the task's own utilities and pairs
(so ``learned_exact`` selects as ``exact`` there) and its traces say
``learned_fallback``. Traces name the model by ``learned_model`` (the sha256 of its stored
record), with ``learned_family``, ``learned_lambda``, ``learned_pairs`` (interactions in
the task's problem) and ``learned_p`` (p(gold) per candidate, 6 decimals).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from junction.learned.utility import LearnedUtility, fit_learned_utility
from junction.select import AdaptiveSplitBaseline, AutoJointSelector, JointProblem, Selector
from junction.candidates import candidate_pools
from junction.strategies.base import StrategyResult, joint_problem
from junction.tasks import BenchmarkTask, RouterView

__all__ = ["LearnedStrategy", "TrainingSource", "make_learned_strategy"]


@dataclass(frozen=True)
class TrainingSource:
    """Where training rows come from: ``family(suite) -> str | None`` and
    ``tasks(family) -> list[BenchmarkTask]`` (the family's training part)."""

    family: Callable[[str], "str | None"]
    tasks: Callable[[str], "list[BenchmarkTask]"]


_FITTED: dict[tuple[Any, ...], LearnedUtility] = {}
_FITTED_LOCK = threading.Lock()


class LearnedStrategy:
    """A ``Strategy`` on learned utilities; its artifacts are the models it used (module docstring)."""

    def __init__(self, joint: bool, training: TrainingSource | None = None,
                 seed: int = 0) -> None:
        self.joint = joint
        self.training = training
        self.seed = seed
        self.selector: Selector = AutoJointSelector() if joint else AdaptiveSplitBaseline()
        self._used: dict[tuple[Any, ...], LearnedUtility] = {}

    def model(self, family: str, pool_limit: int | None) -> LearnedUtility:
        """The family's fitted model (fitted on first call in the process; thread-safe).
        Raises ``LearnedModelError`` when the family has no training task."""
        if self.training is None:
            raise ValueError("a learned strategy made without a training source has no model")
        key = (self.training, family, pool_limit, self.seed)
        with _FITTED_LOCK:
            if key not in _FITTED:
                _FITTED[key] = fit_learned_utility(
                    family, self.training.tasks(family), pool_limit, self.seed)
            self._used[key] = _FITTED[key]
            return _FITTED[key]

    def artifacts(self) -> list[LearnedUtility]:
        """Every model this strategy has used, in first-use order."""
        with _FITTED_LOCK:
            return list(self._used.values())

    def select(self, view: RouterView, pool_limit: int | None) -> StrategyResult:
        """The selection on the family's learned utilities (module docstring)."""
        pools = candidate_pools(view, pool_limit)
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
        model = self.model(family, pool_limit)
        problem, p = model.problem(view, pools, pairs=self.joint)
        extra: dict[str, Any] = {
            "learned_model": model.sha256, "learned_family": family,
            "learned_lambda": model.lam, "learned_pairs": len(problem.interactions),
            "learned_p": {rid: round(v, 6) for rid, v in sorted(p.items())},
        }
        return StrategyResult(self.selector.select(problem), pools, extra)


def make_learned_strategy(joint: bool, training: TrainingSource | None = None) -> LearnedStrategy:
    """``learned_exact`` (``joint=True``) or ``learned_split`` (``joint=False``)."""
    return LearnedStrategy(joint, training)
