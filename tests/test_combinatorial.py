"""``CombinatorialJointSelector`` against the enumerating oracle: same selection, ties included.

Property tests reuse tests/test_milp.py's instances (up to 14 candidates, mixed-sign
interactions on a 0.01 grid, all four limits, optional size cap) and add instances built
for ties: scores on a 0.1 grid, optionally all-zero utilities or negative-only
interactions, zero budgets. Seeded bench instances (bench/perf/exact_solver.py) at 16
candidates, the hand tables and the fuzzed cases of test_milp close the set.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from junction.budget import Budget
from junction.errors import SelectionError
from junction.resources import ContextResource, ToolResource
from junction.select import EnumerationJointSelector, JointProblem
from junction.select.exact import COMBINATORIAL_MAX, CombinatorialJointSelector
from junction.select.instances import random_problem
from tests.solver_cases import FUZZED, TABLE, ctx, problems, same, tool


def check(problem: JointProblem) -> None:
    expected = EnumerationJointSelector().select(problem)
    got = CombinatorialJointSelector().select(problem)
    assert same(got, expected), (got, expected)
    assert got.status == "optimal"


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_equals_enumeration(problem: JointProblem) -> None:
    check(problem)


@st.composite
def tie_problems(draw, max_candidates: int = 14) -> JointProblem:
    """Scores on a 0.1 grid (many exact ties); ``kind`` picks the sign pattern."""
    kind = draw(st.sampled_from(["mixed", "zero_unary", "negative_pairs", "all_zero"]))
    n = draw(st.integers(0, max_candidates))
    n_ctx = draw(st.integers(0, n))
    contexts = tuple(ctx(f"c{i:02d}", draw(st.integers(0, 4)) * 10) for i in range(n_ctx))
    tools = tuple(tool(f"t{j:02d}", draw(st.integers(0, 4)) * 10,
                       draw(st.integers(0, 3)) / 10, draw(st.integers(0, 3)) / 1000)
                  for j in range(n - n_ctx))
    resources: list[ContextResource | ToolResource] = [*contexts, *tools]
    tenth = st.integers(-10, 10).map(lambda v: v / 10)
    unary = {}
    if kind in ("mixed", "negative_pairs"):
        unary = {r.id: draw(tenth) for r in resources}
    interactions = {}
    if kind != "all_zero":
        pair = (st.integers(-10, -1).map(lambda v: v / 10) if kind == "negative_pairs"
                else tenth)
        for c in contexts:
            for t in tools:
                if draw(st.integers(0, 9)) < 5:
                    key = (c.id, t.id) if draw(st.booleans()) else (t.id, c.id)
                    interactions[key] = draw(pair)
    total = sum(r.token_cost for r in resources)
    budget = Budget(
        max_tokens=draw(st.none() | st.just(0) | st.integers(0, max(total, 1))),
        max_tools=draw(st.none() | st.integers(0, len(tools) + 1)),
        max_latency_ms=draw(st.none() | st.integers(0, 12).map(lambda v: v / 10)),
        max_cost_usd=draw(st.none() | st.integers(0, 12).map(lambda v: v / 1000)),
    )
    max_size = draw(st.none() | st.integers(0, n + 1))
    return JointProblem(contexts, tools, budget, unary, interactions, max_size)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problem=tie_problems())
def test_ties_equal_enumeration(problem: JointProblem) -> None:
    check(problem)


@pytest.mark.parametrize("tightness", [0.2, 0.4, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_bench_instances(seed: int, tightness: float) -> None:
    check(random_problem(16, seed, tightness=tightness))


@pytest.mark.parametrize("seed", range(3))
def test_bench_instances_with_size_cap(seed: int) -> None:
    check(random_problem(16, seed, tightness=1.0, max_size=4))


@pytest.mark.parametrize("problem, context_ids, tool_ids", FUZZED)
def test_found_by_fuzzing(problem: JointProblem, context_ids, tool_ids) -> None:
    got = CombinatorialJointSelector().select(problem)
    assert (got.context_ids, got.tool_ids) == (context_ids, tool_ids)
    check(problem)


@pytest.mark.parametrize("problem, context_ids, tool_ids", TABLE)
def test_table(problem: JointProblem, context_ids, tool_ids) -> None:
    got = CombinatorialJointSelector().select(problem)
    assert (got.context_ids, got.tool_ids) == (context_ids, tool_ids)
    check(problem)


def test_max_size_override_and_deterministic() -> None:
    problem = random_problem(14, 1, tightness=1.0)
    expected = EnumerationJointSelector(max_size=3).select(problem)
    first = CombinatorialJointSelector(max_size=3).select(problem)
    assert same(first, expected)
    # the override binds: uncapped, more than 3 resources are chosen
    uncapped = CombinatorialJointSelector().select(problem)
    assert len(first.exposed_ids) <= 3 < len(uncapped.exposed_ids)
    again = CombinatorialJointSelector(max_size=3).select(problem)
    assert same(first, again) and first.subsets_examined == again.subsets_examined


def test_refuses_pools_past_its_limit() -> None:
    problem = random_problem(COMBINATORIAL_MAX + 2, 0, tightness=1.0)
    with pytest.raises(SelectionError, match=f"at most {COMBINATORIAL_MAX} candidates"):
        CombinatorialJointSelector().select(problem)
