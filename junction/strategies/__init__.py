"""Strategies: from a router view to a selection, under the task's budget.

``catalog`` holds one record per strategy (name, factory, role, what it sees, whether it
respects the budget, its place in the default run); ``base`` what every strategy shares
(the ``Strategy`` and ``TaskStrategy`` protocols, the joint problem, the result); one
module per strategy (``exact``, ``splits``, ``judge_admission``, ``learned``,
``coverage``, ``page_admission``, ``subtask_admission``) and ``references`` (outside the
budget).
"""

from junction.candidates import CandidatePools, candidate_pools
from junction.strategies.base import (
    AnyStrategy,
    FunctionStrategy,
    Strategy,
    StrategyResult,
    TaskStrategy,
    joint_problem,
    run_selector,
    selector_strategy,
)
from junction.strategies.catalog import (
    ROLES,
    STRATEGIES,
    StrategyInfo,
    default_strategies,
    interaction_blind_strategies,
    learned_strategies,
    make_strategy,
    reads_task,
    reference_strategies,
    register_strategy,
    strategies_where,
    strategy_info,
    strategy_names,
)
from junction.strategies.references import ReferenceStrategy

__all__ = [
    "ROLES",
    "STRATEGIES",
    "AnyStrategy",
    "CandidatePools",
    "FunctionStrategy",
    "ReferenceStrategy",
    "Strategy",
    "StrategyInfo",
    "StrategyResult",
    "TaskStrategy",
    "candidate_pools",
    "default_strategies",
    "interaction_blind_strategies",
    "joint_problem",
    "learned_strategies",
    "make_strategy",
    "reads_task",
    "reference_strategies",
    "register_strategy",
    "run_selector",
    "selector_strategy",
    "strategies_where",
    "strategy_info",
    "strategy_names",
]
