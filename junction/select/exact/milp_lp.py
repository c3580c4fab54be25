"""The LP relaxation of the MILP reference's model (milp_reference.py), with the reduced
costs its reduced-cost fixing needs (milp_search.py)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import vstack

from junction.select.exact.model import Model

__all__ = ["lp_bound"]

_LP_METHOD = "highs-ipm"
"""LP method of the separation rounds: interior point with crossover, so reduced costs
are exact (chosen over dual simplex: docs/measurement.md)."""

_CUT_ROUNDS = 20
"""At most this many rounds of odd-cycle separation at the root."""

_CUT_TIME_SHARE = 0.25
"""Share of the time left that the root separation rounds may use."""

_CUT_STALL = 1e-4
"""Stop separating when a round lowers the LP bound by less than this (relative)."""


def lp_bound(model: Model, time_limit: float | None = None
             ) -> tuple[float, np.ndarray, np.ndarray] | None:
    """LP relaxation (rows + cuts) of the maximisation: (bound, point, loss), where
    loss[i] bounds how much the objective drops if x_i leaves its LP value 0 or 1
    (the reduced cost from ``linprog``'s bound marginals; 0 where x_i is fractional).
    None if HiGHS does not return an optimal LP."""
    A, lo, hi = model.rows()
    upper = np.isfinite(hi)
    lower = np.isfinite(lo)
    A_ub = vstack([A[upper], -A[lower]], format="csr") if A.shape[0] else None
    b_ub = np.concatenate([hi[upper], -lo[lower]]) if A.shape[0] else None
    options = {} if time_limit is None else {"time_limit": max(time_limit, 1e-3)}
    res = linprog(-model.obj, A_ub=A_ub, b_ub=b_ub, bounds=(0, 1), method=_LP_METHOD,
                  options=options)
    if res.status != 0 or res.x is None:
        return None
    x = res.x[: model.nx]
    loss = np.zeros(model.nx)
    at_zero = x <= 1e-9
    at_one = x >= 1 - 1e-9
    loss[at_zero] = np.maximum(res.lower.marginals[: model.nx][at_zero], 0.0)
    loss[at_one] = np.maximum(-res.upper.marginals[: model.nx][at_one], 0.0)
    return -float(res.fun), res.x, loss
