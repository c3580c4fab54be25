"""Local search: a feasible set by greedy insertion and improving moves, the incumbent
heuristic of the exact solvers (bnc's root and search, the MILP reference)."""

from __future__ import annotations

import numpy as np

from junction.budget import Budget
from junction.select.exact.reduction import BudgetArrays, Reduced

__all__ = ["local_search"]


def local_search(red: Reduced, budget: Budget, max_size: int | None,
                 start: np.ndarray | None = None, swaps: bool = False,
                 arrays: BudgetArrays | None = None) -> tuple[int, ...]:
    """A feasible set by greedy insertion and improving moves (no optimality claim).

    From the empty set, or from ``start`` (a boolean mask; members with the smallest gain
    are dropped until it fits), e.g. an LP point rounded at 1/2. Moves: the best improving
    single flip; with ``swaps``, when no flip improves, the best improving swap (one
    member out, one non-member in); until none improves by more than 1e-12. Used for
    incumbents and as a fallback when the time limit stops a search. Gains are exact in
    the model (u_i + Σ_{j∈S} W_ij); moves are screened with running numpy sums (a
    heuristic's guess, not a verdict), and the final set is checked by
    ``BudgetArrays.fits``: () if it does not fit. ``arrays``: ``BudgetArrays.of`` the same
    problem, to reuse across calls. Returns item indices, sorted.
    """
    arr = arrays if arrays is not None else BudgetArrays.of(red, budget, max_size)
    W, use, limits = arr.W, arr.use, arr.limits
    n = len(red.items)
    inside = np.zeros(n, dtype=bool) if start is None else np.array(start, dtype=bool)
    gain = arr.unary + W @ inside
    used = use[inside].sum(axis=0)
    while inside.any() and np.any(used > limits):
        members = np.flatnonzero(inside)
        i = int(members[np.argmin(gain[members])])
        inside[i] = False
        used -= use[i]
        gain -= W[i]
    for _ in range((20 if swaps else 4) * n + 10):
        fits = np.all(used + use <= limits, axis=1) & ~inside
        delta = np.where(inside, -gain, gain)
        delta[~inside & ~fits] = -np.inf
        i = int(np.argmax(delta))  # first best: deterministic
        if delta[i] > 1e-12:
            inside[i] = not inside[i]
            sign = 1.0 if inside[i] else -1.0
            used += sign * use[i]
            gain += sign * W[i]
            continue
        members = np.flatnonzero(inside)
        others = np.flatnonzero(~inside)
        if not swaps or not len(members) or not len(others):
            break
        d = gain[others][None, :] - gain[members][:, None] - W[np.ix_(members, others)]
        ok = np.all(used - use[members][:, None, :] + use[others][None, :, :] <= limits,
                    axis=2)
        d[~ok] = -np.inf
        k = int(np.argmax(d))
        if not d.flat[k] > 1e-12:
            break
        out, into = int(members[k // len(others)]), int(others[k % len(others)])
        inside[out] = False
        inside[into] = True
        used += use[into] - use[out]
        gain += W[into] - W[out]
    chosen = tuple(int(i) for i in np.flatnonzero(inside))
    return chosen if arr.fits(inside)[0] else ()
