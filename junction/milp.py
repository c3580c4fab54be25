"""Exact joint selection with a mixed-integer solver (HiGHS through ``highspy``).

``MilpJointSelector`` hands the whole model to HiGHS's branch and cut. The ``exact``
strategy uses ``junction.branch_and_cut`` instead (same model and reductions, defined
here; its own search over HiGHS LPs, 2-5x faster from 100 candidates up, measured with
bench/exact_solver.py); this selector stays as an independent cross-check.

The objective and the budget are those of ``junction.selection`` (see ../shared/DESIGN.md):

    maximise  Σ_i u_i x_i + Σ_{(c,t)} W_ct · x_c x_t,   W_ct = w(c,t) + w(t,c)

over binaries x (one per candidate) under the four budget rows (visible tokens over all
candidates; tool count, summed latency in ms and summed cost in USD over tools) and an
optional cap on the set size. Model (the standard linearisation of a product of binaries,
Glover & Woolsey 1974; its LP is the McCormick envelope, Padberg 1989):

- one continuous y_ct in [0, 1] per context–tool pair with W_ct != 0 (pairs whose two
  orders cancel, e.g. w(c,t) = +1 and w(t,c) = -1, get no variable);
- W_ct > 0: y_ct <= x_c and y_ct <= x_t (maximisation pushes y_ct up to x_c·x_t);
- W_ct < 0: y_ct >= x_c + x_t - 1 (and y_ct >= 0 from its bound; maximisation pushes it
  down to x_c·x_t). The other two rows of each pair would be redundant and are left out.

Before the solver runs, candidates that cannot be in the selected set are removed: those
that break a limit on their own, and those that never pay: best possible contribution
u_i + Σ_j max(W_ij, 0) below -1e-14 · (Σ|u| + Σ|W|), or u_i = 0 with no non-zero pair
left (applied to a fixed point). Every set holding such a candidate then scores, as
``objective_terms`` computes it, below (or, for the second kind, exactly at) the same set
without it, which also has the smaller tie key, so the tie rule never picks it. A best
case of exactly 0 with pairs is kept: float rounding can put the set holding it 1 ulp
higher, enough to move the 1e-9 tie threshold (found by fuzzing).

Root cuts (from ``CYCLE_CUT_MIN_CANDIDATES`` candidates up): the LP above is weak when
interactions are dense (at 200 candidates it is ~15% above the optimum: it puts every x
near the budget's fraction, earns min(x_c, x_t) on positive pairs and pays nothing on
negative ones). Rounds of LP relaxation plus exact separation of the odd-cycle
inequalities of the Boolean quadric polytope (``_cycle_cuts``) close most of that gap
before HiGHS starts; the cuts are valid for every integer x with y = x_c·x_t and stay in
the model for every pass.

Ties: broken by a documented second pass, not inside one model. Pass 1 maximises the
objective (value z); with root cuts it starts from an incumbent (the root LP point rounded,
then ``_local_search``) and a row objective >= its value (``_Search.run``). Pass 2 asks whether another set with a key tokens·(N+1) + |S| no
larger than the best's (N = number of candidates; the key orders sets exactly as the
first two levels of the tie rule: fewer tokens, then fewer resources) has an objective
>= z - ``OBJECTIVE_TOLERANCE`` (a maximisation with a row on the objective; variables
are fixed first by reduced costs from the root LP). Usually it has none and pass 2 is one
solve. Otherwise the smallest key is found under the objective row, and pass 3 lists the
other sets with that key (no-good cuts, at most ``tie_enumeration_cap`` sets; past the cap
it fixes ids one at a time, binary search on the next id) and keeps the lexicographically
smallest (context ids, then tool ids). Every set the solver returns is re-checked in
Python with the enumerating selector's arithmetic (budget sums in id order, objective with
``math.fsum``); a set that only fits within the solver's feasibility tolerance is cut off
(a cover cut on the limit it breaks) and the pass re-run. The result is the enumerating
selector's ``Selection`` (ids, tokens, objective terms). Cost: pass 2 takes about as long
as pass 1 (measured), the price of an exact tie rule; pass 2's first solve runs with
HiGHS's primal heuristics off (``_NO_HEURISTICS``: it is almost always an infeasibility
proof), which took it from 5.4-9.1 s to 2.4-5.6 s at 200 candidates.

Resolution: HiGHS proves optimality to an absolute objective gap of about 1e-6, so two sets
whose objectives differ by less than that (but by more than ``OBJECTIVE_TOLERANCE``) may be
ranked as equal; scores given to a few decimals, as every suite here gives them, are exact.

Status: ``optimal`` only when all passes finished; ``time_limit`` when the time limit
stopped any pass. If it stopped pass 1, the selection is the better of HiGHS's best set
and a greedy + single-flip local search (``_local_search``), with the relative gap
(dual bound - objective) / |objective| against HiGHS's dual bound (None if HiGHS gave no
bound); if pass 1 finished and a tie pass did not, the set is optimal in objective but
the tie rule is unproven, and the gap is 0.0.
Deterministic: the tie rule fixes the answer, whichever optimal set HiGHS returns first.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_array, csr_array, vstack
from scipy.sparse.csgraph import dijkstra

from junction.errors import SelectionError
from junction.resources import ContextResource, ToolResource
from junction.selection import (
    OBJECTIVE_TOLERANCE,
    JointProblem,
    Selection,
    check_selector_options,
    make_selection,
    objective_terms,
    tie_break_key,
)

__all__ = [
    "MilpJointSelector",
    "DEFAULT_TIME_LIMIT_S",
    "CYCLE_CUT_MIN_CANDIDATES",
]

DEFAULT_TIME_LIMIT_S = 10.0
"""Wall-clock limit (seconds) for all solver passes of one ``select`` call."""

CYCLE_CUT_MIN_CANDIDATES = 40
"""Odd-cycle cuts are separated at the root from this many candidates up (measured with
bench/exact_solver.py: they close most of the LP gap at 200 candidates; below 40 HiGHS
alone is faster)."""

_Item = ContextResource | ToolResource

_LP_METHOD = "highs-ipm"
"""LP method of the separation rounds: interior point (with crossover, so reduced costs
are exact) was 2-4x faster than dual simplex on the later rounds at 400 candidates."""
_CUT_ROUNDS = 20
"""At most this many rounds of odd-cycle separation at the root."""

_CUT_TIME_SHARE = 0.25
"""Share of the time left that the root separation rounds may use (bench: at 400
candidates each round's LP takes 0.3 to 8 s, and the bound keeps falling for 20 rounds)."""

_CUT_STALL = 1e-4
"""Stop separating when a round lowers the LP bound by less than this (relative)."""


def _limit(value: float | None) -> float:
    return math.inf if value is None else value


@dataclass
class _Reduced:
    """The candidates left after removal, in the enumerating selector's order."""

    items: list[_Item]  # contexts sorted by id, then tools sorted by id
    n_ctx: int
    pairs: list[tuple[int, int, float]]  # (context index, tool index, W), W != 0
    unary: list[float]

    def ids(self, chosen: Sequence[int]) -> tuple[list[str], list[str]]:
        """(context ids, tool ids) of a set given by item indices."""
        return ([self.items[i].id for i in chosen if i < self.n_ctx],
                [self.items[i].id for i in chosen if i >= self.n_ctx])

    def score(self, problem: JointProblem, chosen: Sequence[int]) -> tuple[float, tuple]:
        """(objective, tie key) of a set, with the enumerating selector's arithmetic."""
        cs, ts = self.ids(chosen)
        u, w = objective_terms(problem, cs, ts)
        tokens = sum(self.items[i].token_cost for i in chosen)
        return u + w, tie_break_key(tokens, cs, ts)


def _reduce(problem: JointProblem, max_size: int | None) -> _Reduced:
    """Drop candidates that never fit alone or never pay (see the module docstring)."""
    b = problem.budget
    max_tokens = _limit(b.max_tokens)
    max_tools = _limit(b.max_tools)
    max_latency = _limit(b.max_latency_ms)
    max_cost = _limit(b.max_cost_usd)
    if max_size == 0:
        return _Reduced([], 0, [], [])

    def fits_alone(r: _Item) -> bool:
        if r.token_cost > max_tokens:
            return False
        if isinstance(r, ToolResource):
            return not (1 > max_tools or 0.0 + r.estimated_latency_ms > max_latency
                        or 0.0 + r.estimated_cost_usd > max_cost)
        return True

    contexts = sorted((r for r in problem.contexts if fits_alone(r)), key=lambda r: r.id)
    tools = sorted((r for r in problem.tools if fits_alone(r)), key=lambda r: r.id)
    ctx_ids = {r.id for r in contexts}
    tool_ids = {r.id for r in tools}
    weights: dict[tuple[str, str], float] = {}
    for a, b_id in problem.interactions:
        if a in ctx_ids and b_id in tool_ids:
            key = (a, b_id)
        elif a in tool_ids and b_id in ctx_ids:
            key = (b_id, a)
        else:
            continue
        if key not in weights:
            weights[key] = problem.pair(*key)
    alive = {r.id for r in (*contexts, *tools)}
    # Float slack: a computed objective (fsum per term group, then one addition) is within
    # about 4 ulp of its exact value, and every objective is at most ``scale`` in size.
    scale = math.fsum(abs(problem.u(rid)) for rid in alive) + math.fsum(
        abs(w) for w in weights.values())
    slack = 1e-14 * scale
    while True:
        positive: dict[str, list[float]] = {rid: [problem.u(rid)] for rid in alive}
        paired: set[str] = set()
        for (c, t), w in weights.items():
            if w != 0 and c in alive and t in alive:
                paired.update((c, t))
                if w > 0:
                    positive[c].append(w)
                    positive[t].append(w)
        best_case = {rid: math.fsum(v) for rid, v in positive.items()}
        dead = {rid for rid, v in best_case.items()
                if v < -slack or (problem.u(rid) == 0 and rid not in paired)}
        if not dead:
            break
        alive -= dead
    contexts = [r for r in contexts if r.id in alive]
    tools = [r for r in tools if r.id in alive]
    items: list[_Item] = [*contexts, *tools]
    index = {r.id: i for i, r in enumerate(items)}
    pairs = sorted(
        (index[c], index[t], w)
        for (c, t), w in weights.items()
        if w != 0 and c in index and t in index
    )
    return _Reduced(items, len(contexts), pairs, [problem.u(r.id) for r in items])


def _fits(red: _Reduced, chosen: Sequence[int], budget, max_size: int | None) -> str | None:
    """The first limit ``chosen`` breaks, with the enumerating selector's arithmetic."""
    if max_size is not None and len(chosen) > max_size:
        return "max_size"
    tokens = 0
    n_tools = 0
    latency = 0.0
    cost = 0.0
    for i in sorted(chosen):
        r = red.items[i]
        tokens += r.token_cost
        if i >= red.n_ctx:
            n_tools += 1
            latency += r.estimated_latency_ms
            cost += r.estimated_cost_usd
    if tokens > _limit(budget.max_tokens):
        return "max_tokens"
    if n_tools > _limit(budget.max_tools):
        return "max_tools"
    if latency > _limit(budget.max_latency_ms):
        return "max_latency_ms"
    if cost > _limit(budget.max_cost_usd):
        return "max_cost_usd"
    return None


@dataclass
class _Arrays:
    """Dense views of a reduced problem for the local search: W (n, n) pair weights
    (symmetric, zero diagonal), ``use`` (n, 5) each candidate's use of tokens, tool count,
    latency ms, cost USD and set size, ``limits`` (5,) those limits (inf: none)."""

    unary: np.ndarray
    W: np.ndarray
    use: np.ndarray
    limits: np.ndarray

    @classmethod
    def of(cls, red: _Reduced, budget, max_size: int | None) -> _Arrays:
        n = len(red.items)
        W = np.zeros((n, n))
        for c, t, w in red.pairs:
            W[c, t] = W[t, c] = w
        tokens = np.array([r.token_cost for r in red.items], dtype=float)
        is_tool = np.arange(n) >= red.n_ctx
        latency = np.array([getattr(r, "estimated_latency_ms", 0.0) for r in red.items])
        cost = np.array([getattr(r, "estimated_cost_usd", 0.0) for r in red.items])
        use = np.stack([tokens, is_tool.astype(float), latency * is_tool, cost * is_tool,
                        np.ones(n)], axis=1)
        limits = np.array([_limit(budget.max_tokens), _limit(budget.max_tools),
                           _limit(budget.max_latency_ms), _limit(budget.max_cost_usd),
                           _limit(max_size)])
        return cls(np.array(red.unary, dtype=float), W, use, limits)


_LIMIT_COLUMNS = ("max_tokens", "max_tools", "max_latency_ms", "max_cost_usd", "max_size")
"""The limits in the order of ``_Arrays.use``'s columns (``_fits``'s names)."""


def _local_search(red: _Reduced, budget, max_size: int | None,
                  start: np.ndarray | None = None, swaps: bool = False,
                  arrays: _Arrays | None = None) -> tuple[int, ...]:
    """A feasible set by greedy insertion and improving moves (no optimality claim).

    From the empty set, or from ``start`` (a boolean mask; members with the smallest gain
    are dropped until it fits), e.g. an LP point rounded at 1/2. Moves: the best improving
    single flip; with ``swaps``, when no flip improves, the best improving swap (one
    member out, one non-member in); until none improves by more than 1e-12. Used for
    incumbents and as a fallback when the time limit stops a search. Gains are exact in
    the model (u_i + Σ_{j∈S} W_ij); feasibility uses running sums, and the set is
    re-checked by ``_fits``: () if it does not fit. ``arrays``: ``_Arrays.of`` the same
    problem, to reuse across calls.
    """
    arr = arrays if arrays is not None else _Arrays.of(red, budget, max_size)
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
    return chosen if _fits(red, chosen, budget, max_size) is None else ()


class _Model:
    """The MILP of one reduced problem: columns x (candidates) then y (pairs)."""

    def __init__(self, red: _Reduced, problem: JointProblem, max_size: int | None) -> None:
        self.red = red
        nx = len(red.items)
        ny = len(red.pairs)
        self.nx = nx
        self.nvar = nx + ny
        obj = np.zeros(self.nvar)
        obj[:nx] = red.unary
        for k, (_, _, w) in enumerate(red.pairs):
            obj[nx + k] = w
        self.obj = obj
        tokens = np.array([r.token_cost for r in red.items], dtype=float)
        self.key = np.zeros(self.nvar)
        self.key[:nx] = tokens * (nx + 1) + 1.0
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        lo: list[float] = []
        hi: list[float] = []

        def add(entries: list[tuple[int, float]], low: float, high: float) -> None:
            r = len(lo)
            for col, v in entries:
                rows.append(r)
                cols.append(col)
                vals.append(v)
            lo.append(low)
            hi.append(high)

        b = problem.budget
        tool_cols = range(red.n_ctx, nx)
        if b.max_tokens is not None:
            add([(i, float(red.items[i].token_cost)) for i in range(nx)], -np.inf,
                b.max_tokens)
        if b.max_tools is not None:
            add([(i, 1.0) for i in tool_cols], -np.inf, b.max_tools)
        # Float limits are scaled to 1 so HiGHS's absolute tolerance is relative to them.
        if b.max_latency_ms is not None and b.max_latency_ms > 0:
            add([(i, red.items[i].estimated_latency_ms / b.max_latency_ms)
                 for i in tool_cols], -np.inf, 1.0)
        if b.max_cost_usd is not None and b.max_cost_usd > 0:
            add([(i, red.items[i].estimated_cost_usd / b.max_cost_usd) for i in tool_cols],
                -np.inf, 1.0)
        if max_size is not None and max_size < nx:
            add([(i, 1.0) for i in range(nx)], -np.inf, max_size)
        for k, (c, t, w) in enumerate(red.pairs):
            y = nx + k
            if w > 0:
                add([(y, 1.0), (c, -1.0)], -np.inf, 0.0)
                add([(y, 1.0), (t, -1.0)], -np.inf, 0.0)
            else:
                add([(y, 1.0), (c, -1.0), (t, -1.0)], -1.0, np.inf)
        self.A = csr_array((vals, (rows, cols)), shape=(len(lo), self.nvar))
        self.lo = np.array(lo, dtype=float)
        self.hi = np.array(hi, dtype=float)
        self.integrality = np.zeros(self.nvar)
        self.integrality[:nx] = 1
        self.cuts: list[tuple[np.ndarray, float, float]] = []

    def add_cut(self, coef: np.ndarray, low: float, high: float) -> None:
        self.cuts.append((coef, low, high))

    def solve(
        self,
        c: np.ndarray,
        extra: Sequence[tuple[np.ndarray, float, float]] = (),
        lb: np.ndarray | None = None,
        ub: np.ndarray | None = None,
        time_limit: float | None = None,
        heuristics: bool = True,
        start: np.ndarray | None = None,
    ) -> _MipResult:
        """Minimise ``c @ v`` over the model plus cuts and ``extra`` rows with HiGHS
        (``highspy``). ``heuristics=False`` switches HiGHS's primal heuristics off (see
        ``_NO_HEURISTICS``); ``start``: a feasible point handed to HiGHS
        (``Highs.setSolution``) as its first incumbent."""
        rows = [*self.cuts, *extra]
        A, lo, hi = self.A, self.lo, self.hi
        if rows:
            A = vstack([A, _rows_to_csr([r[0] for r in rows], self.nvar)], format="csr")
            lo = np.concatenate([lo, [r[1] for r in rows]])
            hi = np.concatenate([hi, [r[2] for r in rows]])
        options: dict[str, object] = {"presolve": "on", "mip_rel_gap": 0.0}
        if not heuristics:
            options.update(_NO_HEURISTICS)
        if time_limit is not None:
            options["time_limit"] = max(time_limit, 1e-3)
        return _highs_milp(c, csr_array(A), lo, hi,
                           np.zeros(self.nvar) if lb is None else lb,
                           np.ones(self.nvar) if ub is None else ub,
                           self.nx, options, start)

    def lp_bound(self, time_limit: float | None = None
                 ) -> tuple[float, np.ndarray, np.ndarray] | None:
        """LP relaxation (rows + cuts) of the maximisation: (bound, point, loss), where
        loss[i] bounds how much the objective drops if x_i leaves its LP value 0 or 1
        (the reduced cost from ``linprog``'s bound marginals; 0 where x_i is fractional).
        None if HiGHS does not return an optimal LP."""
        rows = self.cuts
        A, lo, hi = self.A, self.lo, self.hi
        if rows:
            A = vstack([A, _rows_to_csr([r[0] for r in rows], self.nvar)], format="csr")
            lo = np.concatenate([lo, [r[1] for r in rows]])
            hi = np.concatenate([hi, [r[2] for r in rows]])
        upper = np.isfinite(hi)
        lower = np.isfinite(lo)
        A_ub = vstack([A[upper], -A[lower]], format="csr") if A.shape[0] else None
        b_ub = np.concatenate([hi[upper], -lo[lower]]) if A.shape[0] else None
        options = {} if time_limit is None else {"time_limit": max(time_limit, 1e-3)}
        res = linprog(-self.obj, A_ub=A_ub, b_ub=b_ub, bounds=(0, 1), method=_LP_METHOD,
                      options=options)
        if res.status != 0 or res.x is None:
            return None
        x = res.x[: self.nx]
        loss = np.zeros(self.nx)
        at_zero = x <= 1e-9
        at_one = x >= 1 - 1e-9
        loss[at_zero] = np.maximum(res.lower.marginals[: self.nx][at_zero], 0.0)
        loss[at_one] = np.maximum(-res.upper.marginals[: self.nx][at_one], 0.0)
        return -float(res.fun), res.x, loss

    def separate_cycles(self, v: np.ndarray,
                        max_cuts: int) -> list[tuple[np.ndarray, float, float]]:
        """Violated odd-cycle inequalities at the LP point ``v`` (see ``_cycle_cuts``)."""
        return _cycle_cuts(self, v, max_cuts)


@dataclass
class _MipResult:
    """What the passes read from one HiGHS MIP solve (the fields of scipy's
    ``OptimizeResult`` that the code used before, same meanings): ``status`` 0 optimal,
    1 time limit, 2 infeasible, 4 other; ``x`` None when HiGHS holds no feasible point;
    ``mip_dual_bound`` in the minimisation's sense."""

    status: int
    x: np.ndarray | None
    mip_node_count: int
    mip_gap: float | None
    mip_dual_bound: float | None
    message: str


_NO_HEURISTICS: dict[str, object] = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}
"""HiGHS options that switch its primal heuristics off. Used for pass 2's question "is
there another tie?", which is almost always an infeasibility proof, so heuristics only
cost time: measured at 200 candidates (bench instances, seeds 0/2/3) 7.6 -> 5.8 s,
4.8 -> 2.1 s, 0.2 -> 0.2 s. Pass 1 keeps them (its sub-MIP heuristics find the incumbent
that prunes the tree; without them pass 1 took 2-4x longer)."""

