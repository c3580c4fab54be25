"""Learned utility: the split, no leakage, calibration, determinism, strategies; the fit's
caches: cached features equal fresh ones, keys never read gold."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junction_datasets import (
    build_suite,
    family_training_tasks,
    suite_family,
    training_source,
)
from junction_datasets.bfcl import TRAIN_FRACTION, split_of

from junction.agent.execution import execute
from junction.errors import UnknownNameError
from junction.evaluate import evaluate_batch
from junction.evidence.store import TraceStore
from junction.learned import fit_learned_utility, fit_probability_model
from junction.learned.features import (
    PAIR_FEATURES,
    UNARY_FEATURES,
    clear_view_cache,
    name_terms,
    names_id,
    pair_features,
    unary_features,
    view_features,
    view_fingerprint,
)
from junction.learned.grid import (
    SEARCHES,
    GridWorkerError,
    fit_workers,
    search_pick,
    shutdown_workers,
    solve_all,
    solve_job,
)
from junction.learned.model import LearnedModelError, canonical_sha256
from junction.learned.utility import clear_pool_cache
from junction.select import AutoJointSelector
from junction.strategies import candidate_pools, make_strategy
from junction.tasks import VerifierSpec
from junction.text import lexical_tokens
from junction.units import UnitSpec
from junction.verifiers import verify
from tests.helpers import needs_data, with_gold_redrawn


def _ids(suite: str, split: str, seed: int = 0) -> set[str]:
    return {t.metadata["bfcl_id"] for t in build_suite(suite, seed=seed, size=None,
                                                       split=split).tasks}


@needs_data
@pytest.mark.parametrize("suite", ["bfcl-multiple", "bfcl-irrelevance", "bfcl-memory"])
def test_split_is_disjoint_complete_and_stable(suite):
    train, evaluation, every = _ids(suite, "train"), _ids(suite, "eval"), _ids(suite, "all")
    assert train and evaluation
    assert not train & evaluation
    assert train | evaluation == every
    # stable: another seed (other distractors, other samples) splits the same rows
    assert _ids(suite, "eval", seed=3) == evaluation
    assert all(split_of(i) == "train" for i in train)
    # the default build is the evaluation part, and a sample never leaves it
    assert {t.metadata["bfcl_id"] for t in build_suite(suite, size=5).tasks} <= evaluation


def test_split_fraction_follows_the_hash():
    parts = [split_of(f"row_{i}") for i in range(5000)]
    assert abs(parts.count("train") / 5000 - TRAIN_FRACTION) < 0.03
    assert parts == [split_of(f"row_{i}") for i in range(5000)]


def test_split_errors_are_named():
    with pytest.raises(ValueError, match="no training part"):
        build_suite("synthetic", size=2, split="train")
    with pytest.raises(ValueError, match="split must be one of"):
        build_suite("bfcl-multiple", size=2, split="test")


@pytest.fixture(scope="module")
def memory_training():
    return family_training_tasks("bfcl-memory")


@pytest.fixture(scope="module")
def memory_model(memory_training):
    return fit_learned_utility("bfcl-memory", memory_training, 8)


@needs_data
def test_training_rows_are_never_evaluation_rows(memory_training):
    evaluation = {t.task_id for s in ("bfcl-memory",)
                  for t in build_suite(s, size=None).tasks}
    assert memory_training and not {t.task_id for t in memory_training} & evaluation
    assert suite_family("bfcl-irrelevance") == suite_family("bfcl-multiple") == "bfcl-tools"
    assert suite_family("synthetic") is None and suite_family("my-file-suite") is None


@needs_data
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_gold_and_verifier_never_reach_a_feature(memory_training, memory_model, data):
    """Property: changing a task's gold ids, verifier and metadata changes no feature,
    no probability and no learned problem."""
    task = data.draw(st.sampled_from(memory_training[:10]))
    ids = [c.id for c in task.contexts]
    tool_ids = [t.id for t in task.tools]
    other = task.model_copy(update={
        "gold_context_ids": tuple(data.draw(st.lists(st.sampled_from(ids), max_size=3))),
        "gold_tool_ids": tuple(data.draw(st.lists(st.sampled_from(tool_ids), max_size=3))),
        "verifier": VerifierSpec(kind="context_answer",
                                 params={"answers": data.draw(st.lists(st.text(), max_size=2))}),
        "metadata": {"source": data.draw(st.text()), "gold_calls": ids[:2]},
    })
    views = [t.router_view() for t in (task, other)]
    pools = [candidate_pools(v, 8) for v in views]
    a, b = (unary_features(v, p) for v, p in zip(views, pools, strict=False))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    pa, pb = (memory_model.probabilities(v, p) for v, p in zip(views, pools, strict=False))
    assert pa == pb
    assert (pair_features(views[0], pools[0], pa, memory_model.prior)[1].tolist()
            == pair_features(views[1], pools[1], pb, memory_model.prior)[1].tolist())
    problems = [memory_model.problem(v, p)[0] for v, p in zip(views, pools, strict=False)]
    assert problems[0] == problems[1]


def test_calibration_recovers_known_probabilities():
    """A logistic truth p = sigmoid(1.5 x0 - x1 + 0.5 x2 - 0.5): the fitted probabilities
    on fresh rows are within 0.03 of the truth on average, 0.1 at worst."""
    rng = np.random.default_rng(7)
    w, b = np.array([1.5, -1.0, 0.5]), -0.5

    def draw(n):
        X = rng.normal(size=(n, 3))
        p = 1 / (1 + np.exp(-(X @ w + b)))
        return X, (rng.random(n) < p).astype(int), p

    X, y, _ = draw(4000)
    model = fit_probability_model(X, y, ("x0", "x1", "x2"), seed=0)
    Xt, _, pt = draw(2000)
    err = np.abs(model.predict(Xt) - pt)
    assert err.mean() < 0.03 and err.max() < 0.1
    again = fit_probability_model(X, y, ("x0", "x1", "x2"), seed=0)
    assert again.describe() == model.describe()


def test_a_class_too_small_to_calibrate_gives_a_constant():
    X = np.zeros((10, 2))
    model = fit_probability_model(X, [0] * 10, ("a", "b"))
    assert model.estimator is None and model.predict(X).tolist() == [0.5 / 11] * 10
    with pytest.raises(LearnedModelError, match="expects 2 columns"):
        model.predict(np.zeros((1, 3)))
    with pytest.raises(LearnedModelError, match="not finite"):
        fit_probability_model(np.array([[math.nan, 0.0]] * 4), [0, 1, 0, 1], ("a", "b"))


@needs_data
def test_fit_is_deterministic(memory_training, memory_model):
    again = fit_learned_utility("bfcl-memory", memory_training, 8)
    assert again.sha256 == memory_model.sha256
    assert json.dumps(again.record(), sort_keys=True) == json.dumps(memory_model.record(),
                                                                     sort_keys=True)
    record = memory_model.record()
    assert record["context_model"]["features"] == list(UNARY_FEATURES)
    assert record["training"]["task_ids"] == [t.task_id for t in memory_training]
    assert record["lambda"] in {r["lambda"] for r in record["search"]}
    # the suite's gold names contexts only: no gold pair, so no pair model, no interaction
    assert record["pair_model"] is None and record["training"]["gold_pairs"] == 0


@needs_data
def test_expected_value_objective_abstains(memory_model, memory_training):
    view = memory_training[0].router_view()
    pools = candidate_pools(view, 8)
    problem, p = memory_model.problem(view, pools, lam=0.0)
    assert all(problem.unary[r] == pytest.approx(p[r], abs=1e-9) for r in p)
    # the budget enters the objective, never p(gold)
    half = view.model_copy(update={"budget": view.budget.scaled(0.5)})
    assert memory_model.probabilities(half, pools) == p
    # a token price no candidate can pay exposes nothing: abstention without a special case
    expensive, _ = memory_model.problem(view, pools, lam=1e6)
    assert max(expensive.unary.values()) < 0
    sel = AutoJointSelector().select(expensive)
    assert sel.context_ids == () and sel.tool_ids == ()


@needs_data
def test_learned_strategies_trace_their_model(tmp_path, memory_model):
    source = training_source()
    exact_learned = make_strategy("learned_exact", training=source)
    split_learned = make_strategy("learned_split", training=source)
    tasks = build_suite("bfcl-memory", size=3).tasks
    for task in tasks:
        a = exact_learned.select(task.router_view(), 8)
        b = split_learned.select(task.router_view(), 8)
        assert a.extra["learned_model"] == b.extra["learned_model"] == memory_model.sha256
        assert a.extra["learned_family"] == "bfcl-memory"
        assert set(a.extra["learned_p"]) == {c.resource_id for c in
                                             (*a.pools.contexts, *a.pools.tools)}
        again = exact_learned.select(task.router_view(), 8)
        assert again.selection.model_copy(update={"solve_time_ms": None}) == \
            a.selection.model_copy(update={"solve_time_ms": None})
        verify(task, execute(task, a.selection.context_ids, a.selection.tool_ids))
    (model,) = exact_learned.artifacts()
    store = TraceStore(str(tmp_path))
    path = store.write_learned_model(model.family, model.sha256, model.record())
    assert path.endswith(f"learned/bfcl-memory-{model.sha256}.json")
    assert json.loads(Path(path).read_text())["lambda"] == model.lam


def test_without_a_training_part_learned_exact_selects_as_exact():
    task = build_suite("coupling").tasks[0]
    learned = make_strategy("learned_exact", training=training_source()).select(task.router_view(),
                                                                                None)
    exact = make_strategy("exact").select(task.router_view(), None)
    assert learned.selection.exposed_ids == exact.selection.exposed_ids
    assert "no training part" in learned.extra["learned_fallback"]
    bare = make_strategy("learned_split").select(task.router_view(), None)
    assert bare.extra == {"learned_fallback": "no training source"}


def test_pair_model_where_training_has_gold_pairs():
    """Synthetic tasks plant a gold context and a gold tool in one task: the pair model is
    fitted, and the learned interactions are sparse (|w| >= tau) and change the problem."""
    tasks = build_suite("synthetic", seed=1, size=40).tasks
    model = fit_learned_utility("synthetic-test", tasks, 8)
    record = model.record()
    assert record["training"]["gold_pairs"] >= 2 and record["pair_model"] is not None
    assert record["tau"] in {r["tau"] for r in record["search"]}
    view = build_suite("synthetic", seed=0, size=1).tasks[0].router_view()
    pools = candidate_pools(view, 8)
    joint, _p = model.problem(view, pools)
    assert all(abs(w) >= model.tau for w in joint.interactions.values())
    assert len(joint.interactions) < len(pools.contexts) * len(pools.tools)
    alone, _ = model.problem(view, pools, pairs=False)
    assert alone.interactions == {} and alone.unary == joint.unary


# --- the fit's caches ---------------------------------------------------------------------

_TAU2_FIXTURE = Path(__file__).resolve().parent / "data" / "tau2_fixture"


def _fixture_tasks():
    from junction_datasets import tau2_banking

    return tau2_banking.banking_suite(split="all", path=_TAU2_FIXTURE).tasks


def _pair_rows_one_at_a_time(view, pools, p_unary, prior):
    """The pair features as the fit computed them before its caches: one row per pair, a
    regular expression per pair, the view's own lookups."""
    def logit(p):
        p = min(max(p, 1e-6), 1 - 1e-6)
        return math.log(p / (1 - p))

    best_c = max((c.score for c in pools.contexts), default=0.0)
    best_t = max((t.score for t in pools.tools), default=0.0)
    keys, rows = [], []
    for c in pools.contexts:
        text = view.context(c.resource_id).content
        tokens = set(lexical_tokens(text))
        for t in pools.tools:
            terms = name_terms(t.resource_id)
            named = re.search(rf"(?<![A-Za-z0-9_]){re.escape(t.resource_id)}(?![A-Za-z0-9_])",
                              text) is not None
            keys.append((c.resource_id, t.resource_id))
            rows.append([logit(p_unary[c.resource_id]), logit(p_unary[t.resource_id]),
                         c.score / best_c if best_c > 0 else 0.0,
                         t.score / best_t if best_t > 0 else 0.0,
                         len(terms & tokens) / len(terms) if terms else 0.0,
                         prior.rate(t.resource_id), float(named)])
    return keys, np.asarray(rows, dtype=float).reshape(-1, len(PAIR_FEATURES))


