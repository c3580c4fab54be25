"""Core library: resources, budget, router view, lanes, exact selector, baselines, toy suites."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junction_datasets import build_suite
from junction_datasets.toy import coupling_task, synthetic_suite
from pydantic import ValidationError

from junction.agent.execution import execute
from junction.budget import Budget
from junction.candidates import LexicalContextCandidateGenerator, LexicalToolCandidateGenerator
from junction.resources import ContextResource, ToolResource
from junction.select import (
    AdaptiveSplitBaseline,
    EnumerationJointSelector,
    FixedSplitBaseline,
    JointProblem,
    objective_terms,
)
from junction.tokens import DEFAULT_TOKEN_COUNTER
from junction.verifiers import verify


def ctx(rid: str, tokens: int) -> ContextResource:
    return ContextResource(id=rid, content=f"text of {rid}", token_cost=tokens)


def tool(rid: str, tokens: int, latency: float = 0.0, cost: float = 0.0) -> ToolResource:
    return ToolResource(id=rid, description=f"tool {rid}", schema_token_cost=tokens,
                        estimated_latency_ms=latency, estimated_cost_usd=cost)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "field", "shown"),
    [
        ({"id": "", "content": "x", "token_cost": 1}, "id", "''"),
        ({"id": "   ", "content": "x", "token_cost": 1}, "id", "'   '"),
        ({"id": "a", "content": "x", "token_cost": -3}, "token_cost", "-3"),
        ({"id": "a", "content": "x", "token_cost": 1, "metadata": {"w": float("nan")}},
         "metadata", "nan"),
    ],
)
def test_context_validation_names_field_and_value(kwargs, field, shown):
    with pytest.raises(ValidationError) as info:
        ContextResource(**kwargs)
    message = str(info.value)
    assert field in message and shown in message


@pytest.mark.parametrize(
    ("kwargs", "field", "shown"),
    [
        ({"estimated_latency_ms": -1.0}, "estimated_latency_ms", "-1.0"),
        ({"estimated_cost_usd": float("inf")}, "estimated_cost_usd", "inf"),
        ({"schema_token_cost": -1}, "schema_token_cost", "-1"),
        ({"json_schema": {"default": float("nan")}}, "json_schema.default", "nan"),
    ],
)
def test_tool_validation_names_field_and_value(kwargs, field, shown):
    base = {"id": "t", "description": "d", "schema_token_cost": 3}
    with pytest.raises(ValidationError) as info:
        ToolResource(**{**base, **kwargs})
    message = str(info.value)
    assert field in message and shown in message


def test_resources_are_frozen():
    c = ctx("a", 1)
    with pytest.raises(ValidationError):
        c.token_cost = 5


# ---------------------------------------------------------------- tokens


@pytest.mark.parametrize("text, tokens", [
    # rates per character (junction.tokens): Latin words 1/8, punctuation 1/4, digits 1,
    # CJK and Thai 3/5, Cyrillic 1/3, Arabic 2/5, Hebrew 1/3, Greek and Devanagari 1
    ("Pay back Dana.", 4),  # Pay back Dana: 1 each (<= 8 chars); "." 1
    ("reimbursement", 2),  # ceil(13 / 8)
    ('{"a":{"b":1}}', 7),  # punctuation runs {" ":{" ": }} cost 1 each; a, b 1; digit 1
    ("北京后天的天气如何？", 7),  # 9 Han: ceil(9 · 0.6) = 6; "？" 1
    ("获取p4工单", 6),  # 获取 ceil(2 · 0.6) = 2, p 1, 4 (a digit) 1, 工单 2
    ("สวัสดีครับ", 6),  # 10 Thai characters: ceil(10 · 0.6)
    ("다용도실 통돌이", 5),  # Hangul runs of 4 and 3: ceil(2.4) + ceil(1.8)
    ("2024", 4),  # Qwen2 splits numbers into digits
    ("Привет", 2),  # 6 Cyrillic: ceil(6 / 3)
    ("مرحبا", 2),  # 5 Arabic: ceil(5 · 0.4)
    ("שלום", 2),  # 4 Hebrew: ceil(4 / 3)
    ("Καλημέρα", 8),  # 8 Greek: 1 each
    ("नमस्ते", 6),  # 6 Devanagari code points (consonants, virama, vowel sign): 1 each
    ("", 0),
])
def test_default_counter_table(text: str, tokens: int) -> None:
    assert DEFAULT_TOKEN_COUNTER.count(text) == tokens


def test_default_counter_is_deterministic_and_prices_bigger_schema_higher():
    small = ToolResource.from_schema("t", "d", {"type": "object", "properties": {}})
    big = ToolResource.from_schema(
        "t", "d", {"type": "object", "properties": {"a": {"type": "string"}}}
    )
    assert big.token_cost > small.token_cost
    assert small.token_cost == DEFAULT_TOKEN_COUNTER.count(small.rendered_schema())


# ---------------------------------------------------------------- budget


@pytest.mark.parametrize(
    ("budget", "failed"),
    [
        (Budget(max_tokens=29), ("max_tokens",)),
        (Budget(max_tools=0), ("max_tools",)),
        (Budget(max_latency_ms=99.0), ("max_latency_ms",)),
        (Budget(max_cost_usd=0.004), ("max_cost_usd",)),
        (Budget(max_tokens=30, max_tools=1, max_latency_ms=100.0, max_cost_usd=0.005), ()),
        (Budget(), ()),
        (Budget(max_tokens=0, max_tools=0), ("max_tokens", "max_tools")),
    ],
)
def test_budget_check_names_each_failed_limit(budget, failed):
    # one context of 10 tokens + one tool of 20 tokens, 100 ms, 0.005 USD: 30 tokens in all
    check = budget.check([ctx("c", 10)], [tool("t", 20, 100.0, 0.005)])
    assert check.failed == failed
    assert check.fits is (not failed)
    assert check.usage.tokens == 30


def test_budget_rejects_negative_limit():
    with pytest.raises(ValidationError, match="max_tokens"):
        Budget(max_tokens=-1)


# ---------------------------------------------------------------- router view


def test_router_view_carries_no_gold_or_verifier():
    task = coupling_task()
    dumped = task.router_view().model_dump_json()
    for name in ("gold_context_ids", "gold_tool_ids", "verifier", "steps", "fallback"):
        assert name not in dumped
    # gold ids appear only as resources, never as annotations
    view = json.loads(dumped)
    assert set(view) == {"task_id", "suite", "objective", "contexts", "tools", "budget",
                         "initial_state", "unary", "interactions"}


def test_task_rejects_unknown_gold_and_duplicate_ids():
    task = coupling_task()
    with pytest.raises(ValidationError, match="gold tool 'nope'"):
        task.model_validate({**task.model_dump(), "gold_tool_ids": ("nope",)})
    dup = {**task.model_dump(), "tools": [task.tools[0].model_dump()] * 2}
    with pytest.raises(ValidationError, match="duplicate resource id 'submit_expense'"):
        task.model_validate(dup)


# ---------------------------------------------------------------- lanes


def test_lanes_order_by_score_then_id_and_cut():
    contexts = [
        ContextResource.from_text("b", "contractor expense policy"),
        ContextResource.from_text("a", "contractor expense policy"),
        ContextResource.from_text("c", "weather report"),
    ]
    out = LexicalContextCandidateGenerator().generate("contractor expense", contexts, limit=2)
    assert [c.resource_id for c in out] == ["a", "b"]  # equal scores: ascending id
    assert out[0].score == out[1].score > 0
    tools = [
        ToolResource.from_schema("x", "send weather", {}),
        ToolResource.from_schema("y", "submit expense claim", {}),
    ]
    ranked = LexicalToolCandidateGenerator().generate("expense claim", tools)
    assert [c.resource_id for c in ranked] == ["y", "x"]
    assert [c.rank for c in ranked] == [0, 1]


# ---------------------------------------------------------------- objective


def test_objective_hand_worked():
    # u: c1=1, c2=0.5, t1=2; w(c1,t1)=0.25, w(t1,c1)=0.5, w(c2,t1)=-1
    problem = JointProblem(
        contexts=(ctx("c1", 1), ctx("c2", 1)),
        tools=(tool("t1", 1),),
        budget=Budget(),
        unary={"c1": 1.0, "c2": 0.5, "t1": 2.0},
        interactions={("c1", "t1"): 0.25, ("t1", "c1"): 0.5, ("c2", "t1"): -1.0},
    )
    # {c1,t1}: 1 + 2 + 0.75 = 3.75; {c1,c2,t1}: 3.5 + 0.75 - 1 = 3.25
    assert objective_terms(problem, ["c1"], ["t1"]) == (3.0, 0.75)
    assert sum(objective_terms(problem, ["c1", "c2"], ["t1"])) == 3.25
    sel = EnumerationJointSelector().select(problem)
    assert (sel.context_ids, sel.tool_ids, sel.objective) == (("c1",), ("t1",), 3.75)
    assert sel.subsets_feasible == 8


def test_tie_break_prefers_fewer_tokens_then_smaller_ids():
    # a and b tie on utility; b is cheaper -> b. c and d tie on everything -> c.
    problem = JointProblem(
        contexts=(ctx("a", 5), ctx("b", 3), ctx("d", 3), ctx("c", 3)),
        tools=(),
        budget=Budget(max_tokens=3),
        unary={"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0},
    )
    assert EnumerationJointSelector().select(problem).context_ids == ("b",)
    problem2 = JointProblem(contexts=(ctx("d", 3), ctx("c", 3)), tools=(),
                            budget=Budget(max_tokens=3), unary={"c": 1.0, "d": 1.0})
    assert EnumerationJointSelector().select(problem2).context_ids == ("c",)


def _random_problem(seed: int, n: int) -> JointProblem:
    rng = random.Random(seed)
    n_ctx = rng.randint(0, n)
    contexts = tuple(ctx(f"c{i}", rng.randint(0, 30)) for i in range(n_ctx))
    tools = tuple(tool(f"t{i}", rng.randint(0, 30), rng.choice([0.0, 50.0, 100.0]),
                       rng.choice([0.0, 0.001, 0.002])) for i in range(n - n_ctx))
    resources: list[ContextResource | ToolResource] = [*contexts, *tools]
    ids = [r.id for r in resources]
    # utilities on a coarse grid so exact ties happen often
    unary = {rid: rng.choice([-0.5, 0.0, 0.5, 1.0, 1.5]) for rid in ids}
    interactions = {}
    for c in contexts:
        for t in tools:
            if rng.random() < 0.4:
                key = (c.id, t.id) if rng.random() < 0.5 else (t.id, c.id)
                interactions[key] = rng.choice([-1.0, -0.5, 0.5, 1.0])
    budget = Budget(max_tokens=rng.randint(0, 80), max_tools=rng.randint(0, 3),
                    max_latency_ms=rng.choice([None, 100.0, 200.0]),
                    max_cost_usd=rng.choice([None, 0.002, 0.004]))
    return JointProblem(contexts=contexts, tools=tools, budget=budget, unary=unary,
                        interactions=interactions)


def _brute_force(problem: JointProblem) -> tuple[tuple[str, ...], tuple[str, ...], float]:
    """Independent oracle: itertools over every subset, objective by definition."""
    items: list[ContextResource | ToolResource] = [*problem.contexts, *problem.tools]
    best: tuple[float, int, int, tuple[str, ...], tuple[str, ...]] | None = None
    for k in range(len(items) + 1):
        for combo in itertools.combinations(items, k):
            cs = [r for r in combo if isinstance(r, ContextResource)]
            ts = [r for r in combo if isinstance(r, ToolResource)]
            if not problem.budget.check(cs, ts).fits:
                continue
            value: float = sum(problem.unary.get(r.id, 0.0) for r in combo)
            for c in cs:
                for t in ts:
                    value += problem.interactions.get((c.id, t.id), 0.0)
                    value += problem.interactions.get((t.id, c.id), 0.0)
            key = (-round(value, 9), sum(r.token_cost for r in combo), len(combo),
                   tuple(sorted(r.id for r in cs)), tuple(sorted(r.id for r in ts)))
            if best is None or key < best:
                best = key
    assert best is not None  # the empty set always fits
    return best[3], best[4], -best[0]


@pytest.mark.parametrize("seed", range(60))
def test_exact_selector_matches_brute_force(seed):
    problem = _random_problem(seed, n=1 + seed % 9)
    sel = EnumerationJointSelector().select(problem)
    cs, ts, value = _brute_force(problem)
    assert (sel.context_ids, sel.tool_ids) == (cs, ts)
    assert math.isclose(sel.objective, value, abs_tol=1e-9)
    assert problem.budget.check(
        [r for r in problem.contexts if r.id in cs], [r for r in problem.tools if r.id in ts]
    ).fits


@pytest.mark.parametrize("seed", range(10))
def test_selection_is_stable_under_shuffled_inputs(seed):
    problem = _random_problem(1000 + seed, n=8)
    rng = random.Random(seed)
    contexts, tools = list(problem.contexts), list(problem.tools)
    rng.shuffle(contexts)
    rng.shuffle(tools)
    interactions = dict(rng.sample(sorted(problem.interactions.items()), len(problem.interactions)))
    shuffled = JointProblem(contexts=tuple(contexts), tools=tuple(tools), budget=problem.budget,
                            unary=dict(reversed(list(problem.unary.items()))),
                            interactions=interactions)
    exclude = {"solve_time_ms"}
    for selector in (EnumerationJointSelector(), FixedSplitBaseline(), AdaptiveSplitBaseline()):
        a = selector.select(problem).model_dump(exclude=exclude)
        b = selector.select(shuffled).model_dump(exclude=exclude)
        assert a == b


def test_max_size_is_respected():
    problem = _random_problem(7, n=8).__class__(
        contexts=(ctx("a", 1), ctx("b", 1)), tools=(tool("t", 1),), budget=Budget(),
        unary={"a": 1.0, "b": 1.0, "t": 1.0},
    )
    assert len(EnumerationJointSelector(max_size=2).select(problem).exposed_ids) == 2
    assert len(EnumerationJointSelector().select(problem).exposed_ids) == 3


# ---------------------------------------------------------------- baselines


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(0, 10),
       fraction=st.floats(0.0, 1.0, allow_nan=False))
def test_baselines_never_exceed_a_limit(seed, n, fraction):
    problem = _random_problem(seed, n)
    by_id = {r.id: r for r in (*problem.contexts, *problem.tools)}
    for selector in (FixedSplitBaseline(fraction), AdaptiveSplitBaseline()):
        sel = selector.select(problem)
        check = problem.budget.check([by_id[c] for c in sel.context_ids],
                                     [by_id[t] for t in sel.tool_ids])
        assert check.fits, (selector.name, check.failed)
        assert sel.tokens_used == check.usage.tokens


def test_fixed_split_rejects_bad_fraction():
    with pytest.raises(ValueError, match=r"context_fraction must be in \[0, 1\], got 1.5"):
        FixedSplitBaseline(1.5)


# ---------------------------------------------------------------- toy suites


def test_coupling_exact_verified_baselines_not():
    task = coupling_task()
    view = task.router_view()
    from junction.strategies import make_strategy

    results = {}
    for name in ("exact", "fixed_split", "adaptive_split"):
        sel = make_strategy(name).select(view, None).selection
        results[name] = (sel, verify(task, execute(task, sel.context_ids, sel.tool_ids)))
    sel, outcome = results["exact"]
    assert (sel.context_ids, sel.tool_ids) == (("contractor-policy",), ("submit_expense",))
    assert math.isclose(sel.objective, 1.9) and outcome.success
    assert results["adaptive_split"][0].tool_ids == ("run_payroll",)
    assert "instead of 'submit_expense'" in results["adaptive_split"][1].reason
    assert not results["fixed_split"][1].success


def test_toy_executor_calls_wrong_tool_without_policy():
    task = coupling_task()
    result = execute(task, [], ["run_payroll", "submit_expense"])
    assert [c.tool_id for c in result.tool_calls] == ["run_payroll"]
    assert verify(task, result).reason == "step 0: called 'run_payroll' instead of 'submit_expense'"
    uninformed = execute(task, [], ["submit_expense"])
    assert "without context ['contractor-policy']" in verify(task, uninformed).reason
    assert verify(task, execute(task, ["contractor-policy"], ["submit_expense"])).success


def test_synthetic_is_byte_identical_for_a_seed_and_differs_across_seeds():
    a = [t.model_dump_json() for t in synthetic_suite(seed=3, size=5)]
    b = [t.model_dump_json() for t in synthetic_suite(seed=3, size=5)]
    c = [t.model_dump_json() for t in synthetic_suite(seed=4, size=5)]
    assert a == b and a != c


def test_synthetic_gold_pair_always_fits_and_is_verifiable():
    for task in synthetic_suite(seed=1, size=10, tightness=0.0):
        gc, gt = task.context(task.gold_context_ids[0]), task.tool(task.gold_tool_ids[0])
        assert task.budget.check([gc], [gt]).fits
        assert verify(task, execute(task, [gc.id], [gt.id])).success


def test_unknown_suite_lists_valid_names():
    with pytest.raises(KeyError, match=r"unknown suite 'nope'; valid suites: .*coupling"):
        build_suite("nope")
