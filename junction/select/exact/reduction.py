"""The reduced problem: the candidates that can be selected, their dense arrays and the
vectorised feasibility check, shared by every exact solver (bnb, bnc, the MILP reference).

The objective and the budget are those of ``junction.select.problem``:

    maximise  Σ_i u_i x_i + Σ_{(c,t)} W_ct · x_c x_t,   W_ct = w(c,t) + w(t,c)

over binaries x (one per candidate) under the four budget rows (visible tokens over all
candidates; tool count, summed latency in ms and summed cost in USD over tools) and an
optional cap on the set size.

Reduction (``reduce``). Candidates that cannot be in the selected set are removed: those
that break a limit on their own, and those that never pay: best possible contribution
u_i + Σ_j max(W_ij, 0) below -1e-14 · (Σ|u| + Σ|W|), or u_i = 0 with no non-zero pair
left (applied to a fixed point). Every set holding such a candidate then scores, as
``objective_terms`` computes it, below (or, for the second kind, exactly at) the same set
without it, which also has the smaller tie key, so the tie rule never picks it. A best
case of exactly 0 with pairs is kept: float rounding can put the set holding it 1 ulp
higher, enough to move the 1e-9 tie threshold (found by fuzzing).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select.problem import (
    JointProblem,
    Selection,
    exceeded_limit,
    objective_terms,
    tie_break_key,
)

__all__ = [
    "LIMIT_COLUMNS",
    "BudgetArrays",
    "Reduced",
    "ReducingSelector",
    "fitting_alone",
    "reduce",
]

Resource = ContextResource | ToolResource


@dataclass
class Reduced:
    """The candidates left after removal (``reduce``), in the enumerator's order.

    ``items``: contexts sorted by id, then tools sorted by id (``n_ctx`` contexts);
    ``pairs``: (context index, tool index, W_ct) for every W_ct != 0, sorted; ``unary``:
    u_i per item. A set is a sequence of item indices."""

    items: list[Resource]
    n_ctx: int
    pairs: list[tuple[int, int, float]]
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

    def exceeded(self, chosen: Iterable[int], budget: Budget,
                 max_size: int | None) -> str | None:
        """The first limit the set breaks (``exceeded_limit``: the budget's arithmetic)."""
        return exceeded_limit(budget, [self.items[i] for i in chosen], max_size)


def fitting_alone(problem: JointProblem) -> tuple[list[ContextResource], list[ToolResource]]:
    """(contexts, tools) of ``problem`` that fit its budget on their own, each sorted by id:
    the first step of ``reduce``, which depends only on the pools and the budget (not on
    the utilities), so problems that share both can share it."""

    def fits_alone(r: Resource) -> bool:
        return exceeded_limit(problem.budget, [r]) is None

    return (sorted((r for r in problem.contexts if fits_alone(r)), key=lambda r: r.id),
            sorted((r for r in problem.tools if fits_alone(r)), key=lambda r: r.id))


def reduce(problem: JointProblem, max_size: int | None,
           fitting: tuple[list[ContextResource], list[ToolResource]] | None = None
           ) -> Reduced:
    """Drop candidates that never fit alone or never pay (see the module docstring).

    ``max_size``: the size cap in force (the selector's or the problem's; None: none).
    ``fitting``: ``fitting_alone(problem)`` where the caller has it already (from a problem
    with the same pools and budget); computed here otherwise."""
    if max_size == 0:
        return Reduced([], 0, [], [])
    contexts, tools = fitting_alone(problem) if fitting is None else fitting
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
    pool: tuple[Resource, ...] = (*contexts, *tools)
    alive = {r.id for r in pool}
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
    items: list[Resource] = [*contexts, *tools]
    index = {r.id: i for i, r in enumerate(items)}
    pairs = sorted(
        (index[c], index[t], w)
        for (c, t), w in weights.items()
        if w != 0 and c in index and t in index
    )
    return Reduced(items, len(contexts), pairs, [problem.u(r.id) for r in items])


class ReducingSelector:
    """Base of the exact selectors that start from ``reduce``.

    ``select`` reduces the problem under the size cap in force (the selector's
    ``max_size`` when given, else the problem's) and hands it to ``select_reduced``, which
    a subclass defines; ``AutoJointSelector`` calls ``select_reduced`` directly so the
    reduction runs once."""

    name: str
    max_size: int | None

    def select(self, problem: JointProblem) -> Selection:
        """Return the optimal ``Selection`` (the empty set when nothing fits or pays)."""
        start = time.perf_counter()
        max_size = self.max_size if self.max_size is not None else problem.max_size
        return self.select_reduced(problem, reduce(problem, max_size), max_size, start)

    def select_reduced(self, problem: JointProblem, red: Reduced, max_size: int | None,
                       start: float) -> Selection:
        """``select`` once ``red = reduce(problem, max_size)`` is known (``start``: the
        ``time.perf_counter()`` the time limit and solve time count from)."""
        raise NotImplementedError


@dataclass
class BudgetArrays:
    """Dense views of a reduced problem, and the vectorised feasibility check.

    ``unary`` (n,); ``W`` (n, n) pair weights (symmetric, zero diagonal); ``use`` (n, 5)
    each candidate's use of tokens, tool count, latency ms, cost USD and set size (columns
    named by ``LIMIT_COLUMNS``); ``limits`` (5,) those limits (inf: none); ``red`` and
    ``budget``: what ``fits`` hands the sets near a limit to."""

    unary: np.ndarray
    W: np.ndarray
    use: np.ndarray
    limits: np.ndarray
    red: Reduced
    budget: Budget
    max_size: int | None

    @classmethod
    def of(cls, red: Reduced, budget: Budget, max_size: int | None) -> BudgetArrays:
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
        limits = np.array([math.inf if v is None else v
                           for v in (budget.max_tokens, budget.max_tools,
                                     budget.max_latency_ms, budget.max_cost_usd, max_size)],
                          dtype=float)
        return cls(np.array(red.unary, dtype=float), W, use, limits, red, budget, max_size)

    def fits(self, masks: np.ndarray) -> np.ndarray:
        """Which sets fit: ``masks`` (m, n) booleans, one set per row -> (m,) booleans.

        Same answer as ``Reduced.exceeded`` (``Budget.check``'s arithmetic) for every row:
        the numpy sums (error below (n + 1) · 2^-53 · the row's total, Higham 2002, §4.2)
        decide the rows further than 1e-12 × their total from every limit, and the rows
        inside that band are checked one by one with ``Reduced.exceeded``."""
        masks = np.atleast_2d(np.asarray(masks, dtype=bool))
        used = masks.astype(float) @ self.use
        slack = 1e-12 * used
        over = np.any(used > self.limits + slack, axis=1)
        clear = np.all(used <= self.limits - slack, axis=1)
        out = clear & ~over
        for k in np.flatnonzero(~over & ~clear):
            chosen = np.flatnonzero(masks[k])
            out[k] = self.red.exceeded(chosen, self.budget, self.max_size) is None
        return out


LIMIT_COLUMNS = ("max_tokens", "max_tools", "max_latency_ms", "max_cost_usd", "max_size")
"""The limits in the order of ``BudgetArrays.use``'s columns (names as ``exceeded_limit``
returns them)."""
