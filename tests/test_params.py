"""The run plan's field policy (``flows.plan.ParamPolicy``): which parameters do not change
results, in the params hash and the report."""

from __future__ import annotations

import inspect
from pathlib import Path

from flows.plan import (
    MACHINE_PATH_PARAMS,
    RESULT_NEUTRAL_PARAMS,
    UNIT_LAYOUT_PARAMS,
    report_params,
    resume_params,
)

# what the flow records (flows.benchmark.benchmark's ``params``), as for a CLI run
PARAMS = {
    "suites": ["coupling"], "strategies": ["exact"], "seeds": [0], "budget_scales": [1.0],
    "size": None, "full": False, "batch_size": 100, "output_root": "/wh",
    "reports_root": "/rep", "runner": "thread", "workers": None, "dask_address": None,
    "suite_files": ["/data/a.jsonl"], "strategy_size": {}, "strategy_scales": {},
}
RESULT_CHANGING = {"suites", "strategies", "seeds", "budget_scales", "size", "full",
                   "suite_files", "strategy_size", "strategy_scales", "agent_size", "agent_model",
                   "agent_url", "agent_context_tokens", "agent_strategies", "folds",
                   "pool", "data_folders", "fit_search"}


def test_report_keeps_exactly_the_result_changing_parameters_but_paths():
    # the keys metrics.json has always recorded, and the per-strategy plan
    assert sorted(report_params(PARAMS)) == ["budget_scales", "full", "seeds", "size",
                                             "strategies", "strategy_scales", "strategy_size",
                                             "suites"]


def test_a_resumed_run_repeats_the_result_changing_parameters_and_the_unit_layout():
    assert sorted(resume_params(PARAMS)) == ["batch_size", "budget_scales", "full", "seeds",
                                             "size", "strategies", "strategy_scales",
                                             "strategy_size", "suite_files", "suites"]


def test_every_flow_parameter_is_classified():
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    # the flow takes the plan, the run id and whether to write a report
    assert set(inspect.signature(benchmark.fn).parameters) == {"plan", "run_id", "write_reports"}
    names = set(RunPlan.model_fields) | {"run_id", "write_reports"}
    assert names == RESULT_CHANGING | set(RESULT_NEUTRAL_PARAMS)
    assert set(UNIT_LAYOUT_PARAMS) <= set(RESULT_NEUTRAL_PARAMS)
    assert set(MACHINE_PATH_PARAMS) <= RESULT_CHANGING


def test_params_hash_ignores_where_and_how_but_not_batch_size():
    from flows.plan import params_hash

    same = params_hash(PARAMS)
    for change in ({"run_id": "x"}, {"output_root": "/elsewhere"}, {"runner": "dask"},
                   {"workers": 8}, {"reports_root": "/r2"}):
        assert params_hash({**PARAMS, **change}) == same, change
    for change in ({"batch_size": 5}, {"seeds": [1]}, {"suite_files": ["/data/b.jsonl"]},
                   {"strategy_size": {"exact": 2}}, {"strategy_scales": {"exact": [1.0]}}):
        assert params_hash({**PARAMS, **change}) != same, change


def test_agent_context_tokens_is_recorded_only_when_given_and_needs_a_remote_agent():
    import pytest

    from flows.plan import RunPlan
    from junction.errors import JunctionError

    base = {"suites": ["coupling"], "strategies": ["exact"]}
    url = {"agent_url": "http://127.0.0.1:1/v1", "agent_model": "m"}
    plain = RunPlan.build(**base, **url)
    assert "agent_context_tokens" not in plain.params()  # the hash of a plan from before it
    given = RunPlan.build(**base, **url, agent_context_tokens=4096)
    assert given.params()["agent_context_tokens"] == 4096
    assert given.params_hash() != plain.params_hash()
    for bad, message in (
            ({"agent_context_tokens": 4096}, "agent_context_tokens applies to a remote"),
            ({**url, "agent_context_tokens": 193}, "should be greater than 193")):
        with pytest.raises(JunctionError, match=message):
            RunPlan.build(**base, **bad)


# ---------------------------------------------------------------- the plan reaches the worker

TAU2_FIXTURE = Path(__file__).resolve().parent / "data" / "tau2_fixture"


