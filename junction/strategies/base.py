"""What every strategy shares: candidate pools, the joint problem, the result record.

A strategy sees only a ``RouterView``. The candidate pool comes from the lexical lanes
(``junction.candidates``), cut to ``pool_limit`` per lane; unary utility is the task's
prior where the task gives one, else the lane's max-normalised BM25 score
(``normalise_scores``); interactions are the task's pair scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from junction.candidates import (
    Candidate,
    LexicalContextCandidateGenerator,
    LexicalToolCandidateGenerator,
    normalise_scores,
)
from junction.select import JointProblem, Selection, Selector
from junction.tasks import RouterView

__all__ = [
    "CandidatePools",
    "StrategyResult",
    "candidate_pools",
    "joint_problem",
    "run_selector",
    "selector_strategy",
    "Strategy",
]


@dataclass(frozen=True)
class CandidatePools:
    """Ranked candidates of both lanes for one view."""

    contexts: list[Candidate]
    tools: list[Candidate]


@dataclass(frozen=True)
class StrategyResult:
    """A strategy's answer for one task: the selection, the pools, and extra trace fields."""

    selection: Selection
    pools: CandidatePools
    extra: dict[str, Any] = field(default_factory=dict)


def candidate_pools(view: RouterView,
                    pool_limit: int | tuple[int | None, int | None] | None) -> CandidatePools:
    """Rank the view's contexts and tools against its objective; keep ``pool_limit`` each
    (a pair: ``(context limit, tool limit)``; None: the whole lane)."""
    context_limit, tool_limit = (pool_limit if isinstance(pool_limit, (tuple, list))
                                 else (pool_limit, pool_limit))
    return CandidatePools(
        contexts=LexicalContextCandidateGenerator().generate(view.objective, view.contexts,
                                                             context_limit),
        tools=LexicalToolCandidateGenerator().generate(view.objective, view.tools, tool_limit),
    )


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


def run_selector(selector: Selector, view: RouterView, pool_limit: int | None) -> StrategyResult:
    """Candidate lanes, then ``selector`` over the joint problem."""
    pools = candidate_pools(view, pool_limit)
    return StrategyResult(selection=selector.select(joint_problem(view, pools)), pools=pools)


Strategy = Callable[[RouterView, "int | None"], StrategyResult]
"""A ready strategy: ``(view, pool_limit) -> StrategyResult``."""


def selector_strategy(selector: Selector) -> Strategy:
    """The strategy that runs ``selector`` over the lanes' joint problem (``run_selector``)."""
    return lambda view, pool_limit: run_selector(selector, view, pool_limit)
