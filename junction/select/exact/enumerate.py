"""The enumeration oracle: every subset that fits, depth-first.

``EnumerationJointSelector`` is the reference the other exact selectors are tested
against: it is exact under the tie rule of ``junction.select.problem``. Branches are
pruned only when a budget limit is already exceeded; every limit is monotone (costs are
>= 0, and the correctly rounded sum of a superset is never smaller), so no superset of an
infeasible set can fit and pruning never changes the answer. Latency and cost are kept as
running sums and decided by ``FloatBand``, with ``exceeded_limit`` (the budget's own
arithmetic) near a limit. It shares only ``junction.select.problem`` with the other
selectors: no reduction, no LP.
"""

from __future__ import annotations

import math
import time

from junction.resources import ContextResource, ToolResource
from junction.select.problem import (
    OBJECTIVE_TOLERANCE,
    FloatBand,
    JointProblem,
    Selection,
    check_selector_options,
    exceeded_limit,
    make_selection,
    objective_terms,
    tie_break_key,
)

__all__ = ["EnumerationJointSelector"]


class EnumerationJointSelector:
    """Exact maximiser of the joint objective by enumeration (reference selector).

    Cost: O(2^n) subsets for n candidates; use it up to about 20 candidates.
    ``max_size`` here overrides the problem's when given; raises ``ValueError`` if it is
    not an integer >= 0 (``check_selector_options``). ``subsets_examined`` counts the
    subsets visited plus those rejected at a limit; ``subsets_feasible`` those that fit.
    """

    name = "enumeration"

    def __init__(self, max_size: int | None = None) -> None:
        check_selector_options(max_size=max_size)
        self.max_size = max_size

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
        max_tokens = math.inf if b.max_tokens is None else b.max_tokens
        max_tools = math.inf if b.max_tools is None else b.max_tools
        band = FloatBand.of(b, tools)
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
                    fits = new_tools <= max_tools and band.decide(new_lat, new_usd)
                    if fits is None:  # near a limit: the budget's own arithmetic decides
                        fits = exceeded_limit(b, [items[k] for k in (*chosen, i)]) is None
                    if not fits:
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
