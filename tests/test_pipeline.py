"""The benchmark flow end to end: traces, warehouse, report, resume, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pyarrow.compute as pc
import pytest

from junction.errors import JunctionError, TraceError, UnknownNameError
from junction.evidence.store import TraceStore
from junction.evidence.warehouse import CorruptFileWarning, Warehouse, WarehouseError
from junction.select import EnumerationJointSelector
from junction.strategies import STRATEGIES, FunctionStrategy, StrategyInfo, run_selector

pytestmark = pytest.mark.flow

FAST = ["adaptive_split", "exact", "fixed_split"]


@pytest.fixture
def flaky(monkeypatch):
    """A "flaky" strategy, registered for one test only: fails on task 00007 while
    ``fail["on"]``. Returns the switch."""
    import flows.workers as fw

    fail = {"on": False}

    def factory():
        selector = EnumerationJointSelector()

        def strategy(view, pool_limit):
            if fail["on"] and view.task_id.endswith("00007"):
                raise RuntimeError("unit fails on purpose")
            return run_selector(selector, view, pool_limit)

        return FunctionStrategy(strategy)

    monkeypatch.setitem(STRATEGIES, "flaky", StrategyInfo("flaky", factory, "joint",
                                                          "fails on purpose", True))
    monkeypatch.setattr(fw, "_STRATEGIES", {})  # no instance outlives the test
    return fail


def _run(tmp_path, **kwargs):
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    params = {"suites": ["coupling", "synthetic"], "strategies": FAST, "size": 20,
                  "budget_scales": [1.0], "output_root": str(tmp_path / "wh"),
                  "reports_root": str(tmp_path / "reports")}
    params.update(kwargs)
    flow_args = {k: params.pop(k) for k in ("run_id", "write_reports") if k in params}
    return benchmark(RunPlan.build(**params), **flow_args)


def _rows(store: TraceStore, run_id: str):
    table = store.read_traces(run_id).drop_columns(["run_id"])
    rows = sorted(table.to_pylist(), key=lambda r: (r["suite"], r["strategy"], r["task_id"]))
    return rows


def test_flow_writes_traces_warehouse_and_deterministic_report(prefect_harness, tmp_path):
    first = _run(tmp_path, batch_size=16)
    second = _run(tmp_path, batch_size=16)
    assert first["run_id"] != second["run_id"]
    reports = tmp_path / "reports"
    for run in (first, second):
        for name in ("report.md", "report.html", "metrics.json", "plot.png", "run.json"):
            assert (reports / run["run_id"] / name).is_file()
    a = (reports / first["run_id"] / "metrics.json").read_bytes()
    b = (reports / second["run_id"] / "metrics.json").read_bytes()
    assert a == b
    metrics = json.loads(a)
    # coupling: exact is verified, both baselines are not
    coupling = metrics["results"]["coupling"]["budget_scale=1"]
    assert coupling["exact"]["success_rate"] == 1.0
    assert coupling["fixed_split"]["success_rate"] == 0.0
    assert coupling["adaptive_split"]["success_rate"] == 0.0
    wh = Warehouse(str(tmp_path / "wh"))
    rows = wh.query("select strategy, count(*) as n from traces where run_id = ? "
                    "group by 1 order by 1", [first["run_id"]]).to_pylist()
    assert rows == [{"strategy": s, "n": 21} for s in FAST]  # 1 coupling + 20 synthetic
    assert (tmp_path / "wh" / "junction.duckdb").is_file()
    summary = wh.query("select * from strategy_summary where suite = 'synthetic'").num_rows
    assert summary == 2 * len(FAST)
    store = TraceStore(str(tmp_path / "wh"))
    assert _rows(store, first["run_id"]) == _rows(store, second["run_id"])


def test_interrupted_run_resumes_without_duplicates(prefect_harness, tmp_path, flaky):
    from flows.benchmark import UnitFailedError

    clean = _run(tmp_path / "clean", strategies=["flaky", "exact"], suites=["synthetic"],
                 batch_size=5)
    flaky["on"] = True
    try:
        with pytest.raises(UnitFailedError) as caught:  # names the unit, keeps the cause
            _run(tmp_path / "broken", strategies=["flaky", "exact"], suites=["synthetic"],
                 batch_size=5, run_id="resume-me")
    finally:
        flaky["on"] = False
    named = (r"unit synthetic/flaky/seed0-scale1-\d{6}-\d{6} failed: "
             r"RuntimeError: unit fails on purpose")
    assert re.fullmatch(named, str(caught.value)), caught.value
    assert isinstance(caught.value.__cause__, RuntimeError)
    store = TraceStore(str(tmp_path / "broken" / "wh"))
    failed = store.read_run_meta("resume-me")  # never left "running"
    assert failed["status"] == "failed" and failed["finished_at"]
    assert re.fullmatch(named, failed["error"]), failed["error"]
    partial = store.read_traces("resume-me").num_rows
    assert 0 < partial < 40
    resumed = _run(tmp_path / "broken", strategies=["flaky", "exact"], suites=["synthetic"],
                   batch_size=5, run_id="resume-me")
    assert 0 < resumed["units_skipped"] < resumed["units"]
    table = store.read_traces("resume-me")
    keys = pc.binary_join_element_wise(table["suite"], table["strategy"], table["task_id"], "/")
    assert len(pc.unique(keys)) == table.num_rows == 40
    assert _rows(store, "resume-me") == _rows(TraceStore(str(tmp_path / "clean" / "wh")),
                                              clean["run_id"])


def test_resume_with_other_parameters_is_refused(prefect_harness, tmp_path):
    _run(tmp_path, suites=["coupling"], run_id="fixed-id")
    with pytest.raises(JunctionError, match="run fixed-id was started with different parameters"):
        _run(tmp_path, suites=["coupling"], strategies=["exact"], run_id="fixed-id")


def test_unknown_names_are_refused(prefect_harness, tmp_path):
    with pytest.raises(UnknownNameError, match="unknown suite 'nope'"):
        _run(tmp_path, suites=["nope"])
    with pytest.raises(UnknownNameError, match="unknown strategy 'nope'; valid strategies:"):
        _run(tmp_path, strategies=["nope"])


def test_corrupt_parquet_and_bad_sql_are_named(prefect_harness, tmp_path):
    _run(tmp_path, suites=["coupling"], run_id="ok-run")
    wh = Warehouse(str(tmp_path / "wh"))
    with pytest.raises(WarehouseError, match="query failed: Parser Error"):
        wh.query("selec nothing")
    bad = tmp_path / "wh" / "traces" / "run_id=ok-run" / "suite=coupling" / "strategy=exact"
    (bad / "zz-broken.parquet").write_bytes(b"PAR1 truncated")
    with pytest.warns(CorruptFileWarning, match="corrupt Parquet file .*zz-broken.parquet"):
        assert wh.query("select count(*) as n from traces").to_pylist() == [{"n": 3}]
    with pytest.raises(TraceError, match=r"corrupt trace file .*zz-broken.parquet"):
        TraceStore(str(tmp_path / "wh")).read_traces("ok-run")


def _cli(*args, env_root):
    import os

    env = {**os.environ, "JUNCTION_WAREHOUSE": str(env_root)}
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_cli_user_mistakes_are_one_line(tmp_path):
    out = _cli("bench", "--suite", "nope", env_root=tmp_path)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        out.stderr.strip()] and out.stderr.startswith("error: unknown suite 'nope'")
    out = _cli("sql", "select 1", env_root=tmp_path)
    assert out.returncode == 1 and "no traces under" in out.stderr
    assert "Traceback" not in out.stderr


def test_learned_strategies_in_the_flow_store_their_model(prefect_harness, tmp_path):
    """learned_exact / learned_split through the flow: traces name the model, the record is
    stored once under learned/, and on a suite without a training part both fall back."""
    out = _run(tmp_path, suites=["bfcl-memory", "coupling"], size=2,
               strategies=["learned_exact", "learned_split", "exact"])
    store = TraceStore(str(tmp_path / "wh"))
    rows = store.read_traces(out["run_id"]).to_pylist()
    extras = {(r["suite"], r["strategy"]): json.loads(r["extra_json"]) for r in rows}
    memory = extras[("bfcl-memory", "learned_exact")]
    assert memory["learned_family"] == "bfcl-memory"
    assert extras[("bfcl-memory", "learned_split")]["learned_model"] == memory["learned_model"]
    stored = tmp_path / "wh" / "learned" / f"bfcl-memory-{memory['learned_model']}.json"
    assert json.loads(stored.read_text())["lambda"] == memory["learned_lambda"]
    assert "no training part" in extras[("coupling", "learned_exact")]["learned_fallback"]
    assert store.read_run_meta(out["run_id"])["learned_models"] == [stored.name]
    # the report reads the calibration of p(gold) back from the traces
    reports = tmp_path / "reports" / out["run_id"]
    calibration = json.loads((reports / "metrics.json").read_text())["learned_calibration"]
    row = calibration["bfcl-memory"]["budget_scale=1"]
    assert row["strategy"] == "learned_exact" and row["models"] == [memory["learned_model"]]
    assert row["candidates"] == 2 * len(memory["learned_p"]) and 0 <= row["brier"] <= 1
    assert "coupling" not in calibration  # a fallback has no p(gold)
    assert "## Learned utility calibration" in (reports / "report.md").read_text()
