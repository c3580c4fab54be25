"""Distributed execution and concurrency: Dask gives the same results; the warehouse lock."""

from __future__ import annotations

import subprocess
import sys

import pytest

from junction.evidence.warehouse import Warehouse, WarehouseError

pytestmark = pytest.mark.flow


def test_dask_runner_matches_thread_runner(prefect_harness, tmp_path):
    from flows.runners import run_benchmark

    common = {"suites": ["coupling", "synthetic"], "strategies": ["exact", "fixed_split"],
                  "size": 12, "reports_root": str(tmp_path / "reports")}
    thread = run_benchmark(**common, output_root=str(tmp_path / "a"), batch_size=100)
    dask = run_benchmark(**common, output_root=str(tmp_path / "b"), runner="dask", workers=2,
                         batch_size=4)
    assert dask["units"] > thread["units"]
    a = (tmp_path / "reports" / thread["run_id"] / "metrics.json").read_bytes()
    b = (tmp_path / "reports" / dask["run_id"] / "metrics.json").read_bytes()
    assert a == b


def test_second_writer_fails_clearly_while_readers_keep_working(prefect_harness, tmp_path):
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    benchmark(RunPlan.build(suites=["coupling"], strategies=["exact"], budget_scales=[1.0],
                            output_root=str(tmp_path), reports_root=str(tmp_path / "reports")))
    db = tmp_path / "junction.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('held', flush=True);"
         " time.sleep(60)", str(db)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(WarehouseError, match="is locked by another writer \\(waited 1 s\\)"):
            Warehouse(str(tmp_path), lock_timeout_s=1.0).refresh()
        rows = Warehouse(str(tmp_path)).query("select count(*) as n from traces").to_pylist()
        assert rows == [{"n": 1}]
    finally:
        holder.kill()
        holder.wait()
    Warehouse(str(tmp_path), lock_timeout_s=5.0).refresh()  # lock released: succeeds


def test_unit_order_changes_no_trace(prefect_harness, tmp_path, monkeypatch):
    """The same plan with its units submitted in reverse order gives the same trace rows
    (DuckDB ``EXCEPT ALL`` both ways) and the same ``metrics.json`` bytes: no unit reads
    what another unit left behind."""
    import flows.benchmark as benchmark
    from flows.runners import run_benchmark
    compare = _bench_compare()

    common = {"suites": ["coupling", "synthetic"],
                  "strategies": ["exact", "fixed_split", "adaptive_split"], "size": 6,
                  "batch_size": 2, "run_id": "unit-order"}
    planned = benchmark.plan_units
    orders = []

    def record(plan, suites, run_id):
        units = planned(plan, suites, run_id)
        orders.append([spec.unit for spec, _ in units])
        return units

    monkeypatch.setattr(benchmark, "plan_units", record)
    run_benchmark(**common, output_root=str(tmp_path / "a"),
                  reports_root=str(tmp_path / "ra"))
    monkeypatch.setattr(benchmark, "plan_units",
                        lambda plan, suites, run_id: record(plan, suites, run_id)[::-1])
    run_benchmark(**common, output_root=str(tmp_path / "b"),
                  reports_root=str(tmp_path / "rb"))
    assert len(orders[0]) > 4 and orders[0] == orders[1]  # the same units, submitted reversed
    same = compare(tmp_path / "a", tmp_path / "ra" / "unit-order",
                   tmp_path / "b", tmp_path / "rb" / "unit-order")
    assert same["rows_a"] == same["rows_b"] > 0
    assert (same["only_in_a"], same["only_in_b"], same["metrics_identical"]) == (0, 0, True)


def _bench_compare():
    """``bench/checks/compare_runs.py``'s ``compare`` (bench/ is scripts, not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "checks" / "compare_runs.py"
    spec = importlib.util.spec_from_file_location("compare_runs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compare