_HIGHS_BANNER_SHOWN = False


def _new_highs():
    """A silent ``highspy.Highs``. highspy prints a banner on C-level stdout when the first
    instance of a process is built (before any option can be set); that one construction
    runs with file descriptor 1 sent to /dev/null so ``--json`` output stays clean."""
    global _HIGHS_BANNER_SHOWN
    import os
    import sys

    import highspy

    if _HIGHS_BANNER_SHOWN:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _HIGHS_BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


def _highs_lp(c: np.ndarray, A: csr_array, row_lo: np.ndarray, row_hi: np.ndarray,
              col_lo: np.ndarray, col_hi: np.ndarray):
    """``highspy.HighsLp``: minimise ``c @ v`` s.t. row_lo <= A v <= row_hi (A row-wise
    CSR; -inf / inf are HiGHS's infinities), col_lo <= v <= col_hi."""
    import highspy

    nvar = len(c)
    lp = highspy.HighsLp()
    lp.num_col_ = nvar
    lp.num_row_ = A.shape[0]
    lp.sense_ = highspy.ObjSense.kMinimize
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_ = np.asarray(col_lo, dtype=float)
    lp.col_upper_ = np.asarray(col_hi, dtype=float)
    lp.row_lower_ = np.asarray(row_lo, dtype=float)
    lp.row_upper_ = np.asarray(row_hi, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = nvar
    lp.a_matrix_.num_row_ = A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    return lp


def _highs_milp(c: np.ndarray, A: csr_array, row_lo: np.ndarray, row_hi: np.ndarray,
                col_lo: np.ndarray, col_hi: np.ndarray, n_int: int,
                options: dict[str, object], start: np.ndarray | None = None) -> _MipResult:
    """Minimise ``c @ v`` s.t. row_lo <= A v <= row_hi, col_lo <= v <= col_hi, the first
    ``n_int`` columns integer, with HiGHS through ``highspy`` (``Highs.passModel``; same
    solver as ``scipy.optimize.milp``, which does not expose the heuristic options)."""
    import highspy

    h = _new_highs()
    for key, value in options.items():
        h.setOptionValue(key, value)
    nvar = len(c)
    lp = _highs_lp(c, A, row_lo, row_hi, col_lo, col_hi)
    lp.integrality_ = ([highspy.HighsVarType.kInteger] * n_int
                       + [highspy.HighsVarType.kContinuous] * (nvar - n_int))
    h.passModel(lp)
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = [float(v) for v in start]
        solution.value_valid = True
        h.setSolution(solution)
    h.run()
    model_status = h.getModelStatus()
    info = h.getInfo()
    has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value) if has_point else None
    S = highspy.HighsModelStatus
    if model_status == S.kOptimal:
        status = 0
    elif model_status in (S.kTimeLimit, S.kInterrupt):
        status = 1
    elif model_status in (S.kInfeasible, S.kUnboundedOrInfeasible):
        status, x = 2, None  # every variable is bounded: "or unbounded" cannot be
    else:
        status = 4
    bound = float(info.mip_dual_bound)
    return _MipResult(status, x, max(int(info.mip_node_count), 0),
                      float(info.mip_gap) if math.isfinite(info.mip_gap) else None,
                      bound if math.isfinite(bound) else None,
                      h.modelStatusToString(model_status))


