"""The branch and cut's root: its LP bound, root cuts, and the first incumbents.

``solve_root``: the product rows (``model.product_rows``) join the LP for the whole
search, the first LP is solved (by interior point from ``_ROOT_IPM_MIN_COLUMNS`` columns
up), then rounds of odd-cycle separation (``model.cycle_cuts``) until the bound stalls or
``_ROOT_WORK_SHARE`` of the work limit is spent; slack cuts are deleted at the end.
``seed_incumbents``: greedy insertion, the rounded root point, and RENS (``rens``).
"""

from __future__ import annotations

import time

import numpy as np

from junction.select.exact.model import cycle_cuts, product_rows
from junction.select.exact.nodelp import EPS, LPResult
from junction.select.exact.search import Search

__all__ = ["rens", "seed_incumbents", "solve_root"]

_ROOT_ROUNDS = 60
"""At most this many rounds of root separation."""
_ROOT_STALL = 1e-4
"""Stop root separation when a round lowers the bound by less than this (relative)."""
_ROOT_WORK_SHARE = 0.3
"""Share of the work limit (simplex iterations) root separation may use (the rest goes
to the tree)."""
_RENS_NODES = 200
"""Node limit of the RENS sub-MIP (HiGHS's ``mip_max_nodes``: deterministic)."""
_ROOT_IPM_MIN_COLUMNS = 5000
"""The first root LP is solved by interior point (with crossover) from this many columns
up (``gallo`` at 200 candidates, Δ = 0.5, has about 5,200; timings in docs/measurement.md)."""


def solve_root(search: Search, products: bool = True, cut_min: float = 0) -> LPResult:
    """The root LP of ``search`` (see the module docstring), as ``NodeLP.solve`` returns
    it: the last LP after separation, the first one if separation did not run or a limit
    stopped a round. ``products``: add the product rows; ``cut_min``: separate odd
    cycles only from this many candidates (x columns) up. Fills ``search.trace`` (the
    bounds and their cost in seconds from the root's start)."""
    began = time.perf_counter()
    lb, ub = np.zeros(search.nx), np.ones(search.nx)
    if products and search.red.pairs:
        search.lp.add_base_rows(*product_rows(search.model, search.problem, search.max_size))
    res = search.solve(lb, ub, method="ipm" if search.model.nvar >= _ROOT_IPM_MIN_COLUMNS
                       else "simplex")
    search.trace.update(lp=res[1], lp_s=time.perf_counter() - began)
    if search.nx < cut_min or not search.red.pairs or res[0] != "optimal":
        return res
    stop = _ROOT_WORK_SHARE * search.work_limit
    for _ in range(_ROOT_ROUNDS):
        if search.lp.iterations >= stop:
            break
        cuts = cycle_cuts(search.model, res[2], max_cuts=search.nx + 1)
        if not cuts:
            break
        search.lp.add_rows(cuts)
        new = search.solve(lb, ub)
        if new[0] != "optimal":
            search.trace.update(cuts=res[1], cuts_s=time.perf_counter() - began,
                                cuts_stopped=1.0)
            return new
        stalled = new[1] > res[1] - _ROOT_STALL * max(1.0, abs(res[1]))
        res = new
        if stalled:
            break
    search.trace.update(cuts=res[1], cuts_s=time.perf_counter() - began, cuts_stopped=0.0)
    search.lp.drop_slack_cuts(search.lp.base_rows)
    return search.solve(lb, ub)


def seed_incumbents(search: Search, point: np.ndarray) -> None:
    """Incumbents from the root LP's ``point``: greedy insertion from the empty set, the
    point rounded at 1/2, then RENS, each improved by ``local_search.local_search``."""
    search.heuristic(np.zeros(search.model.nvar))  # greedy from the empty set
    search.heuristic(point)
    rens(search, point)


def rens(search: Search, point: np.ndarray) -> None:
    """RENS (Berthold 2014): the MILP with every x that is integral in the root LP fixed
    to its value, solved by HiGHS. Limits: ``_RENS_NODES`` nodes (HiGHS's
    ``mip_max_nodes``: deterministic) and the search's clock (``highs_milp``'s
    ``deadline``: abandoned there; noted in ``clock_touched``). Every improving point
    HiGHS reports is recorded as it is if it fits exactly, and the last one seeds
    ``Search.heuristic`` unless the clock cut the solve short: a point found before the
    clock struck is an intermediate one in a longer run, where no local search starts
    from it, so a larger time limit never yields a worse set (docs/measurement.md, "Solver
    limits"). Skipped, and ``clock_touched`` set, when an earlier call's sub-MIP abandoned
    at its deadline is still running past this search's deadline (``highs_milp``)."""
    x = point[: search.nx]
    frac = (x > EPS) & (x < 1 - EPS)
    if not frac.any():
        return
    lb = np.zeros(search.model.nvar)
    ub = np.ones(search.model.nvar)
    lb[: search.nx][x >= 1 - EPS] = 1.0
    ub[: search.nx][x <= EPS] = 0.0
    left = search.time_left()
    limit = None if left is None else max(left, 0.0)
    res = search.model.solve(-search.model.obj, lb=lb, ub=ub, time_limit=limit,
                             node_limit=_RENS_NODES, deadline=search.deadline)
    for found in res.solutions:
        chosen = tuple(int(i) for i in np.flatnonzero(found[: search.nx] > 0.5))
        if search.red.exceeded(chosen, search.problem.budget, search.max_size) is None:
            search.record(chosen)
    search.clock_touched |= res.status == 1
    if res.x is not None and res.status != 1:
        search.heuristic(res.x)
