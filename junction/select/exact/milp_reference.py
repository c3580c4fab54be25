"""Reference: the whole joint-selection MILP handed to HiGHS's own branch and cut.

Used by tests (tests/test_milp.py) and benchmarks (bench/perf/exact_solver.py) only, as a
second exact search to set beside ``junction.select.exact.bnc``. It is not independent
of the library: it shares ``reduction.reduce``, ``model.Model``, the local search, the
odd-cycle cuts and ``Reduced.exceeded`` and the HiGHS glue with the branch
and cut; what differs is who branches (HiGHS here, the library's own tree there) and how
the tie rule is met (extra solver passes here, inside the tree there). A bug in the shared
code would be shared too; the enumeration oracle (``EnumerationJointSelector``) shares
none of it.

The passes (root cuts, pass 1, the tie passes): milp_search.py's module docstring.

Resolution: HiGHS proves optimality to an absolute objective gap of about 1e-6, so two sets
whose objectives differ by less than that (but by more than ``OBJECTIVE_TOLERANCE``) may be
ranked as equal; scores given to a few decimals, as every suite here gives them, are exact.

Status: ``optimal`` only when all passes finished; ``time_limit`` when the time limit
stopped any pass. If it stopped pass 1, the selection is the better of HiGHS's best set
and a greedy + single-flip local search, with the relative gap (dual bound - objective) /
|objective| against HiGHS's dual bound (None if HiGHS gave no bound); if pass 1 finished
and a tie pass did not, the set is optimal in objective but the tie rule is unproven, and
the gap is 0.0. Deterministic: the tie rule fixes the answer, whichever optimal set HiGHS
returns first. Timings: docs/measurement.md.
"""

from __future__ import annotations

import time
import warnings

from junction.select.exact.limits import DEFAULT_TIME_LIMIT_S
from junction.select.exact.milp_search import MilpSearch
from junction.select.exact.reduction import Reduced, ReducingSelector
from junction.select.problem import (
    JointProblem,
    Selection,
    check_selector_options,
    make_selection,
)

__all__ = ["CYCLE_CUT_MIN_CANDIDATES", "MilpJointSelector"]

CYCLE_CUT_MIN_CANDIDATES = 40
"""Odd-cycle cuts are separated at the root from this many candidates up (below 40 HiGHS
alone is faster; docs/measurement.md)."""


class MilpJointSelector(ReducingSelector):
    """Exact maximiser of the joint objective with HiGHS (``highspy``).

    Same objective, budget limits (tokens, tool count, latency ms, cost USD), size cap and
    tie rule as ``EnumerationJointSelector``; model, reductions and the tie passes are in
    the module docstrings of model.py, reduction.py and milp_search.py. ``max_size``
    overrides the problem's when given. ``time_limit_s`` (seconds, ``None`` for none)
    bounds all passes together; when it is reached the selection is the best set found,
    with status ``time_limit`` and HiGHS's gap.
    ``tie_enumeration_cap`` (>= 0) bounds pass 3's listing of equal-key sets.
    ``cycle_cut_min_candidates``: root odd-cycle separation runs from this many candidates
    (after removal) up; 0 always, a huge number never.

    Raises ``ValueError`` on a bad ``max_size`` or ``time_limit_s``
    (``check_selector_options``) or a negative cap, ``SelectionError`` if
    HiGHS fails in a way other than infeasible or time limit (not expected: the empty set
    always fits).
    """

    name = "milp"

    def __init__(
        self,
        max_size: int | None = None,
        time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
        tie_enumeration_cap: int = 16,
        cycle_cut_min_candidates: int = CYCLE_CUT_MIN_CANDIDATES,
    ) -> None:
        check_selector_options(max_size=max_size, time_limit_s=time_limit_s)
        if tie_enumeration_cap < 0:
            raise ValueError(f"tie_enumeration_cap must be >= 0, got {tie_enumeration_cap}")
        self.max_size = max_size
        self.time_limit_s = time_limit_s
        self.tie_enumeration_cap = tie_enumeration_cap
        self.cycle_cut_min_candidates = cycle_cut_min_candidates

    def select_reduced(self, problem: JointProblem, red: Reduced, max_size: int | None,
                       start: float) -> Selection:
        """``subsets_examined`` holds the HiGHS branch-and-bound nodes of all passes;
        ``gap`` is HiGHS's relative gap of pass 1; ``solve_time_ms`` is wall time."""
        gap: float | None
        status, gap, nodes = "optimal", 0.0, 0
        chosen: tuple[int, ...] = ()
        if red.items:
            deadline = None if self.time_limit_s is None else start + self.time_limit_s
            search = MilpSearch(problem, red, max_size, deadline, self.tie_enumeration_cap,
                             self.cycle_cut_min_candidates)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                chosen, status, gap = search.run()
            nodes = search.nodes
        cs, ts = red.ids(chosen)
        return make_selection(
            self.name, problem, cs, ts,
            subsets_examined=nodes,
            status=status,
            gap=gap,
            solve_time_ms=round((time.perf_counter() - start) * 1000, 3),
        )
