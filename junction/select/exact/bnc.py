"""Exact joint selection by a dedicated branch and cut over HiGHS linear programs.

Same objective, budget rows, size cap and tie rule as ``junction.select.problem`` and
``EnumerationJointSelector``; the model of ``model.Model`` (one binary x per candidate,
one y_ct per context–tool pair with W_ct != 0, McCormick rows by the sign of W_ct, the
budget rows, the optional size row; candidates that never fit or never pay removed first
by ``reduction.reduce``). HiGHS solves only linear programs here (``nodelp.NodeLP``: dual
simplex, presolve off, warm-started from the previous LP's basis), and this package does
the rest: root.py (root bounds and incumbents), probing.py (fixing before the search),
branching.py (branching and the tie split), search.py (the state they share); this
module drives them.
(junction/select/exact/milp_reference.py hands the same model to HiGHS's own branch and cut instead;
comparison in docs/measurement.md.)

1. Root (root.py): the product rows (``model.product_rows``: every limit row times each
   x_j, the rows behind the quadratic knapsack bounds of Gallo, Hammer & Simeone 1980 and
   Caprara, Pisinger & Toth 1999) join the model for the whole search (``product_rows``
   option; the first root LP by interior point from ``_ROOT_IPM_MIN_COLUMNS`` columns
   up), then rounds of LP + exact odd-cycle separation (``model.cycle_cuts``; valid
   for every integer point, so the cuts stay in every node's LP) until the bound falls by
   less than ``_ROOT_STALL`` (relative) or ``_ROOT_WORK_SHARE`` of the work limit is
   spent; cuts slack at the last root LP are deleted. Incumbents: greedy insertion from the
   empty set and the root point rounded at 1/2, each improved by flips and swaps
   (``local_search.local_search``), and RENS (the MILP with the root's integral x fixed,
   solved by HiGHS within ``_RENS_NODES`` nodes). If a limit stops the root LP, the
   greedy set is returned (gap None). Unless the root LP's x is integral (then the tie split below
   settles the tree in a node or two), variable fixing by bounds (``probing.probe``, the
   ``probing`` option): reduced costs first, then one root LP per x that is integral at
   the root with that x flipped, each stopped at the cutoff or after
   ``_PROBE_ITERATIONS``; an x whose flipped LP is below the cutoff is fixed for the
   whole search (the fixing step of Pisinger, Rasmussen & Sandvik 2007, with LP bounds).
2. Depth-first branch and bound on the x columns (this module; branching.py). A node is
   pruned when its LP bound is below the cutoff ``z* - OBJECTIVE_TOLERANCE - margin``
   (z*: the best exact objective found; margin = 1e-6 · max(s, |z*|), HiGHS's optimality
   tolerance, where s = min(1, max |score|) and the LP's costs are divided by s so that
   HiGHS's absolute tolerances never exceed the scores; so LP round-off cannot prune a
   tie); each node LP is stopped as soon as the dual simplex proves it below the cutoff
   (HiGHS's ``objective_bound``). Reduced-cost fixing
   at each node (Nemhauser & Wolsey 1988, §II.5). Branching: reliability branching
   (``branching.Brancher``). Every 16th node the LP point seeds another local search.
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
docs/measurement.md.)

Status: ``optimal`` when the tree is exhausted; ``work_limit`` when the work limit (simplex
iterations summed over every LP of the search, HiGHS's own count) stopped it, with the
best set found and gap (bound - objective) / max(|objective|, 1e-9), bound = the largest
LP bound of an open node (None if the root LP did not finish); ``stopped_by_clock``, same
fields, when the wall-clock safety net did (or cut short the RENS solve of a search the
work limit then stopped); then the search returns within the limit plus
``limits.CLOCK_SLACK_S`` (the RENS sub-MIP is abandoned at the deadline: ``highs_milp``).
Every step up to the clock's stop is the same at any time limit (a clock-cut RENS solve
seeds no local search: ``root.rens``), so a larger limit never returns a worse set, for
calls that start with no abandoned sub-MIP in the process: one abandoned at an earlier
call's deadline runs until HiGHS next checks, and a call that starts meanwhile waits for
it up to its own deadline, then skips RENS (``highs.highs_milp``). Work
caps: every LP has the simplex (and interior-point) iterations left; RENS has
``_RENS_NODES`` nodes, and HiGHS offers no cap on a MIP's root processing (no LP
iteration limit for a MIP, none reported to callbacks), so only the clock bounds that.
Deterministic: every stop rule but the clock counts work (LP iterations, RENS nodes), and
HiGHS's dual simplex is deterministic and single-threaded here, so the set, status, gap
and node count repeat on any machine at any load unless the status is
``stopped_by_clock``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from junction.select.exact.branching import Brancher
from junction.select.exact.limits import DEFAULT_TIME_LIMIT_S, DEFAULT_WORK_LIMIT
from junction.select.exact.nodelp import EPS, LPResult
from junction.select.exact.probing import PROBE_SHARE, probe, restrict
from junction.select.exact.reduction import Reduced, ReducingSelector
from junction.select.exact.root import seed_incumbents, solve_root
from junction.select.exact.search import Node, Search
from junction.select.problem import (
    JointProblem,
    Selection,
    check_selector_options,
    make_selection,
)

__all__ = ["ROOT_CUT_MIN_CANDIDATES", "BranchAndCutJointSelector"]

ROOT_CUT_MIN_CANDIDATES = 0
"""Root odd-cycle separation runs from this many candidates (after removal) up."""


def _run(search: Search, cut_min: int, products: bool,
         probe_share: float) -> tuple[tuple[int, ...], str, float | None]:
    """The whole search (see the module docstring): (chosen item indices, status, gap)."""
    search.record(())  # the empty set always fits
    res = solve_root(search, products, cut_min)
    if res[0] in ("work_limit", "time_limit"):
        # No LP bound yet: the greedy + local-search set, gap unknown.
        search.stop(res[0])
        search.heuristic(np.zeros(search.model.nvar))
        return search.best(), search.status(), None
    if res[0] == "optimal":
        seed_incumbents(search, res[2])
    stack = [Node(np.zeros(search.nx), np.ones(search.nx),
                  res[1] if res[0] == "optimal" else math.inf)]
    first: LPResult | None = res
    if res[0] == "optimal" and probe_share > 0:
        x = res[2][: search.nx]
        if np.any((x > EPS) & (x < 1 - EPS)):
            lb, ub = probe(search, res[1], res[2], res[3], probe_share)
            if (lb > 0.5).any() or (ub < 0.5).any():
                stack = restrict(stack, lb, ub)
                first = None
    brancher = Brancher(search)
    while stack:
        node = stack.pop()
        if node.bound < search.cutoff():
            continue
        if search.out_of_work():
            stack.append(node)
            break
        if first is not None:
            status, value, point, d = first
            first = None
        else:
            status, value, point, d = search.solve(node.lb, node.ub, search.cutoff())
        search.nodes += 1
        if status in ("work_limit", "time_limit"):
            stack.append(node)
            search.stop(status)
            break
        if status == "optimal":
            brancher.learn(node, value)
        elif status == "cutoff":
            brancher.learn(node, search.cutoff())
        if status in ("infeasible", "cutoff") or value < search.cutoff():
            continue
        brancher.branch(node, value, point, d, stack)
    if search.stopped is not None:
        bound = max((n.bound for n in stack), default=search.z)
        gap = max(bound - search.z, 0.0) / max(abs(search.z), 1e-9)
        return search.best(), search.status(), (None if math.isinf(gap) else gap)
    return search.best(), "optimal", 0.0


class BranchAndCutJointSelector(ReducingSelector):
    """Exact maximiser of the joint objective by branch and cut (see the module docstring).

    Same objective, limits (tokens, tool count, latency ms, cost USD), size cap and tie
    rule as ``EnumerationJointSelector``. ``max_size`` overrides the problem's when given;
    ``work_limit`` (simplex iterations over every LP of one search, HiGHS's count;
    ``None``: none) stops the search deterministically: the best set found is returned
    with status ``work_limit`` and its gap. ``time_limit_s`` (seconds; ``None``: none) is
    a safety net on the clock: a search it cuts short gets status ``stopped_by_clock``
    (the result depends on the machine's speed; reports leave it out of comparisons);
    ``select`` returns within it plus ``limits.CLOCK_SLACK_S``, and a larger limit never
    returns a worse set (every sub-solve follows the same path until the clock stops it)
    unless an earlier call's RENS sub-MIP, abandoned at its deadline, is still running in
    the process (this call then skips RENS; module docstring).
    ``root_cut_min_candidates``: odd-cycle cuts at the root from this many candidates up.
    ``product_rows``: add ``model.product_rows`` to the LP (default on); ``probing``: fix
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
        gap: float | None
        status, gap, nodes, iterations = "optimal", 0.0, 0, 0
        if red.items:
            deadline = None if self.time_limit_s is None else start + self.time_limit_s
            search = Search(problem, red, max_size, deadline, self.work_limit)
            chosen, status, gap = _run(search, self.root_cut_min_candidates,
                                       self.product_rows, PROBE_SHARE if self.probing else 0.0)
            nodes, iterations = search.nodes, search.lp.iterations
        cs, ts = red.ids(chosen)
        return make_selection(self.name, problem, cs, ts, subsets_examined=nodes,
                              lp_iterations=iterations, status=status, gap=gap,
                              solve_time_ms=round((time.perf_counter() - start) * 1000, 3))
