"""The coverage problem: tools are worth something only when a document explains them.

A ``CoverageProblem`` values an exposed set S = C ∪ T (contexts C, tools T) as

    value(S) = Σ_{c∈C} e(c) + Σ_{t∈T} max( b(t), max_{c∈C, (c,t)∈E} v(c,t) )

- e(c) >= 0: what exposing context c is worth on its own (``context_value``);
- b(t) >= 0: what tool t is worth exposed with no explaining document (``tool_value``);
- v(c,t) >= 0: what tool t is worth when context c explains it (``explained_value``; E is
  its key set). Only the best explanation of a tool counts: two documents explaining one
  tool are worth the better one, never the sum, and a document explains nothing without
  its tool exposed.

The budget is ``junction.select.problem``'s (tokens of contexts and tool schemas together,
tool count, summed latency ms and cost USD, checked by ``exceeded_limit``) and the size cap
``max_size``. ``junction.strategies.coverage`` derives e, b and v from p(gold)
(docs/strategies.md, "Coverage").

Tie rule (``coverage_tie_key``): among sets whose value is at least ``tie_floor`` of the
best (``OBJECTIVE_TOLERANCE`` below it, or 1e-9 of it where that is larger), (1) fewer
tokens, (2) fewer resources, (3) the candidates in the order sorted context ids then sorted
tool ids, each kept where a tied set with it (and the earlier
choices) exists: the smallest 0/1 vector of "left out" flags in that order.

``CoverageSelector`` solves it exactly as a MILP with HiGHS (``highspy``, through
``junction.select.exact.highs``): binaries z_c, x_t; continuous u_t0 in [0, 1] (tool t
used bare) and u_ct in [0, 1] (tool t explained by c) with

    u_t0 + Σ_c u_ct <= x_t,     u_ct <= z_c,
    maximise Σ e_c z_c + Σ b_t u_t0 + Σ v_ct u_ct

under the budget rows. At any integer (z, x) the best u puts x_t on the largest available
value (a fractional knapsack with unit weights), so the MILP's value is value(S) exactly.
Passes: (1) the best value V; (2) with value >= V − tolerance, the fewest tokens, then
resources (one key, tokens · (n + 1) + count); (3) a no-good row shows whether another set
has the same tokens and count (two rows of small integers); only then the greedy of (3)
above, one feasibility solve per candidate. A greedy set not worth the best or not of the
same key (a trial HiGHS misjudged at the edge of its 1e-7 tolerance) is never returned:
pass 2's set stands, status ``heuristic``.
Every chosen set is re-checked with the budget's own arithmetic and valued with
``math.fsum`` (``coverage_value``). A solve HiGHS ends with "Solve error" runs once more
with presolve off. Status ``optimal`` when every pass finished, ``time_limit`` when the
clock (``time_limit_s``) stopped one, ``heuristic`` when HiGHS failed one even so: then the
best set found (its value is the best where pass 1 finished).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_array

from junction.budget import Budget
from junction.errors import SelectionError
from junction.resources import ContextResource, ToolResource
from junction.select.exact.highs import NO_HEURISTICS, SparseRows, highs_milp
from junction.select.problem import (
    OBJECTIVE_TOLERANCE,
    Selection,
    check_pool,
    check_selector_options,
    exceeded_limit,
)

Resource = ContextResource | ToolResource

__all__ = [
    "CoverageProblem",
    "CoverageSelector",
    "coverage_terms",
    "coverage_tie_key",
    "coverage_value",
    "tie_floor",
]


@dataclass(frozen=True)
class CoverageProblem:
    """One coverage problem (module docstring): candidate pool, values, shared budget.

    - ``contexts`` / ``tools``: the candidate pool (ids unique across both);
    - ``context_value``: context id -> e(c) (absent = 0);
    - ``tool_value``: tool id -> b(t), its value exposed bare (absent = 0);
    - ``explained_value``: (context id, tool id) -> v(c, t), the tool's value when that
      context explains it (absent: the context does not explain the tool);
    - ``max_size``: optional cap on |S|.

    Raises ``SelectionError`` on duplicate ids, a value that is negative or not finite, or
    an ``explained_value`` key naming no pooled context or tool.
    """

    contexts: tuple[ContextResource, ...]
    tools: tuple[ToolResource, ...]
    budget: Budget
    context_value: Mapping[str, float] = field(default_factory=dict)
    tool_value: Mapping[str, float] = field(default_factory=dict)
    explained_value: Mapping[tuple[str, str], float] = field(default_factory=dict)
    max_size: int | None = None

    def __post_init__(self) -> None:
        check_pool(self.contexts, self.tools, self.max_size)
        for name, values in (("context_value", self.context_value),
                             ("tool_value", self.tool_value),
                             ("explained_value", self.explained_value)):
            for key, value in values.items():
                if not (math.isfinite(value) and value >= 0):
                    raise SelectionError(f"{name}[{key!r}] must be finite and >= 0, "
                                         f"got {value!r}")
        context_ids = {c.id for c in self.contexts}
        tool_ids = {t.id for t in self.tools}
        for c, t in self.explained_value:
            if c not in context_ids or t not in tool_ids:
                raise SelectionError(f"explained_value[{(c, t)!r}] names no pooled "
                                     "context and tool")


def coverage_terms(problem: CoverageProblem, context_ids: Iterable[str],
                   tool_ids: Iterable[str]) -> tuple[float, float]:
    """(bare part, explained part) of value(S): the bare part is Σ e(c) + Σ b(t) over S,
    the explained part what the explanations add on top (Σ over tools of best − b(t));
    value(S) is their sum (``math.fsum`` each, so the order of the ids does not matter)."""
    cs = sorted(set(context_ids))
    ts = sorted(set(tool_ids))
    chosen = set(cs)
    bare = [problem.context_value.get(c, 0.0) for c in cs]
    extra = []
    by_tool: dict[str, list[float]] = {}
    for (c, t), v in problem.explained_value.items():
        if c in chosen:
            by_tool.setdefault(t, []).append(v)
    for t in ts:
        b = problem.tool_value.get(t, 0.0)
        bare.append(b)
        best = max(by_tool.get(t, ()), default=0.0)
        if best > b:
            extra.append(best - b)
    return math.fsum(bare), math.fsum(extra)


def coverage_value(problem: CoverageProblem, context_ids: Iterable[str],
                   tool_ids: Iterable[str]) -> float:
    """value(S) of the module docstring (unitless)."""
    bare, extra = coverage_terms(problem, context_ids, tool_ids)
    return bare + extra


def coverage_tie_key(problem: CoverageProblem, context_ids: Iterable[str],
                     tool_ids: Iterable[str]) -> tuple:
    """The tie rule's key among sets of equal value (smaller wins): (tokens, resources,
    the "left out" flags over sorted context ids then sorted tool ids)."""
    chosen = {*context_ids, *tool_ids}
    by_id = _by_id(problem)
    order = [*sorted(c.id for c in problem.contexts), *sorted(t.id for t in problem.tools)]
    return (sum(by_id[r].token_cost for r in chosen), len(chosen),
            tuple(0 if r in chosen else 1 for r in order))


def _by_id(problem: CoverageProblem) -> dict[str, Resource]:
    pool: tuple[Resource, ...] = (*problem.contexts, *problem.tools)
    return {r.id: r for r in pool}


class _Model:
    """The MILP of one problem: columns z (contexts, sorted ids), x (tools, sorted ids),
    then u (bare uses, explanations); rows ``lo <= A v <= hi``."""

    def __init__(self, problem: CoverageProblem, max_size: int | None) -> None:
        contexts = sorted(problem.contexts, key=lambda r: r.id)
        tools = sorted(problem.tools, key=lambda r: r.id)
        self.items: list[ContextResource | ToolResource] = [*contexts, *tools]
        self.n_ctx = len(contexts)
        self.budget = problem.budget
        self.max_size = max_size
        self.cuts: list[tuple[np.ndarray, float, float]] = []
        self.nodes = 0
        nx = len(self.items)
        self.nx = nx
        index = {r.id: i for i, r in enumerate(self.items)}
        b = problem.budget
        # what each candidate could earn; one that cannot earn or cannot fit alone is fixed 0
        bare = [problem.context_value.get(c.id, 0.0) for c in contexts] + [
            problem.tool_value.get(t.id, 0.0) for t in tools]
        pairs = sorted(((index[c], index[t], v) for (c, t), v in
                        problem.explained_value.items()
                        if v > problem.tool_value.get(t, 0.0)), key=lambda p: (p[1], p[0]))
        can_earn = [v > 0 for v in bare]
        for c, t, _ in pairs:
            can_earn[c] = can_earn[t] = True
        self.ub = np.zeros(nx)
        for i, r in enumerate(self.items):
            if can_earn[i] and exceeded_limit(b, [r], max_size) is None:
                self.ub[i] = 1.0
        pairs = [p for p in pairs if self.ub[p[0]] and self.ub[p[1]]]
        self.bare_cols = [i for i in range(self.n_ctx, nx) if bare[i] > 0 and self.ub[i]]
        ncol = nx + len(self.bare_cols) + len(pairs)
        self.ncol = ncol
        obj = np.zeros(ncol)
        for i in range(self.n_ctx):
            obj[i] = bare[i]
        built = SparseRows()
        add = built.add

        uses: dict[int, list[int]] = {}
        for k, t in enumerate(self.bare_cols):
            col = nx + k
            obj[col] = bare[t]
            uses.setdefault(t, []).append(col)
        for k, (c, t, v) in enumerate(pairs):
            col = nx + len(self.bare_cols) + k
            obj[col] = v
            uses.setdefault(t, []).append(col)
            add([(col, 1.0), (c, -1.0)], -np.inf, 0.0)
        for t, used in sorted(uses.items()):
            add([*((col, 1.0) for col in used), (t, -1.0)], -np.inf, 0.0)
        tool_cols = range(self.n_ctx, nx)
        tools_only: list[ToolResource] = tools
        if b.max_tokens is not None:
            add([(i, float(r.token_cost)) for i, r in enumerate(self.items)], -np.inf,
                float(b.max_tokens))
        if b.max_tools is not None:
            add([(i, 1.0) for i in tool_cols], -np.inf, float(b.max_tools))
        if b.max_latency_ms is not None and b.max_latency_ms > 0:
            add([(i, tools_only[i - self.n_ctx].estimated_latency_ms / b.max_latency_ms)
                 for i in tool_cols], -np.inf, 1.0)
        if b.max_cost_usd is not None and b.max_cost_usd > 0:
            add([(i, tools_only[i - self.n_ctx].estimated_cost_usd / b.max_cost_usd)
                 for i in tool_cols], -np.inf, 1.0)
        if max_size is not None and max_size < nx:
            add([(i, 1.0) for i in range(nx)], -np.inf, float(max_size))
        self.obj = obj
        self.A, self.lo, self.hi = built.matrix(ncol)
        tokens = np.array([r.token_cost for r in self.items], dtype=float)
        self.tokens = np.zeros(ncol)
        self.tokens[:nx] = tokens
        self.count = np.zeros(ncol)
        self.count[:nx] = 1.0
        self.key = self.tokens * (nx + 1) + self.count

    def solve(self, c: np.ndarray, extra: Sequence[tuple[np.ndarray, float, float]],
              lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
              heuristics: bool = True):
        """Minimise ``c @ v`` over the model plus ``extra`` rows (dense coefficient rows,
        low, high), z and x binary; HiGHS's ``MipResult``. ``heuristics=False``: HiGHS's
        primal heuristics off (``NO_HEURISTICS``), for the passes after the first, whose
        start is near their answer or which are infeasibility proofs.

        HiGHS accepts a row within its feasibility tolerance (1e-7, scaled), so a point
        can break a limit by a rounding error (three tools of 0.1 USD under 0.3 USD sum
        to 0.30000000000000004). Each point is re-checked with the budget's own
        arithmetic (``exceeded_limit``); one that breaks a limit adds a cover cut (no set
        holding its part of that limit: the tools for tool count, latency and cost, all
        of it for tokens and size) kept for every later solve, and the solve runs again,
        as ``junction.select.exact.milp_search`` does. ``self.nodes`` counts every
        solve's branch-and-bound nodes."""
        start = time.perf_counter()

        def once(presolve: bool):
            left = None if time_limit is None else time_limit - (time.perf_counter() - start)
            res = self._solve_once(c, [*self.cuts, *extra], lb, ub, left, heuristics,
                                   presolve)
            self.nodes += int(res.mip_node_count or 0)
            return res

        while True:
            res = once(True)
            if res.status == 4 and res.x is None:
                # HiGHS's "Solve error" (seen on a tie pass's feasibility solve, whose value
                # row is within 1e-9 of the best): once more, presolve off
                res = once(False)
            if res.x is None:
                return res
            on = [i for i in range(self.nx) if res.x[i] > 0.5]
            broken = exceeded_limit(self.budget, [self.items[i] for i in on],
                                    self.max_size)
            if broken is None:
                return res
            part = ([i for i in on if i >= self.n_ctx]
                    if broken in ("max_tools", "max_latency_ms", "max_cost_usd") else on)
            coef = np.zeros(self.ncol)
            coef[part] = 1.0
            self.cuts.append((coef, -np.inf, len(part) - 1.0))

    def _solve_once(self, c: np.ndarray, extra: Sequence[tuple[np.ndarray, float, float]],
                    lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
                    heuristics: bool, presolve: bool = True):
        A, lo, hi = self.A, self.lo, self.hi
        if extra:
            from scipy.sparse import vstack

            A = vstack([A, csr_array(np.vstack([r[0] for r in extra]))], format="csr")
            lo = np.concatenate([lo, [r[1] for r in extra]])
            hi = np.concatenate([hi, [r[2] for r in extra]])
        options: dict[str, object] = {"presolve": "on" if presolve else "off",
                                      "mip_rel_gap": 0.0, "mip_abs_gap": 0.0}
        if not heuristics:
            options.update(NO_HEURISTICS)
        if time_limit is not None:
            options["time_limit"] = max(time_limit, 1e-3)
        return highs_milp(c, csr_array(A), lo, hi, lb, ub, self.nx, options)

    def chosen(self, v: np.ndarray) -> tuple[tuple[str, ...], tuple[str, ...]]:
        on = [i for i in range(self.nx) if v[i] > 0.5]
        return (tuple(self.items[i].id for i in on if i < self.n_ctx),
                tuple(self.items[i].id for i in on if i >= self.n_ctx))


