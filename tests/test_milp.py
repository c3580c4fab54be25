"""The exact solvers against the enumerating oracle: same selection, ties included.

Both LP-based solvers are checked: ``BranchAndCutJointSelector`` (the ``exact``
strategy's above 32 candidates, through ``AutoJointSelector``) and ``MilpJointSelector``
(junction/select/exact/milp_reference.py: HiGHS's own branch and cut on the shared model.py);
``CombinatorialJointSelector`` (the ``exact`` strategy's on small pools) has its own
file, tests/test_combinatorial.py.

Property tests draw instances of up to 14 candidates with mixed-sign interactions and all
four budget limits (plus an optional size cap); scores lie on a 0.01 grid so many
instances have exact objective ties, which exercises every level of the tie rule. The
table tests pin degenerate inputs and hand-worked answers.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from junction_datasets.toy import coupling_task

from junction.budget import Budget
from junction.resources import ContextResource, ToolResource
from junction.select import (
    AutoJointSelector,
    BranchAndCutJointSelector,
    CombinatorialJointSelector,
    EnumerationJointSelector,
    JointProblem,
)
from junction.select.exact import DEFAULT_WORK_LIMIT
from junction.select.exact.milp_reference import MilpJointSelector
from tests.solver_cases import FUZZED, TABLE, ctx, problems, same, tool

SOLVERS = {"branch_and_cut": BranchAndCutJointSelector, "milp": MilpJointSelector}


@pytest.mark.parametrize("solver", SOLVERS)
@settings(max_examples=500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problem=problems())
def test_solver_equals_enumeration(solver: str, problem: JointProblem) -> None:
    expected = EnumerationJointSelector().select(problem)
    got = SOLVERS[solver]().select(problem)
    assert same(got, expected), (got, expected)
    assert got.status == "optimal"


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_branch_and_cut_without_root_cuts(problem: JointProblem) -> None:
    expected = EnumerationJointSelector().select(problem)
    got = BranchAndCutJointSelector(root_cut_min_candidates=10**9).select(problem)
    assert same(got, expected), (got, expected)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_cycle_cuts_keep_the_selection(problem: JointProblem) -> None:
    # Odd-cycle cuts and reduced-cost fixing normally start at 40 candidates; force them.
    expected = EnumerationJointSelector().select(problem)
    assert same(MilpJointSelector(cycle_cut_min_candidates=0).select(problem), expected)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_candidates=10))
def test_lexicographic_pass_by_fixing_equals_enumeration(problem: JointProblem) -> None:
    # cap 0: pass 3 skips the listing of equal-key sets and fixes ids one at a time.
    expected = EnumerationJointSelector().select(problem)
    assert same(MilpJointSelector(tie_enumeration_cap=0).select(problem), expected)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(0, 14))
def test_auto_equals_enumeration(problem: JointProblem, combinatorial_max: int) -> None:
    expected = EnumerationJointSelector().select(problem)
    assert same(AutoJointSelector(combinatorial_max=combinatorial_max).select(problem),
                expected)




@pytest.mark.parametrize("problem, context_ids, tool_ids", TABLE)
@pytest.mark.parametrize("solver", SOLVERS)
def test_table(problem: JointProblem, context_ids, tool_ids, solver: str) -> None:
    got = SOLVERS[solver]().select(problem)
    assert (got.context_ids, got.tool_ids) == (context_ids, tool_ids)
    assert got.status == "optimal"
    assert same(got, EnumerationJointSelector().select(problem))


@pytest.mark.parametrize("solver", SOLVERS)
def test_coupling_task_picks_policy_and_expense(solver: str) -> None:
    view = coupling_task().router_view()
    problem = JointProblem(view.contexts, view.tools, view.budget, dict(view.unary),
                           view.interaction_map())
    got = SOLVERS[solver]().select(problem)
    assert (got.context_ids, got.tool_ids) == (("contractor-policy",), ("submit_expense",))
    assert got.objective == pytest.approx(1.9)


def _large(n: int, seed: int) -> JointProblem:
    rng = random.Random(seed)
    contexts = tuple(ctx(f"c{i:03d}", rng.randint(40, 200)) for i in range(n // 2))
    tools = tuple(tool(f"t{j:03d}", rng.randint(20, 120), rng.uniform(50, 2000))
                  for j in range(n - n // 2))
    interactions = {(c.id, t.id): rng.gauss(0, 1) for c in contexts for t in tools
                    if rng.random() < 0.1}
    resources: list[ContextResource | ToolResource] = [*contexts, *tools]
    total = sum(r.token_cost for r in resources)
    return JointProblem(contexts, tools, Budget(max_tokens=int(0.4 * total)),
                        {r.id: rng.random() for r in resources}, interactions)


def _fits(problem: JointProblem, got) -> bool:
    contexts = {r.id: r for r in problem.contexts}
    tools = {r.id: r for r in problem.tools}
    return problem.budget.check([contexts[i] for i in got.context_ids],
                                [tools[i] for i in got.tool_ids]).fits


@pytest.mark.parametrize("solver, status", [("branch_and_cut", "stopped_by_clock"),
                                            ("milp", "time_limit")])
def test_time_limit_is_reported_never_optimal(solver: str, status: str) -> None:
    # the branch and cut's clock is a safety net: a search it stops says so
    problem = _large(300, seed=3)
    got = SOLVERS[solver](time_limit_s=0.05).select(problem)
    assert got.status == status
    assert _fits(problem, got)


@pytest.mark.slow
@pytest.mark.parametrize("work_limit", [0, 50, 1000])
def test_work_limit_stops_the_same_way_every_time(work_limit: int) -> None:
    # 150 candidates, limits at 40%: proved in about 1,600 simplex iterations, so 1000
    # stops in the tree; the stop is a count, so two runs agree in every field but the
    # time, nodes included. 150, not 200: the 200-candidate instance's tree costs seconds
    # a solve before its first stop, and the stop is the same kind of stop.
    problem = _large(150, seed=3)
    runs = [BranchAndCutJointSelector(time_limit_s=None, work_limit=work_limit)
            .select(problem) for _ in range(2)]
    first, second = (r.model_dump(exclude={"solve_time_ms"}) for r in runs)
    assert first == second
    got = runs[0]
    assert got.status == "work_limit"
    assert got.lp_iterations <= work_limit
    assert _fits(problem, got)
    # 0 and 50 stop in the root (no bound, gap unknown); 1000 in the tree, with a gap
    assert (got.gap is None) == (work_limit < 1000)
    assert got.gap is None or got.gap > 0


@pytest.mark.slow
def test_default_work_limit_proves_a_200_candidate_instance() -> None:
    problem = _large(200, seed=0)
    got = AutoJointSelector(time_limit_s=None).select(problem)
    assert (got.status, got.gap) == ("optimal", 0.0)
    assert 0 < got.lp_iterations < DEFAULT_WORK_LIMIT
    assert same(got, AutoJointSelector(time_limit_s=None, work_limit=None).select(problem))


@pytest.mark.parametrize("solver", SOLVERS)
def test_same_input_same_selection(solver: str) -> None:
    problem = _large(40, seed=1)
    first = SOLVERS[solver]().select(problem)
    assert same(first, SOLVERS[solver]().select(problem))
    assert first.status == "optimal" and first.gap is not None


@pytest.mark.parametrize("seed", [0, 1])
def test_the_two_solvers_agree_past_enumeration(seed: int) -> None:
    # 60 candidates: no enumeration; two independent exact searches must agree.
    problem = _large(60, seed=seed)
    got = BranchAndCutJointSelector(time_limit_s=None).select(problem)
    assert got.status == "optimal"
    assert same(got, MilpJointSelector(time_limit_s=None).select(problem))


def test_auto_searches_small_pools_without_lp_and_solves_large() -> None:
    small, large = _large(30, seed=2), _large(60, seed=2)
    auto, lp = AutoJointSelector(), BranchAndCutJointSelector()
    # subsets_examined counts combinatorial search nodes below the threshold, LP nodes above
    assert (auto.select(small).subsets_examined
            == CombinatorialJointSelector().select(small).subsets_examined)
    assert auto.select(large).subsets_examined == lp.select(large).subsets_examined


@pytest.mark.parametrize("kwargs, message", [
    ({"time_limit_s": -1.0}, "time_limit_s must be >= 0 or None, got -1.0"),
    ({"tie_enumeration_cap": -1}, "tie_enumeration_cap must be >= 0, got -1"),
])
def test_bad_arguments(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        MilpJointSelector(**kwargs)


SELECTOR_CLASSES = [EnumerationJointSelector, CombinatorialJointSelector,
                    BranchAndCutJointSelector, MilpJointSelector, AutoJointSelector]


@pytest.mark.parametrize("cls, name", [
    (EnumerationJointSelector, "enumeration"),
    (CombinatorialJointSelector, "branch_and_bound"),
    (BranchAndCutJointSelector, "branch_and_cut"),
    (MilpJointSelector, "milp"),
])
def test_each_selector_names_its_algorithm(cls, name) -> None:
    got = cls().select(_large(12, seed=0))
    assert cls.name == got.strategy == name


def test_auto_names_the_search_that_ran() -> None:
    # 12 candidates: the combinatorial search (threshold 32); threshold 0: branch and cut
    problem = _large(12, seed=0)
    assert AutoJointSelector().select(problem).strategy == "branch_and_bound"
    assert AutoJointSelector(combinatorial_max=0).select(problem).strategy == "branch_and_cut"


@pytest.mark.parametrize("cls", SELECTOR_CLASSES)
@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_every_exact_selector_rejects_a_bad_max_size(cls, value) -> None:
    with pytest.raises(ValueError, match=f"max_size must be an integer >= 0 or None, got "
                                         f"{re.escape(repr(value))}"):
        cls(max_size=value)


@pytest.mark.parametrize("cls", [BranchAndCutJointSelector, AutoJointSelector])
@pytest.mark.parametrize("value", [-1, 1.5, "5", False])
def test_solvers_reject_a_bad_work_limit(cls, value) -> None:
    with pytest.raises(ValueError, match=f"work_limit must be an integer >= 0 or None, got "
                                         f"{re.escape(repr(value))}"):
        cls(work_limit=value)


@pytest.mark.parametrize("cls", [BranchAndCutJointSelector, MilpJointSelector,
                                 AutoJointSelector])
@pytest.mark.parametrize("value", [-1.0, float("nan"), "5", False])
def test_solvers_reject_a_bad_time_limit(cls, value) -> None:
    with pytest.raises(ValueError, match=f"time_limit_s must be >= 0 or None, got "
                                         f"{re.escape(repr(value))}"):
        cls(time_limit_s=value)


@pytest.mark.parametrize("value", [-1, 49, 1.5, True])
def test_auto_rejects_a_bad_threshold(value) -> None:
    with pytest.raises(ValueError, match="combinatorial_max must be an integer in"):
        AutoJointSelector(combinatorial_max=value)




@pytest.mark.parametrize("problem, context_ids, tool_ids", FUZZED)
def test_found_by_fuzzing(problem: JointProblem, context_ids, tool_ids) -> None:
    expected = EnumerationJointSelector().select(problem)
    assert (expected.context_ids, expected.tool_ids) == (context_ids, tool_ids)
    assert same(BranchAndCutJointSelector(time_limit_s=None).select(problem), expected)
