"""Exact-solver test cases several test modules share (``tests/test_milp.py``,
``tests/test_combinatorial.py``, ``tests/test_qkp_bounds.py``), imported by public name.

- ``same``: two selections agree, solver bookkeeping aside (``SOLVER_FIELDS``);
- ``ctx``/``tool``: resources with only the fields a joint problem reads;
- ``problems``: a hypothesis strategy of joint problems of up to 14 candidates, mixed-sign
  interactions on a 0.01 grid (many exact ties) and all four budget limits;
- ``TABLE``: degenerate inputs and hand-worked answers; ``FUZZED``: instances fuzzing
  found where a solver was once wrong.
"""

from __future__ import annotations

from hypothesis import strategies as st

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select import JointProblem

__all__ = ["FUZZED", "SOLVER_FIELDS", "TABLE", "ctx", "problems", "same", "tool"]

# What may differ between two exact selectors' answers: the bookkeeping, and ``strategy``
# (each names its own algorithm; see test_each_selector_names_its_algorithm).
SOLVER_FIELDS = {"strategy", "solve_time_ms", "subsets_examined", "subsets_feasible",
                 "lp_iterations", "status", "gap"}


def same(a, b) -> bool:
    return a.model_dump(exclude=SOLVER_FIELDS) == b.model_dump(exclude=SOLVER_FIELDS)


def ctx(id: str, tokens: int) -> ContextResource:
    return ContextResource(id=id, content="", token_cost=tokens)


def tool(id: str, tokens: int, latency: float = 0.0, cost: float = 0.0) -> ToolResource:
    return ToolResource(id=id, description="", schema_token_cost=tokens,
                        estimated_latency_ms=latency, estimated_cost_usd=cost)


# ----------------------------------------------------------------------- strategies

grid = st.integers(-100, 100).map(lambda v: v / 100)


@st.composite
def problems(draw, max_candidates: int = 14) -> JointProblem:
    n = draw(st.integers(0, max_candidates))
    n_ctx = draw(st.integers(0, n))
    contexts = tuple(ctx(f"c{i:02d}", draw(st.integers(0, 60))) for i in range(n_ctx))
    tools = tuple(
        tool(f"t{j:02d}", draw(st.integers(0, 60)),
             draw(st.integers(0, 20).map(lambda v: v / 10)),  # ms, 0.1 steps (inexact sums)
             draw(st.integers(0, 10).map(lambda v: v / 1000)))  # USD
        for j in range(n - n_ctx)
    )
    resources: list[ContextResource | ToolResource] = [*contexts, *tools]
    ids = [r.id for r in resources]
    unary = {rid: draw(grid) for rid in ids if draw(st.integers(0, 4)) > 0}  # absent = 0
    interactions = {}
    for c in contexts:
        for t in tools:
            if draw(st.integers(0, 9)) < 4:
                key = (c.id, t.id) if draw(st.booleans()) else (t.id, c.id)
                interactions[key] = draw(grid.filter(lambda v: v != 0))
    total_tokens = sum(r.token_cost for r in resources)
    budget = Budget(
        max_tokens=draw(st.none() | st.integers(0, max(total_tokens, 1))),
        max_tools=draw(st.none() | st.integers(0, len(tools) + 1)),
        max_latency_ms=draw(st.none() | st.integers(0, 40).map(lambda v: v / 10)),
        max_cost_usd=draw(st.none() | st.integers(0, 40).map(lambda v: v / 1000)),
    )
    max_size = draw(st.none() | st.integers(0, n + 1))
    return JointProblem(contexts, tools, budget, unary, interactions, max_size)


# ----------------------------------------------------------------------- tables

C1, C2 = ctx("c1", 10), ctx("c2", 10)
T1, T2 = tool("t1", 10, latency=0.1), tool("t2", 10, latency=0.2)


