"""Distributed execution and concurrency: Dask gives the same results; the warehouse lock."""

from __future__ import annotations

import subprocess
import sys

import pytest

from junction.evidence.warehouse import Warehouse, WarehouseError

pytestmark = pytest.mark.flow


def test_dask_runner_matches_thread_runner(prefect_harness, tmp_path):
    from flows.benchmark import run_benchmark

    common = dict(suites=["coupling", "synthetic"], strategies=["exact", "fixed_split"],
                  size=12, reports_root=str(tmp_path / "reports"))
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
