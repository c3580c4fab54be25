"""``AutoJointSelector``: the exact search that is cheaper for the pool's size.

Both searches give the enumerator's selection; the dispatch changes only the time and the
bookkeeping fields. The threshold ``AUTO_COMBINATORIAL_MAX`` comes from
bench/perf/exact_crossover.py (figures in docs/measurement.md).
"""

from __future__ import annotations

from junction.select.exact.bnb import COMBINATORIAL_MAX, CombinatorialJointSelector
from junction.select.exact.bnc import BranchAndCutJointSelector
from junction.select.exact.limits import DEFAULT_TIME_LIMIT_S, DEFAULT_WORK_LIMIT
from junction.select.exact.reduction import Reduced, ReducingSelector
from junction.select.problem import JointProblem, Selection

__all__ = ["AUTO_COMBINATORIAL_MAX", "AutoJointSelector"]

AUTO_COMBINATORIAL_MAX = 32
"""``AutoJointSelector`` runs the combinatorial branch and bound up to this many
candidates (after removing those that cannot be selected) and branch and cut above it."""


class AutoJointSelector(ReducingSelector):
    """Exact joint selection by whichever exact search is cheaper for the pool's size.

    Runs ``CombinatorialJointSelector`` (combinatorial branch and bound, no LP) when at
    most ``combinatorial_max`` candidates are left after ``reduction.reduce``, else
    ``BranchAndCutJointSelector``. The ``Selection``'s ``strategy`` names the search that
    ran (``branch_and_bound`` or ``branch_and_cut``); ``subsets_examined`` counts its
    search nodes or LP nodes. Default threshold ``AUTO_COMBINATORIAL_MAX``;
    ``work_limit`` (simplex iterations, deterministic) and ``time_limit_s`` (seconds, a
    safety net) are the branch and cut's (``None``: none; the combinatorial search on
    small pools has neither). Raises ``ValueError`` on a ``combinatorial_max``
    that is not an integer in [0, ``COMBINATORIAL_MAX``], and as both searches do on a
    bad ``max_size`` or time limit.
    """

    name = "auto"

    def __init__(
        self,
        max_size: int | None = None,
        combinatorial_max: int = AUTO_COMBINATORIAL_MAX,
        time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
        work_limit: int | None = DEFAULT_WORK_LIMIT,
    ) -> None:
        if (isinstance(combinatorial_max, bool) or not isinstance(combinatorial_max, int)
                or not 0 <= combinatorial_max <= COMBINATORIAL_MAX):
            raise ValueError(f"combinatorial_max must be an integer in [0, "
                             f"{COMBINATORIAL_MAX}], got {combinatorial_max!r}")
        self.max_size = max_size
        self.combinatorial_max = combinatorial_max
        self.small = CombinatorialJointSelector(max_size=max_size)
        self.solver = BranchAndCutJointSelector(max_size=max_size, time_limit_s=time_limit_s,
                                                work_limit=work_limit)

    def select_reduced(self, problem: JointProblem, red: Reduced, max_size: int | None,
                       start: float) -> Selection:
        """The optimal ``Selection``; see the class docstring for which search runs."""
        search = self.solver if len(red.items) > self.combinatorial_max else self.small
        return search.select_reduced(problem, red, max_size, start)
