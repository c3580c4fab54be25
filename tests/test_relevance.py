"""Relevance stage: ranking measures by hand, the model's interface and determinism, and
no leakage (gold, verifier and evaluation tasks never reach a model or a score)."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.candidates import candidate_pools
from junction.learned.features import UNARY_FEATURES, view_features
from junction.learned.model import LearnedModelError
from junction.learned.ranking import (
    depth_all,
    depth_cover,
    ranks,
    recall_at,
    summarise,
)
from junction.learned.relevance import (
    DEFAULT_CONFIG,
    FEATURE_GROUPS,
    PROPAGATION_FEATURES,
    TODAY_CONFIG,
    LaneScores,
    RelevanceConfig,
    RelevanceModel,
    _first_rows,
    _Memory,
    _Prepared,
    _propagation_rows,
    clear_fit_cache,
    fit_relevance,
    needed_labels,
)
from junction.resources import ContextResource, ToolResource
from junction.tasks import BenchmarkTask, GoldPair, VerifierSpec
from tests.helpers import with_gold_redrawn

_TAU2_FIXTURE = Path(__file__).resolve().parent / "data" / "tau2_fixture"
LIMIT = (3, None)
RULE = "bm25_named"


def _fixture_tasks():
    from junction_datasets import tau2_banking

    return tau2_banking.banking_suite(split="all", path=_TAU2_FIXTURE).tasks


# -- ranking measures by hand ----------------------------------------------------------

def test_ranks_break_ties_by_id():
    assert ranks({"b": 0.5, "a": 0.5, "c": 0.9, "d": 0.1}) == {"c": 1, "a": 2, "b": 3, "d": 4}


def test_depths_by_hand():
    r = {"t1": 1, "t2": 2, "t3": 3, "t4": 4, "d1": 1, "d2": 2, "d3": 3}
    assert depth_all(r, ["t2", "t4"]) == 4
    assert depth_all(r, ["t2", "t9"]) is None  # t9 not pooled: never
    assert depth_all(r, []) == 0
    # tool x is usable from d1 or d3 (best: 1), tool y only from d2 (2): all in by rank 2
    assert depth_cover(r, {"x": {"d3", "d1"}, "y": {"d2", "d9"}}) == 2
    assert depth_cover(r, {"x": {"d3"}, "y": {"d9"}}) is None
    assert depth_cover(r, {}) == 0


def test_recall_at_k_by_hand():
    ranked = ["a", "b", "c", "d", "e", "f"]
    # relevant b, e and z (never ranked): 1 of 3 in the top 2, 2 of 3 from the top 5
    got = recall_at(ranked, ["b", "e", "z"], (2, 5, 10))
    assert got == pytest.approx({2: 1 / 3, 5: 2 / 3, 10: 2 / 3})
    assert recall_at([], ["a"], (5,)) == {5: 0.0}
    with pytest.raises(ValueError):
        recall_at(ranked, [], (5,))


def test_summary_quantiles_count_never_last():
    s = summarise([3, None, 1, 7])
    # sorted 1, 3, 7, never: lower median is 3, p75 is 7, one never
    assert (s.n, s.never, s.median, s.p75) == (4, 1, 3, 7)
    assert s.cell() == "3 / 7"
    s = summarise([None, None, 2])
    assert (s.median, s.p75) == (None, None) and s.cell() == "never / never"
    with pytest.raises(ValueError):
        summarise([])


# -- the model ---------------------------------------------------------------------------

CONFIGS = [TODAY_CONFIG, RelevanceConfig(propagate="fixed", iterations=2),
           RelevanceConfig(features=("prior", "knn"), learner="plain", propagate="stacked",
                           target="needed"),
           RelevanceConfig(features=("link", "prior"), learner="boosted", propagate="stacked"),
           RelevanceConfig(features=("dense", "knn"), learner="plain")]
_FITTED: dict = {}


def _model(config: RelevanceConfig, tasks=None) -> RelevanceModel:
    tasks = tasks or _fixture_tasks()[1:]
    key = (config, tuple(t.task_id for t in tasks))
    if key not in _FITTED:
        _FITTED[key] = fit_relevance(tasks, RULE, pool_limit=LIMIT, config=config)
    return _FITTED[key]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.features}-{c.learner}-{c.propagate}")
def test_scores_cover_the_pools_pickle_and_repeat(config):
    model = _model(config)
    task = _fixture_tasks()[0]
    view = task.router_view()
    pools = candidate_pools(view, LIMIT, RULE)
    scores = model.score(view, pools)
    assert isinstance(scores, LaneScores)
    assert list(scores.context_p) == [c.resource_id for c in pools.contexts]
    assert list(scores.tool_p) == [c.resource_id for c in pools.tools]
    assert all(0.0 <= p <= 1.0 for p in scores.as_dict().values())
    again = pickle.loads(pickle.dumps(model))
    assert again.score(view, pools) == scores and again.sha256 == model.sha256
    clear_fit_cache()
    fresh = fit_relevance(_fixture_tasks()[1:], RULE, pool_limit=LIMIT, config=config)
    assert fresh.sha256 == model.sha256 and fresh.score(view, pools) == scores
    record = model.describe()
    assert record["config"]["propagate"] == config.propagate
    assert record["training"]["task_ids"] == [t.task_id for t in _fixture_tasks()[1:]]


def test_today_is_the_learned_utility_lane_model():
    """The default configuration's p equals the lane models a learned strategy fits on
    the same training tasks and pools."""
    from junction.learned.utility import fit_learned_utility

    tasks = _fixture_tasks()
    utility = fit_learned_utility("fixture", tasks[1:], LIMIT, rule=RULE)
    model = _model(TODAY_CONFIG)
    view = tasks[0].router_view()
    pools = candidate_pools(view, LIMIT, RULE)
    assert model.score(view, pools).as_dict() == utility.probabilities(view, pools)
    assert model.describe()["first"]["tool"] == utility.record()["tool_model"]


def test_score_refuses_a_task_and_options_are_checked():
    task = _fixture_tasks()[0]
    model = _model(TODAY_CONFIG)
    pools = candidate_pools(task.router_view(), LIMIT, RULE)
    with pytest.raises(TypeError, match="RouterView"):
        model.score(task, pools)
    with pytest.raises(ValueError, match="unknown option"):
        fit_relevance(_fixture_tasks(), RULE, pool_limit=LIMIT, colour="red")
    with pytest.raises(ValueError, match="unknown group"):
        fit_relevance(_fixture_tasks(), RULE, pool_limit=LIMIT, features=("gold",))
    with pytest.raises(LearnedModelError):
        fit_relevance([], RULE)


def test_needed_labels_by_hand():
    """needed: a context of a gold pair; on a task without gold pairs, a gold context."""
    task = _fixture_tasks()[0]
    view = task.router_view()
    pools = candidate_pools(view, None, RULE)
    docs = [c.resource_id for c in pools.contexts]
    tools = [c.resource_id for c in pools.tools]
    paired = task.model_copy(update={
        "gold_context_ids": (docs[0], docs[1]), "gold_tool_ids": (tools[0],),
        "gold_pairs": (GoldPair(context_id=docs[1], tool_id=tools[0]),)})
    got = needed_labels(paired, pools)
    assert got["context"].tolist() == [0, 1] + [0] * (len(docs) - 2)
    assert got["tool"].tolist() == [1] + [0] * (len(tools) - 1)
    bare = paired.model_copy(update={"gold_pairs": (), "gold_tool_ids": ()})
    assert needed_labels(bare, pools)["context"].tolist() == [1, 1] + [0] * (len(docs) - 2)


def test_options_are_the_config_fields():
    a = fit_relevance(_fixture_tasks()[1:], RULE, pool_limit=LIMIT, propagate="fixed")
    assert a.config == replace(DEFAULT_CONFIG, propagate="fixed")
    b = fit_relevance(_fixture_tasks()[1:], RULE, pool_limit=LIMIT)
    assert b.config == DEFAULT_CONFIG


def test_link_rows_by_hand_and_zero_where_nothing_is_named():
    named = np.asarray([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    rows = _propagation_rows(named, np.asarray([0.5, 0.2]), np.asarray([0.4, 0.9, 0.5]))
    assert PROPAGATION_FEATURES == ("logit_self", "link_best_p", "link_noisy_or", "link_count")
    assert rows[0] == pytest.approx([0.0, 0.5, 1 - 0.6 * 0.5, np.log(3)])
    assert rows[1] == pytest.approx([np.log(0.2 / 0.8), 0.0, 0.0, 0.0])


def _unnamed_task(i: int, gold_tool: str) -> BenchmarkTask:
    """A task whose documents name no tool (as on a suite without naming links)."""
    return BenchmarkTask(
        task_id=f"u{i}", suite="s", objective=f"open account card {i} lock",
        contexts=(ContextResource(id="d0", content="open an account online", token_cost=3),
                  ContextResource(id="d1", content="card lock rules", token_cost=3),
                  ContextResource(id="d2", content="nothing here", token_cost=3)),
        tools=(ToolResource(id="open_acc", description="open account", schema_token_cost=3),
               ToolResource(id="lock_card", description="lock card", schema_token_cost=3)),
        gold_context_ids=("d0",) if gold_tool == "open_acc" else ("d1",),
        gold_tool_ids=(gold_tool,), verifier=VerifierSpec(kind="tools_exposed"))


def test_where_no_document_names_a_tool_link_features_are_zero():
    tasks = [_unnamed_task(i, ("open_acc", "lock_card")[i % 2]) for i in range(8)]
    model = fit_relevance(tasks[1:], "bm25", pool_limit=None, propagate="stacked",
                          features=("link", "prior", "knn"))
    view = tasks[0].router_view()
    pools = candidate_pools(view, None)
    f = view_features(view, pools)
    assert not f.pair_named.any()
    rows = _first_rows(model.config, model.memory, _Prepared(view, pools, f), None)
    link = [model.config.columns().index(c) for c in FEATURE_GROUPS["link"]]
    assert not rows["context"][:, link].any() and not rows["tool"][:, link].any()
    scores = model.score(view, pools)
    assert set(scores.tool_p) == {"open_acc", "lock_card"}


# -- no leakage -------------------------------------------------------------------------

@settings(max_examples=8, deadline=None)
@given(data=st.data(), which=st.sampled_from(range(len(CONFIGS))))
def test_gold_of_the_scored_task_never_reaches_a_score(data, which):
    """Property, per configuration: redrawing the evaluated task's gold, pairs, verifier
    and metadata changes neither its pools nor any score."""
    model = _model(CONFIGS[which])
    task = _fixture_tasks()[0]
    other = with_gold_redrawn(task, data)
    views = [t.router_view() for t in (task, other)]
    pools = [candidate_pools(v, LIMIT, RULE) for v in views]
    assert pools[0] == pools[1]
    assert model.score(views[0], pools[0]) == model.score(views[1], pools[1])


@settings(max_examples=6, deadline=None)
@given(data=st.data(), which=st.sampled_from(range(len(CONFIGS))))
def test_an_evaluation_task_never_reaches_the_model(data, which):
    """Property: the model is a function of its training tasks only: fitting with the
    evaluation tasks changed (gold redrawn) or absent gives the same model, and changing a
    training task's gold is what can change it."""
    tasks = _fixture_tasks()
    training, evaluation = tasks[1:], tasks[0]
    changed = with_gold_redrawn(evaluation, data)
    model = _model(CONFIGS[which], training)
    again = fit_relevance([t for t in training if t.task_id != changed.task_id], RULE,
                          pool_limit=LIMIT, config=CONFIGS[which])
    assert again.sha256 == model.sha256
    assert evaluation.task_id not in model.describe()["training"]["task_ids"]


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_training_rows_prior_and_knn_leave_its_own_gold_out(data):
    """Property: a training row's ``prior`` and ``knn`` features (its own task left out)
    are the same whatever that task's gold is."""
    tasks = list(_fixture_tasks())
    i = data.draw(st.sampled_from(range(len(tasks))))
    changed = [*tasks[:i], with_gold_redrawn(tasks[i], data), *tasks[i + 1:]]
    config = RelevanceConfig(features=("prior", "knn"))
    rows = []
    for ts in (tasks, changed):
        memory = _Memory.build(ts)
        view = ts[i].router_view()
        pools = candidate_pools(view, LIMIT, RULE)
        item = _Prepared(view, pools, view_features(view, pools))
        rows.append(_first_rows(config, memory, item, i))
    for lane in ("context", "tool"):
        assert np.array_equal(rows[0][lane], rows[1][lane])
    assert rows[0]["tool"].shape[1] == len(UNARY_FEATURES) + 4


