"""Strategies: from a router view to a selection, under the task's budget.

``base`` holds what every strategy shares (pools, joint problem, result); ``registry``
maps names to factories; one module per strategy (``exact``, ``splits``,
``judge_admission``, ``learned``: ``learned_exact`` and ``learned_split``;
``page_admission``: ``judge_top_k`` and ``bm25_top_k``, top-K page chunks within the
budget; ``subtask_admission``: proposed sub-tasks that follow from the task and do not
echo it) and ``references`` (``bfcl_listed``, ``all_tools``: outside the
budget).
"""

from junction.candidates import CandidatePools, candidate_pools
from junction.strategies.base import Strategy, StrategyResult, joint_problem, run_selector, selector_strategy
from junction.strategies.references import REFERENCE_STRATEGIES, ReferenceStrategy
from junction.strategies.registry import (
    STRATEGY_FACTORIES,
    make_strategy,
    register_strategy,
    strategy_factory,
    strategy_names,
)

__all__ = [
    "CandidatePools",
    "REFERENCE_STRATEGIES",
    "ReferenceStrategy",
    "STRATEGY_FACTORIES",
    "Strategy",
    "StrategyResult",
    "candidate_pools",
    "joint_problem",
    "make_strategy",
    "register_strategy",
    "run_selector",
    "selector_strategy",
    "strategy_factory",
    "strategy_names",
]