def _rows_to_csr(coefs: Sequence[np.ndarray], ncols: int) -> csr_array:
    """Stack dense coefficient rows into a sparse matrix without a dense intermediate."""
    cols = [np.flatnonzero(c) for c in coefs]
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    data = np.concatenate([c[i] for c, i in zip(coefs, cols)]) if cols else np.zeros(0)
    return csr_array((data, indices, indptr), shape=(len(coefs), ncols))


def _cycle_cuts(model: _Model, v: np.ndarray, max_cuts: int,
                eps: float = 1e-6) -> list[tuple[np.ndarray, float, float]]:
    """Odd-cycle inequalities of the Boolean quadric polytope violated at ``v``.

    Through the covariance map (Padberg 1989; De Simone 1990) z_0i = x_i and
    z_ct = x_c + x_t - 2 x_c x_t are cut variables of the graph of pairs plus a node 0
    joined to every candidate; every cycle C and odd F ⊆ C give the cycle inequality
    Σ_F z_e - Σ_{C∖F} z_e <= |F| - 1 (Barahona & Mahjoub 1986). With y_ct for x_c x_t it is
    valid wherever y is the product, so at every integer x with its best y, and it cuts
    off the fractional points the pair rows allow. Separation is exact for the cycles
    through each node: a shortest path from (v, 0) to (v, 1) in the parity-doubled graph
    with weights z_e (parity kept) and 1 - z_e (parity flipped) shorter than 1 is a
    violated inequality (Barahona & Mahjoub 1986). Non-simple walks are skipped.
    Returns at most ``max_cuts`` rows (coefficients, low, high), most violated first.
    """
    nx = model.nx
    pairs = model.red.pairs
    n_nodes = nx + 1  # candidates, then node 0
    x = np.clip(v[:nx], 0.0, 1.0)
    pc = np.array([c for c, _, _ in pairs], dtype=np.int64)
    pt = np.array([t for _, t, _ in pairs], dtype=np.int64)
    y = v[nx: nx + len(pairs)]
    eu = np.concatenate([pc, np.full(nx, nx, dtype=np.int64)])
    ev = np.concatenate([pt, np.arange(nx, dtype=np.int64)])
    z = np.clip(np.concatenate([x[pc] + x[pt] - 2 * y, x]), 0.0, 1.0)
    tiny = 1e-9  # csgraph drops zero-weight edges
    graph = coo_array(
        (np.concatenate([z, z, 1 - z, 1 - z]) + tiny,
         (np.concatenate([eu, eu + n_nodes, eu, eu + n_nodes]),
          np.concatenate([ev, ev + n_nodes, ev + n_nodes, ev]))),
        shape=(2 * n_nodes, 2 * n_nodes),
    ).tocsr()
    sources = np.arange(n_nodes)
    dist, pred = dijkstra(graph, directed=False, indices=sources, return_predecessors=True)
    closing = dist[sources, sources + n_nodes]
    edge_of = {}
    for k in range(len(eu)):
        edge_of[(int(eu[k]), int(ev[k]))] = k
        edge_of[(int(ev[k]), int(eu[k]))] = k
    cuts: list[tuple[np.ndarray, float, float]] = []
    seen: set[frozenset[tuple[int, bool]]] = set()
    for s in sources[np.argsort(closing, kind="stable")]:
        if not closing[s] < 1.0 - eps or len(cuts) >= max_cuts:
            break
        walk = []
        node = int(s) + n_nodes
        while node != s:
            prev = int(pred[s, node])
            walk.append((prev, node))
            node = prev
        visited = [a % n_nodes for a, _ in walk]
        if len(set(visited)) != len(visited):
            continue
        signed = frozenset(
            (edge_of[(a % n_nodes, b % n_nodes)], (a >= n_nodes) != (b >= n_nodes))
            for a, b in walk
        )
        if signed in seen:
            continue
        seen.add(signed)
        coef = np.zeros(model.nvar)
        n_flipped = 0
        for k, flipped in signed:
            sign = 1.0 if flipped else -1.0
            n_flipped += flipped
            if k < len(pairs):
                c, t, _ = pairs[k]
                coef[c] += sign
                coef[t] += sign
                coef[nx + k] -= 2 * sign
            else:
                coef[k - len(pairs)] += sign
        cuts.append((coef, -np.inf, float(n_flipped - 1)))
    return cuts


