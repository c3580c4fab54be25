"""What every strategy shares: candidate pools, the joint problem, the result record.

A strategy sees only a ``RouterView``. The candidate pool comes from the first stage
(``junction.candidates.candidate_pools``) the selection's ``PoolRequest`` names (the run's
pool rule and pool limit); unary utility is the task's prior where the task gives one, else
the lane's max-normalised first-stage score (``normalise_scores``); interactions are the
task's pair scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from junction.candidates import (
    CandidatePools,
    PoolLimit,
    PoolRequest,
    candidate_pools,
    normalise_scores,
)
from junction.select import JointProblem, Selection, Selector
from junction.tasks import BenchmarkTask, RouterView

__all__ = [
    "AnyStrategy",
    "FunctionStrategy",
    "Strategy",
    "StrategyResult",
    "TaskStrategy",
    "joint_problem",
    "run_selector",
    "selector_strategy",
]


@dataclass(frozen=True)
class StrategyResult:
    """A strategy's answer for one task: the selection, the pools, and extra trace fields."""

    selection: Selection
    pools: CandidatePools
    extra: dict[str, Any] = field(default_factory=dict)


def joint_problem(view: RouterView, pools: CandidatePools) -> JointProblem:
    """The ``JointProblem`` over the pools (unary rule in the module docstring)."""
    unary = {**normalise_scores(pools.contexts), **normalise_scores(pools.tools)}
    pool_ids = set(unary)
    for rid, value in view.unary.items():
        if rid in pool_ids:
            unary[rid] = value
    return JointProblem(
        contexts=tuple(view.context(c.resource_id) for c in pools.contexts),
        tools=tuple(view.tool(t.resource_id) for t in pools.tools),
        budget=view.budget,
        unary=unary,
        interactions={k: v for k, v in view.interaction_map().items()
                      if k[0] in pool_ids and k[1] in pool_ids},
    )


def run_selector(selector: Selector, view: RouterView,
                 pool: PoolRequest | PoolLimit) -> StrategyResult:
    """Candidate lanes, then ``selector`` over the joint problem."""
    pools = candidate_pools(view, pool)
    return StrategyResult(selection=selector.select(joint_problem(view, pools)), pools=pools)


@runtime_checkable
class Strategy(Protocol):
    """What every strategy is: ``select`` on a router view, and the artifacts it made.

    ``select(view, pool) -> StrategyResult``: ``view`` is the task's ``RouterView`` (a
    reference reads the ``BenchmarkTask`` itself instead: ``TaskStrategy``); ``pool`` (a
    ``junction.candidates.PoolRequest``) is the pool rule
    and the limit per lane of the candidate pools, which the strategy passes to
    ``candidate_pools``. ``artifacts()`` lists what the strategy fitted in this process (a learned
    strategy's ``LearnedUtility`` records, which the benchmark stores once); [] for most.
    """

    def select(self, view: RouterView, pool: PoolRequest | PoolLimit) -> StrategyResult: ...

    def artifacts(self) -> list[Any]: ...


@runtime_checkable
class TaskStrategy(Protocol):
    """A strategy given the ``BenchmarkTask`` itself, not its router view: a reference,
    which reads the row's listing or its gold (``junction.strategies.references``; its
    catalog record says ``reads_task``, and ``reads_task`` tells one from a ``Strategy``).
    ``select(task, pool)`` and ``artifacts()`` as for a ``Strategy``."""

    def select(self, task: BenchmarkTask, pool: PoolRequest | PoolLimit) -> StrategyResult: ...

    def artifacts(self) -> list[Any]: ...


AnyStrategy = Strategy | TaskStrategy
"""What a strategy record builds (``junction.strategies.catalog.StrategyInfo.build``)."""


@dataclass(frozen=True)
class FunctionStrategy:
    """A ``Strategy`` from a function ``(view, pool) -> StrategyResult``; no artifacts."""

    function: Callable[[RouterView, PoolRequest], StrategyResult]

    def select(self, view: RouterView, pool: PoolRequest | PoolLimit) -> StrategyResult:
        """``function(view, pool)`` (a bare pool limit: a request on the default rule)."""
        return self.function(view, PoolRequest.of(pool))

    def artifacts(self) -> list[Any]:
        """Nothing: a function strategy fits nothing."""
        return []


def selector_strategy(selector: Selector) -> Strategy:
    """The strategy that runs ``selector`` over the lanes' joint problem (``run_selector``)."""
    return FunctionStrategy(lambda view, pool: run_selector(selector, view, pool))