def test_knn_and_prior_by_hand():
    tasks = [_unnamed_task(i, g) for i, g in enumerate(["open_acc", "open_acc", "lock_card"])]
    memory = _Memory.build(tasks)
    # prior: open_acc gold in 2 of 3 tasks; leaving task 0 out: 1 of 2
    assert memory.prior_rows(["open_acc"], None)[0] == pytest.approx([2.5 / 4, np.log(3)])
    assert memory.prior_rows(["open_acc"], 0)[0] == pytest.approx([1.5 / 3, np.log(2)])
    near = memory.neighbours(tasks[0].objective, 5, exclude=0)
    assert [j for j, _ in near] and 0 not in [j for j, _ in near]
    knn = memory.knn_rows(["open_acc", "lock_card"], near)
    sims = dict(near)
    total = sum(sims.values())
    assert knn[0] == pytest.approx([sims[1] / total, sims[1]])
    assert knn[1] == pytest.approx([sims[2] / total, sims[2]])


def test_dense_columns_by_hand():
    """``dense_features``: the cosine, its share of the lane's best, its rank among the
    pooled (ties by pool order) and the fused score from the two ranks."""
    from junction.candidates import RRF_K
    from junction.learned.relevance import DENSE_FEATURES, dense_features

    view = _fixture_tasks()[0].router_view()
    pools = candidate_pools(view, LIMIT, RULE)
    d = dense_features(view, pools)
    assert DENSE_FEATURES == ("dense", "dense_normalised", "dense_rank", "fused")
    for lane in ("context", "tool"):
        cos, norm, rank, fused = d[lane].T
        n = len(cos)
        order = sorted(range(n), key=lambda i: (-cos[i], i))
        assert [int(rank[i]) for i in order] == list(range(n))
        assert norm == pytest.approx(cos / cos.max())
        for i in range(n):
            want = 1 / (RRF_K + i + 1) + (1 / (RRF_K + rank[i] + 1) if cos[i] > 0 else 0)
            assert fused[i] == pytest.approx(want)
