"""Exact joint selection for small pools: depth-first branch and bound, no LP solver.

Same objective, budget limits, size cap and tie rule as ``junction.select.problem`` and
``EnumerationJointSelector``, and the same removal of candidates that can never be
selected (``reduction.reduce``). Plain Python: one node costs a few microseconds, where one
HiGHS LP of ``BranchAndCutJointSelector`` costs far more (figures in docs/measurement.md).

Search. The candidates get a static order: tools first, then contexts, each group by
optimistic value per token (u_i + Σ_j max(W_ij, 0), divided by tokens), descending. A node
is a set S of chosen candidates plus a position p; its subtree holds S ∪ T for every
T ⊆ F, F the candidates at positions p, p+1, ... It includes the candidate at p first
(child S + {p}, from p + 1), then skips it (S, from p + 1), depth first. Tools first: once
every tool is decided each context's value is exact (pairs join a context and a tool), so
the bound below is the fractional knapsack of the contexts and the context part of the
tree is almost a single dive (fewer nodes than one ratio order; docs/measurement.md).

Bound: an upper bound on objective(S ∪ T) over every T ⊆ F that fits. With
g_j = u_j + Σ_{i∈S} W_ij (the exact gain of j given S, kept incrementally),

    objective(S ∪ T) = v(S) + Σ_{j∈T} g_j + Σ_{{j,k}⊆T} W_jk  ≤  v(S) + Σ_{j∈T} o_j,
    o_j = g_j + ½ Σ_{k∈F} max(W_jk, 0)                      (optimistic value of j)

since each free–free positive pair inside T is then counted once (half at each end;
pairs with one end outside T only add; other share rules: docs/measurement.md). Then
max Σ_{j∈T} o_j over the T that fit is a 0/1 knapsack with side constraints; the bound is
the smallest of

- Σ o_j⁺ over the free j that still fit alone (tokens, tool count, latency, cost left);
- Σ_contexts o_c⁺ + the k largest o_t⁺ over tools, k = tools left;
- the m largest o_j⁺, m = set size left;
- Dantzig's bound (Dantzig 1957; Martello & Toth 1990, §2.2: the LP relaxation of the 0/1
  knapsack, greedy by o_j / tokens_j with the last item fractional) on the tokens left.

Exactness and ties. A node is pruned only when v(S) + bound < best - OBJECTIVE_TOLERANCE
- 1e-12 · (Σ|u| + Σ|W|) (best: the largest running objective of a set that fits; the
extra slack covers float round-off of running sums, as in the enumerator), so every set
within the tolerance of the optimum is reached. Each set reached whose running objective
is within that margin of the best is recorded, re-scored with the enumerator's
arithmetic (``Reduced.score``: ``math.fsum``), and the pick is the smallest tie key
among the sets within OBJECTIVE_TOLERANCE of the best exact objective. Limits: token and
tool counts are integers (exact); latency and cost are running sums (in search order)
decided by ``FloatBand``, and a set within its band of a limit is checked with the
budget's own arithmetic (``Reduced.exceeded``). Every limit is monotone, so no superset
of a set that breaks one fits.

Status is always ``optimal`` (no time limit: the search is exponential in the worst case;
``AutoJointSelector`` uses it up to ``AUTO_COMBINATORIAL_MAX`` candidates,
``BranchAndCutJointSelector`` above; pools above ``COMBINATORIAL_MAX`` are refused).
Deterministic: static order, no randomness, so the node count repeats too.
"""

from __future__ import annotations

import math
import time
from typing import cast

from junction.errors import SelectionError
from junction.resources import ToolResource
from junction.select.exact.reduction import Reduced, ReducingSelector
from junction.select.problem import (
    OBJECTIVE_TOLERANCE,
    FloatBand,
    JointProblem,
    Selection,
    check_selector_options,
    make_selection,
)

__all__ = ["COMBINATORIAL_MAX", "CombinatorialJointSelector"]

COMBINATORIAL_MAX = 48
"""Largest pool (after removal) ``CombinatorialJointSelector`` accepts: the search has no
time limit and its bound is weak when little constrains the search (growth with the pool
size measured with bench/perf/exact_crossover.py; figures in docs/measurement.md)."""