def tie_floor(best: float) -> float:
    """The lowest value that ties with ``best``: ``OBJECTIVE_TOLERANCE`` below it, or 1e-9
    of it where that is larger (the tie rule, module docstring)."""
    return best - max(OBJECTIVE_TOLERANCE, 1e-9 * abs(best))


def _stopped(highs_status: int) -> str:
    """A selection's status when a pass did not finish: ``time_limit`` when the clock
    stopped HiGHS (status 1), ``heuristic`` (no optimality claim) when HiGHS failed
    otherwise (status 4, a solve error that survived the retry without presolve)."""
    return "time_limit" if highs_status == 1 else "heuristic"


class CoverageSelector:
    """Exact maximiser of a ``CoverageProblem`` (module docstring) with HiGHS.

    ``select(problem) -> Selection``: ``unary`` holds the bare part of the value,
    ``interaction`` what explanations add (``coverage_terms``), ``objective`` their sum;
    ``subsets_examined`` the HiGHS branch-and-bound nodes of every pass, ``solve_time_ms``
    the wall time. ``max_size`` overrides the problem's when given; ``time_limit_s``
    (seconds, None: none) bounds all passes together (status ``time_limit`` when reached).
    Raises ``ValueError`` for a bad ``max_size`` or ``time_limit_s``, ``SelectionError``
    when HiGHS fails in a way other than a time limit (not expected: the empty set fits).
    """

    name = "coverage"

    def __init__(self, max_size: int | None = None,
                 time_limit_s: float | None = 60.0) -> None:
        check_selector_options(max_size=max_size, time_limit_s=time_limit_s)
        self.max_size = max_size
        self.time_limit_s = time_limit_s

    def select(self, problem: CoverageProblem) -> Selection:
        """The best set under the tie rule (module docstring); the empty set when nothing
        is worth anything or nothing fits."""
        start = time.perf_counter()
        max_size = self.max_size if self.max_size is not None else problem.max_size
        model = _Model(problem, max_size)
        deadline = None if self.time_limit_s is None else start + self.time_limit_s
        status = "optimal"

        def left() -> float | None:
            return None if deadline is None else deadline - time.perf_counter()

        lb = np.zeros(model.ncol)
        ub = np.concatenate([model.ub, np.ones(model.ncol - model.nx)])
        cs: tuple[str, ...] = ()
        ts: tuple[str, ...] = ()
        if model.ub.any():
            # pass 1: the best value
            first = model.solve(-model.obj, (), lb, ub, left())
            if first.x is None:
                raise SelectionError(f"HiGHS found no point ({first.message}): the empty "
                                     "set always fits")
            cs, ts = model.chosen(first.x)
            if first.status != 0:
                status = _stopped(first.status)
            else:
                best = coverage_value(problem, cs, ts)
                value_row = (model.obj, tie_floor(best), np.inf)
                # pass 2: fewest tokens, then fewest resources, among the best
                second = model.solve(model.key, [value_row], lb, ub, left(), False)
                if second.status == 0 and second.x is not None:
                    cs2, ts2 = model.chosen(second.x)
                    if coverage_value(problem, cs2, ts2) >= tie_floor(best):
                        cs, ts = cs2, ts2
                    cs3, ts3, stop = self._tie_pass(problem, model, value_row, cs, ts,
                                                        lb, ub, left)
                    if stop:
                        status = _stopped(stop)
                    elif (coverage_value(problem, cs3, ts3) < tie_floor(best)
                          or coverage_tie_key(problem, cs3, ts3)[:2]
                          != coverage_tie_key(problem, cs, ts)[:2]):
                        # HiGHS misjudged a trial (it holds rows to 1e-7; sets a few
                        # millionths below the best sit at the edge: τ task_057 at scale 2):
                        # pass 2's set stands, the tie rule unproven
                        status = "heuristic"
                    else:
                        cs, ts = cs3, ts3
                else:
                    status = _stopped(second.status)
        if exceeded_limit(problem.budget, self._resources(problem, cs, ts), max_size):
            raise SelectionError("the coverage MILP returned a set over the budget: "
                                 f"{sorted((*cs, *ts))}")
        bare, extra = coverage_terms(problem, cs, ts)
        by_id = _by_id(problem)
        return Selection(
            strategy=self.name, context_ids=tuple(sorted(cs)), tool_ids=tuple(sorted(ts)),
            tokens_used=sum(by_id[r].token_cost for r in (*cs, *ts)),
            unary=bare, interaction=extra, objective=bare + extra,
            subsets_examined=model.nodes, status=status,
            gap=0.0 if status == "optimal" else None,
            solve_time_ms=round((time.perf_counter() - start) * 1000, 3))

    @staticmethod
    def _resources(problem: CoverageProblem, cs: Sequence[str],
                   ts: Sequence[str]) -> list[Resource]:
        by_id = _by_id(problem)
        return [by_id[r] for r in (*cs, *ts)]

    @staticmethod
    def _tie_pass(problem: CoverageProblem, model: _Model,
                  value_row: tuple[np.ndarray, float, float],
                  cs: tuple[str, ...], ts: tuple[str, ...], lb: np.ndarray, ub: np.ndarray,
                  left) -> tuple[tuple[str, ...], tuple[str, ...], int]:
        """Pass 3: (contexts, tools, 0 when finished, else the HiGHS status that stopped
        it). Whether another set ties with (cs, ts) on value and key; if one does, the
        greedy over candidates in sorted id order (module docstring)."""
        chosen = {*cs, *ts}
        v = np.zeros(model.ncol)
        for i, r in enumerate(model.items):
            v[i] = 1.0 if r.id in chosen else 0.0
        # the same key is the same tokens and count: two rows of small integers (one row
        # of the key, up to tokens · (n + 1), held to ± 0.5 was beyond HiGHS's tolerance)
        key_rows = [(model.tokens, -np.inf, float(model.tokens @ v) + 0.5),
                    (model.count, -np.inf, float(model.count @ v) + 0.5)]
        nogood = np.zeros(model.ncol)
        for i in range(model.nx):
            nogood[i] = -1.0 if v[i] else 1.0
        other = model.solve(np.zeros(model.ncol),
                            [value_row, *key_rows,
                             (nogood, 1.0 - v[:model.nx].sum(), np.inf)],
                            lb, ub, left(), False)
        if other.status == 2:
            return cs, ts, 0
        if other.status != 0:
            return cs, ts, other.status
        lb, ub = lb.copy(), ub.copy()
        for i in range(model.nx):
            if not ub[i]:
                continue
            lb[i] = 1.0
            trial = model.solve(np.zeros(model.ncol), [value_row, *key_rows], lb, ub, left(),
                                False)
            if trial.status == 2:
                lb[i], ub[i] = 0.0, 0.0
            elif trial.status != 0:
                return cs, ts, trial.status
        out = {model.items[i].id for i in range(model.nx) if lb[i]}
        return (tuple(sorted(out & {c.id for c in problem.contexts})),
                tuple(sorted(out & {t.id for t in problem.tools})), 0)
