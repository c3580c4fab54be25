"""The ``exact`` strategy: the joint objective over the lanes' pools, solved exactly.

``AutoJointSelector`` picks the algorithm by pool size (a combinatorial branch and bound
for small pools, branch and cut above; see its docstring); each selection records which
algorithm produced it. The search stops on a deterministic work limit
(``DEFAULT_WORK_LIMIT`` simplex iterations), never on the clock unless a 300 s safety net
fires (status ``stopped_by_clock``; reports leave such rows out).
"""

from __future__ import annotations

from junction.select import AutoJointSelector
from junction.strategies.base import Strategy, selector_strategy

__all__ = ["make_exact_strategy"]


def make_exact_strategy() -> Strategy:
    """A ready ``exact`` strategy ``(view, pool) -> StrategyResult``."""
    return selector_strategy(AutoJointSelector())