class _Search:
    """One reduced problem's branch and bound (see the module docstring).

    Everything per candidate is indexed by its position in the search order."""

    def __init__(self, problem: JointProblem, red: Reduced, max_size: int | None) -> None:
        self.problem = problem
        self.red = red
        items = red.items
        n = len(items)
        b = problem.budget
        self.max_tokens = math.inf if b.max_tokens is None else b.max_tokens
        self.max_tools = math.inf if b.max_tools is None else b.max_tools
        # items after the first n_ctx are the tools (``Reduced``)
        self.band = FloatBand.of(b, (cast(ToolResource, r) for r in items[red.n_ctx:]))
        self.max_size = math.inf if max_size is None else max_size
        lat = [getattr(r, "estimated_latency_ms", 0.0) for r in items]
        usd = [getattr(r, "estimated_cost_usd", 0.0) for r in items]
        adj: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for c, t, w in red.pairs:
            adj[c].append((t, w))
            adj[t].append((c, w))

        def ratio(i: int) -> float:
            o = red.unary[i] + sum(w for _, w in adj[i] if w > 0)
            tok = items[i].token_cost
            return o / tok if tok else math.copysign(math.inf, o)

        order = sorted(range(n), key=lambda i: (i < red.n_ctx, -ratio(i), i))
        pos = {i: p for p, i in enumerate(order)}
        self.n = n
        self.item = order  # position -> index in red.items
        self.tok = [items[i].token_cost for i in order]
        self.tool = [i >= red.n_ctx for i in order]
        self.lat = [lat[i] for i in order]
        self.usd = [usd[i] for i in order]
        self.u = [red.unary[i] for i in order]
        self.adj = [[(pos[j], w) for j, w in adj[i]] for i in order]
        self.credit = self._credit()
        scale = math.fsum(abs(v) for v in red.unary) + math.fsum(abs(w) for *_, w in red.pairs)
        self.wide = OBJECTIVE_TOLERANCE + 1e-12 * scale
        self.best = -math.inf
        self.near: list[tuple[float, tuple[int, ...]]] = []
        self.nodes = 0

    def _credit(self) -> list[list[float]]:
        """credit[j][p] = ½ Σ_{k at position >= p} max(W_jk, 0): j's share of its positive
        pairs with the candidates still free at position p."""
        n = self.n
        credit = []
        for j in range(n):
            share = [0.0] * (n + 1)
            for k, w in self.adj[j]:
                if w > 0:
                    share[k] = 0.5 * w
            acc = 0.0
            for p in range(n - 1, -1, -1):
                acc += share[p]
                share[p] = acc
            credit.append(share)
        return credit

    def _bound(self, p: int, gain: list[float], need: float, tok_left: float,
               tools_left: float, lat_left: float, usd_left: float, size_left: float) -> float:
        """Upper bound on Σ_{j∈T} o_j over T ⊆ positions [p, n) that fit (module docstring).

        Returns as soon as one of the bounds is below ``need`` (the node is pruned then)."""
        credit = self.credit
        tok, tool, lats, usds = self.tok, self.tool, self.lat, self.usd
        ctx_sum = 0.0
        tool_vals = []
        cand = []  # (o / tokens, o, tokens) of every free candidate with o > 0 that fits
        for q in range(p, self.n):
            o = gain[q] + credit[q][p]
            t = tok[q]
            if o <= 0 or t > tok_left:
                continue
            if tool[q]:
                if tools_left < 1 or lats[q] > lat_left or usds[q] > usd_left:
                    continue
                tool_vals.append(o)
            else:
                ctx_sum += o
            cand.append((o / t if t else math.inf, o, t))
        if len(tool_vals) > tools_left:
            tool_vals.sort(reverse=True)
            del tool_vals[int(tools_left):]
        best = ctx_sum + sum(tool_vals)
        if best < need:
            return best
        if len(cand) > size_left:
            vals = sorted((o for _, o, _ in cand), reverse=True)
            best = min(best, sum(vals[: int(size_left)]))
            if best < need:
                return best
        if tok_left < math.inf:
            cand.sort(reverse=True)
            total = 0.0
            room = tok_left
            for _, o, t in cand:
                if t <= room:
                    total += o
                    room -= t
                else:
                    total += o * room / t
                    break
            best = min(best, total)
        return best

    def run(self) -> tuple[int, ...]:
        """The chosen set (indices into ``red.items``, sorted)."""
        self._record(0.0, ())
        self._visit(0, [*self.u], 0.0, [], 0, 0, 0.0, 0.0)
        return self._pick()

    def _record(self, value: float, chosen: tuple[int, ...]) -> None:
        if value > self.best:
            self.best = value
            cut = value - self.wide
            self.near = [(v, s) for v, s in self.near if v >= cut]
            self.near.append((value, chosen))
        elif value >= self.best - self.wide:
            self.near.append((value, chosen))

    def _visit(self, p: int, gain: list[float], value: float, chosen: list[int],
               tokens: int, n_tools: int, lat: float, usd: float) -> None:
        """Search S = ``chosen`` (already recorded) extended by positions p, p+1, ...

        ``gain[q]``: g_q given S; ``value``: running objective of S; the rest: S's use of
        each limit (latency and cost as running sums in search order)."""
        self.nodes += 1
        size_left = self.max_size - len(chosen)
        if size_left <= 0:
            return
        tok_left = self.max_tokens - tokens
        tools_left = self.max_tools - n_tools
        band = self.band
        lat_left = band.max_latency_ms + band.latency_slack - lat
        usd_left = band.max_cost_usd + band.cost_slack - usd
        tok, tool, lats, usds, adj = self.tok, self.tool, self.lat, self.usd, self.adj
        for q in range(p, self.n):
            # S ∪ T for T ⊆ positions [q, n): prune when even the bound is too low
            need = self.best - self.wide - value
            if self._bound(q, gain, need, tok_left, tools_left, lat_left, usd_left,
                           size_left) < need:
                return
            t = tok[q]
            if t > tok_left:
                continue
            if tool[q]:
                if tools_left < 1:
                    continue
                new_lat = lat + lats[q]
                new_usd = usd + usds[q]
                if not self._float_fits(chosen, q, new_lat, new_usd):
                    continue
                new_tools = n_tools + 1
            else:
                new_lat, new_usd, new_tools = lat, usd, n_tools
            new_value = value + gain[q]
            child = gain[:]
            for k, w in adj[q]:
                child[k] += w
            chosen.append(q)
            if new_value >= self.best - self.wide:
                self._record(new_value, tuple(chosen))
            self._visit(q + 1, child, new_value, chosen, tokens + t, new_tools, new_lat,
                        new_usd)
            chosen.pop()

    def _float_fits(self, chosen: list[int], q: int, lat: float, usd: float) -> bool:
        """Does S + q fit the latency and cost limits in the budget's arithmetic?
        ``lat``, ``usd``: running sums of S + q in search order."""
        fits = self.band.decide(lat, usd)
        if fits is None:  # within round-off of a limit: the budget's arithmetic decides
            tools = [self.item[k] for k in (*chosen, q) if self.tool[k]]
            fits = self.red.exceeded(tools, self.problem.budget, None) is None
        return fits

    def _pick(self) -> tuple[int, ...]:
        """Re-score the near-best sets exactly; the smallest tie key among the ties."""
        scored = []
        for _, chosen in self.near:
            items = tuple(sorted(self.item[k] for k in chosen))
            objective, key = self.red.score(self.problem, items)
            scored.append((objective, key, items))
        top = max(s[0] for s in scored)
        return min((s for s in scored if s[0] >= top - OBJECTIVE_TOLERANCE),
                   key=lambda s: s[1])[2]