@pytest.mark.parametrize("source", ["synthetic", "tau2-fixture"])
def test_cached_features_equal_fresh_ones_bit_for_bit(source):
    tasks = (build_suite("synthetic", seed=1, size=6).tasks if source == "synthetic"
             else _fixture_tasks())
    model = fit_learned_utility("cache-test", tasks, 8)
    for task in tasks:
        view = task.router_view()
        pools = candidate_pools(view, 8)
        clear_view_cache()
        fresh = unary_features(view, pools)
        p = model.probabilities(view, pools)
        fresh_pairs = pair_features(view, pools, p, model.prior)
        cached = unary_features(view, pools)  # from the cache now
        assert all(np.array_equal(fresh[k], cached[k]) for k in fresh)
        keys, X = pair_features(view, pools, p, model.prior)
        assert keys == fresh_pairs[0] and np.array_equal(X, fresh_pairs[1])
        ref_keys, ref_X = _pair_rows_one_at_a_time(view, pools, p, model.prior)
        assert keys == ref_keys and X.tobytes() == ref_X.tobytes()
        # a caller may write to what it gets; the cache stays as it was
        cached["context"][:] = -1.0
        assert np.array_equal(unary_features(view, pools)["context"], fresh["context"])


def test_the_cache_keys_on_the_router_view_never_on_gold():
    task = _fixture_tasks()[0]
    other = task.model_copy(update={
        "gold_context_ids": (), "gold_tool_ids": (), "gold_pairs": (),
        "verifier": VerifierSpec(kind="tools_exposed"), "metadata": {"x": 1}})
    assert view_fingerprint(task.router_view()) == view_fingerprint(other.router_view())
    # a task (which holds gold) is refused as a cache key and as a feature source
    pools = candidate_pools(task.router_view(), 8)
    for call in (lambda: view_fingerprint(task), lambda: view_features(task, pools),
                 lambda: unary_features(task, pools)):
        with pytest.raises(TypeError, match="RouterView only"):
            call()
    # what the features read moves the key: the objective, a document's text
    view = task.router_view()
    moved = view.model_copy(update={"objective": view.objective + " card"})
    assert view_fingerprint(moved) != view_fingerprint(view)
    doc = view.contexts[0].model_copy(update={"content": view.contexts[0].content + " x"})
    edited = view.model_copy(update={"contexts": (doc, *view.contexts[1:])})
    assert view_fingerprint(edited) != view_fingerprint(view)
    # the budget is not read by any feature (p(gold) must not move with it): same key
    half = view.model_copy(update={"budget": view.budget.scaled(0.5)})
    assert view_fingerprint(half) == view_fingerprint(view)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab_.-1 \n(`", max_size=30),
       rid=st.text(alphabet="ab_.-1", min_size=1, max_size=5))
def test_names_id_is_the_whole_identifier_rule(text, rid):
    expected = re.search(rf"(?<![A-Za-z0-9_]){re.escape(rid)}(?![A-Za-z0-9_])", text) is not None
    assert names_id(text, rid) == expected


def test_fit_from_warm_caches_and_memo_equals_a_cold_fit_solving_every_grid_point():
    """The fit's memo of outcomes (by reduced problem) and its caches change nothing: the
    search table equals the one got by solving every (lam, tau) afresh with the public
    ``problem``, and a fit from empty caches has the same sha256."""
    tasks = _fixture_tasks() + build_suite("synthetic", seed=1, size=12).tasks
    warm = fit_learned_utility("memo-test", tasks, 8)
    clear_view_cache()
    clear_pool_cache()
    cold = fit_learned_utility("memo-test", tasks, 8)
    assert cold.sha256 == warm.sha256
    selector = AutoJointSelector()
    views = [t.router_view() for t in tasks]
    pools = [candidate_pools(v, 8) for v in views]
    for row in cold.search:
        cold.tau = math.inf if row["tau"] is None else row["tau"]
        per_suite: dict[str, list[bool]] = {}
        for t, v, p in zip(tasks, views, pools, strict=False):
            sel = selector.select(cold.problem(v, p, lam=row["lambda"])[0])
            per_suite.setdefault(t.suite, []).append(
                verify(t, execute(t, sel.context_ids, sel.tool_ids)).success)
        assert row["by_suite"] == {k: round(float(np.mean(s)), 6)
                                   for k, s in sorted(per_suite.items())}


# --- the fit's search on worker processes --------------------------------------------------

FIXTURE_FIT_SHA256 = "f7dcdaa0b1f7acffa108dd7e7a7f9dd761015238d3a76812716c8244c49faeb8"
"""sha256 of the stored record of the fit below, less its library versions, with every
float rounded to ``PIN_DIGITS`` significant digits: the result the fit's worker pool must
keep. The record's exact floats (the pin before: 61cb929f, commit f318ee4) differ between
CPUs (the same pinned libraries give 4f5e4bf5 on an AMD EPYC here at b8b89c8, whose code
gave 61cb929f where it was pinned), so the pin is of the rounded record, recomputed at
b8b89c8 and unchanged by the library pool."""

PIN_DIGITS = 8
"""Significant digits the pinned record keeps (far above what a fitted coefficient means,
far below the last bits a CPU's floating point moves)."""


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.{PIN_DIGITS}g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _record_sha256(model) -> str:
    record = model.record()
    record.pop("versions")
    return canonical_sha256(_rounded(record))


def test_the_fit_is_unchanged_in_this_process_and_on_worker_processes():
    tasks = _fixture_tasks() + build_suite("synthetic", seed=1, size=12).tasks
    inline = fit_learned_utility("pin-test", tasks, 8, workers=1)
    spread = fit_learned_utility("pin-test", tasks, 8, workers=2)
    assert _record_sha256(inline) == _record_sha256(spread) == FIXTURE_FIT_SHA256
    assert inline.sha256 == spread.sha256
    shutdown_workers()


def test_an_approximate_fit_search_is_recorded_and_the_same_on_worker_processes():
    """A fit by local search is the same in this process and on workers, says how it
    searched (so its sha256 is not an exact fit's), and an unknown search is refused by
    name before anything is fitted."""
    tasks = _fixture_tasks() + build_suite("synthetic", seed=1, size=12).tasks
    inline = fit_learned_utility("pin-test", tasks, 8, workers=1, search="local")
    spread = fit_learned_utility("pin-test", tasks, 8, workers=2, search="local")
    shutdown_workers()
    assert inline.sha256 == spread.sha256
    assert inline.record()["grid_search"] == spread.record()["grid_search"] == "local"
    assert _record_sha256(inline) != FIXTURE_FIT_SHA256
    with pytest.raises(UnknownNameError, match="unknown fit search 'fast'; valid searches: "
                                               "optimal, hybrid, local"):
        fit_learned_utility("pin-test", tasks, 8, search="fast")


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 10_000),
       tightness=st.sampled_from((0.2, 0.4, 1.0)))
def test_approximate_searches_select_sets_that_fit_and_hybrid_is_exact_on_small_pools(
        n, seed, tightness):
    """Every search of ``SEARCHES`` selects a set inside the problem's limits; ``hybrid``
    selects the exact selector's set where at most ``COMBINATORIAL_MAX`` candidates are left
    after reduction, and ``local`` never beats the exact objective."""
    from junction.select.exact.bnb import COMBINATORIAL_MAX
    from junction.select.exact.reduction import reduce
    from junction.select.instances import random_problem
    from junction.select.problem import exceeded_limit, objective_terms

    problem = random_problem(n, seed, tightness=tightness)
    red = reduce(problem, problem.max_size)
    exact = AutoJointSelector(combinatorial_max=COMBINATORIAL_MAX).select(problem)
    by_id = {r.id: r for r in (*problem.contexts, *problem.tools)}
    for search in SEARCHES:
        pick = search_pick(search)
        if pick is None:
            continue
        contexts, tools = pick(problem, red, problem.max_size)
        chosen = [by_id[i] for i in (*contexts, *tools)]
        assert exceeded_limit(problem.budget, chosen, problem.max_size) is None
        assert sum(objective_terms(problem, contexts, tools)) <= exact.objective + 1e-9
        if search == "hybrid" and len(red.items) <= COMBINATORIAL_MAX:
            assert (sorted(contexts), sorted(tools)) == (sorted(exact.context_ids),
                                                         sorted(exact.tool_ids))


def test_solve_all_keeps_job_order_and_names_a_bad_worker_count(monkeypatch):
    jobs = _fixture_jobs()
    alone = [solve_job(job) for job in jobs]
    assert solve_all(jobs, 2) == alone
    assert solve_all(list(reversed(jobs)), 2) == list(reversed(alone))
    shutdown_workers()
    monkeypatch.setenv("JUNCTION_FIT_WORKERS", "two")
    with pytest.raises(GridWorkerError, match="JUNCTION_FIT_WORKERS must be a whole number "
                                              r">= 1 \(at most the \d+ CPUs .*, got 'two'"):
        fit_workers()
    monkeypatch.setenv("JUNCTION_FIT_WORKERS", "1")
    assert fit_workers() == 1


def _fixture_jobs(search: str = "optimal"):
    """One ``solve_all`` job per fixture task: its pools and one learned problem, selected
    by ``search``."""
    tasks = _fixture_tasks()
    model = fit_learned_utility("jobs-test", tasks, 8, workers=1)
    jobs = []
    for t in tasks:
        view = t.router_view()
        problem, _ = model.problem(view, candidate_pools(view, 8))
        jobs.append((problem.contexts, problem.tools, problem.budget,
                     [(dict(problem.unary), dict(problem.interactions))], search))
    return jobs


def test_a_small_search_stays_in_this_process_unless_workers_are_asked_for():
    """Pools of at most ``AUTO_COMBINATORIAL_MAX`` candidates: no worker process starts
    for ``workers=None``; ``workers=2`` starts them (kept for the next fit), and the model
    is the same; ``shutdown_workers`` stops them."""
    import psutil

    def workers() -> list[int]:
        return [c.pid for c in psutil.Process().children()
                if "popen_loky_posix" in " ".join(c.cmdline())
                and c.status() != psutil.STATUS_ZOMBIE]

    tasks = _fixture_tasks()
    shutdown_workers()
    auto = fit_learned_utility("spread-test", tasks, 8)
    assert workers() == []
    spread = fit_learned_utility("spread-test", tasks, 8, workers=2)
    assert len(workers()) == 2
    assert auto.sha256 == spread.sha256
    shutdown_workers()
    assert workers() == []


# --- the link features and the strategy-owned pool rule (learned_named) ------------------

def test_link_features_by_hand():
    """``LINK_FEATURES`` of each candidate: the best normalised score among the other
    lane's pooled candidates it names or is named by, and log(1 + how many)."""
    from junction.learned.features import LINK_FEATURES
    from junction.resources import ContextResource, ToolResource
    from junction.tasks import RouterView

    view = RouterView(
        task_id="t", suite="s", objective="open account card",
        contexts=(ContextResource(id="d0", content="open account: use open_acc", token_cost=3),
                  ContextResource(id="d1", content="card: lock_card or open_acc",
                                  token_cost=3),
                  ContextResource(id="d2", content="nothing", token_cost=3)),
        tools=(ToolResource(id="open_acc", description="open account", schema_token_cost=3),
               ToolResource(id="lock_card", description="card", schema_token_cost=3)))
    pools = candidate_pools(view, None)
    f = view_features(view, pools)
    assert LINK_FEATURES == ("link_best", "link_count")
    norm = {c.resource_id: c.score / max(x.score for x in lane)
            for lane in (pools.contexts, pools.tools) for c in lane}
    link = {r.id: row.tolist() for lane, rs in (("context", f.contexts), ("tool", f.tools))
            for r, row in zip(rs, f.link[lane], strict=False)}
    assert link["d0"] == pytest.approx([norm["open_acc"], math.log(2)])
    assert link["d1"] == pytest.approx([max(norm["open_acc"], norm["lock_card"]), math.log(3)])
    assert link["d2"] == [0.0, 0.0]
    assert link["open_acc"] == pytest.approx([max(norm["d0"], norm["d1"]), math.log(3)])
    assert link["lock_card"] == pytest.approx([norm["d1"], math.log(2)])


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_gold_never_reaches_a_link_feature_or_a_named_pool(data):
    """Property: on the τ fixture, redrawing a task's gold tools, documents, pairs and
    verifier changes neither its ``bm25_named`` pools nor its link features nor a linked
    model's probabilities and problem."""
    tasks = _fixture_tasks()
    model = _linked_fixture_model()
    task = data.draw(st.sampled_from(tasks))
    other = with_gold_redrawn(task, data)
    views = [t.router_view() for t in (task, other)]
    pools = [candidate_pools(v, (3, None), "bm25_named") for v in views]
    assert pools[0] == pools[1]
    a, b = (view_features(v, p) for v, p in zip(views, pools, strict=False))
    assert all(np.array_equal(a.link[k], b.link[k]) for k in ("context", "tool"))
    assert model.problem(views[0], pools[0]) == model.problem(views[1], pools[1])


_LINKED: list = []


def _linked_fixture_model():
    """A linked model fitted on the τ fixture's tasks under ``bm25_named`` (once)."""
    if not _LINKED:
        _LINKED.append(fit_learned_utility("tau2-banking", _fixture_tasks(), (3, None),
                                           link=True, rule="bm25_named"))
    return _LINKED[0]


def test_a_linked_model_reads_the_link_columns_and_says_so():
    model = _linked_fixture_model()
    record = model.record()
    assert record["link"] is True and record["pool_rule"] == "bm25_named"
    assert record["context_model"]["features"][-2:] == ["link_best", "link_count"]
    plain = fit_learned_utility("tau2-banking", _fixture_tasks(), (3, None))
    assert "link" not in plain.record() and plain.sha256 != model.sha256


def test_learned_named_ranks_and_fits_by_its_own_pool_rule():
    """``learned_named`` widens its pools by ``bm25_named`` whatever the run's pool rule;
    its model is fitted on that rule; its traces say so (``strategy_pool_rule``)."""
    from junction.strategies.catalog import make_strategy
    from junction.strategies.learned import TrainingSource

    tasks = _fixture_tasks()
    source = TrainingSource(family=lambda suite: "tau2-banking",
                            tasks=lambda family: tasks[1:])
    strategy = make_strategy("learned_named", training=source)
    assert strategy.for_fold(None).pool == "bm25_named"
    view = tasks[0].router_view()
    result = strategy.select(view, (3, None))
    assert result.pools == candidate_pools(view, (3, None), "bm25_named")
    assert result.pools != candidate_pools(view, (3, None), "bm25")
    assert result.extra["strategy_pool_rule"] == "bm25_named"
    (model,) = strategy.artifacts()
    assert model.record()["pool_rule"] == "bm25_named"
    records, _ = evaluate_batch([tasks[0]], strategy, UnitSpec(
        strategy="learned_named", run_id="r", seed=0, scale=1.0, pool_limit=(3, None)))
    assert [c.resource_id for c in records[0].context_candidates] == [
        c.resource_id for c in result.pools.contexts]


def test_a_pair_weight_grid_is_searched_recorded_and_applied():
    """With a ``pair_weights`` grid the fit chooses the weight with lam and tau by training
    success, records the grids and the choice, and the model's interactions are the
    unweighted model's times that weight; on the default grids nothing of this is in the
    record."""
    tasks = _fixture_tasks()
    one = fit_learned_utility("tau2-banking", tasks[1:], (3, None), lambdas=(0.0,),
                              taus=(0.01,), rule="bm25_named")
    weighted = fit_learned_utility("tau2-banking", tasks[1:], (3, None), lambdas=(0.0,),
                                   taus=(0.01,), pair_weights=(1.0, 3.0), rule="bm25_named")
    record = weighted.record()
    assert record["grids"] == {"lambda": [0.0], "tau": [0.01], "pair_weight": [1.0, 3.0]}
    assert record["pair_weight"] == weighted.pair_weight in (1.0, 3.0)
    assert [row["pair_weight"] for row in record["search"]] == [1.0, 3.0]
    best = max(record["search"], key=lambda row: row["training_success"])
    assert weighted.pair_weight == best["pair_weight"]
    view = tasks[0].router_view()
    pools = candidate_pools(view, (3, None), "bm25_named")
    a, _ = one.problem(view, pools)
    b, _ = weighted.problem(view, pools)
    assert a.interactions and b.interactions.keys() == a.interactions.keys()
    assert all(b.interactions[k] == pytest.approx(weighted.pair_weight * a.interactions[k],
                                                  abs=1e-8) for k in a.interactions)
    assert "grids" not in fit_learned_utility("tau2-banking", tasks[1:], 8).record()