@dataclass
class _Found:
    """A set the solver returned that passed the exact check."""

    chosen: tuple[int, ...]
    objective: float
    key: tuple


class _Search:
    """The three passes for one problem (see the module docstring)."""

    def __init__(self, problem: JointProblem, red: _Reduced, max_size: int | None,
                 deadline: float | None, tie_enumeration_cap: int,
                 cycle_cut_min_candidates: int = 0) -> None:
        self.problem = problem
        self.red = red
        self.max_size = max_size
        self.deadline = deadline
        self.cap = tie_enumeration_cap
        self.cut_min = cycle_cut_min_candidates
        self.root_lp: tuple[float, np.ndarray, np.ndarray] | None = None
        self.tie_bounds: tuple[np.ndarray, np.ndarray] | None = None
        self.n_fixed = 0
        self.model = _Model(red, problem, max_size)
        self.found: dict[tuple[int, ...], _Found] = {}
        self.timed_out = False
        self.gap: float | None = 0.0
        self.nodes = 0

    # -- helpers -----------------------------------------------------------------------
    def _time_left(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.perf_counter()

    def _record(self, chosen: tuple[int, ...]) -> _Found:
        if chosen not in self.found:
            self.found[chosen] = _Found(chosen, *self.red.score(self.problem, chosen))
        return self.found[chosen]

    def _cover_cut(self, chosen: tuple[int, ...], limit: str) -> None:
        """Cut off every set containing ``chosen``'s part that breaks ``limit``."""
        if limit in ("max_latency_ms", "max_cost_usd", "max_tools"):
            part = [i for i in chosen if i >= self.red.n_ctx]
        else:
            part = list(chosen)
        coef = np.zeros(self.model.nvar)
        coef[part] = 1.0
        self.model.add_cut(coef, -np.inf, len(part) - 1)

    def _run(self, c, extra=(), lb=None, ub=None, heuristics: bool = True, start=None):
        """Solve; return (chosen set or None if infeasible, result). Handles exact checks."""
        if self.tie_bounds is not None:
            lb = self.tie_bounds[0] if lb is None else np.maximum(lb, self.tie_bounds[0])
            ub = self.tie_bounds[1] if ub is None else np.minimum(ub, self.tie_bounds[1])
        while True:
            left = self._time_left()
            if left is not None and left <= 0:
                self.timed_out = True
                return None, None
            res = self.model.solve(c, extra, lb, ub, left, heuristics, start)
            self.nodes += int(res.mip_node_count or 0)
            if res.status == 1:
                self.timed_out = True
            if res.x is None:
                if res.status in (0, 2):  # infeasible: no set in this region
                    return None, res
                if res.status == 1:
                    return None, res
                raise SelectionError(
                    f"MILP solver failed on a {self.red.n_ctx}+"
                    f"{len(self.red.items) - self.red.n_ctx} candidate problem: "
                    f"status {res.status}, {res.message}"
                )
            chosen = tuple(int(i) for i in np.flatnonzero(res.x[: self.model.nx] > 0.5))
            broken = _fits(self.red, chosen, self.problem.budget, self.max_size)
            if broken is None:
                return chosen, res
            self._cover_cut(chosen, broken)

    def _objective_row(self, z: float) -> tuple[np.ndarray, float, float]:
        return self.model.obj, z - OBJECTIVE_TOLERANCE, np.inf

    def _best(self) -> float:
        return max(f.objective for f in self.found.values())

    # -- passes ------------------------------------------------------------------------
    def _root_cuts(self) -> None:
        """Rounds of LP relaxation + odd-cycle separation; the cuts stay for all passes.
        The last LP's bound and reduced costs are kept for ``_fix_for_ties``."""
        if self.model.nx < self.cut_min:
            return
        last = math.inf
        stop = None
        if self.deadline is not None:
            stop = time.perf_counter() + _CUT_TIME_SHARE * max(self._time_left(), 0.0)
        for _ in range(_CUT_ROUNDS):
            if stop is not None and time.perf_counter() >= stop:
                return
            lp = self.model.lp_bound(None if stop is None else stop - time.perf_counter())
            if lp is None:
                return
            self.root_lp = lp
            bound, point, _ = lp
            if bound > last - _CUT_STALL * max(1.0, abs(last)) or not self.red.pairs:
                return
            last = bound
            self._drop_slack_cuts(point)
            cuts = self.model.separate_cycles(point, max_cuts=self.model.nx + 1)
            if not cuts:
                return
            self.model.cuts.extend(cuts)

    def _drop_slack_cuts(self, point: np.ndarray) -> None:
        """Keep only the cuts tight at the LP point (fewer rows: faster node LPs)."""
        self.model.cuts = [(coef, low, high) for coef, low, high in self.model.cuts
                           if coef @ point >= high - 1e-6]

    def _fix_for_ties(self) -> None:
        """Reduced-cost fixing for the tie passes (every set they look for has objective
        >= z - tolerance): x_i keeps its root LP value 0 or 1 when leaving it would bring
        the LP bound below that (Nemhauser & Wolsey 1988, reduced-cost fixing)."""
        if self.root_lp is None:
            return
        bound, point, loss = self.root_lp
        z = self._best()
        margin = OBJECTIVE_TOLERANCE + 1e-6 * max(1.0, abs(z))  # HiGHS's dual tolerance
        fixed = bound - loss < z - margin
        lb = np.zeros(self.model.nvar)
        ub = np.ones(self.model.nvar)
        values = np.round(point[: self.model.nx])
        lb[: self.model.nx][fixed] = values[fixed]
        ub[: self.model.nx][fixed] = values[fixed]
        self.tie_bounds = (lb, ub)
        self.n_fixed = int(fixed.sum())

    def _incumbent(self) -> tuple[tuple[int, ...], np.ndarray] | None:
        """Pass 1's first incumbent: the root LP point (after the cut rounds) rounded at 1/2,
        repaired and improved by ``_local_search``; with its point (x, y = x_c·x_t) for
        ``Highs.setSolution``. None without a root LP (below ``cycle_cut_min_candidates``)."""
        if self.root_lp is None:
            return None
        nx = self.model.nx
        chosen = _local_search(self.red, self.problem.budget, self.max_size,
                               start=self.root_lp[1][:nx] > 0.5)
        point = np.zeros(self.model.nvar)
        point[list(chosen)] = 1.0
        for k, (c, t, _) in enumerate(self.red.pairs):
            point[nx + k] = point[c] * point[t]
        return chosen, point

    def run(self) -> tuple[tuple[int, ...], str, float | None]:
        self._root_cuts()
        incumbent = self._incumbent()
        if incumbent is None:
            chosen, res = self._run(-self.model.obj)
        else:
            # A row objective >= z0 - tolerance (z0: the incumbent's exact objective, so the
            # optimum lies in the row's region) plus the incumbent as HiGHS's start: 22% less
            # pass-1 time over 5 bench instances at 200 candidates, 2 runs each (64.9 s ->
            # 50.6 s; 4 of 5 instances faster). The row lets presolve and propagation use
            # the bound, which the start alone does not (start alone: no gain, measured).
            start_set, point = incumbent
            self._record(start_set)
            row = self._objective_row(self.found[start_set].objective)
            chosen, res = self._run(-self.model.obj, extra=[row], start=point)
            if chosen is None and not self.timed_out:
                chosen, res = self._run(-self.model.obj)  # numerically lost: ask without it
        if chosen is None:
            chosen = ()
        self._record(chosen)
        if self.timed_out:
            # Keep the best of HiGHS's set and the local searches'; gap against its bound.
            fallback = self._record(_local_search(self.red, self.problem.budget,
                                                  self.max_size))
            if incumbent is not None:
                fallback = max([fallback, self.found[incumbent[0]]],
                               key=lambda f: (f.objective, f.chosen))
            best = max([self.found[chosen], fallback], key=lambda f: (f.objective, f.chosen))
            gap = None
            if res is not None and res.mip_dual_bound is not None:
                bound = -float(res.mip_dual_bound)
                gap = max(bound - best.objective, 0.0) / max(abs(best.objective), 1e-9)
            return best.chosen, "time_limit", gap
        self.gap = float(res.mip_gap) if res is not None and res.mip_gap is not None else 0.0
        self._fix_for_ties()
        key_sets = self._pass_key(chosen)
        if len(key_sets) > 1 and not self.timed_out:
            self._pass_lex(key_sets)
        z = self._best()
        ties = [f for f in self.found.values() if f.objective >= z - OBJECTIVE_TOLERANCE]
        best = min(ties, key=lambda f: f.key)
        if self.timed_out:
            return best.chosen, "time_limit", 0.0
        return best.chosen, "optimal", self.gap

    def _key_of(self, chosen: tuple[int, ...]) -> int:
        """tokens·(N+1) + |S|: orders sets as the tie rule's first two levels."""
        return int(round(float(self.model.key[list(chosen)].sum()))) if chosen else 0

    def _exclude(self, chosen: tuple[int, ...]) -> tuple[np.ndarray, float, float]:
        """Row cutting off ``chosen``; valid where key <= key(chosen) (a superset of
        ``chosen`` has a larger key, so another set must miss one of its members)."""
        coef = np.zeros(self.model.nvar)
        coef[list(chosen)] = 1.0
        return coef, -np.inf, len(chosen) - 1

    def _key_rows(self, key: int) -> list[tuple[np.ndarray, float, float]]:
        return [self._objective_row(self._best()), (self.model.key, -np.inf, key + 0.5)]

    def _pass_key(self, first: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Pass 2: another tie with a key <= the best so far? Returns the sets found with
        the smallest key (one set: it is the only tie with that key)."""
        best = first
        key = self._key_of(best)
        if key == 0:
            return [best]  # the empty set: nothing else has key 0
        # Fast path: is there another set with a key <= key(best) and an objective within
        # tolerance of the best? Asked as a maximisation with a row on the objective
        # (measured faster than minimising the key, or than a pure feasibility problem).
        chosen, _ = self._run(-self.model.obj,
                              extra=[*self._key_rows(key), self._exclude(best)],
                              heuristics=False)
        if chosen is None:
            return [best]
        f = self._record(chosen)
        if f.objective >= self._best() - OBJECTIVE_TOLERANCE and self._key_of(chosen) < key:
            best = chosen
        # Ties or near ties: minimise the key under a row on the objective.
        while True:
            key = self._key_of(best)
            if key == 0:
                return [best]  # the empty set: nothing else has key 0
            rows = [*self._key_rows(key), self._exclude(best)]
            chosen, _ = self._run(self.model.key, extra=rows)
            if chosen is None:
                return [best]
            f = self._record(chosen)
            z = self._best()
            if f.objective < z - OBJECTIVE_TOLERANCE:
                self._no_good(chosen)  # within HiGHS's tolerance but not a tie
            elif f.objective > self.found[best].objective + OBJECTIVE_TOLERANCE:
                best = chosen  # pass 1 stopped within HiGHS's gap: go on from the better set
            elif self._key_of(chosen) < key:
                best = chosen
            else:
                return [best, chosen]

    def _no_good(self, chosen: tuple[int, ...]) -> None:
        coef = np.zeros(self.model.nvar)
        coef[: self.model.nx] = 1.0
        coef[list(chosen)] = -1.0
        self.model.add_cut(coef, 1.0 - len(chosen), np.inf)

    def _tie_rows(self) -> list[tuple[np.ndarray, float, float]]:
        return self._key_rows(self.key_value)

    def _pass_lex(self, seen: list[tuple[int, ...]]) -> None:
        """Pass 3: list the other sets with the smallest key (the final pick keeps the
        lexicographic smallest); past ``tie_enumeration_cap`` sets, fix ids instead."""
        self.key_value = self._key_of(seen[0])
        zero = np.zeros(self.model.nvar)
        for _ in range(self.cap):
            rows = [*self._tie_rows(), *(self._exclude(s) for s in seen)]
            chosen, _ = self._run(zero, extra=rows)
            if chosen is None or self.timed_out:
                return
            f = self._record(chosen)
            if f.objective < self._best() - OBJECTIVE_TOLERANCE:
                self._no_good(chosen)
                continue
            seen.append(chosen)
        self._lex_by_fixing()

    def _feasible(self, lb: np.ndarray, ub: np.ndarray,
                  rows: Sequence[tuple[np.ndarray, float, float]] = ()) -> bool:
        """Is there a verified tie with the smallest key inside the bounds and ``rows``?"""
        zero = np.zeros(self.model.nvar)
        while True:
            chosen, _ = self._run(zero, extra=[*self._tie_rows(), *rows], lb=lb, ub=ub)
            if chosen is None or self.timed_out:
                return False
            f = self._record(chosen)
            if f.objective >= self._best() - OBJECTIVE_TOLERANCE:
                return True
            self._no_good(chosen)

    def _lex_by_fixing(self) -> None:
        """Fix contexts, then tools, in id order: the lexicographic smallest tie.

        With the ids before position ``last`` fixed, either some tie has no further id of
        this kind (then none is added: a prefix sorts first), or the next id is the
        smallest i such that some tie holds an id in (last, i]: binary search on i.
        """
        nx = self.model.nx
        lb = np.zeros(self.model.nvar)
        ub = np.ones(self.model.nvar)
        for start, stop in ((0, self.red.n_ctx), (self.red.n_ctx, nx)):
            last = start - 1
            while True:
                trial = ub.copy()
                trial[last + 1: stop] = 0.0
                if self._feasible(lb, trial):
                    ub = trial
                    break
                if self.timed_out:
                    return
                low, high = last + 1, stop - 1
                while low < high:
                    mid = (low + high) // 2
                    coef = np.zeros(self.model.nvar)
                    coef[last + 1: mid + 1] = 1.0
                    if self._feasible(lb, ub, [(coef, 1.0, np.inf)]):
                        high = mid
                    else:
                        if self.timed_out:
                            return
                        low = mid + 1
                ub[last + 1: low] = 0.0
                lb[low] = 1.0
                last = low


class MilpJointSelector:
    """Exact maximiser of the joint objective with HiGHS (``highspy``).

    Same objective, budget limits (tokens, tool count, latency ms, cost USD), size cap and
    tie rule as ``ExactJointSelector``; model, reductions and the tie passes are in the
    module docstring. ``max_size`` overrides the problem's when given. ``time_limit_s``
    (seconds, ``None`` for none) bounds all passes together; when it is reached the
    selection is the best set found, with status ``time_limit`` and HiGHS's gap.
    ``tie_enumeration_cap`` (>= 0) bounds pass 3's listing of equal-key sets.
    ``cycle_cut_min_candidates``: root odd-cycle separation runs from this many candidates
    (after removal) up; 0 always, a huge number never.

    Raises ``ValueError`` on a negative ``time_limit_s`` or cap, ``SelectionError`` if
    HiGHS fails in a way other than infeasible or time limit (not expected: the empty set
    always fits).
    """

    name = "exact"

    def __init__(
        self,
        max_size: int | None = None,
        name: str = "exact",
        time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
        tie_enumeration_cap: int = 16,
        cycle_cut_min_candidates: int = CYCLE_CUT_MIN_CANDIDATES,
    ) -> None:
        check_selector_options(max_size=max_size, time_limit_s=time_limit_s)
        if tie_enumeration_cap < 0:
            raise ValueError(f"tie_enumeration_cap must be >= 0, got {tie_enumeration_cap}")
        self.max_size = max_size
        self.name = name
        self.time_limit_s = time_limit_s
        self.tie_enumeration_cap = tie_enumeration_cap
        self.cycle_cut_min_candidates = cycle_cut_min_candidates

    def select(self, problem: JointProblem) -> Selection:
        """Return the optimal ``Selection`` (the empty set when nothing fits or pays).

        ``subsets_examined`` holds the HiGHS branch-and-bound nodes of all passes;
        ``gap`` is HiGHS's relative gap of pass 1; ``solve_time_ms`` is wall time.
        """
        start = time.perf_counter()
        max_size = self.max_size if self.max_size is not None else problem.max_size
        red = _reduce(problem, max_size)
        status, gap, nodes = "optimal", 0.0, 0
        chosen: tuple[int, ...] = ()
        if red.items:
            deadline = None if self.time_limit_s is None else start + self.time_limit_s
            search = _Search(problem, red, max_size, deadline, self.tie_enumeration_cap,
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
