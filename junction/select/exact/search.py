"""What one branch and cut search shares between its parts (root, probing, branching).

``Search`` holds one reduced problem's model and LP (``nodelp.NodeLP``), the sets found so
far with their exact objectives and tie keys, the cutoff, and the two limits: the work
limit (simplex iterations over every LP of the search, deterministic) and the clock (a
safety net). ``Node`` is one open node of the tree. The parts live in root.py,
probing.py and branching.py; junction/select/exact/bnc.py drives them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from junction.select.exact.local_search import local_search
from junction.select.exact.model import Model
from junction.select.exact.nodelp import LPResult, NodeLP
from junction.select.exact.reduction import BudgetArrays, Reduced
from junction.select.problem import OBJECTIVE_TOLERANCE, JointProblem

__all__ = ["Node", "Search"]


@dataclass
class Node:
    """One open node: x bounds ``lb``/``ub`` (nx,), and how it was made."""

    lb: np.ndarray
    ub: np.ndarray
    bound: float  # the parent's LP bound: valid for every set in this node
    var: int = -1  # the branching that made this node: x_var fixed to ``up``
    up: int = 0
    frac: float = 0.0  # x_var in the parent's LP point


class Search:
    """One reduced problem's search state (see the module docstring).

    ``deadline``: a ``time.perf_counter()`` value (None: no clock); ``work_limit``:
    simplex iterations (None: none). ``stopped`` says which limit stopped the search
    (``work_limit`` or ``stopped_by_clock``); ``clock_touched``: the clock cut a sub-solve
    short (then the status is ``stopped_by_clock`` whatever stopped the tree). ``trace``:
    the root's bounds and their cost (``root.solve_root``); ``nodes``: LP nodes solved."""

    def __init__(self, problem: JointProblem, red: Reduced, max_size: int | None,
                 deadline: float | None, work_limit: int | None = None) -> None:
        self.problem = problem
        self.red = red
        self.max_size = max_size
        self.deadline = deadline
        self.work_limit = math.inf if work_limit is None else work_limit
        self.stopped: str | None = None  # "work_limit" or "stopped_by_clock"
        self.clock_touched = False  # the clock cut a RENS solve short
        self.trace: dict[str, float] = {}
        """Root bounds and their cost: ``lp`` (the first LP's value), ``lp_s``, then
        ``cuts`` / ``cuts_s`` after odd-cycle separation (seconds from the root's start),
        ``cuts_stopped`` 1.0 when a limit stopped a separation round (``cuts`` is then the
        last finished round's bound)."""
        self.model = Model(red, problem, max_size)
        self.lp = NodeLP(self.model)
        self.nx = self.model.nx
        self.found: dict[tuple[int, ...], tuple[float, tuple]] = {}
        self.z = -math.inf
        self.nodes = 0
        self.arrays = BudgetArrays.of(red, problem.budget, max_size)

    def time_left(self) -> float | None:
        """Seconds to the deadline (negative once past it); None without a clock."""
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def solve(self, lb: np.ndarray, ub: np.ndarray, cutoff: float = -math.inf,
              method: str = "simplex") -> LPResult:
        """``NodeLP.solve`` within the simplex iterations and the clock left."""
        return self.lp.solve(lb, ub, self.time_left(), cutoff,
                             iterations_left=self.work_limit - self.lp.iterations,
                             method=method)

    def out_of_work(self) -> bool:
        """Is the work limit spent or the clock run out? Sets ``stopped`` if so."""
        if self.lp.iterations >= self.work_limit:
            self.stopped = "work_limit"
        left = self.time_left()
        if left is not None and left <= 0:
            self.stopped = "stopped_by_clock"
        return self.stopped is not None

    def stop(self, lp_status: str) -> None:
        """Record why an LP stopped short (``work_limit`` or ``time_limit``)."""
        self.stopped = "work_limit" if lp_status == "work_limit" else "stopped_by_clock"

    def record(self, chosen: tuple[int, ...]) -> None:
        """Exact objective and tie key of a set that fits (checked by the caller)."""
        if chosen in self.found:
            return
        self.found[chosen] = self.red.score(self.problem, chosen)
        self.z = max(self.z, self.found[chosen][0])

    def cutoff(self) -> float:
        """Prune below this: the tie tolerance plus HiGHS's optimality tolerance (1e-6
        relative to the larger of |z*| and the cost scale of the LP)."""
        return self.z - OBJECTIVE_TOLERANCE - 1e-6 * max(self.lp.scale, abs(self.z))

    def heuristic(self, x: np.ndarray) -> None:
        """Round the point ``x`` at 1/2, repair, then improving flips and swaps
        (``local_search.local_search``); record the set if it fits exactly."""
        self.record(local_search(self.red, self.problem.budget, self.max_size,
                                 start=x[: self.nx] > 0.5, swaps=True, arrays=self.arrays))

    def best(self) -> tuple[int, ...]:
        """The pick among the sets found: the smallest tie key within the tolerance of z*."""
        ties = [(key, chosen) for chosen, (obj, key) in self.found.items()
                if obj >= self.z - OBJECTIVE_TOLERANCE]
        return min(ties)[1]

    def status(self) -> str:
        """The status of a search cut short: ``work_limit`` (deterministic) unless the
        clock had a hand in it (it stopped the tree, or cut the RENS solve that seeded
        the incumbents): then ``stopped_by_clock``."""
        if self.stopped == "work_limit" and not self.clock_touched:
            return "work_limit"
        return "stopped_by_clock"
