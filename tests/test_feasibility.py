"""One feasibility definition: ``Budget.check`` and every form the selectors use agree.

Instances are drawn so that sums land on limits often: latencies on a 0.1 ms grid and
costs on a 0.001 USD grid (inexact in binary), and limits drawn as the sum, in some order,
of a random subset of the tools (so running sums and ``math.fsum`` disagree near them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select import (
    AdaptiveSplitBaseline,
    CombinatorialJointSelector,
    EnumerationJointSelector,
    FixedSplitBaseline,
)
from junction.select.exact.reduction import BudgetArrays, Reduced
from junction.select.instances import random_problem
from junction.select.problem import FloatBand, exceeded_limit


@st.composite
def instances(draw):
    n_ctx = draw(st.integers(0, 5))
    n_tools = draw(st.integers(0, 9))
    contexts = [ContextResource(id=f"c{i}", content="", token_cost=draw(st.integers(0, 30)))
                for i in range(n_ctx)]
    tools = [ToolResource(id=f"t{j}", description="",
                          schema_token_cost=draw(st.integers(0, 30)),
                          estimated_latency_ms=draw(st.integers(0, 30)) / 10,
                          estimated_cost_usd=draw(st.integers(0, 30)) / 1000)
             for j in range(n_tools)]
    part = draw(st.lists(st.sampled_from(tools), max_size=len(tools), unique_by=id)
                if tools else st.just([]))
    latency = 0.0
    cost = 0.0
    for t in part:  # a running sum in drawn order: sometimes 1 ulp off the fsum
        latency += t.estimated_latency_ms
        cost += t.estimated_cost_usd
    budget = Budget(
        max_tokens=draw(st.none() | st.integers(0, 30 * (n_ctx + n_tools) + 1)),
        max_tools=draw(st.none() | st.integers(0, n_tools + 1)),
        max_latency_ms=draw(st.none() | st.just(latency)),
        max_cost_usd=draw(st.none() | st.just(cost)),
    )
    masks = draw(st.lists(st.lists(st.booleans(), min_size=n_ctx + n_tools,
                                   max_size=n_ctx + n_tools), min_size=1, max_size=8))
    max_size = draw(st.none() | st.integers(0, n_ctx + n_tools + 1))
    return contexts, tools, budget, masks, max_size


@settings(max_examples=500, deadline=None, derandomize=True)
@given(instances())
def test_scalar_vectorised_and_band_agree_with_budget_check(instance) -> None:
    contexts, tools, budget, masks, max_size = instance
    items = [*contexts, *tools]
    red = Reduced(items, len(contexts), [], [0.0] * len(items))
    arrays = BudgetArrays.of(red, budget, max_size)
    band = FloatBand.of(budget, tools)
    expected = []
    for mask in masks:
        cs = [r for r, m in zip(contexts, mask, strict=False) if m]
        ts = [r for r, m in zip(tools, mask[len(contexts):], strict=False) if m]
        check = budget.check(cs, ts)
        size_ok = max_size is None or len(cs) + len(ts) <= max_size
        expected.append(check.fits and size_ok)
        # the scalar form: the size cap first, then the budget's first failed limit
        broken = exceeded_limit(budget, [*cs, *ts], max_size)
        assert broken == (None if expected[-1] else
                          "max_size" if not size_ok else check.failed[0])
        # the running-sum band, summed in reverse order, never contradicts the check
        latency = cost = 0.0
        for t in reversed(ts):
            latency += t.estimated_latency_ms
            cost += t.estimated_cost_usd
        floats_ok = "max_latency_ms" not in check.failed and "max_cost_usd" not in check.failed
        assert band.decide(latency, cost) in (None, floats_ok)
    # the vectorised form, all sets at once
    got = arrays.fits(np.array(masks, dtype=bool).reshape(len(masks), len(items)))
    assert got.tolist() == expected


def test_fsum_is_the_rule_not_the_running_sum() -> None:
    # 0.1 + 0.2 + 0.3 is 0.6000000000000001 as a running sum and 0.6 by math.fsum: the
    # three tools fit a 0.6 ms limit, in every form
    tools = [ToolResource(id=f"t{i}", description="", schema_token_cost=0,
                          estimated_latency_ms=v) for i, v in enumerate((0.1, 0.2, 0.3))]
    assert 0.1 + 0.2 + 0.3 > 0.6 and math.fsum([0.1, 0.2, 0.3]) == 0.6
    budget = Budget(max_latency_ms=0.6)
    assert budget.check([], tools).fits
    assert exceeded_limit(budget, tools) is None
    red = Reduced(list(tools), 0, [], [0.0] * 3)
    all_three = np.ones((1, 3), dtype=bool)
    assert BudgetArrays.of(red, budget, None).fits(all_three).tolist() == [True]
    assert FloatBand.of(budget, tools).decide(0.1 + 0.2 + 0.3, 0.0) is None  # ask the check


@pytest.mark.parametrize("selector", [EnumerationJointSelector(), CombinatorialJointSelector(),
                                      FixedSplitBaseline(), AdaptiveSplitBaseline()],
                         ids=lambda s: s.name)
@pytest.mark.parametrize("seed", range(5))
def test_everything_fits_when_every_limit_is_the_pools_total(selector, seed) -> None:
    # tightness 1.0: each limit is the pool's total rounded to its grid, so sets sit within
    # 1 ulp of it (seed 1: 4582.9 ms, which math.fsum gives exactly and a running sum
    # overshoots, 4582.900000000001). With running sums the baselines once returned sets
    # that Budget.check rejects (seed 4) and the exact selectors left a tool out (seed 1).
    problem = random_problem(12, seed, tightness=1.0)
    got = selector.select(problem)
    contexts = {r.id: r for r in problem.contexts}
    tools = {r.id: r for r in problem.tools}
    assert problem.budget.check([contexts[i] for i in got.context_ids],
                                [tools[i] for i in got.tool_ids]).fits


def test_a_set_exactly_at_its_limits_is_selected() -> None:
    # seed 1 at tightness 1.0: all six tools sum to the limits exactly (math.fsum), so the
    # optimum keeps every tool; a running sum (4582.900000000001 ms) would drop one
    problem = random_problem(12, 1, tightness=1.0)
    assert len(EnumerationJointSelector().select(problem).tool_ids) == len(problem.tools) == 6
