"""The default benchmark's plan: a budget grid for every strategy, a larger sample for the
cheap strategies, judge_admission at scale 1 on a smaller stated sample; bad plans refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from junction.errors import JunctionError
from tests.report_text import agent_line, plan_line

FAST = ["adaptive_split", "exact", "fixed_split"]


def _plan(**params):
    from flows.plan import RunPlan

    return {s: (step.scales, step.max_tasks)
            for s, step in RunPlan.build(**params).steps().items()}


GRID = (0.5, 1.0, 2.0)
REFS = {"bfcl_listed": ((1.0,), None)}
"""The reference in the default plan, at scale 1 only (it ignores the budget); all_tools is
run only when asked for."""

# (given parameters, strategy -> (scales it runs, task cap per suite; None = the sample))
PLANS = [
    ({}, {"adaptive_split": (GRID, None), "exact": (GRID, None), "fixed_split": (GRID, None),
          "judge_admission": ((1.0,), 4), "learned_coverage": (GRID, None), **REFS}),
    # an explicit size, full or scale keeps its meaning for every strategy
    ({"size": 5}, {"adaptive_split": (GRID, None), "exact": (GRID, None),
                   "fixed_split": (GRID, None), "judge_admission": ((1.0,), None),
                   "learned_coverage": (GRID, None), **REFS}),
    ({"full": True}, {"adaptive_split": (GRID, None), "exact": (GRID, None),
                      "fixed_split": (GRID, None), "judge_admission": ((1.0,), None),
                      "learned_coverage": (GRID, None), **REFS}),
    ({"budget_scales": [1.0, 3.0]}, {"adaptive_split": ((1.0, 3.0), None),
                                     "exact": ((1.0, 3.0), None),
                                     "fixed_split": ((1.0, 3.0), None),
                                     "judge_admission": ((1.0, 3.0), 4),
                                     "learned_coverage": ((1.0, 3.0), None),
                                     "bfcl_listed": ((1.0, 3.0), None)}),
    ({"size": 5, "budget_scales": [2.0]}, {"adaptive_split": ((2.0,), None),
                                           "exact": ((2.0,), None),
                                           "fixed_split": ((2.0,), None),
                                           "judge_admission": ((2.0,), None),
                                           "learned_coverage": ((2.0,), None),
                                           "bfcl_listed": ((2.0,), None)}),
    ({"strategies": FAST}, {"adaptive_split": (GRID, None), "exact": (GRID, None),
                            "fixed_split": (GRID, None)}),
    # explicit per-strategy limits, and {} for none
    ({"strategy_size": {}, "strategy_scales": {}},
     {"adaptive_split": (GRID, None), "exact": (GRID, None), "fixed_split": (GRID, None),
      "judge_admission": (GRID, None), "learned_coverage": (GRID, None),
      "bfcl_listed": (GRID, None)}),
    ({"strategies": ["exact"], "strategy_size": {"exact": 3},
      "strategy_scales": {"exact": [2.0, 0.5]}}, {"exact": ((0.5, 2.0), 3)}),
]


@pytest.mark.parametrize("given, expected", PLANS)
def test_default_plan_table(given, expected):
    assert _plan(**given) == expected


def test_default_sizes_and_params_recorded():
    from junction_datasets import SUITES

    from flows.plan import RunPlan, report_params

    p = RunPlan.build().params()
    assert p["budget_scales"] == [0.5, 1.0, 2.0]
    assert p["strategy_size"] == {"judge_admission": 4}
    scales = {"bfcl_listed": [1.0], "judge_admission": [1.0]}
    assert p["strategy_scales"] == scales
    assert p["agent_size"] == 1  # the default agent sample: 1 task per BFCL suite
    recorded = report_params(p)  # what metrics.json records
    assert recorded["strategy_size"] == {"judge_admission": 4}
    assert recorded["strategy_scales"] == scales
    assert recorded["agent_size"] == 1 and "agent_model" not in recorded
    plan = RunPlan.build()
    assert all(plan.suite_size(s) == SUITES[s].default_size >= 40
               for s in SUITES if s.startswith("bfcl-") and SUITES[s].in_default_run)
    assert plan.suite_size("synthetic") == 60


BAD = [
    ({"strategy_size": {"judge_admission": 0}},
     "strategy_size.judge_admission (--strategy-size): Input should be greater than or "
     "equal to 1 (got 0)"),
    ({"strategies": FAST, "strategy_size": {"judge_admission": 4}},
     "strategy_size names 'judge_admission', which this run does not run; strategies: "
     "adaptive_split, exact, fixed_split"),
    ({"strategy_scales": {"exact": [3.0]}},
     "strategy_scales for exact: 3 is not a budget scale of this run (0.5, 1, 2)"),
    ({"strategy_scales": {"exact": []}},
     "strategy_scales.exact (--strategy-scale): List should have at least 1 item after "
     "validation, not 0 (got [])"),
    ({"budget_scales": [1.0], "strategy_scales": {"judge_admission": [0.5]}},
     "strategy_scales for judge_admission: 0.5 is not a budget scale of this run (1)"),
]


@pytest.mark.parametrize("given, message", BAD)
def test_bad_plans_are_refused_with_one_line(tmp_path, given, message):
    from flows.plan import RunPlan

    with pytest.raises(JunctionError) as err:
        RunPlan.build(output_root=str(tmp_path / "wh"), **given)
    assert str(err.value) == message
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("args, message", [
    (("--strategy-size", "judge_admission"), "error: --strategy-size takes STRATEGY=INT, "
                                             "got 'judge_admission'"),
    (("--strategy-size", "judge_admission=x"), "error: --strategy-size takes STRATEGY=INT, "
                                               "got 'judge_admission=x'"),
    (("--strategy-scale", "exact=4"), "error: strategy_scales for exact: 4 is not a budget "
                                      "scale of this run (0.5, 1, 2)"),
    (("--agent-model", "/nonexistent/agent.gguf"), "error: model file not found: "
     "/nonexistent/agent.gguf (embedded models: qwen2.5-coder-0.5b-instruct, "
     "qwen2.5-coder-1.5b-instruct, gemma3-270m)"),
])
def test_cli_refuses_bad_plan_options_with_one_line(tmp_path, args, message):
    out = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "bench",
         "--warehouse", str(tmp_path / "wh"), "--reports", str(tmp_path / "rep"), *args],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip() == message


def test_capped_strategy_runs_its_plan_and_metrics_stay_identical(prefect_harness, tmp_path):
    from flows.benchmark import benchmark
    from flows.plan import RunPlan
    from junction.evidence.warehouse import Warehouse

    params = {"suites": ["synthetic", "bfcl-multiple"], "strategies": FAST, "size": 10,
              "budget_scales": [0.5, 1.0], "strategy_size": {"exact": 4},
              "strategy_scales": {"exact": [1.0]}, "output_root": str(tmp_path / "wh"),
              "reports_root": str(tmp_path / "rep")}
    first, second = benchmark(RunPlan.build(**params)), benchmark(RunPlan.build(**params))
    rep = tmp_path / "rep"
    a = (rep / first["run_id"] / "metrics.json").read_bytes()
    assert a == (rep / second["run_id"] / "metrics.json").read_bytes()
    for run in (first, second):
        assert (rep / run["run_id"] / "time.png").stat().st_size > 0
    md = (rep / first["run_id"] / "report.md").read_text()
    assert "](time.png)" in md and "](plot.png)" in md
    assert plan_line(md) == {"exact": {"tasks": 4, "scales": [1.0]},
                             "adaptive_split": {"tasks": None, "scales": None},
                             "fixed_split": {"tasks": None, "scales": None}}
    metrics = json.loads(a)
    assert metrics["params"]["strategy_size"] == {"exact": 4}
    assert "timings" not in a.decode() and "select_ms" not in a.decode()
    assert metrics["suites"]["synthetic"]["strategy_tasks"] == {"exact": 4}
    rows = Warehouse(str(tmp_path / "wh")).query(
        "select suite, strategy, budget_scale, count(*) as n, list(task_id order by task_id) "
        "as ids from traces where run_id = ? group by all order by all",
        [first["run_id"]]).to_pylist()
    got = {(r["suite"], r["strategy"], r["budget_scale"]): r["n"] for r in rows}
    assert got == {(suite, s, scale): 10 for suite in ("bfcl-multiple", "synthetic")
                   for s in ("adaptive_split", "fixed_split") for scale in (0.5, 1.0)} | {
        ("bfcl-multiple", "exact", 1.0): 4, ("synthetic", "exact", 1.0): 4}
    ids = {(r["suite"], r["strategy"], r["budget_scale"]): set(r["ids"]) for r in rows}
    for suite in ("bfcl-multiple", "synthetic"):  # the capped sample lies inside the others'
        assert ids[(suite, "exact", 1.0)] <= ids[(suite, "fixed_split", 1.0)]
    # the headline compares exact with the others on its 4 shared tasks only
    head = metrics["headline"]["synthetic"]["budget_scale=1"]
    assert all(c["tasks"] == 4 for o, c in head["comparisons"].items()
               if "exact" in (o, *head["best"]))


def test_report_states_the_default_plan():
    from flows.plan import RunPlan
    from junction.evidence.report_markdown import ReportSections, render_markdown

    md = render_markdown(ReportSections({"run_id": "r", "params": RunPlan.build().params()}))
    params = RunPlan.build().params()
    sizes, scales = params["strategy_size"], params["strategy_scales"]
    assert plan_line(md) == {s: {"tasks": sizes.get(s), "scales": scales.get(s)}
                             for s in params["strategies"]}
    assert plan_line(md) == {"bfcl_listed": {"tasks": None, "scales": [1.0]},
                             "judge_admission": {"tasks": 4, "scales": [1.0]},
                             **{s: {"tasks": None, "scales": None}
                                for s in ("adaptive_split", "exact", "fixed_split",
                                          "learned_coverage")}}
    assert agent_line(md)["sample"] == 1 == params["agent_size"]
    suites = {"bfcl-memory": {"tasks": 40, "strategy_tasks": {"judge_admission": 8}}}
    md = render_markdown(ReportSections({"run_id": "r", "params": RunPlan.build().params()},
                                        suites=suites))
    assert "| bfcl-memory | 40 (judge_admission: 8) |" in md


@pytest.mark.parametrize(("given", "agent_size"), [
    ({}, 1), ({"full": True}, None), ({"size": 5}, 0), ({"size": 5, "agent_size": 3}, 3),
    ({"full": True, "agent_size": 2}, 2),
])
def test_agent_sample_follows_size_and_full(given, agent_size):
    from flows.plan import RunPlan

    assert RunPlan.build(**given).agent_size == agent_size


def test_agent_sample_is_the_suites_own_sample_and_bfcl_only():
    from junction_datasets import build_suite

    from flows.sampling import agent_sample

    tasks = build_suite("bfcl-irrelevance", seed=0, size=6).tasks
    ids = agent_sample(tasks, 2, lambda n: build_suite("bfcl-irrelevance", seed=0,
                                                        size=n).tasks)
    assert ids == {t.task_id for t in build_suite("bfcl-irrelevance", seed=0, size=2).tasks}
    assert ids <= {t.task_id for t in tasks}
    assert agent_sample(tasks, None, lambda n: []) == {t.task_id for t in tasks}
    assert agent_sample(tasks, 0, lambda n: []) == frozenset()
    synthetic = build_suite("synthetic", seed=0, size=3).tasks
    assert agent_sample(synthetic, 2, lambda n: synthetic[:n]) == frozenset()


@pytest.mark.parametrize(("given", "acted", "recorded"), [
    ({}, ["adaptive_split", "exact", "fixed_split", "judge_admission", "learned_coverage"],
     True),
    ({"agent_size": 1}, None, False), ({"full": True}, None, False),
    ({"size": 5, "agent_size": 2}, None, False),
    ({"agent_strategies": ["fixed_split", "exact"]}, ["exact", "fixed_split"], True),
    ({"strategies": ["exact", "bfcl_listed"], "agent_size": 1,
      "agent_strategies": ["bfcl_listed"]}, ["bfcl_listed"], True),
])
def test_the_default_agent_sample_leaves_the_references_out(given, acted, recorded):
    """The default run's agent acts for the budgeted strategies only (the references'
    agent outcome is make bench-agent's); an explicit --agent-size or --full acts for every
    strategy, and agent_strategies is recorded only when it leaves one out, so the params
    hash of such a plan (make bench-agent's resumed run) is what it was before the field."""
    from flows.plan import RunPlan

    plan = RunPlan.build(**given)
    assert plan.agent_strategies == (plan.strategies if acted is None else acted)
    assert ("agent_strategies" in plan.params()) is recorded
    if recorded:
        assert plan.params()["agent_strategies"] == acted


def test_agent_strategies_must_be_strategies_of_the_run():
    from flows.plan import RunPlan

    with pytest.raises(JunctionError, match=r"^agent_strategies names 'all_tools', which this "
                                            r"run does not run; strategies: exact$"):
        RunPlan.build(strategies=["exact"], agent_strategies=["all_tools"])


def test_the_agent_acts_only_in_the_units_of_its_strategies(prefect_harness):
    from flows.benchmark import load_suites, plan_units
    from flows.plan import RunPlan

    plan = RunPlan.build(suites=["bfcl-irrelevance"], strategies=["bfcl_listed", "exact"],
                         budget_scales=[0.5, 1.0], size=3, agent_size=2,
                         agent_strategies=["exact"])
    units = [spec for spec, _ in plan_units(plan, load_suites(plan), "r")]
    acted = {(u.strategy, u.scale): len(u.agent_task_ids) for u in units}
    assert acted == {("bfcl_listed", 0.5): 0, ("bfcl_listed", 1.0): 0,
                     ("exact", 0.5): 0, ("exact", 1.0): 2}


def test_units_are_submitted_round_robin_over_strategies(prefect_harness):
    """Each strategy's units keep their per-suite, per-scale order, and the strategies take
    turns, so a strategy with few slow units (the judge) starts at once instead of after
    every other strategy's units of the suites before. Worked out: 2 suites; exact at scales
    0.5 and 1 gives 4 units, judge_admission at scale 1 only gives 2; in turns: e, j, e, j,
    then exact's last two (suite by suite it was e, e, j, e, e, j)."""
    from flows.benchmark import load_suites, plan_units
    from flows.plan import RunPlan

    plan = RunPlan.build(suites=["bfcl-irrelevance", "synthetic"],
                         strategies=["exact", "judge_admission"], budget_scales=[0.5, 1.0],
                         size=2, agent_size=0, strategy_size={"judge_admission": 1},
                         strategy_scales={"judge_admission": [1.0]})
    order = [(u.strategy, u.suite, u.scale)
             for u, _ in plan_units(plan, load_suites(plan), "r")]
    assert order == [("exact", "bfcl-irrelevance", 0.5),
                     ("judge_admission", "bfcl-irrelevance", 1.0),
                     ("exact", "bfcl-irrelevance", 1.0),
                     ("judge_admission", "synthetic", 1.0),
                     ("exact", "synthetic", 0.5), ("exact", "synthetic", 1.0)]


def test_the_report_says_whom_the_default_agent_left_out_and_how_to_decide():
    import re

    from junction_datasets import BFCL_AGENT_NOTE as AGENT_SAMPLE_THAT_DECIDES

    from flows.plan import PROJECT_ROOT, RunPlan
    from junction.evidence.report_markdown import ReportSections, render_markdown
    from junction.evidence.verdict_text import agent_table_lines

    md = render_markdown(ReportSections({"run_id": "r", "params": RunPlan.build().params()}))
    assert agent_line(md) == {"sample": 1, "scale": 1.0, "left_out": ["bfcl_listed"],
                              "acted": ["adaptive_split", "exact", "fixed_split",
                                        "judge_admission", "learned_coverage"]}
    md = render_markdown(ReportSections(
        {"run_id": "r", "params": RunPlan.build(agent_size=1).params()}))
    assert agent_line(md) == {"sample": 1, "scale": 1.0, "left_out": [], "acted": None}
    row = {"suite": "bfcl-memory", "budget_scale": 1.0, "strategy": "exact", "n": 1,
           "successes": 1, "rate": 1.0, "ci_low": 0.2, "ci_high": 1.0, "decides": False}
    assert AGENT_SAMPLE_THAT_DECIDES in agent_table_lines([row])
    assert AGENT_SAMPLE_THAT_DECIDES not in agent_table_lines([{**row, "decides": True}])
    # the sentence names what the Makefile's target runs
    make = (PROJECT_ROOT / "Makefile").read_text()
    target = make[make.index("\nbench-agent:"):make.index("\nbench-nightly:")]
    tasks = re.search(r"^BENCH_AGENT_TASKS \?= (\d+)$", make, re.M).group(1)
    named = re.findall(r"--(suite|strategy) (\S+)", target)
    assert f"{tasks} evaluation tasks of each of " in AGENT_SAMPLE_THAT_DECIDES
    assert len(named) == 9 and all(re.search(rf"\b{n}\b", AGENT_SAMPLE_THAT_DECIDES)
                                   for _, n in named)
    assert "--budget-scale 1 " in target


def test_the_memory_reference_note_says_when_the_agent_did_not_act_for_it():
    from flows.plan import RunPlan
    from junction.evidence.report_markdown import ReportSections, render_markdown
    from junction.suites import SUITES

    MEMORY_REFERENCE_NOTE = SUITES["bfcl-memory"].reference_note
    assert MEMORY_REFERENCE_NOTE

    row = {"suite": "bfcl-memory", "strategy": "bfcl_listed", "budget_scale": 1.0}
    for plan, expected in ((RunPlan.build(), True), (RunPlan.build(agent_size=1), False)):
        md = render_markdown(ReportSections(
            {"run_id": "r", "params": plan.params()},
            summary=[{**row, **dict.fromkeys(_columns(), None)}]))
        # what the note says after its fixed text: here (no prompt was cut) only whom the
        # agent left out and the target that measures it
        (note,) = [x for x in md.splitlines() if x.startswith(MEMORY_REFERENCE_NOTE)]
        added = note[len(MEMORY_REFERENCE_NOTE):]
        assert ("bfcl_listed" in added and "`make bench-agent`" in added) is expected
        assert bool(added.strip()) is expected


def _columns():
    from junction.evidence.report_markdown import _table_columns

    return _table_columns()


def test_the_agent_sample_holds_only_gradable_tasks_and_says_when_it_is_short():
    """τ task 003 of the fixture has no gold agent action: a sample of 3 from the first
    three tasks takes task 004 in its place; the top-up stays inside every strategy's
    sample; fewer gradable tasks than asked give one line naming the counts."""
    from pathlib import Path

    from junction_datasets import build_suite, tau2_banking

    from flows.sampling import agent_sample, short_agent_sample
    from junction.agent.graders import gradable

    tasks = tau2_banking.banking_suite(
        split="all", path=Path(__file__).parent / "data" / "tau2_fixture").tasks
    ids = [t.task_id for t in tasks]

    def first(n):
        return tasks[:n]

    assert not gradable(tasks[2]) and all(gradable(t) for t in tasks if t is not tasks[2])
    picked = agent_sample(tasks, 3, first)
    assert picked == {ids[0], ids[1], ids[3]}
    assert all(gradable(t) for t in tasks if t.task_id in picked)
    assert short_agent_sample("tau2-banking", tasks, 3, picked) is None
    # a capped strategy runs the first three: the top-up may not go past them
    assert agent_sample(tasks, 3, first, within=frozenset(ids[:3])) == {ids[0], ids[1]}
    # the three tasks of `--size 3`: two gradable, one line says so
    three = tasks[:3]
    short = agent_sample(three, 3, first)
    assert short == {ids[0], ids[1]}
    assert short_agent_sample("tau2-banking", three, 3, short) == (
        "tau2-banking: the agent acts on 2 of the 3 tasks asked: only 2 of the 3 tasks run "
        "have a gold action the agent can be graded on")
    # every task asked (None), or a suite no grader grades: no line
    assert short_agent_sample("tau2-banking", three, None, short) is None
    synthetic = build_suite("synthetic", seed=0, size=3).tasks
    assert short_agent_sample("synthetic", synthetic, 2, frozenset()) is None
    # BFCL rows are all gradable: the sample is the suite's own, as before
    bfcl = build_suite("bfcl-irrelevance", seed=0, size=6).tasks
    assert agent_sample(bfcl, 2, lambda n: bfcl[:n]) == {t.task_id for t in bfcl[:2]}


def test_agent_threads_default_shares_the_cpus_and_is_result_neutral():
    import os

    from flows.plan import RESULT_NEUTRAL_PARAMS, RunPlan, default_agent_threads, resume_params

    cpus = len(os.sched_getaffinity(0))
    assert default_agent_threads(1) == cpus
    assert default_agent_threads(cpus) == 1
    assert default_agent_threads(cpus * 4) == 1
    assert default_agent_threads(None) == 1
    plain = RunPlan.build(workers=1)
    assert plain.agent_spec().threads == cpus and "agent_threads" not in plain.params()
    given = RunPlan.build(workers=1, agent_threads=3)
    assert given.agent_spec().threads == 3 and given.params()["agent_threads"] == 3
    assert "agent_threads" in RESULT_NEUTRAL_PARAMS
    assert resume_params(given.params()) == resume_params(plain.params())
    with pytest.raises(JunctionError, match=r"agent_threads \(--agent-threads\): Input should "
                                           r"be greater than or equal to 1 \(got 0\)"):
        RunPlan.build(agent_threads=0)
    with pytest.raises(JunctionError, match="agent_threads applies to the embedded agent"):
        RunPlan.build(agent_threads=2, agent_url="http://127.0.0.1:9/v1", agent_model="m")


def test_the_run_section_names_a_strategy_that_ranks_by_its_own_pool_rule():
    from flows.plan import RunPlan
    from junction.evidence.report_markdown import ReportSections, render_markdown

    plan = RunPlan.build(suites=["synthetic"], strategies=["exact", "learned_named"])
    md = render_markdown(ReportSections({"run_id": "r", "params": plan.params()}))
    (line,) = [x for x in md.splitlines() if x.startswith("- candidate pools:")]
    assert line.startswith("- candidate pools: bm25 (BM25 lanes)")
    assert line.endswith("; learned_named ranks by its own rule, bm25_named")
    plain = RunPlan.build(suites=["synthetic"], strategies=["exact"])
    md = render_markdown(ReportSections({"run_id": "r", "params": plain.params()}))
    assert "- candidate pools: bm25 (BM25 lanes)\n" in md
    assert "- learned fits:" not in md


def test_the_run_section_says_when_the_learned_fits_searched_approximately():
    from flows.plan import RunPlan
    from junction.evidence.report_markdown import ReportSections, render_markdown

    plan = RunPlan.build(suites=["synthetic"], strategies=["learned_exact"], fit_search="hybrid")
    md = render_markdown(ReportSections({"run_id": "r", "params": plan.params()}))
    (line,) = [x for x in md.splitlines() if x.startswith("- learned fits:")]
    assert "searched by hybrid (approximate" in line
    # and on the first screen, before the plot
    assert md.index("fitted by the approximate hybrid search") < md.index("## Run")
