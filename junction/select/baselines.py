"""The split baselines: contexts and tools ranked independently, no interactions.

They use unary utility only (no interaction information), as agents that rank documents
and tools independently do; the objective they report still counts interactions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select.problem import (
    OBJECTIVE_TOLERANCE,
    JointProblem,
    Selection,
    exceeded_limit,
    make_selection,
)

__all__ = ["DEFAULT_SPLITS", "AdaptiveSplitBaseline", "FixedSplitBaseline"]

DEFAULT_SPLITS = tuple(round(i / 10, 1) for i in range(11))
"""Context token fractions tried by ``AdaptiveSplitBaseline``: 0.0, 0.1, ..., 1.0."""


def _greedy_fill(
    items: Sequence[ContextResource | ToolResource],
    unary: dict[str, float],
    token_limit: float,
    budget: Budget,
    size_left: float,
) -> list[str]:
    """Add items by descending unary (then id) while the lane's ``token_limit`` (tokens)
    and every budget limit hold for the lane's set (``exceeded_limit``); skip u <= 0."""
    order = sorted(items, key=lambda r: (-unary.get(r.id, 0.0), r.id))
    chosen: list[ContextResource | ToolResource] = []
    tokens = 0
    for r in order:
        if len(chosen) >= size_left or unary.get(r.id, 0.0) <= 0:
            continue
        if tokens + r.token_cost > token_limit:
            continue
        if isinstance(r, ToolResource) and exceeded_limit(budget, [*chosen, r]) is not None:
            continue
        tokens += r.token_cost
        chosen.append(r)
    return [r.id for r in chosen]


class FixedSplitBaseline:
    """Reserve ``context_fraction`` of the token budget for contexts, the rest for tools.

    Each lane is filled greedily by unary utility (descending, then id); candidates with
    u <= 0 are skipped. Tool count, latency and cost limits apply to the tool lane;
    a ``max_size`` cap is spent on contexts first. With no token limit both lanes are
    unbounded in tokens. Raises ``ValueError`` if the fraction is outside [0, 1].
    """

    name = "fixed_split"

    def __init__(self, context_fraction: float = 0.5) -> None:
        if not 0.0 <= context_fraction <= 1.0 or math.isnan(context_fraction):
            raise ValueError(f"context_fraction must be in [0, 1], got {context_fraction!r}")
        self.context_fraction = context_fraction

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
    Raises ``ValueError`` if ``splits`` is empty or a fraction is outside [0, 1].
    """

    name = "adaptive_split"

    def __init__(self, splits: Sequence[float] = DEFAULT_SPLITS) -> None:
        if not splits:
            raise ValueError("splits must not be empty")
        self.splits = tuple(splits)
        for s in self.splits:
            FixedSplitBaseline(s)  # validates the fraction

    def select(self, problem: JointProblem) -> Selection:
        """Best-unary split selection (status ``heuristic``); objective includes interactions."""
        start = time.perf_counter()
        best: Selection | None = None
        for split in self.splits:
            candidate = FixedSplitBaseline(split).select(problem)
            if best is None or candidate.unary > best.unary + OBJECTIVE_TOLERANCE:
                best = candidate
        assert best is not None
        return best.model_copy(
            update={"strategy": self.name,
                    "solve_time_ms": round((time.perf_counter() - start) * 1000, 3)}
        )
