"""The ``judge_admission`` strategy on the coupling task (embedded model, explicit floors)."""

from __future__ import annotations

import pytest
from junction_datasets.toy import coupling_task

from junction.strategies.judge_admission import candidate_text, make_judge_admission_strategy

pytestmark = pytest.mark.model


def _run(judge, floor):
    # judge fixture: the strategy's config is already loaded, so no second model load.
    # The coupling task's four candidates score within the default judge's noise floor of
    # each other (a degenerate batch, test_a_degenerate_batch_admits_nothing), so an
    # unrelated passage is added: the judge can tell that one apart.
    from junction.resources import ContextResource, SourceKind

    strategy = make_judge_admission_strategy(floor=floor, use_cache=False)
    task = coupling_task()
    unrelated = ContextResource.from_text(
        "photosynthesis", "Photosynthesis converts light energy into chemical energy in "
        "plants.", SourceKind.OTHER)
    task = task.model_copy(update={"contexts": (*task.contexts, unrelated)})
    return task, strategy.select(task.router_view(), None)


def test_admits_within_every_budget_limit_and_records_scores(judge) -> None:
    task, result = _run(judge, floor=-1e9)  # every candidate passes the floor
    sel = result.selection
    assert sel.strategy == "judge_admission" and sel.status == "heuristic"
    exposed = [*(task.context(c) for c in sel.context_ids)]
    tools = [task.tool(t) for t in sel.tool_ids]
    assert task.budget.check(exposed, tools).fits
    pool_ids = {c.resource_id for c in (*result.pools.contexts, *result.pools.tools)}
    assert set(result.extra["judge_scores"]) == pool_ids
    assert set(sel.exposed_ids) <= pool_ids
    # everything passed the floor, so every rejection is a budget one, and (limits only grow
    # with the set) adding any rejected candidate to the exposed set breaks a limit
    assert result.extra["judge_rejected"]  # the coupling budget cannot fit all four
    for rid, why in result.extra["judge_rejected"].items():
        assert why.startswith("budget:")
        extra_c = [task.context(rid)] if rid in {c.id for c in task.contexts} else []
        extra_t = [task.tool(rid)] if not extra_c else []
        assert not task.budget.check([*exposed, *extra_c], [*tools, *extra_t]).fits
    assert len(result.extra["instruction_hash"]) == 64
    assert result.extra["model_hash"] == judge.model_hash


def test_abstains_when_nothing_passes_the_floor(judge) -> None:
    _, result = _run(judge, floor=1e9)
    assert result.selection.exposed_ids == ()
    assert set(result.extra["judge_rejected"].values()) == {"below_floor"}
    assert len(result.extra["judge_best_rejected"]) == 3


def test_tools_are_judged_as_name_plus_description() -> None:
    task = coupling_task()
    view = task.router_view()
    from junction.candidates import Candidate

    text = candidate_text(view, Candidate(resource_id="submit_expense", kind="tool", score=1.0,
                                          rank=0))
    tool = task.tool("submit_expense")
    assert text == f"Tool submit_expense: {tool.description}"  # the measured winner


def _with_contexts(*contexts):
    from junction.budget import Budget

    task = coupling_task()
    return task.model_copy(update={"contexts": (*task.contexts, *contexts),
                                   "budget": Budget(max_tokens=100_000)})


def _run_task(task, floor=-1e9):
    strategy = make_judge_admission_strategy(floor=floor, use_cache=False, pool_per_lane=8)
    return strategy.select(task.router_view(), None)


def test_empty_contexts_are_skipped_and_cut_ones_are_recorded(judge) -> None:
    from junction.resources import ContextResource, SourceKind

    long_text = "Contractors are paid through the vendor payment system. " * 40
    task = _with_contexts(ContextResource.from_text("blank", "  \n ", SourceKind.OTHER),
                          ContextResource.from_text("long-policy", long_text, SourceKind.POLICY))
    result = _run_task(task)
    pooled = {c.resource_id for c in result.pools.contexts}
    assert {"blank", "long-policy"} <= pooled
    assert result.extra["judge_skipped"] == {"blank": "empty"}
    assert "blank" not in result.extra["judge_scores"]
    assert "blank" not in result.selection.exposed_ids
    original, kept = result.extra["judge_truncated"]["long-policy"]
    assert kept == judge.config.max_document_tokens < original
    prov = result.extra["judge_provenance"]
    assert prov["model_hash"] == judge.model_hash and prov["kv_type"] == judge.config.kv_type
    assert prov["noise_floor"] > 0


def test_ties_within_the_noise_floor_are_marked_and_ordered_by_id(judge) -> None:
    result = _run_task(coupling_task())
    scores = result.extra["judge_scores"]
    floor = result.extra["judge_provenance"]["noise_floor"]
    for group in result.extra["judge_ties"]:
        assert group == sorted(group) and len(group) > 1
        top = max(scores[r] for r in group)
        assert all(top - scores[r] <= floor for r in group)


def test_a_degenerate_batch_admits_nothing(judge) -> None:
    from junction.resources import ContextResource, SourceKind

    head = "Contractors are paid through the vendor payment system. " * 20
    same = [ContextResource.from_text(f"copy-{i}", head + tail, SourceKind.POLICY)
            for i, tail in enumerate(("alpha", "beta", "gamma"))]
    task = coupling_task()
    task = task.model_copy(update={"contexts": tuple(same), "tools": (), "unary": {},
                                   "interactions": (), "gold_context_ids": (),
                                   "gold_tool_ids": ()})
    result = _run_task(task)
    assert result.extra["judge_degenerate"] is True
    assert result.selection.exposed_ids == ()
    assert set(result.extra["judge_rejected"].values()) == {"degenerate"}
