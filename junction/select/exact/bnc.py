"""Exact joint selection by a dedicated branch and cut over HiGHS linear programs.

Same objective, budget rows, size cap and tie rule as ``junction.select.problem`` and
``EnumerationJointSelector``; the model of ``kernel.Model`` (one binary x per candidate,
one y_ct per context–tool pair with W_ct != 0, McCormick rows by the sign of W_ct, the
budget rows, the optional size row; candidates that never fit or never pay removed first
by ``kernel.reduce``). HiGHS solves only linear programs here (``_NodeLP``: dual simplex,
presolve off, warm-started from the previous LP's basis), and this module does the rest.
(junction/select/exact/milp_reference.py hands the same model to HiGHS's own branch and cut instead;
comparison in bench/README.md.)

1. Root: the product rows (``kernel.product_rows``: every limit row times each x_j, the
   rows behind the quadratic knapsack bounds of Gallo, Hammer & Simeone 1980 and
   Caprara, Pisinger & Toth 1999) join the model for the whole search (``product_rows``
   option; the first root LP by interior point from ``_ROOT_IPM_MIN_COLUMNS`` columns
   up), then rounds of LP + exact odd-cycle separation (``kernel.cycle_cuts``; valid
   for every integer point, so the cuts stay in every node's LP) until the bound falls by
   less than ``_ROOT_STALL`` (relative) or ``_ROOT_WORK_SHARE`` of the work limit is spent; cuts
   slack at the last root LP are deleted. Incumbents: greedy insertion from the empty set
   and the root point rounded at 1/2, each improved by flips and swaps
   (``kernel.local_search``), and RENS (the MILP with the root's integral x fixed, solved by
   HiGHS within ``_RENS_NODES`` nodes). If a limit stops the root LP, the greedy set is
   returned (gap None). Unless the root LP's x is integral (then the tie split below
   settles the tree in a node or two), variable fixing by bounds (``_Tree._probe``, the
   ``probing`` option): reduced costs first, then one root LP per x that is integral at
   the root with that x flipped, each stopped at the cutoff or after
   ``_PROBE_ITERATIONS``; an x whose flipped LP is below the cutoff is fixed for the
   whole search (the fixing step of Pisinger, Rasmussen & Sandvik 2007, with LP bounds).
2. Depth-first branch and bound on the x columns. A node is pruned when its LP bound is
   below the cutoff ``z* - OBJECTIVE_TOLERANCE - margin`` (z*: the best exact objective
   found; margin = 1e-6 · max(s, |z*|), HiGHS's optimality tolerance, where s = min(1,
   max |score|) and the LP's costs are divided by s so that HiGHS's absolute tolerances
   never exceed the scores; so LP round-off cannot prune a tie); each node LP is stopped as soon as the dual
   simplex proves it below the cutoff (HiGHS's ``objective_bound``). Reduced-cost fixing
   at each node (Nemhauser & Wolsey 1988, §II.5). Branching: reliability branching
   (``_Tree._pick``). Every 16th node the LP point seeds another local search.
3. Ties inside the tree: the cutoff keeps every set within the tolerance of z* alive, so
   all ties reach a leaf. At a node whose LP point is integral (its set S, checked exactly
   in Python: ``Reduced.exceeded``, objective with ``math.fsum``), every other set in
   the node differs from S in a free x that reduced-cost fixing could not fix. For those
   x_1..x_k the node is split into {S} and k children "x_1..x_{j-1} as in S, x_j
   flipped", so every set in the node is examined once. The pick is the smallest tie key
   (tokens, size, context ids, tool ids) among the sets within the tolerance of the best,
   as in ``junction.select.problem``; no second pass.

A rounded LP point that breaks a limit in exact arithmetic (LP tolerance) is branched on
its free member with the largest use of that limit. (Variants tried and dropped:
bench/README.md.)

Status: ``optimal`` when the tree is exhausted; ``work_limit`` when the work limit (simplex
iterations summed over every LP of the search, HiGHS's own count) stopped it, with the
best set found and gap (bound - objective) / max(|objective|, 1e-9), bound = the largest
LP bound of an open node (None if the root LP did not finish); ``stopped_by_clock``, same
fields, when the wall-clock safety net did (or cut short the RENS solve of a search the
work limit then stopped). Deterministic: every stop rule but the clock counts work (LP
iterations, RENS nodes), and HiGHS's dual simplex is deterministic and single-threaded
here, so the set, status, gap and node count repeat on any machine at any load unless
the status is ``stopped_by_clock``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from junction.errors import SelectionError
from junction.select.exact.highs import highs_lp, new_highs, rows_to_csr
from junction.select.exact.kernel import (
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_WORK_LIMIT,
    LIMIT_COLUMNS,
    BudgetArrays,
    Model,
    Reduced,
    ReducingSelector,
    cycle_cuts,
    local_search,
    product_rows,
)
from junction.select.problem import (
    OBJECTIVE_TOLERANCE,
    JointProblem,
    Selection,
    check_selector_options,
    make_selection,
)

__all__ = ["BranchAndCutJointSelector", "ROOT_CUT_MIN_CANDIDATES", "root_bounds"]

ROOT_CUT_MIN_CANDIDATES = 0
"""Root odd-cycle separation runs from this many candidates (after removal) up."""

_EPS = 1e-6
"""An x within this of 0 or 1 counts as integral (HiGHS's MIP feasibility tolerance)."""
_ROOT_ROUNDS = 60
"""At most this many rounds of root separation."""
_ROOT_STALL = 1e-4
"""Stop root separation when a round lowers the bound by less than this (relative)."""
_ROOT_WORK_SHARE = 0.3
"""Share of the work limit (simplex iterations) root separation may use (the rest goes
to the tree)."""
_RENS_NODES = 200
"""Node limit of the RENS sub-MIP (HiGHS's ``mip_max_nodes``: deterministic)."""
_HIGHS_INT_MAX = 2**31 - 1
"""HiGHS's integer options are C ints."""
_RELIABLE = 1
"""Pseudo-costs of an x count as reliable after this many observations per direction
(HiGHS uses 8; why 1: bench/README.md)."""
_ROOT_IPM_MIN_COLUMNS = 5000
"""The first root LP is solved by interior point (with crossover) from this many columns
up (``gallo`` at 200 candidates, Δ = 0.5, has about 5,200; timings in bench/README.md)."""
_PROBE_ITERATIONS = 100
"""Simplex iterations one probing LP may take (``_Tree._probe``); past it the x stays
free."""
_PROBE_SHARE = 0.1
"""Share of the work limit probing may use before the search."""
_LOOKAHEAD = 8
"""Stop evaluating branching candidates after this many without a better score."""


class _NodeLP:
    """The model's LP relaxation (plus cuts) in one ``highspy.Highs``, re-solved per node
    with new x bounds; HiGHS keeps the last basis, so each solve is warm-started."""

    def __init__(self, model: Model) -> None:
        self.nx = model.nx
        self.nvar = model.nvar
        h = new_highs()
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)  # dual simplex: bound changes keep dual feasibility
        # Costs below 1 scaled up to max |c| = 1: HiGHS's tolerances (1e-7) are absolute, so
        # scores of 1e-7 would otherwise drown in them (found by fuzzing); values are
        # scaled back. Larger costs are left alone (slower; bench/README.md).
        obj = np.asarray(model.obj, dtype=float)
        top = float(np.abs(obj).max()) if obj.size else 0.0
        self.scale = top if 0.0 < top < 1.0 else 1.0
        # Minimise -objective: HiGHS's dual simplex honours ``objective_bound`` (stop once
        # the LP value is proven worse than the cutoff) for minimisation only (tried).
        h.passModel(highs_lp(-obj / self.scale, model.A, model.lo, model.hi,
                              np.zeros(self.nvar), np.ones(self.nvar)))
        self.h = h
        self._cols = np.arange(self.nx, dtype=np.int32)
        self.cuts: list[tuple[np.ndarray, float, float]] = []
        self.base_rows = model.A.shape[0]
        """Rows before the first cut: the model's, then ``add_base_rows``'s."""
        self.iterations = 0
        """Simplex iterations of every ``solve`` so far (HiGHS's ``simplex_iteration_count``)."""

    def add_rows(self, rows: list[tuple[np.ndarray, float, float]], keep: bool = True) -> None:
        """Append rows (dense coefficients, low, high); ``keep``: record them as cuts (a
        row not kept must be removed with ``delete_last_row`` before the next add)."""
        if not rows:
            return
        if keep:
            self.cuts.extend(rows)
        mat = rows_to_csr([r[0] for r in rows], self.nvar)
        self.h.addRows(len(rows), np.array([r[1] for r in rows], dtype=float),
                       np.array([r[2] for r in rows], dtype=float), int(mat.nnz),
                       mat.indptr[:-1].astype(np.int32), mat.indices.astype(np.int32),
                       mat.data.astype(float))

    def add_base_rows(self, A, lo: np.ndarray, hi: np.ndarray) -> None:
        """Append rows given as a sparse matrix (m, nvar), kept for every later solve and
        never dropped (``drop_slack_cuts`` starts after them); call before any cut."""
        if A.shape[0] == 0:
            return
        A = A.tocsr()
        self.h.addRows(A.shape[0], np.asarray(lo, dtype=float), np.asarray(hi, dtype=float),
                       int(A.nnz), A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32),
                       A.data.astype(float))
        self.base_rows += A.shape[0]

    def delete_last_row(self) -> None:
        last = self.h.getNumRow() - 1
        self.h.deleteRows(1, np.array([last], dtype=np.int32))

    def drop_slack_cuts(self, first: int) -> None:
        """Delete the cut rows (row ``first`` on) that are not tight at the last LP point:
        fewer rows, cheaper simplex iterations in every node after the root."""
        values = np.array(self.h.getSolution().row_value)
        rows = np.arange(first, len(values))
        slack = np.array([values[r] < self.cuts[r - first][2] - 1e-6 for r in rows], dtype=bool)
        if slack.any():
            drop = rows[slack].astype(np.int32)
            self.h.deleteRows(len(drop), drop)
            self.cuts = [c for c, s in zip(self.cuts, slack) if not s]

    def solve(self, lb: np.ndarray, ub: np.ndarray, time_left: float | None,
              cutoff: float = -math.inf, iterations_left: float = math.inf,
              method: str = "simplex") -> tuple[str, float, np.ndarray, np.ndarray]:
        """("optimal" | "infeasible" | "cutoff" | "work_limit" | "time_limit", value,
        point, |reduced cost| of x), value and reduced costs in the objective's units.
        "cutoff": the dual simplex proved the LP value below ``cutoff`` (HiGHS's
        ``objective_bound``) and stopped early; "work_limit": ``iterations_left`` simplex
        iterations were spent first (HiGHS's ``simplex_iteration_limit``, deterministic);
        "time_limit": ``time_left`` seconds were (the clock: a safety net). Raises
        ``SelectionError`` if HiGHS fails twice (from the warm basis, then from scratch)
        in a way other than these. ``method="ipm"``: interior point with crossover (a
        basis for the next warm start; its iterations and the crossover's count as work
        too, as ``iterations``), for the first root LP of a large model."""
        h = self.h
        h.setOptionValue("solver", method)
        h.changeColsBounds(self.nx, self._cols, lb.astype(float), ub.astype(float))
        h.setOptionValue("objective_bound", -cutoff / self.scale)
        # HiGHS's time limit is on its own clock, which runs on across ``run`` calls.
        limit = math.inf if time_left is None else h.getRunTime() + max(time_left, 1e-3)
        h.setOptionValue("time_limit", limit)
        h.setOptionValue("simplex_iteration_limit",
                         int(min(max(iterations_left, 0), _HIGHS_INT_MAX)))
        h.run()
        info = h.getInfo()
        self.iterations += max(int(info.simplex_iteration_count), 0)
        if method != "simplex":
            self.iterations += max(int(info.ipm_iteration_count), 0) + max(
                int(info.crossover_iteration_count), 0)
            h.setOptionValue("solver", "simplex")
        result = self._result()
        if result is None:  # numerical trouble: once more from scratch
            h.clearSolver()
            h.run()
            self.iterations += max(int(h.getInfo().simplex_iteration_count), 0)
            result = self._result()
        if result is None:
            raise SelectionError(
                f"HiGHS failed on a node LP: {h.modelStatusToString(h.getModelStatus())}")
        return result

    def _result(self) -> tuple[str, float, np.ndarray, np.ndarray] | None:
        import highspy

        h = self.h
        status = h.getModelStatus()
        S = highspy.HighsModelStatus
        empty = np.zeros(0)
        if status == S.kOptimal:
            sol = h.getSolution()
            d = np.abs(np.array(sol.col_dual)[: self.nx]) * self.scale
            return ("optimal", -float(h.getInfo().objective_function_value) * self.scale,
                    np.array(sol.col_value), d)
        if status == S.kObjectiveBound:
            return "cutoff", -math.inf, empty, empty
        if status in (S.kInfeasible, S.kUnboundedOrInfeasible):
            return "infeasible", -math.inf, empty, empty
        if status == S.kIterationLimit:
            return "work_limit", math.inf, empty, empty
        if status in (S.kTimeLimit, S.kInterrupt):
            return "time_limit", math.inf, empty, empty
        return None


