"""The MILP of a reduced problem and the rows added to it: the linearised model
(``Model``), odd-cycle cuts (``cycle_cuts``) and product rows (``product_rows``), shared by
the branch and cut (bnc.py and its parts) and the MILP reference (milp_reference.py).

The objective and the budget are those of ``junction.select.problem`` (reduction.py's
module docstring gives them); the model is built on ``reduction.reduce``'s candidates.

Model (``Model``; the standard linearisation of a product of binaries, Glover & Woolsey
1974; its LP is the McCormick envelope, Padberg 1989):

- one continuous y_ct in [0, 1] per context–tool pair with W_ct != 0 (pairs whose two
  orders cancel, e.g. w(c,t) = +1 and w(t,c) = -1, get no variable);
- W_ct > 0: y_ct <= x_c and y_ct <= x_t (maximisation pushes y_ct up to x_c·x_t);
- W_ct < 0: y_ct >= x_c + x_t - 1 (and y_ct >= 0 from its bound; maximisation pushes it
  down to x_c·x_t). The other two rows of each pair would be redundant and are left out.

Latency and cost rows are divided by their limits so that HiGHS's absolute tolerances are
relative to them. A point the solver returns can fit only within those tolerances; every
solver therefore re-checks its sets with ``Reduced.exceeded`` (the budget's arithmetic).

Odd-cycle cuts (``cycle_cuts``): the LP above is weak when interactions are dense (it puts
every x near the budget's fraction, earns min(x_c, x_t) on positive pairs and pays nothing
on negative ones); the odd-cycle inequalities of the Boolean quadric polytope close most
of that gap (figures in docs/measurement.md).

Product rows (``product_rows``): each limit row multiplied by one candidate's x, the
linear constraints behind the quadratic knapsack bounds of Caprara, Pisinger & Toth
(1999) and Billionnet & Soutif (2004). The McCormick LP lets every y_ct rise to
min(x_c, x_t), so a context can collect every pair it has as if all its partners fitted;
the product rows cap the partners a chosen candidate can have by the limits left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np
from scipy.sparse import coo_array, csr_array, vstack
from scipy.sparse.csgraph import dijkstra

from junction.resources import ToolResource
from junction.select.exact.highs import (
    NO_HEURISTICS,
    MipResult,
    SparseRows,
    highs_milp,
    rows_to_csr,
)
from junction.select.exact.reduction import BudgetArrays, Reduced
from junction.select.problem import JointProblem

__all__ = ["Model", "cycle_cuts", "product_rows"]


class Model:
    """The MILP of one reduced problem (module docstring): columns x (candidates, ``nx``)
    then y (one per pair of ``red.pairs``), ``nvar`` in all; ``obj`` (nvar,) the
    objective's coefficients; rows ``lo <= A v <= hi``; ``key`` (nvar,) tokens·(nx+1) + 1
    per x (orders sets as the tie rule's first two levels); ``cuts``: rows added later
    (coefficients, low, high), kept for every solve."""

    def __init__(self, red: Reduced, problem: JointProblem, max_size: int | None) -> None:
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
        built = SparseRows()
        add = built.add

        b = problem.budget
        tool_cols = range(red.n_ctx, nx)
        tools = cast("list[ToolResource]", red.items)  # items from n_ctx on: tools; read there
        if b.max_tokens is not None:
            add([(i, float(red.items[i].token_cost)) for i in range(nx)], -np.inf,
                b.max_tokens)
        if b.max_tools is not None:
            add([(i, 1.0) for i in tool_cols], -np.inf, b.max_tools)
        # Float limits are scaled to 1 so HiGHS's absolute tolerance is relative to them.
        if b.max_latency_ms is not None and b.max_latency_ms > 0:
            add([(i, tools[i].estimated_latency_ms / b.max_latency_ms)
                 for i in tool_cols], -np.inf, 1.0)
        if b.max_cost_usd is not None and b.max_cost_usd > 0:
            add([(i, tools[i].estimated_cost_usd / b.max_cost_usd) for i in tool_cols],
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
        self.A, self.lo, self.hi = built.matrix(self.nvar)
        self.integrality = np.zeros(self.nvar)
        self.integrality[:nx] = 1
        self.cuts: list[tuple[np.ndarray, float, float]] = []

    def add_cut(self, coef: np.ndarray, low: float, high: float) -> None:
        self.cuts.append((coef, low, high))

    def rows(self, extra: Sequence[tuple[np.ndarray, float, float]] = ()
             ) -> tuple[csr_array, np.ndarray, np.ndarray]:
        """(A, lo, hi): the model's rows, then its cuts, then ``extra`` rows."""
        rows = [*self.cuts, *extra]
        A, lo, hi = self.A, self.lo, self.hi
        if rows:
            A = vstack([A, rows_to_csr([r[0] for r in rows], self.nvar)], format="csr")
            lo = np.concatenate([lo, [r[1] for r in rows]])
            hi = np.concatenate([hi, [r[2] for r in rows]])
        return A, lo, hi

    def solve(
        self,
        c: np.ndarray,
        extra: Sequence[tuple[np.ndarray, float, float]] = (),
        lb: np.ndarray | None = None,
        ub: np.ndarray | None = None,
        time_limit: float | None = None,
        heuristics: bool = True,
        start: np.ndarray | None = None,
        node_limit: int | None = None,
        deadline: float | None = None,
    ) -> MipResult:
        """Minimise ``c @ v`` over the model plus cuts and ``extra`` rows with HiGHS
        (``highspy``), x integer. ``lb``/``ub``: column bounds (default 0/1);
        ``time_limit`` in seconds; ``node_limit``: HiGHS's ``mip_max_nodes``;
        ``heuristics=False`` switches HiGHS's primal heuristics off (``NO_HEURISTICS``);
        ``start``: a feasible point handed to HiGHS (``Highs.setSolution``) as its first
        incumbent; ``deadline``: see ``highs_milp``."""
        A, lo, hi = self.rows(extra)
        options: dict[str, object] = {"presolve": "on", "mip_rel_gap": 0.0}
        if not heuristics:
            options.update(NO_HEURISTICS)
        if time_limit is not None:
            options["time_limit"] = max(time_limit, 1e-3)
        if node_limit is not None:
            options["mip_max_nodes"] = node_limit
        return highs_milp(c, csr_array(A), lo, hi,
                           np.zeros(self.nvar) if lb is None else lb,
                           np.ones(self.nvar) if ub is None else ub,
                           self.nx, options, start, deadline)


def cycle_cuts(model: Model, v: np.ndarray, max_cuts: int,
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


def product_rows(model: Model, problem: JointProblem, max_size: int | None
                 ) -> tuple[csr_array, np.ndarray, np.ndarray]:
    """Limit rows multiplied by one candidate's x: rows ``lo <= A v <= hi`` over the
    model's columns (nvar); A (m, nvar) sparse, one row per (candidate, limit) that is not
    implied by the others.

    For a limit Σ_i a_i x_i <= b (a >= 0: visible tokens, tool count, latency ms, cost
    USD, set size) and a candidate j, multiplying by x_j >= 0 gives
    Σ_i a_i x_i x_j <= b x_j, valid at every integer point. With x_j² = x_j, x_i x_j = y_k
    for the pairs k of j that have a y column, and the other products (>= 0, their
    coefficients >= 0) dropped:

        Σ_{k ∋ j} a_{other end of k} · y_k + (a_j - b) · x_j <= 0.

    This is the first level of the reformulation-linearisation technique (Adams & Sherali
    1986) for the knapsack rows. For the quadratic knapsack problem (one token row,
    profits >= 0), the upper-plane bound of Gallo, Hammer & Simeone (1980) and the
    Lagrangian bound of Caprara, Pisinger & Toth (1999) are built on these rows: each
    candidate j earns its best pairs under the capacity it leaves (a knapsack per
    candidate, scaled by x_j), the pair weights shared between the two ends by
    multipliers on y_ij = y_ji. With continuous inner and outer knapsacks, the best
    multipliers give exactly the value of this LP (McCormick rows + product rows; LP
    duality); an outer knapsack solved in integers can only be tighter. Here every limit
    gets its rows, not only the tokens.

    Negative pair weights (which that literature does not cover): their y_k (pushed down
    to max(0, x_c + x_t - 1) by the objective) stay in the rows; the row then charges
    capacity for a negative pair only when the LP point forces its y up, which is valid
    and never looser. A row is left out when its y coefficients sum to at most b - a_j:
    it cannot change the LP's value then (y_k <= x_j holds for positive pairs, and a
    negative pair's y_k can be lowered to max(0, x_c + x_t - 1) <= x_j without lowering
    the objective, after which the row holds); tools get no tool-count,
    latency or cost rows (their pairs are with contexts, which use none of those).
    Rows are divided by b, so HiGHS's absolute tolerances are relative to the limit.
    """
    red = model.red
    nx = model.nx
    arrays = BudgetArrays.of(red, problem.budget, max_size)
    use, limits = arrays.use, arrays.limits
    incident: list[list[tuple[int, int]]] = [[] for _ in range(nx)]  # j -> (y column, other)
    for k, (c, t, _) in enumerate(red.pairs):
        incident[c].append((nx + k, t))
        incident[t].append((nx + k, c))
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    m = 0
    for r in range(use.shape[1]):
        b = limits[r]
        if not math.isfinite(b) or b <= 0:
            continue
        for j in range(nx):
            a = use[:, r]
            entries = [(col, a[other]) for col, other in incident[j] if a[other] > 0]
            if not entries or sum(v for _, v in entries) <= b - a[j] + 1e-9 * b:
                continue
            for col, v in entries:
                rows.append(m)
                cols.append(col)
                vals.append(v / b)
            rows.append(m)
            cols.append(j)
            vals.append((a[j] - b) / b)
            m += 1
    A = csr_array((vals, (rows, cols)), shape=(m, model.nvar))
    return A, np.full(m, -np.inf), np.zeros(m)
