"""Cross-fitting on tau2-banking: the fold draw, the no-leak property per fold, the
corrected repeated cross-validation interval against a hand-worked example, and a
cross-fitted run on the fixture (every task once per repetition, with its fold)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from junction.evidence.crossfit import corrected_cv_interval, cross_fitted_verdicts
from junction.evidence.joint_split import joint_split_verdicts
from junction.learned.crossfit import CrossFitFold, fold_assignment, held_out

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "tau2_fixture"


# ---------------------------------------------------------------- the fold draw

@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=2, max_size=60, unique=True),
       st.integers(2, 10), st.integers(0, 5))
def test_every_task_is_in_exactly_one_fold_per_repetition(ids, folds, repetition):
    if folds > len(ids):
        with pytest.raises(ValueError, match="must not exceed the tasks"):
            fold_assignment(ids, folds, repetition)
        return
    got = fold_assignment(ids, folds, repetition)
    assert list(got) == ids and set(got.values()) <= set(range(folds))
    sizes = [sum(1 for f in got.values() if f == k) for k in range(folds)]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == len(ids)
    # stable: the same draw again, and in any order of the ids
    assert fold_assignment(list(reversed(ids)), folds, repetition) == got
    # the held-out sets partition the ids
    parts = [held_out(ids, folds, repetition, f) for f in range(folds)]
    assert sorted(t for p in parts for t in p) == sorted(ids)


def test_repetitions_draw_different_folds():
    ids = [f"task_{i:03d}" for i in range(97)]
    draws = [fold_assignment(ids, 5, r) for r in range(3)]
    assert draws[0] != draws[1] != draws[2]
    # pinned: a change of the rule changes every cross-fitted result, so it must be seen
    assert [draws[0][f"task_{i:03d}"] for i in range(10)] == \
        [fold_assignment(ids, 5, 0)[f"task_{i:03d}"] for i in range(10)]


@pytest.mark.parametrize("args, message", [
    ((["a", "b"], 1, 0), "folds must be >= 2"),
    ((["a", "a", "b"], 2, 0), "unique"),
    ((["a", "b"], 3, 0), "must not exceed"),
])
def test_bad_fold_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        fold_assignment(*args)


def test_a_fold_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"fold must be in \[0, 5\)"):
        CrossFitFold(repetition=0, fold=5, folds=5)


# ---------------------------------------------------------------- the corrected interval

def test_corrected_interval_matches_a_hand_worked_example():
    # K = 5 folds, R = 1: fold differences d = .1 .2 0 .1 .1 (A − B)
    # mean .1; sample variance ((0)^2 + .1^2 + .1^2 + 0 + 0) / 4 = .005
    # corrected: .005 * (1/5 + 1/(5 − 1)) = .00225, se = sqrt(.00225) = .0474342
    # t(.975, 4) = 2.776445: half-width .131698 -> [−.031698, .231698]
    # t = .1 / .0474342 = 2.108185, two-sided p with 4 df = .102700
    a = [0.6, 0.7, 0.5, 0.6, 0.6]
    b = [0.5, 0.5, 0.5, 0.5, 0.5]
    got = corrected_cv_interval(a, b, runs=1)
    assert got["difference"] == pytest.approx(0.1)
    assert got["ci_low"] == pytest.approx(-0.031698, abs=1e-6)
    assert got["ci_high"] == pytest.approx(0.231698, abs=1e-6)
    assert got["p_value"] == pytest.approx(0.102700, abs=1e-6)
    assert got["df"] == 4 and 0.5 < got["p_a_better"] < 1
    # the uncorrected interval (variance / n only) would be narrower: the refit counts
    naive = 2.776445 * math.sqrt(0.005 / 5)
    assert got["ci_high"] - got["difference"] > naive


def test_corrected_interval_with_repetitions_uses_folds_per_run():
    # R = 2, K = 2: d = .2 0 .2 0, mean .1, variance .013333; factor 1/4 + 1/(2 − 1) = 1.25
    got = corrected_cv_interval([0.7, 0.5, 0.7, 0.5], [0.5, 0.5, 0.5, 0.5], runs=2)
    se = math.sqrt((0.04 / 3) * 1.25)
    assert got["ci_high"] - got["difference"] == pytest.approx(3.182446 * se, rel=1e-5)


@pytest.mark.parametrize("a, b, runs, message", [
    ([0.1], [0.2], 1, "at least 2"), ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3], 2, "do not divide"),
    ([0.1, 0.2], [0.1, 0.2], 2, "at least 2 folds per run"),
])
def test_corrected_interval_refuses_bad_fold_scores(a, b, runs, message):
    with pytest.raises(ValueError, match=message):
        corrected_cv_interval(a, b, runs)


def _rows(outcomes):
    """Trace rows from {(strategy, repetition, task): (fold, success)}."""
    return [{"suite": "s", "budget_scale": 1.0, "strategy": s, "seed": r, "repetition": r,
             "fold": f, "task_id": t, "success": ok}
            for (s, r, t), (f, ok) in outcomes.items()]


def test_cross_fitted_verdict_counts_repetitions_and_drops_disputed_tasks():
    # 2 repetitions x 2 folds x 4 tasks; learned_exact succeeds everywhere, learned_split
    # never on t0 and t1; t3 is disputed
    outcomes = {}
    for r in (0, 1):
        for i in range(8):
            task, fold = f"t{i}", (i + r) % 2
            outcomes[("learned_exact", r, task)] = (fold, True)
            outcomes[("learned_split", r, task)] = (fold, i >= 2)
    got = cross_fitted_verdicts(_rows(outcomes), {"s": ["t3"]})
    assert [(v["subset"], v["n_tasks"], v["repetitions"], v["folds"]) for v in got] == [
        ("all", 8, 2, 2), ("undisputed", 7, 2, 2)]
    full = got[0]
    assert full["rate_a"] == 1.0 and full["rate_b"] == 0.75
    assert full["difference"] == pytest.approx(0.25)
    # each repetition alone: 2 discordant of 8, Newcombe's interval includes 0: holds in 0
    assert full["holds"] == 0 and full["p_a_better"] > 0.5


def test_headline_uses_the_corrected_interval_where_a_side_is_cross_fitted():
    # 8 tasks, 2 repetitions x 2 folds (fold of t_i in repetition r: (i + r) % 2).
    # learned_exact (refitted per fold) succeeds on t0..t5 in repetition 0 and on t0..t6 in
    # repetition 1; fixed_split (no refit: one row per task, seed 0) on t0..t3; exact on t0
    # and t1. The best joint (learned_exact, 13/16 = .8125) meets the best split
    # (fixed_split, .5), each fold's tasks paired with fixed_split's one outcome per task:
    #   rep 0 fold 0 (t0 t2 t4 t6): A 3/4, B 2/4; fold 1 (t1 t3 t5 t7): A 3/4, B 2/4
    #   rep 1 fold 0 (t1 t3 t5 t7): A 3/4, B 2/4; fold 1 (t0 t2 t4 t6): A 4/4, B 2/4
    from junction.evidence.verdicts import headline

    rows = []
    for i in range(8):
        common = {"suite": "s", "budget_scale": 1.0, "task_id": f"t{i}", "agent_success": None}
        rows.append({**common, "strategy": "fixed_split", "seed": 0, "fold": None,
                     "success": i < 4})
        rows.append({**common, "strategy": "exact", "seed": 0, "fold": None, "success": i < 2})
        for r in (0, 1):
            rows.append({**common, "strategy": "learned_exact", "seed": r, "fold": (i + r) % 2,
                         "success": i < 6 + r})
    (h,) = headline(rows)
    assert h["best"] == ["learned_exact"] and h["rates"]["learned_exact"] == (0.8125, 16)
    first, other = h["comparisons"]
    assert (first["other"], first["role"]) == ("fixed_split", "interaction-blind best")
    cmp = first["comparison"]
    want = corrected_cv_interval([0.75, 0.75, 0.75, 1.0], [0.5, 0.5, 0.5, 0.5], runs=2)
    assert (cmp.test, cmp.n, cmp.repetitions, cmp.folds) == ("corrected_cv", 8, 2, 2)
    assert (cmp.difference, cmp.ci_low, cmp.ci_high, cmp.p_value) == pytest.approx(
        (want["difference"], want["ci_low"], want["ci_high"], want["p_value"]))
    assert (cmp.rate_a, cmp.rate_b) == (0.8125, 0.5)
    # exact against learned_exact counts the refits too; two strategies without a refit
    # keep the paired Newcombe/McNemar comparison
    assert other["other"] == "exact" and other["comparison"].test == "corrected_cv"
    (plain,) = headline([r for r in rows if r["strategy"] != "learned_exact"])
    assert plain["best"] == ["exact"] and plain["comparisons"][0]["comparison"].test == "mcnemar"
    # the first screen says which comparison and which interval (8 tasks: too few to decide)
    from junction.evidence.verdict_text import verdict_lines
    from tests.report_text import read_verdict

    (line,) = verdict_lines([h])
    assert "best joint against best split" in line["text"]
    assert "corrected repeated-CV interval (2 × 2 folds)" in line["text"]
    said = read_verdict(line["text"])
    assert (said.status, said.n, said.rates) == (
        "too few", 8, {"learned_exact": 81, "fixed_split": 50})


def test_headline_pairs_two_cross_fitted_sides_repetition_by_repetition():
    outcomes = {}
    for r in (0, 1):
        for i in range(8):
            outcomes[("learned_exact", r, f"t{i}")] = ((i + r) % 2, True)
            outcomes[("learned_split", r, f"t{i}")] = ((i + r) % 2, i >= 2)
    from junction.evidence.verdicts import headline

    rows = [{**row, "agent_success": None} for row in _rows(outcomes)]
    (h,) = headline(rows)
    cmp = h["comparisons"][0]["comparison"]
    (twin,) = [v for v in cross_fitted_verdicts(_rows(outcomes)) if v["subset"] == "all"]
    assert cmp.test == "corrected_cv" and (cmp.difference, cmp.ci_low, cmp.ci_high) == \
        pytest.approx((twin["difference"], twin["ci_low"], twin["ci_high"]))


def test_joint_split_counts_a_repeated_selection_once_and_leaves_folds_out():
    rows = []
    for r in (0, 1, 2):  # no refit: the same selection in every repetition
        for i in range(4):
            common = {"suite": "s", "budget_scale": 1.0, "seed": r, "repetition": r,
                      "task_id": f"t{i}", "tool_recall": None, "pair_coverage": None}
            rows.append({**common, "strategy": "exact", "fold": None, "success": i < 3})
            rows.append({**common, "strategy": "adaptive_split", "fold": None, "success": i < 1})
            rows.append({**common, "strategy": "learned_exact", "fold": i % 2, "success": True})
            rows.append({**common, "strategy": "learned_split", "fold": i % 2, "success": False})
    got = joint_split_verdicts(rows)
    assert [(v["a"], v["measure"], v["n"]) for v in got] == [("exact", "success", 4)]


# ---------------------------------------------------------------- no leak, per fold

@pytest.fixture
def fixture_data(monkeypatch):
    """The tau2 fixture as the suite's data, and the learned caches cleared around the test
    (they are per process and keyed by family, not by data folder)."""
    from junction_datasets import tau2_banking as tb

    from flows import workers
    from junction.strategies import learned

    monkeypatch.setenv(tb.DATA_ENV, str(FIXTURE))
    saved = dict(learned._FITTED), dict(learned._ALL_TASKS)
    learned._FITTED.clear()
    learned._ALL_TASKS.clear()
    strategies = dict(workers._STRATEGIES)
    yield
    # the per-process strategy instances remember every model they used: drop the ones this
    # test made, so a later run in this process does not list the fixture's models
    workers._STRATEGIES.clear()
    workers._STRATEGIES.update({k: v for k, v in strategies.items()
                                if not k[0].startswith("learned")})
    learned._FITTED.clear()
    learned._ALL_TASKS.clear()
    learned._FITTED.update(saved[0])
    learned._ALL_TASKS.update(saved[1])


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the data, not state
@given(st.integers(0, 3), st.data())
def test_no_fold_model_trains_on_a_task_it_evaluates(fixture_data, repetition, data):
    from junction_datasets import build_suite, training_source

    from junction.strategies.learned import CrossFitError, LearnedStrategy

    tasks = build_suite("tau2-banking", size=None).tasks
    ids = [t.task_id for t in tasks]
    folds = data.draw(st.integers(2, len(ids)))
    fold = data.draw(st.integers(0, folds - 1))
    cell = CrossFitFold(repetition, fold, folds)
    strategy = LearnedStrategy(True, training_source()).for_fold(cell)
    out = cell.held_out(ids)
    for task in tasks:
        view = task.router_view()
        if task.task_id in out:
            result = strategy.select(view, (50, None))
            assert result.extra["learned_fold"] == fold
            model = strategy.model("tau2-banking", (50, None))
            assert not set(model.training["task_ids"]) & out  # nothing of its fold
            assert len(model.training["task_ids"]) == len(ids) - len(out)
        else:  # a task of another fold: this fold's model trained on it
            with pytest.raises(CrossFitError, match="not in fold"):
                strategy.select(view, (50, None))
    unbound = LearnedStrategy(True, training_source())
    with pytest.raises(CrossFitError, match="must be bound to a fold"):
        unbound.select(tasks[0].router_view(), (50, None))


# ---------------------------------------------------------------- a cross-fitted run

@pytest.mark.flow
def test_a_cross_fitted_run_evaluates_every_task_once_per_repetition(
        prefect_harness, fixture_data, tmp_path, monkeypatch):
    from junction_datasets import tau2_banking as tb

    from flows.runners import run_benchmark
    from junction.evidence.store import TraceStore

    # the data folder travels in the plan, to the suite build and every fold's fit in the
    # workers: no environment variable names it
    monkeypatch.delenv(tb.DATA_ENV)
    result = run_benchmark(suites=["tau2-banking"], seeds=[0, 1], folds=2,
                           strategies=["learned_exact", "learned_split", "exact"],
                           budget_scales=[1.0], full=True, agent_size=0,  # no agent here
                           output_root=str(tmp_path / "wh"),
                           reports_root=str(tmp_path / "reports"),
                           data_folders={"tau2-banking": str(FIXTURE)})
    run = result["run_id"]
    table = TraceStore(str(tmp_path / "wh")).read_traces(run).to_pylist()
    traces = [(r["strategy"], r["seed"], r["repetition"], r["fold"], r["task_id"],
               r["extra_json"]) for r in table]
    meta = json.loads((tmp_path / "reports" / run / "run.json").read_text())
    assert meta["params"]["data_folders"] == {"tau2-banking": os.path.abspath(FIXTURE)}
    assignment = meta["cross_fit"]["tau2-banking"]
    assert assignment["folds"] == 2 and sorted(assignment["repetitions"]) == ["0", "1"]
    ids = {t for folds in assignment["repetitions"]["0"].values() for t in folds}
    assert len(ids) == 5
    for strategy in ("learned_exact", "learned_split"):
        for rep in (0, 1):
            rows = [r for r in traces if r[0] == strategy and r[2] == rep]
            assert sorted(r[4] for r in rows) == sorted(ids)  # every task, once
            for _, seed, _, fold, task, extra in rows:
                assert seed == rep
                assert task in assignment["repetitions"][str(rep)][str(fold)]
                assert json.loads(extra)["learned_fold"] == fold
    lexical = [r for r in traces if r[0] == "exact"]
    # no refit: the lexical strategy runs once, in the first repetition
    assert {r[3] for r in lexical} == {None} and {r[2] for r in lexical} == {0}
    assert sorted(r[4] for r in lexical) == sorted(ids)
    report = (tmp_path / "reports" / run / "report.md").read_text()
    assert "## Cross-fitted verdict" in report
    metrics = json.loads((tmp_path / "reports" / run / "metrics.json").read_text())
    assert "data_folders" not in metrics["params"]  # a machine path
    crossed = metrics["cross_fitted"]
    assert [(c["a"], c["repetitions"], c["folds"], c["n_tasks"]) for c in crossed] == [
        ("learned_exact", 2, 2, 5)]
    # the headline: the best joint strategy against the best split (learned_split, the only
    # one here), with the refits in the interval
    head = metrics["headline"]["tau2-banking"]["budget_scale=1"]
    blind = [(o, c) for o, c in head["comparisons"].items()
             if c["role"] == "interaction-blind best"]
    assert head["best_kind"] == "joint" and head["best"][0] in ("exact", "learned_exact")
    assert [(o, c["test"], c["repetitions"], c["folds"], c["tasks"]) for o, c in blind] == [
        ("learned_split", "corrected_cv", 2, 2, 5)]
