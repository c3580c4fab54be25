"""Seeded instances of the joint problem, for tests and benchmarks.

- ``random_problem``: contexts and tools with random costs, unaries and sparse pairs
  (``density``), a budget at ``tightness`` of the total;
- ``gallo_problem``: the quadratic knapsack family of Gallo, Hammer and Simeone (1980),
  "Quadratic knapsack problems", Math. Programming Study 12, as used across the QKP
  literature;
- ``family_problem``: either, by name (``FAMILIES``).

Every generator is seeded with ``random.Random`` on a string key, so an instance is the
same on every machine and Python version.
"""

from __future__ import annotations

import math
import random

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select.problem import JointProblem

__all__ = ["FAMILIES", "family_problem", "gallo_problem", "random_problem"]


def random_problem(n: int, seed: int, density: float = 0.1, tightness: float = 0.4,
                   max_size: int | None = None) -> JointProblem:
    """One seeded instance with ``n`` candidates (see the module docstring)."""
    rng = random.Random(f"junction-bench-exact:{n}:{seed}:{density}:{tightness}")
    n_ctx = n // 2
    contexts = tuple(ContextResource(id=f"ctx-{i:03d}", content="",
                                     token_cost=rng.randint(40, 200)) for i in range(n_ctx))
    tools = tuple(
        ToolResource(id=f"tool-{j:03d}", description="", schema_token_cost=rng.randint(20, 120),
                     estimated_latency_ms=round(rng.uniform(50, 2000), 1),
                     estimated_cost_usd=round(rng.uniform(0, 0.01), 5))
        for j in range(n - n_ctx)
    )
    pool: tuple[ContextResource | ToolResource, ...] = (*contexts, *tools)
    unary = {r.id: round(rng.random(), 4) for r in pool}
    interactions = {}
    for c in contexts:
        for t in tools:
            if rng.random() < density:
                key = (c.id, t.id) if rng.random() < 0.5 else (t.id, c.id)
                interactions[key] = round(rng.gauss(0.0, 1.0), 4)
    total_tokens = sum(r.token_cost for r in pool)
    budget = Budget(
        max_tokens=math.floor(tightness * total_tokens),
        max_tools=max(1, math.floor(tightness * len(tools))),
        max_latency_ms=round(tightness * sum(t.estimated_latency_ms for t in tools), 1),
        max_cost_usd=round(tightness * sum(t.estimated_cost_usd for t in tools), 5),
    )
    return JointProblem(contexts, tools, budget, unary, interactions, max_size)


def gallo_problem(n: int, seed: int, delta: float = 0.25) -> JointProblem:
    """One seeded instance of the ``gallo`` family: Gallo, Hammer & Simeone (1980)'s QKP
    generator restricted to the bipartite structure of the joint objective.

    ``n`` candidates, ``n // 2`` contexts then tools. Each unary utility u_j (the QKP's
    diagonal profit p_jj) and each context–tool pair weight W_ct is non-zero with
    probability ``delta`` (the paper's Δ, 0.25 to 1.0) and then a uniform integer in
    [1, 100]; there are no context–context or tool–tool profits. Token costs (the
    knapsack weights) are uniform integers in [1, 50]; ``max_tokens`` (the capacity) a
    uniform integer in [50, Σ tokens] (as in the paper; Caprara, Pisinger & Toth 1999
    and Billionnet & Soutif 2004 use the same generator); ``max_tools`` (the second row)
    a uniform integer in [1, number of tools]; no latency or cost limits (tools carry
    none). Every profit is positive, as in the literature. Seeded with ``random.Random``.
    """
    rng = random.Random(f"junction-bench-gallo:{n}:{seed}:{delta}")
    n_ctx = n // 2
    contexts = tuple(ContextResource(id=f"ctx-{i:03d}", content="",
                                     token_cost=rng.randint(1, 50)) for i in range(n_ctx))
    tools = tuple(ToolResource(id=f"tool-{j:03d}", description="",
                               schema_token_cost=rng.randint(1, 50))
                  for j in range(n - n_ctx))
    pool: tuple[ContextResource | ToolResource, ...] = (*contexts, *tools)
    unary = {}
    for r in pool:
        if rng.random() < delta:
            unary[r.id] = float(rng.randint(1, 100))
    interactions = {}
    for c in contexts:
        for t in tools:
            if rng.random() < delta:
                interactions[(c.id, t.id)] = float(rng.randint(1, 100))
    total_tokens = sum(r.token_cost for r in pool)
    budget = Budget(max_tokens=rng.randint(50, max(50, total_tokens)),
                    max_tools=rng.randint(1, max(1, len(tools))))
    return JointProblem(contexts, tools, budget, unary, interactions)


FAMILIES = {
    "mixed": "random_problem: mixed-sign pair weights (standard normal), unary in [0, 1], "
             "all four limits at `tightness` of the pool's total",
    "gallo": "gallo_problem: Gallo, Hammer & Simeone (1980) restricted to context-tool "
             "pairs; positive integer profits, tokens in [1, 50], token and tool-count rows",
}
"""The named instance families (``family_problem``)."""


def family_problem(family: str, n: int, seed: int, density: float,
                   tightness: float = 0.4) -> JointProblem:
    """Instance ``seed`` of ``family`` (``FAMILIES``) with ``n`` candidates; ``density``
    is the pair density (``gallo``: Δ, also the unary density); ``tightness`` is used by
    ``mixed`` only. Raises ``ValueError`` naming the families on an unknown name."""
    if family == "mixed":
        return random_problem(n, seed, density=density, tightness=tightness)
    if family == "gallo":
        return gallo_problem(n, seed, delta=density)
    raise ValueError(f"unknown family {family!r}; valid: {sorted(FAMILIES)}")
