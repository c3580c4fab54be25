"""Selectors: the exact joint selector (enumeration) and the split baselines.

``ExactJointSelector`` is the reference: it enumerates subsets depth-first and is exact
under the tie rule of ``junction.selection``. Branches are pruned only when a budget limit
is already exceeded; every limit is monotone (costs are >= 0), so no superset of an
infeasible set can fit and pruning never changes the answer.

The baselines use unary utility only (no interaction information), as agents that rank
documents and tools independently do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from junction.budget import Budget
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
    "ExactJointSelector",
    "FixedSplitBaseline",
    "AdaptiveSplitBaseline",
    "DEFAULT_SPLITS",
]

DEFAULT_SPLITS = tuple(round(i / 10, 1) for i in range(11))
"""Context token fractions tried by ``AdaptiveSplitBaseline``: 0.0, 0.1, ..., 1.0."""


def _limit(value: float | None) -> float:
    return math.inf if value is None else value


class ExactJointSelector:
    """Exact maximiser of the joint objective by enumeration (reference selector).

    Cost: O(2^n) subsets for n candidates; use it up to about 20 candidates.
    ``max_size`` here overrides the problem's when given.
    """

    name = "exact"

    def __init__(self, max_size: int | None = None, name: str = "exact") -> None:
        check_selector_options(max_size=max_size)
        self.max_size = max_size
        self.name = name

    def select(self, problem: JointProblem) -> Selection:
        """Return the optimal ``Selection`` (status ``optimal``; the empty set if nothing fits)."""
        start = time.perf_counter()
        contexts = sorted(problem.contexts, key=lambda r: r.id)
        tools = sorted(problem.tools, key=lambda r: r.id)
        items: list[ContextResource | ToolResource] = [*contexts, *tools]
        n_ctx = len(contexts)
        max_size = self.max_size if self.max_size is not None else problem.max_size
        max_size = len(items) if max_size is None else max_size
        b = problem.budget
        max_tokens = _limit(b.max_tokens)
        max_tools = _limit(b.max_tools)
        max_latency = _limit(b.max_latency_ms)
        max_cost = _limit(b.max_cost_usd)
        unary = [problem.u(r.id) for r in items]
        cost = [r.token_cost for r in items]
        lat = [getattr(r, "estimated_latency_ms", 0.0) for r in items]
        usd = [getattr(r, "estimated_cost_usd", 0.0) for r in items]
        # pair[i][j] for context index i and tool index j (offset by n_ctx)
        pair = [[problem.pair(c.id, t.id) for t in tools] for c in contexts]

        examined = 0
        feasible = 0
        best = -math.inf
        near: list[tuple[float, tuple[int, ...]]] = []
        chosen: list[int] = []
        # Running sums drift from the exact (fsum) objective by a few ulp of the largest
        # possible objective; keep that much more than the tie tolerance before rescoring.
        scale = math.fsum(abs(v) for v in unary) + math.fsum(
            abs(v) for row in pair for v in row)
        wide = OBJECTIVE_TOLERANCE + 1e-12 * scale

        def visit(start_idx: int, tokens: int, n_tools: int, latency: float, usd_sum: float,
                  value: float) -> None:
            nonlocal examined, feasible, best, near
            examined += 1
            feasible += 1
            if value > best:
                best = value
                near = [(v, s) for v, s in near if v >= best - wide]
                near.append((value, tuple(chosen)))
            elif value >= best - wide:
                near.append((value, tuple(chosen)))
            if len(chosen) >= max_size:
                return
            for i in range(start_idx, len(items)):
                new_tokens = tokens + cost[i]
                if new_tokens > max_tokens:
                    examined += 1
                    continue
                if i >= n_ctx:
                    new_tools = n_tools + 1
                    new_lat = latency + lat[i]
                    new_usd = usd_sum + usd[i]
                    if new_tools > max_tools or new_lat > max_latency or new_usd > max_cost:
                        examined += 1
                        continue
                    j = i - n_ctx
                    gain = unary[i] + sum(pair[c][j] for c in chosen if c < n_ctx)
                else:
                    new_tools, new_lat, new_usd = n_tools, latency, usd_sum
                    gain = unary[i] + sum(pair[i][t - n_ctx] for t in chosen if t >= n_ctx)
                chosen.append(i)
                visit(i + 1, new_tokens, new_tools, new_lat, new_usd, value + gain)
                chosen.pop()

        visit(0, 0, 0, 0.0, 0.0, 0.0)

        def exact_key(subset: tuple[int, ...]) -> tuple:
            cs = [items[i].id for i in subset if i < n_ctx]
            ts = [items[i].id for i in subset if i >= n_ctx]
            return cs, ts

        # Re-score near-best subsets exactly (fsum), then apply the documented tie rule.
        rescored = []
        for _, subset in near:
            cs, ts = exact_key(subset)
            u, w = objective_terms(problem, cs, ts)
            rescored.append((u + w, sum(cost[i] for i in subset), cs, ts))
        top = max(v for v, *_ in rescored)
        ties = [r for r in rescored if r[0] >= top - OBJECTIVE_TOLERANCE]
        _, _, cs, ts = min(ties, key=lambda r: tie_break_key(r[1], r[2], r[3]))
        return make_selection(
            self.name,
            problem,
            cs,
            ts,
            subsets_examined=examined,
            subsets_feasible=feasible,
            status="optimal",
            solve_time_ms=round((time.perf_counter() - start) * 1000, 3),
        )


def _greedy_fill(
    items: Sequence[ContextResource | ToolResource],
    unary: dict[str, float],
    token_limit: float,
    budget: Budget,
    size_left: float,
) -> list[str]:
    """Add items by descending unary (then id) while every limit holds; skip u <= 0."""
    order = sorted(items, key=lambda r: (-unary.get(r.id, 0.0), r.id))
    chosen: list[str] = []
    tokens = 0
    n_tools = 0
    latency = 0.0
    cost = 0.0
    for r in order:
        if len(chosen) >= size_left or unary.get(r.id, 0.0) <= 0:
            continue
        if tokens + r.token_cost > token_limit:
            continue
        if isinstance(r, ToolResource):
            if (
                n_tools + 1 > _limit(budget.max_tools)
                or latency + r.estimated_latency_ms > _limit(budget.max_latency_ms)
                or cost + r.estimated_cost_usd > _limit(budget.max_cost_usd)
            ):
                continue
            n_tools += 1
            latency += r.estimated_latency_ms
            cost += r.estimated_cost_usd
        tokens += r.token_cost
        chosen.append(r.id)
    return chosen


class FixedSplitBaseline:
    """Reserve ``context_fraction`` of the token budget for contexts, the rest for tools.

    Each lane is filled greedily by unary utility (descending, then id); candidates with
    u <= 0 are skipped. Tool count, latency and cost limits apply to the tool lane;
    a ``max_size`` cap is spent on contexts first. With no token limit both lanes are
    unbounded in tokens. Raises ``ValueError`` if the fraction is outside [0, 1].
    """

    def __init__(self, context_fraction: float = 0.5, name: str = "fixed_split") -> None:
        if not 0.0 <= context_fraction <= 1.0 or math.isnan(context_fraction):
            raise ValueError(f"context_fraction must be in [0, 1], got {context_fraction!r}")
        self.context_fraction = context_fraction
        self.name = name

    def select(self, problem: JointProblem) -> Selection:
        """Greedy split selection (status ``heuristic``); objective includes interactions."""
        start = time.perf_counter()
        b = problem.budget
        if b.max_tokens is None:
            ctx_limit = tool_limit = math.inf
        else:
            ctx_limit = math.floor(b.max_tokens * self.context_fraction)
            tool_limit = b.max_tokens - ctx_limit
        size = math.inf if problem.max_size is None else problem.max_size
        unary = dict(problem.unary)
        cs = _greedy_fill(problem.contexts, unary, ctx_limit, b, size)
        ts = _greedy_fill(problem.tools, unary, tool_limit, b, size - len(cs))
        return make_selection(
            self.name, problem, cs, ts, status="heuristic",
            solve_time_ms=round((time.perf_counter() - start) * 1000, 3),
        )


class AdaptiveSplitBaseline:
    """Try each context fraction in ``splits``; keep the best unary total.

    Ties keep the first split in the given order (default ``DEFAULT_SPLITS``, 0.0 to 1.0).
    """

    def __init__(self, splits: Sequence[float] = DEFAULT_SPLITS, name: str = "adaptive_split"):
        if not splits:
            raise ValueError("splits must not be empty")
        self.splits = tuple(splits)
        for s in self.splits:
            FixedSplitBaseline(s)  # validates the fraction
        self.name = name

    def select(self, problem: JointProblem) -> Selection:
        """Best-unary split selection (status ``heuristic``); objective includes interactions."""
        start = time.perf_counter()
        best: Selection | None = None
        for split in self.splits:
            candidate = FixedSplitBaseline(split, name=self.name).select(problem)
            if best is None or candidate.unary > best.unary + OBJECTIVE_TOLERANCE:
                best = candidate
        assert best is not None
        return best.model_copy(
            update={"solve_time_ms": round((time.perf_counter() - start) * 1000, 3)}
        )
