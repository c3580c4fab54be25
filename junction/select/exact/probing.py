"""Variable fixing by bounds before the branch and cut's search (probing).

Savelsbergh 1994, and the fixing step of Pisinger, Rasmussen & Sandvik 2007 with LP
bounds: an x whose flipped root LP is below the cutoff is fixed for the whole search.
"""

from __future__ import annotations

import numpy as np

from junction.select.exact.nodelp import EPS, HIGHS_INT_MAX
from junction.select.exact.search import Node, Search

__all__ = ["PROBE_SHARE", "probe", "restrict"]

PROBE_SHARE = 0.1
"""Share of the work limit probing may use before the search."""
_PROBE_ITERATIONS = 100
"""Simplex iterations one probing LP may take (``probe``); past it the x stays free."""


def probe(search: Search, value: float, point: np.ndarray, d: np.ndarray,
          share: float = PROBE_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """Fix x by bounds, from the root LP's ``value``, ``point`` (nvar,) and |reduced
    costs| ``d`` (nx,): x_i is fixed to its root value v when the root LP (McCormick
    rows, product rows, root cuts, earlier fixings) with x_i = 1 - v is below the cutoff,
    so no set within the tie tolerance of the best has x_i = 1 - v. First by reduced cost
    (value - d_i below the cutoff), then by one LP per x integral at the root, largest d_i
    first, each stopped after ``_PROBE_ITERATIONS`` simplex iterations (then x_i stays
    free) and all of them after ``share`` of the work limit. Returns the global (lb, ub)
    of x, (nx,) each."""
    x = point[: search.nx]
    lb, ub = np.zeros(search.nx), np.ones(search.nx)
    low, high = x <= EPS, x >= 1 - EPS
    hopeless = value - d < search.cutoff()
    ub[low & hopeless] = 0.0
    lb[high & hopeless] = 1.0
    budget = search.lp.iterations + share * min(search.work_limit, HIGHS_INT_MAX)
    order = np.flatnonzero((low | high) & ~hopeless)
    order = order[np.lexsort((order, -d[order]))]
    for i in order:
        left = min(budget, search.work_limit) - search.lp.iterations
        if left <= 0 or search.out_of_work():
            break
        t_lb, t_ub = lb.copy(), ub.copy()
        t_lb[i] = t_ub[i] = 0.0 if high[i] else 1.0
        status, v, _, _ = search.lp.solve(t_lb, t_ub, search.time_left(), search.cutoff(),
                                          iterations_left=min(left, _PROBE_ITERATIONS))
        if status == "time_limit":
            search.stop(status)
            break
        if status in ("infeasible", "cutoff") or (status == "optimal"
                                                    and v < search.cutoff()):
            lb[i] = ub[i] = 1.0 if high[i] else 0.0
    return lb, ub


def restrict(stack: list[Node], lb: np.ndarray, ub: np.ndarray) -> list[Node]:
    """The open nodes with the global fixings (lb, ub) applied; nodes that the fixings
    leave empty (some lb > ub) are dropped."""
    out = []
    for node in stack:
        nlb, nub = np.maximum(node.lb, lb), np.minimum(node.ub, ub)
        if np.all(nlb <= nub):
            out.append(Node(nlb, nub, node.bound, node.var, node.up, node.frac))
    return out