def test_a_data_folder_is_a_plan_field_not_the_environment(monkeypatch):
    import pytest
    from junction_datasets import tau2_banking as tb

    from flows.plan import RunPlan
    from junction.errors import JunctionError

    monkeypatch.delenv(tb.DATA_ENV, raising=False)
    base = {"suites": ["tau2-banking"], "strategies": ["exact"]}
    with pytest.raises(JunctionError, match="tau2-banking: no data"):
        RunPlan.build(**base)
    plan = RunPlan.build(**base, data_folders={"tau2-banking": str(TAU2_FIXTURE)})
    assert plan.data_folders == {"tau2-banking": str(TAU2_FIXTURE)}
    assert tb.DATA_ENV not in __import__("os").environ  # nothing was set on the side
    spec = plan.unit_spec("r", suite="tau2-banking", strategy="exact", seed=0, scale=1.0,
                          unit="u", pool_limit=(50, None))
    assert spec.data_folders == plan.data_folders and spec.root == plan.output_root
    assert plan.params()["data_folders"] == plan.data_folders
    assert "data_folders" not in report_params(plan.params())  # a machine path
    # the environment variable is the default when the plan names none; a BFCL run records
    # no folder, so its params hash does not depend on where the τ data lives
    monkeypatch.setenv(tb.DATA_ENV, str(TAU2_FIXTURE))
    assert RunPlan.build(**base).data_folders == plan.data_folders
    other = RunPlan.build(suites=["coupling"], strategies=["exact"])
    assert other.data_folders == {} and "data_folders" not in other.params()
    with pytest.raises(JunctionError, match="'coupling', which reads no data folder"):
        RunPlan.build(suites=["coupling"], strategies=["exact"],
                      data_folders={"coupling": "/x"})


def test_a_folder_the_default_plan_cannot_read_is_refused_not_skipped(tmp_path, monkeypatch):
    import pytest
    from junction_datasets import tau2_banking as tb

    from flows.plan import RunPlan
    from junction.errors import JunctionError

    monkeypatch.delenv(tb.DATA_ENV, raising=False)
    with pytest.raises(JunctionError, match=str(tmp_path / "nowhere")):
        RunPlan.build(data_folders={"tau2-banking": str(tmp_path / "nowhere")})


def test_the_unit_spec_is_typed_and_carries_the_agent():
    import pytest
    from pydantic import ValidationError

    from flows.plan import RunPlan
    from junction.units import AgentSpec, UnitSpec

    url = {"agent_url": "http://127.0.0.1:1/v1", "agent_model": "m"}
    plan = RunPlan.build(suites=["coupling"], strategies=["exact"], agent_concurrency=3,
                         agent_timeout=5.0, agent_check_timeout=2.0, **url)
    unit = {"suite": "coupling", "strategy": "exact", "seed": 0, "scale": 1.0, "unit": "u",
            "pool_limit": 8}
    spec = plan.unit_spec("r", **unit, agent_task_ids=("t1",), repetition=0, fold=1)
    assert spec.agent == AgentSpec(model="m", url=url["agent_url"], concurrency=3,
                                   timeout_s=5.0, check_timeout_s=2.0)
    assert spec.folds == plan.folds and spec.fold == 1 and spec.agent_task_ids == ("t1",)
    assert plan.unit_spec("r", **unit).folds is None
    assert spec.fit_search == "optimal" and "fit_search" not in plan.params()
    hybrid = RunPlan.build(suites=["coupling"], strategies=["learned_exact"], fit_search="hybrid")
    assert hybrid.unit_spec("r", **unit).fit_search == "hybrid"
    assert hybrid.params()["fit_search"] == "hybrid"
    from flows.workers import strategy_instance

    learned, _ = strategy_instance("learned_exact", {}, "hybrid")
    assert learned.training.fit_search == "hybrid"
    assert strategy_instance("learned_exact", {})[0].training.fit_search == "optimal"
    with pytest.raises(ValidationError):
        UnitSpec(**{**spec.model_dump(), "seed": "0"})  # strict: no string for a seed
    with pytest.raises(ValidationError):
        UnitSpec(**{**spec.model_dump(), "typo": 1})


def test_the_lists_are_read_off_the_plan_fields():
    from flows.plan import FIELD_POLICY, FLOW_ARGUMENTS, REPORT_LEFT_OUT, ParamPolicy, RunPlan

    assert set(RESULT_NEUTRAL_PARAMS) == set(FLOW_ARGUMENTS) | {
        "output_root", "reports_root", "runner", "workers", "dask_address", "batch_size",
        "agent_concurrency", "agent_timeout", "agent_check_timeout", "agent_threads"}
    assert UNIT_LAYOUT_PARAMS == ("batch_size",)
    assert MACHINE_PATH_PARAMS == ("suite_files", "agent_model", "agent_url", "data_folders")
    assert set(RESULT_NEUTRAL_PARAMS) | set(MACHINE_PATH_PARAMS) == REPORT_LEFT_OUT
    omitted = {n for n, p in FIELD_POLICY.items() if p.omit_default or p.omit_same_as}
    assert omitted == {"agent_context_tokens", "agent_timeout", "agent_check_timeout",
                       "agent_threads", "agent_strategies", "folds", "pool", "data_folders",
                       "fit_search"}
    # the marker sits in the field's own metadata, beside its type's constraints
    assert ParamPolicy(machine_path=True, omit_default=True) in \
        RunPlan.model_fields["data_folders"].metadata
