"""Admission policies: top-K within budget, calibrated floor, exploit, sub-task admission."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from junction.budget import Budget
from junction.pages.admission import (
    AdmissionError,
    ScoredResource,
    admit_above_floor,
    admit_subtasks,
    admit_top_k,
    calibrate_floor,
    exploit_scores,
    tie_groups,
)
from junction.resources import ContextResource, ToolResource


def ctx(rid: str, tokens: int) -> ContextResource:
    return ContextResource(id=rid, content=rid, token_cost=tokens)


def tool(rid: str, tokens: int, latency: float = 0.0) -> ToolResource:
    return ToolResource(id=rid, description=rid, schema_token_cost=tokens,
                        estimated_latency_ms=latency)


def test_top_k_skips_what_breaks_a_limit_and_tries_the_next() -> None:
    items = [ScoredResource(ctx("c1", 60), 3.0), ScoredResource(tool("t1", 30, 900.0), 2.0),
             ScoredResource(tool("t2", 30, 100.0), 1.0), ScoredResource(ctx("c2", 50), 0.5)]
    budget = Budget(max_tokens=100, max_latency_ms=500.0)
    # c1 (60 tok) in; t1 breaks latency (900 > 500); t2 in (90 tok); c2 breaks tokens (140).
    result = admit_top_k(items, budget)
    assert result.admitted_ids == ["c1", "t2"]
    assert [(r.item.resource_id, r.reason) for r in result.rejected] == [
        ("t1", "budget:max_latency_ms"), ("c2", "budget:max_tokens")]
    # k=1 rejects the rest as top_k (and the budget is never asked about them)
    assert [(r.item.resource_id, r.reason) for r in admit_top_k(items, budget, k=1).rejected] == [
        ("t1", "top_k"), ("t2", "top_k"), ("c2", "top_k")]


def test_top_k_counts_already_admitted_resources() -> None:
    result = admit_top_k([ScoredResource(ctx("c2", 50), 1.0)], Budget(max_tokens=100),
                         already=[ctx("c1", 60)])
    assert result.admitted_ids == [] and result.rejected[0].reason == "budget:max_tokens"


def test_floor_rejected_list_and_best_rejected_when_nothing_passes() -> None:
    items = [ScoredResource(ctx("a", 10), 2.5), ScoredResource(ctx("b", 10), 0.4),
             ScoredResource(tool("t", 10), -1.0), ScoredResource(ctx("c", 10), 0.9)]
    budget = Budget(max_tokens=1000)
    # floor 0.5: a (2.5) and c (0.9) pass; b and t are below the floor.
    result = admit_above_floor(items, 0.5, budget)
    assert result.admitted_ids == ["a", "c"]
    assert [(r.item.resource_id, r.reason) for r in result.rejected] == [
        ("b", "below_floor"), ("t", "below_floor")]
    assert result.best_rejected == []
    # floor 3.0: nothing passes; the 2 best rejected come back separately, never admitted.
    result = admit_above_floor(items, 3.0, budget, n_best_rejected=2)
    assert result.admitted == []
    assert [s.resource_id for s in result.best_rejected] == ["a", "c"]
    assert [r.item.resource_id for r in result.rejected] == ["a", "c", "b", "t"]


def test_floor_and_budget_rejections_are_merged_best_first() -> None:
    items = [ScoredResource(ctx("big", 90), 2.0), ScoredResource(ctx("small", 20), 1.0),
             ScoredResource(ctx("low", 1), -2.0)]
    result = admit_above_floor(items, 0.0, Budget(max_tokens=50))
    assert result.admitted_ids == ["small"]
    assert [(r.item.resource_id, r.reason) for r in result.rejected] == [
        ("big", "budget:max_tokens"), ("low", "below_floor")]


def test_calibrate_floor_worked_example() -> None:
    # sorted by score: 5(+) 4(-) 3(+) 2(+) 1(-) 0(-); precision at each cut:
    # >=5: 1/1, >=4: 1/2, >=3: 2/3, >=2: 3/4, >=1: 3/5, >=0: 3/6.
    scores = [3.0, 1.0, 5.0, 0.0, 4.0, 2.0]
    labels = [True, False, True, False, False, True]
    cal = calibrate_floor(scores, labels, target_precision=0.7)
    assert (cal.floor, cal.precision, cal.recall) == (2.0, 0.75, 1.0)
    assert calibrate_floor(scores, labels, 1.0).floor == 5.0
    assert calibrate_floor(scores, labels, 0.5).floor == 0.0


def test_calibrate_floor_treats_ties_as_one_threshold() -> None:
    # both 1.0 scores pass together: precision 1/2 at floor 1.0, never 1/1.
    cal = calibrate_floor([1.0, 1.0, 0.0], [True, False, False], target_precision=0.5)
    assert cal.floor == 1.0 and cal.precision == 0.5
    with pytest.raises(AdmissionError,
                       match=r"best precision on the 3-pair calibration split is 0.500"):
        calibrate_floor([1.0, 1.0, 0.0], [True, False, False], target_precision=0.9)


@pytest.mark.parametrize("scores, labels, target, message", [
    ([1.0], [True, False], 0.5, "differ in length: 1 != 2"),
    ([1.0, 2.0], [False, False], 0.5, "has no positive label"),
    ([1.0], [True], 0.0, r"target_precision must be in \(0, 1\], got 0.0"),
])
def test_calibrate_floor_errors(scores, labels, target, message) -> None:
    with pytest.raises(AdmissionError, match=message):
        calibrate_floor(scores, labels, target)


@given(st.lists(st.tuples(st.integers(-5, 5), st.booleans()), min_size=1, max_size=12),
       st.sampled_from([0.2, 0.5, 0.8, 1.0]))
def test_calibrate_floor_matches_brute_force(pairs, target) -> None:
    scores = [float(s) for s, _ in pairs]
    labels = [y for _, y in pairs]
    if not any(labels):
        return
    # oracle: every observed score as a threshold; keep those reaching the target; lowest wins
    ok = []
    for t in sorted(set(scores)):
        passed = [y for s, y in zip(scores, labels, strict=False) if s >= t]
        if sum(passed) / len(passed) >= target:
            ok.append(t)
    if not ok:
        with pytest.raises(AdmissionError):
            calibrate_floor(scores, labels, target)
    else:
        assert calibrate_floor(scores, labels, target).floor == min(ok)


def test_admit_top_k_matches_brute_force_greedy_oracle() -> None:
    rng = random.Random("admission-oracle")
    for _ in range(30):
        items = [ScoredResource(ctx(f"c{i}", rng.randint(1, 40)), rng.uniform(-2, 2))
                 for i in range(5)]
        max_tokens = rng.randint(0, 100)
        budget = Budget(max_tokens=max_tokens)
        got = admit_top_k(items, budget).admitted_ids
        # oracle: walk the score order; keep an item iff the running total stays in budget
        total, want = 0, []
        for s in sorted(items, key=lambda s: -s.score):
            if total + s.resource.token_cost <= max_tokens:
                total += s.resource.token_cost
                want.append(s.resource_id)
        assert got == want


def test_non_finite_score_is_rejected() -> None:
    with pytest.raises(AdmissionError, match="score of 'a' must be finite, got nan"):
        admit_top_k([ScoredResource(ctx("a", 1), math.nan)], Budget())


def test_exploit_takes_the_minimum_and_names_missing_ids() -> None:
    assert exploit_scores({"a": 2.0, "b": -1.0}, {"a": 0.5, "b": 3.0}) == {"a": 0.5, "b": -1.0}
    with pytest.raises(AdmissionError, match="ids scored against only one query: b, c"):
        exploit_scores({"a": 1.0, "b": 1.0}, {"a": 1.0, "c": 1.0})


def test_subtask_admission_follow_and_echo() -> None:
    follows = {"check the invoice total": 2.0, "book a holiday": -3.0, "pay the invoice": 1.5}

    def follows_score(objective, docs):
        return [follows[d] for d in docs]

    def echo_score(query, docs):
        # "pay the invoice" restates the ancestor task
        return [4.0 if query == "pay the invoice" else -1.0 for _ in docs]

    decisions = admit_subtasks(list(follows), "pay invoice 42", ["pay the invoice"],
                               follows_score, echo_score, follow_floor=0.0, echo_floor=1.0)
    assert [(d.subtask, d.reason) for d in decisions] == [
        ("check the invoice total", "admitted"), ("book a holiday", "does_not_follow"),
        ("pay the invoice", "echo")]
    assert [d.admitted for d in decisions] == [True, False, False]
    # without ancestors nothing is an echo
    assert admit_subtasks(["pay the invoice"], "x", [], follows_score, echo_score, 0.0,
                          1.0)[0].admitted


def test_all_orders_give_the_same_admission() -> None:
    items = [ScoredResource(ctx(f"c{i}", 10), s) for i, s in enumerate([1.0, 1.0, 0.5])]
    results = {tuple(admit_top_k(list(p), Budget(max_tokens=20)).admitted_ids)
               for p in itertools.permutations(items)}
    assert results == {("c0", "c1")}


@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=12),
       st.floats(0, 1))
def test_tie_groups_partition_in_score_order_within_the_tolerance(scores, tol) -> None:
    items = [ScoredResource(ctx(f"c{i:02d}", 1), s) for i, s in enumerate(scores)]
    groups = tie_groups(items, tol)
    flat = [i for g in groups for i in g]
    assert sorted(i.resource_id for i in flat) == sorted(i.resource_id for i in items)
    for g in groups:
        top = max(i.score for i in g)
        assert all(top - i.score <= tol for i in g)
        assert [i.resource_id for i in g] == sorted(i.resource_id for i in g)
    for a, b in itertools.pairwise(groups):  # every group below the one before it, by > tol
        assert max(i.score for i in a) - max(i.score for i in b) > tol
        assert min(i.score for i in a) >= max(i.score for i in b)


def test_a_tie_within_the_floor_admits_the_smaller_id_first() -> None:
    # "b" scores 0.1 logit above "a", within a 0.22 floor: tied, so the stable rule picks "a"
    items = [ScoredResource(ctx("b", 10), 1.1), ScoredResource(ctx("a", 10), 1.0)]
    budget = Budget(max_tokens=10)
    assert admit_above_floor(items, 0.0, budget, tie_logits=0.22).admitted_ids == ["a"]
    assert admit_above_floor(items, 0.0, budget).admitted_ids == ["b"]
    with pytest.raises(AdmissionError, match="tie_logits"):
        tie_groups(items, -1.0)