@dataclass
class _Node:
    lb: np.ndarray
    ub: np.ndarray
    bound: float  # the parent's LP bound: valid for every set in this node
    var: int = -1  # the branching that made this node: x_var fixed to ``up``
    up: int = 0
    frac: float = 0.0  # x_var in the parent's LP point


class _Tree:
    """One problem's branch and cut (see the module docstring)."""

    def __init__(self, problem: JointProblem, red: Reduced, max_size: int | None,
                 deadline: float | None, root_cut_min: int,
                 work_limit: int | None = None, products: bool = True,
                 probe_share: float = _PROBE_SHARE) -> None:
        self.problem = problem
        self.red = red
        self.max_size = max_size
        self.deadline = deadline
        self.work_limit = math.inf if work_limit is None else work_limit
        self.stopped: str | None = None  # "work_limit" or "stopped_by_clock"
        self.clock_touched = False  # the clock cut a RENS solve short
        self.root_cut_min = root_cut_min
        self.products = products
        self.probe_share = probe_share
        self.probe_fixed = 0
        self.trace: dict[str, float] = {}
        """Root bounds and their cost: ``lp`` (the first LP's value), ``lp_s``, then
        ``cuts`` / ``cuts_s`` after odd-cycle separation (seconds from the root's start),
        ``cuts_stopped`` 1.0 when a limit stopped a separation round (``cuts`` is then the
        last finished round's bound)."""
        self.model = Model(red, problem, max_size)
        self.lp = _NodeLP(self.model)
        self.nx = self.model.nx
        self.found: dict[tuple[int, ...], tuple[float, tuple]] = {}
        self.z = -math.inf
        self.nodes = 0
        self.pc_down = np.zeros(self.nx)
        self.pc_up = np.zeros(self.nx)
        self.pc_down_n = np.zeros(self.nx)
        self.pc_up_n = np.zeros(self.nx)
        self.arrays = BudgetArrays.of(red, problem.budget, max_size)

    # -- bookkeeping -------------------------------------------------------------------
    def _time_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()

    def _solve(self, lb: np.ndarray, ub: np.ndarray, cutoff: float = -math.inf,
               method: str = "simplex") -> tuple[str, float, np.ndarray, np.ndarray]:
        """``_NodeLP.solve`` within the simplex iterations and the clock left."""
        return self.lp.solve(lb, ub, self._time_left(), cutoff,
                             iterations_left=self.work_limit - self.lp.iterations,
                             method=method)

    def _out_of_work(self) -> bool:
        """Is the work limit spent or the clock run out? Sets ``stopped`` if so."""
        if self.lp.iterations >= self.work_limit:
            self.stopped = "work_limit"
        left = self._time_left()
        if left is not None and left <= 0:
            self.stopped = "stopped_by_clock"
        return self.stopped is not None

    def _stop(self, lp_status: str) -> None:
        """Record why an LP stopped short (``work_limit`` or ``time_limit``)."""
        self.stopped = "work_limit" if lp_status == "work_limit" else "stopped_by_clock"

    def _record(self, chosen: tuple[int, ...]) -> None:
        """Exact objective and tie key of a set that fits (checked by the caller)."""
        if chosen in self.found:
            return
        self.found[chosen] = self.red.score(self.problem, chosen)
        self.z = max(self.z, self.found[chosen][0])

    def _cutoff(self) -> float:
        """Prune below this: the tie tolerance plus HiGHS's optimality tolerance (1e-6
        relative to the larger of |z*| and the cost scale of the LP)."""
        return self.z - OBJECTIVE_TOLERANCE - 1e-6 * max(self.lp.scale, abs(self.z))

    def _heuristic(self, x: np.ndarray) -> None:
        """Round the point ``x`` at 1/2, repair, then improving flips and swaps
        (``kernel.local_search``); record the set if it fits exactly."""
        self._record(local_search(self.red, self.problem.budget, self.max_size,
                                   start=x[: self.nx] > 0.5, swaps=True, arrays=self.arrays))

    def _rens(self, point: np.ndarray) -> None:
        """RENS (Berthold 2014): the MILP with every x that is integral in the root LP fixed
        to its value, solved by HiGHS; its set seeds ``_heuristic``. HiGHS stops it after
        ``_RENS_NODES`` nodes (deterministic) or when the clock runs out (noted in
        ``clock_touched``)."""
        x = point[: self.nx]
        frac = (x > _EPS) & (x < 1 - _EPS)
        if not frac.any():
            return
        lb = np.zeros(self.model.nvar)
        ub = np.ones(self.model.nvar)
        lb[: self.nx][x >= 1 - _EPS] = 1.0
        ub[: self.nx][x <= _EPS] = 0.0
        left = self._time_left()
        limit = None if left is None else max(left, 0.0)
        res = self.model.solve(-self.model.obj, lb=lb, ub=ub, time_limit=limit,
                               node_limit=_RENS_NODES)
        self.clock_touched |= res.status == 1
        if res.x is not None:
            self._heuristic(res.x)

    def best(self) -> tuple[int, ...]:
        ties = [(key, chosen) for chosen, (obj, key) in self.found.items()
                if obj >= self.z - OBJECTIVE_TOLERANCE]
        return min(ties)[1]

    # -- root --------------------------------------------------------------------------
    def _root(self) -> tuple[str, float, np.ndarray, np.ndarray]:
        began = time.perf_counter()
        lb, ub = np.zeros(self.nx), np.ones(self.nx)
        if self.products and self.red.pairs:
            self.lp.add_base_rows(*product_rows(self.model, self.problem, self.max_size))
        res = self._solve(lb, ub, method="ipm" if self.model.nvar >= _ROOT_IPM_MIN_COLUMNS
                          else "simplex")
        self.trace.update(lp=res[1], lp_s=time.perf_counter() - began)
        if self.nx < self.root_cut_min or not self.red.pairs or res[0] != "optimal":
            return res
        stop = _ROOT_WORK_SHARE * self.work_limit
        for _ in range(_ROOT_ROUNDS):
            if self.lp.iterations >= stop:
                break
            cuts = cycle_cuts(self.model, res[2], max_cuts=self.nx + 1)
            if not cuts:
                break
            self.lp.add_rows(cuts)
            new = self._solve(lb, ub)
            if new[0] != "optimal":
                self.trace.update(cuts=res[1], cuts_s=time.perf_counter() - began,
                                  cuts_stopped=1.0)
                return new
            stalled = new[1] > res[1] - _ROOT_STALL * max(1.0, abs(res[1]))
            res = new
            if stalled:
                break
        self.trace.update(cuts=res[1], cuts_s=time.perf_counter() - began, cuts_stopped=0.0)
        self.lp.drop_slack_cuts(self.lp.base_rows)
        return self._solve(lb, ub)

    # -- search ------------------------------------------------------------------------
    def run(self) -> tuple[tuple[int, ...], str, float | None]:
        self._record(())  # the empty set always fits
        res = self._root()
        if res[0] in ("work_limit", "time_limit"):
            # No LP bound yet: the greedy + local-search set, gap unknown.
            self._stop(res[0])
            self._heuristic(np.zeros(self.model.nvar))
            return self.best(), self._status(), None
        if res[0] == "optimal":
            self._heuristic(np.zeros(self.model.nvar))  # greedy from the empty set
            self._heuristic(res[2])
            self._rens(res[2])
        stack = [_Node(np.zeros(self.nx), np.ones(self.nx),
                       res[1] if res[0] == "optimal" else math.inf)]
        first = res
        if res[0] == "optimal" and self.probe_share > 0:
            x = res[2][: self.nx]
            if np.any((x > _EPS) & (x < 1 - _EPS)):
                lb, ub = self._probe(res[1], res[2], res[3])
                if (lb > 0.5).any() or (ub < 0.5).any():
                    stack = self._restrict(stack, lb, ub)
                    first = None
        while stack:
            node = stack.pop()
            if node.bound < self._cutoff():
                continue
            if self._out_of_work():
                stack.append(node)
                break
            if first is not None:
                status, value, point, d = first
                first = None
            else:
                status, value, point, d = self._solve(node.lb, node.ub, self._cutoff())
            self.nodes += 1
            if status in ("work_limit", "time_limit"):
                stack.append(node)
                self._stop(status)
                break
            if status == "optimal":
                self._learn(node, value)
            elif status == "cutoff":
                self._learn(node, self._cutoff())
            if status in ("infeasible", "cutoff") or value < self._cutoff():
                continue
            self._branch(node, value, point, d, stack)
        if self.stopped is not None:
            bound = max((n.bound for n in stack), default=self.z)
            gap = max(bound - self.z, 0.0) / max(abs(self.z), 1e-9)
            return self.best(), self._status(), (None if math.isinf(gap) else gap)
        return self.best(), "optimal", 0.0

    @staticmethod
    def _restrict(stack: list[_Node], lb: np.ndarray, ub: np.ndarray) -> list[_Node]:
        """The open nodes with the global fixings (lb, ub) applied; nodes that the fixings
        leave empty (some lb > ub) are dropped."""
        out = []
        for node in stack:
            nlb, nub = np.maximum(node.lb, lb), np.minimum(node.ub, ub)
            if np.all(nlb <= nub):
                out.append(_Node(nlb, nub, node.bound, node.var, node.up, node.frac))
        return out

    def _probe(self, value: float, point: np.ndarray, d: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Variable fixing by bounds before the search (probing; Savelsbergh 1994, and the
        fixing step of Pisinger, Rasmussen & Sandvik 2007): x_i is fixed to its root value
        v when the root LP (McCormick rows, product rows, root cuts, earlier fixings) with
        x_i = 1 - v is below the cutoff, so no set within the tie tolerance of the best
        has x_i = 1 - v. First by reduced cost (value - d_i below the cutoff), then by one
        LP per x integral at the root, largest d_i first, each stopped after
        ``_PROBE_ITERATIONS`` simplex iterations (then x_i stays free) and all of them
        after ``probe_share`` of the work limit. Returns the global (lb, ub) of x."""
        x = point[: self.nx]
        lb, ub = np.zeros(self.nx), np.ones(self.nx)
        low, high = x <= _EPS, x >= 1 - _EPS
        hopeless = value - d < self._cutoff()
        ub[low & hopeless] = 0.0
        lb[high & hopeless] = 1.0
        budget = self.lp.iterations + self.probe_share * min(self.work_limit, _HIGHS_INT_MAX)
        order = np.flatnonzero((low | high) & ~hopeless)
        order = order[np.lexsort((order, -d[order]))]
        for i in order:
            left = min(budget, self.work_limit) - self.lp.iterations
            if left <= 0 or self._out_of_work():
                break
            t_lb, t_ub = lb.copy(), ub.copy()
            t_lb[i] = t_ub[i] = 0.0 if high[i] else 1.0
            status, v, _, _ = self.lp.solve(t_lb, t_ub, self._time_left(), self._cutoff(),
                                            iterations_left=min(left, _PROBE_ITERATIONS))
            if status == "time_limit":
                self._stop(status)
                break
            if status in ("infeasible", "cutoff") or (status == "optimal"
                                                        and v < self._cutoff()):
                lb[i] = ub[i] = 1.0 if high[i] else 0.0
        self.probe_fixed = int((lb > 0.5).sum() + (ub < 0.5).sum())
        return lb, ub

    def _status(self) -> str:
        """The status of a search cut short: ``work_limit`` (deterministic) unless the
        clock had a hand in it (it stopped the tree, or cut the RENS solve that seeded
        the incumbents): then ``stopped_by_clock``."""
        if self.stopped == "work_limit" and not self.clock_touched:
            return "work_limit"
        return "stopped_by_clock"

    def _branch(self, node: _Node, value: float, point: np.ndarray, d: np.ndarray,
                stack: list[_Node]) -> None:
        x = point[: self.nx]
        lb, ub = node.lb.copy(), node.ub.copy()
        free = (lb < 0.5) & (ub > 0.5)
        low = x <= _EPS
        high = x >= 1 - _EPS
        frac = free & ~low & ~high
        if frac.any():
            if self.nodes <= 1 or self.nodes % 16 == 0:
                self._heuristic(point)
            self._fix(value, x, d, lb, ub, free)
            picked = self._pick(np.flatnonzero(frac), x, lb, ub, value)
            if picked is None:
                return  # strong branching cut off both children of some x
            if picked < 0:
                stack.append(_Node(lb, ub, value))  # strong branching fixed some x: again
                return
            self._push_pair(stack, lb, ub, picked, x[picked], bound=value)
            return
        chosen = tuple(int(i) for i in np.flatnonzero(x > 0.5))
        broken = self.red.exceeded(chosen, self.problem.budget, self.max_size)
        if broken is not None:
            members = [i for i in chosen if free[i]]
            if not members:
                return  # every member fixed: no set in this node fits exactly
            use = self.arrays.use[:, LIMIT_COLUMNS.index(broken)]
            i = max(members, key=lambda k: (use[k], -k))
            self._push_pair(stack, lb, ub, i, 0.0, bound=value)
            return
        self._record(chosen)
        self._fix(value, x, d, lb, ub, free)
        open_ = np.flatnonzero((lb < 0.5) & (ub > 0.5))
        if not len(open_) or self._no_other_set(lb, ub, x, open_):
            return
        # Split the node into {chosen} and "open_[:j] as in chosen, open_[j] flipped".
        pushed = []
        for j, i in enumerate(open_):
            clb, cub = lb.copy(), ub.copy()
            agree = open_[:j]
            clb[agree] = np.round(x[agree])
            cub[agree] = np.round(x[agree])
            flipped = 1.0 - round(float(x[i]))
            clb[i] = cub[i] = flipped
            pushed.append(_Node(clb, cub, value - d[i]))
        stack.extend(reversed(pushed))

    def _no_other_set(self, lb: np.ndarray, ub: np.ndarray, x: np.ndarray,
                      open_: np.ndarray) -> bool:
        """One LP instead of the split: the node plus the row "differ from the set in at
        least one open x" (Σ_{x_i=0} x_i + Σ_{x_i=1} (1 - x_i) >= 1 over the open x; a
        local-branching row, Fischetti & Lodi 2003). True if that LP is below the cutoff
        or infeasible: no other set in the node can tie. The row is deleted afterwards."""
        ones = np.round(x[open_]) > 0.5
        coef = np.zeros(self.model.nvar)
        coef[open_] = np.where(ones, -1.0, 1.0)
        self.lp.add_rows([(coef, 1.0 - float(ones.sum()), math.inf)], keep=False)
        status, value, _, _ = self._solve(lb, ub, self._cutoff())
        self.lp.delete_last_row()
        self.nodes += 1
        return status in ("infeasible", "cutoff") or (
            status == "optimal" and value < self._cutoff())

    def _fix(self, value: float, x: np.ndarray, d: np.ndarray, lb: np.ndarray,
             ub: np.ndarray, free: np.ndarray) -> None:
        """Reduced-cost fixing in place: flipping x_i lowers the bound by >= d_i."""
        hopeless = free & (value - d < self._cutoff())
        ub[hopeless & (x <= _EPS)] = 0.0
        lb[hopeless & (x >= 1 - _EPS)] = 1.0

    def _pick(self, frac: np.ndarray, x: np.ndarray, lb: np.ndarray, ub: np.ndarray,
              value: float) -> int | None:
        """Branching variable by reliability branching (Achterberg, Koch & Martin 2005):
        pseudo-cost scores (bound drop per unit change down and up, product rule), with
        both children LPs solved ("strong branching", stopped at the cutoff) for
        candidates branched on fewer than ``_RELIABLE`` times, at most ``_LOOKAHEAD``
        of them without a better score. A strong-branching child below the cutoff fixes
        the x the other way in ``lb``/``ub``; returns -1 if it fixed any (solve the node
        again), None if both children of one x are below the cutoff (the node is empty),
        else the index to branch on. Ties: the more fractional, then the smaller index."""
        score = self._pc_score(frac, x)
        order = frac[np.lexsort((frac, np.abs(x[frac] - 0.5), -score))]
        best, best_score, stale, fixed = int(order[0]), -1.0, 0, False
        rank = {int(i): k for k, i in enumerate(order)}
        for i in order:
            i = int(i)
            if min(self.pc_down_n[i], self.pc_up_n[i]) >= _RELIABLE:
                sc = float(score[np.searchsorted(frac, i)])
            else:
                cut = self._cutoff()
                t = ub.copy()
                t[i] = 0.0
                down = self._child_value(lb, t, cut)
                t = lb.copy()
                t[i] = 1.0
                up = self._child_value(t, ub, cut)
                for v, side, change in ((down, 0, x[i]), (up, 1, 1 - x[i])):
                    self._learn_one(i, side, max(value - max(v, cut), 0.0) / change)
                if down < cut and up < cut:
                    return None
                if down < cut or up < cut:
                    lb[i] = 1.0 if down < cut else lb[i]
                    ub[i] = 0.0 if up < cut else ub[i]
                    fixed = True
                    continue
                sc = max(value - down, 1e-6) * max(value - up, 1e-6)
            if sc > best_score or (sc == best_score and rank[i] < rank[best]):
                best, best_score, stale = i, sc, 0
            else:
                stale += 1
                if stale >= _LOOKAHEAD:
                    break
        return -1 if fixed else best

    def _child_value(self, lb: np.ndarray, ub: np.ndarray, cut: float) -> float:
        status, v, _, _ = self._solve(lb, ub, cut)
        if status == "optimal":
            return v
        if status in ("work_limit", "time_limit"):
            return math.inf  # no bound known
        return -math.inf  # infeasible or stopped at the cutoff

    def _pc_score(self, frac: np.ndarray, x: np.ndarray) -> np.ndarray:
        est = []
        for pc, n in ((self.pc_down, self.pc_down_n), (self.pc_up, self.pc_up_n)):
            seen = n > 0
            mean = float(pc[seen].sum() / n[seen].sum()) if seen.any() else 1.0
            est.append(np.where(seen, pc / np.maximum(n, 1), mean)[frac])
        xf = x[frac]
        return np.maximum(est[0] * xf, 1e-6) * np.maximum(est[1] * (1 - xf), 1e-6)

    def _learn_one(self, i: int, up: int, drop: float) -> None:
        if up:
            self.pc_up[i] += drop
            self.pc_up_n[i] += 1
        else:
            self.pc_down[i] += drop
            self.pc_down_n[i] += 1

    def _learn(self, node: _Node, value: float) -> None:
        """Update the pseudo-cost of the branching that made ``node`` (bound drop per
        unit of change; an LP stopped at the cutoff counts as a drop to the cutoff)."""
        if node.var < 0 or not math.isfinite(node.bound):
            return
        change = node.frac if node.up == 0 else 1.0 - node.frac
        if change <= _EPS:
            return
        self._learn_one(node.var, node.up, max(node.bound - value, 0.0) / change)

    @staticmethod
    def _push_pair(stack: list[_Node], lb: np.ndarray, ub: np.ndarray, i: int,
                   xi: float, bound: float) -> None:
        """Children x_i = 0 and x_i = 1; the one ``xi`` rounds to is popped first."""
        down_ub = ub.copy()
        down_ub[i] = 0.0
        up_lb = lb.copy()
        up_lb[i] = 1.0
        down = _Node(lb, down_ub, bound, i, 0, xi)
        up = _Node(up_lb, ub, bound, i, 1, xi)
        stack.extend([down, up] if xi >= 0.5 else [up, down])


class BranchAndCutJointSelector(ReducingSelector):
    """Exact maximiser of the joint objective by branch and cut (see the module docstring).

    Same objective, limits (tokens, tool count, latency ms, cost USD), size cap and tie
    rule as ``EnumerationJointSelector``. ``max_size`` overrides the problem's when given;
    ``work_limit`` (simplex iterations over every LP of one search, HiGHS's count;
    ``None``: none) stops the search deterministically: the best set found is returned
    with status ``work_limit`` and its gap. ``time_limit_s`` (seconds; ``None``: none) is
    a safety net on the clock: a search it cuts short gets status ``stopped_by_clock``
    (the result depends on the machine's speed; reports leave it out of comparisons).
    ``root_cut_min_candidates``: odd-cycle cuts at the root from this many candidates up.
    ``product_rows``: add ``kernel.product_rows`` to the LP (default on); ``probing``: fix
    variables by root LP probes before the search (default on); both change the time,
    never the selection.
    ``subsets_examined`` counts LP nodes. Raises ``ValueError`` on a time limit that is not
    a number >= 0, a work limit that is not an integer >= 0, or a ``max_size`` that is not
    an integer >= 0.
    """

    name = "branch_and_cut"

    def __init__(self, max_size: int | None = None,
                 time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
                 root_cut_min_candidates: int = ROOT_CUT_MIN_CANDIDATES,
                 work_limit: int | None = DEFAULT_WORK_LIMIT,
                 product_rows: bool = True, probing: bool = True) -> None:
        check_selector_options(max_size=max_size, time_limit_s=time_limit_s,
                               work_limit=work_limit)
        self.max_size = max_size
        self.time_limit_s = time_limit_s
        self.work_limit = work_limit
        self.root_cut_min_candidates = root_cut_min_candidates
        self.product_rows = product_rows
        self.probing = probing

    def select_reduced(self, problem: JointProblem, red: Reduced, max_size: int | None,
                       start: float) -> Selection:
        chosen: tuple[int, ...] = ()
        status, gap, nodes, iterations = "optimal", 0.0, 0, 0
        if red.items:
            deadline = None if self.time_limit_s is None else start + self.time_limit_s
            tree = _Tree(problem, red, max_size, deadline, self.root_cut_min_candidates,
                         self.work_limit, self.product_rows,
                         _PROBE_SHARE if self.probing else 0.0)
            chosen, status, gap = tree.run()
            nodes, iterations = tree.nodes, tree.lp.iterations
        cs, ts = red.ids(chosen)
        return make_selection(self.name, problem, cs, ts, subsets_examined=nodes,
                              lp_iterations=iterations, status=status, gap=gap,
                              solve_time_ms=round((time.perf_counter() - start) * 1000, 3))


def root_bounds(problem: JointProblem, product_rows: bool = True, cycle_cuts: bool = True,
                max_size: int | None = None, work_limit: int | None = DEFAULT_WORK_LIMIT,
                time_limit_s: float | None = None) -> dict[str, float]:
    """The branch and cut's root bounds on one problem, for measuring them (no search).

    Returns ``lp`` (the first LP's value: the McCormick rows, plus the product rows of
    ``kernel.product_rows`` when ``product_rows``) and ``lp_s`` (seconds from the start,
    the reduction included), then, when ``cycle_cuts``, ``cuts`` and ``cuts_s`` after the
    root's odd-cycle separation rounds (the same rules as ``BranchAndCutJointSelector``:
    ``_ROOT_STALL``, ``_ROOT_WORK_SHARE`` of ``work_limit``); ``iterations`` (simplex
    iterations); ``candidates`` (after ``kernel.reduce``). ``time_limit_s`` (seconds,
    from the start): an LP it stops leaves its bound out (``lp`` or ``cuts`` absent; a
    stopped separation round keeps the last finished round's value as ``cuts`` and sets
    ``cuts_stopped`` to 1.0).
    Bounds are in the objective's
    units (an upper bound on the optimum); only ``candidates`` when nothing is left after
    the reduction."""
    from junction.select.exact.kernel import reduce

    start = time.perf_counter()
    size_cap = max_size if max_size is not None else problem.max_size
    red = reduce(problem, size_cap)
    out: dict[str, float] = {"candidates": len(red.items)}
    if not red.items:
        return out
    deadline = None if time_limit_s is None else start + time_limit_s
    tree = _Tree(problem, red, size_cap, deadline, 0 if cycle_cuts else _HIGHS_INT_MAX,
                 work_limit, product_rows)
    setup = time.perf_counter() - start
    tree._root()
    out.update({k: v + setup if k.endswith("_s") else v for k, v in tree.trace.items()
                if math.isfinite(v)})
    out["iterations"] = tree.lp.iterations
    return out