class CombinatorialJointSelector(ReducingSelector):
    """Exact maximiser of the joint objective by combinatorial branch and bound.

    Same objective, limits (tokens, tool count, latency ms, cost USD), size cap and tie
    rule as ``EnumerationJointSelector``; the bound and search are in the module
    docstring. For small pools (faster than ``BranchAndCutJointSelector`` up to about
    ``AUTO_COMBINATORIAL_MAX`` candidates, bench/perf/exact_crossover.py); no time limit.
    ``max_size`` overrides the problem's when given. ``subsets_examined`` counts search
    nodes (sets extended); ``gap`` is 0.0. Raises ``ValueError`` on a ``max_size`` that
    is not an integer >= 0, ``SelectionError`` when more than ``COMBINATORIAL_MAX``
    candidates are left after removal.
    """

    name = "branch_and_bound"

    def __init__(self, max_size: int | None = None) -> None:
        check_selector_options(max_size=max_size)
        self.max_size = max_size

    def select_reduced(self, problem: JointProblem, red: Reduced, max_size: int | None,
                       start: float) -> Selection:
        if len(red.items) > COMBINATORIAL_MAX:
            raise SelectionError(
                f"CombinatorialJointSelector searches at most {COMBINATORIAL_MAX} candidates "
                f"(after removal), got {len(red.items)}; use BranchAndCutJointSelector")
        chosen: tuple[int, ...] = ()
        nodes = 0
        if red.items:
            search = _Search(problem, red, max_size)
            chosen = search.run()
            nodes = search.nodes
        cs, ts = red.ids(chosen)
        return make_selection(self.name, problem, cs, ts, subsets_examined=nodes,
                              status="optimal", gap=0.0,
                              solve_time_ms=round((time.perf_counter() - start) * 1000, 3))