# Degenerate inputs and hand-worked answers: (problem, context ids, tool ids); also
# checked against CombinatorialJointSelector in tests/test_combinatorial.py.
TABLE = [
    # no candidates at all
    (JointProblem((), (), Budget()), (), ()),
    # nothing fits: every candidate alone exceeds 5 tokens
    (JointProblem((C1,), (T1,), Budget(max_tokens=5), {"c1": 1.0, "t1": 1.0}), (), ()),
    # zero budget: only the zero-token context fits
    (JointProblem((C1, ctx("c0", 0)), (T1,), Budget(max_tokens=0),
                  {"c0": 0.5, "c1": 1.0, "t1": 1.0}), ("c0",), ()),
    # zero tool budget: contexts only
    (JointProblem((C1,), (T1,), Budget(max_tools=0), {"c1": 0.2, "t1": 1.0}), ("c1",), ()),
    # size cap 0
    (JointProblem((C1,), (T1,), Budget(), {"c1": 1.0, "t1": 1.0}, max_size=0), (), ()),
    # all utilities zero: every set ties at 0; fewest tokens wins: the empty set
    (JointProblem((C1, C2), (T1, T2), Budget()), (), ()),
    # contradictory pair scores cancel: w(c1,t1) + w(t1,c1) = 0; t1 alone is worth 0.3
    (JointProblem((C1,), (T1,), Budget(max_tokens=10), {"c1": 0.2, "t1": 0.3},
                  {("c1", "t1"): 1.0, ("t1", "c1"): -1.0}), (), ("t1",)),
    # positive pair: 0.1 + 0.1 + 0.5 = 0.7 beats c2 alone (0.6)
    (JointProblem((C1, C2), (T1,), Budget(max_tokens=20), {"c1": 0.1, "c2": 0.6, "t1": 0.1},
                  {("c1", "t1"): 0.5}), ("c1",), ("t1",)),
    # negative pair: c1 + t1 = 0.6 + 0.6 - 1.0 = 0.2 < 0.6 alone; c1 and t1 tie on tokens
    # and size, and the empty context tuple sorts first: t1
    (JointProblem((C1,), (T1,), Budget(), {"c1": 0.6, "t1": 0.6}, {("t1", "c1"): -1.0}),
     (), ("t1",)),
    # objective tie, fewer tokens wins: c2 (10 tokens) = c3 (5 tokens) = 0.5
    (JointProblem((C2, ctx("c3", 5)), (), Budget(max_tokens=10), {"c2": 0.5, "c3": 0.5}),
     ("c3",), ()),
    # full tie on tokens and size: smallest id
    (JointProblem((C2, C1), (), Budget(max_tokens=10), {"c1": 0.5, "c2": 0.5}), ("c1",), ()),
    # 0.1 + 0.2 ms is 0.30000000000000004 > 0.3 in floats: the enumerator's arithmetic rules
    (JointProblem((), (T1, T2), Budget(max_latency_ms=0.3), {"t1": 0.4, "t2": 0.5}),
     (), ("t2",)),
]


# Found by fuzzing the branch and cut against the enumerator (both were wrong once):
FUZZED = [
    # scores near HiGHS's 1e-7 tolerance: the LP's costs must be scaled, or a warm-started
    # node LP reports a value 1e-6 low and prunes the tie with fewer tokens
    (JointProblem((ctx("c00", 20), ctx("c01", 10), ctx("c02", 0)),
                  (tool("t00", 10), tool("t01", 20), tool("t03", 0)), Budget(max_tokens=40),
                  {"c00": 1e-7, "t03": 1e-7},
                  {("c00", "t00"): 2e-7, ("t03", "c00"): -1e-6, ("c01", "t00"): 1e-6,
                   ("t01", "c01"): -1e-6, ("c01", "t03"): 2e-7, ("t01", "c02"): 1e-7,
                   ("t03", "c02"): -1e-7}),
     ("c01",), ("t00", "t03")),
    # c00 + t02 "pay" exactly 0, yet the set holding them scores 1 ulp above 1e-9 in
    # floats: dropping them moves the tie threshold, and the empty set would tie
    (JointProblem((ctx("c01", 10), ctx("c00", 0)), (tool("t02", 10),), Budget(),
                  {"c01": 1e-9, "t02": -0.5}, {("c00", "t02"): 0.5}),
     ("c01",), ()),
    # objectives 1e-9 apart: the enumerator's running sums must not drop a tie before
    # the exact rescoring
    (JointProblem((ctx("c00", 10), ctx("c01", 0), ctx("c02", 10), ctx("c03", 10),
                   ctx("c04", 10)), (), Budget(max_tokens=39),
                  {"c00": 0.499999999, "c01": 5e-10, "c02": 1e-9, "c03": 0.499999999}),
     ("c00", "c01", "c03"), ()),
]
