"""``Warehouse.run_data``: one run's report inputs, read once through the views.

The oracle is ``TraceStore.read_traces``, which reads the same files with pyarrow: the
rows, their order and the columns must agree, whatever other runs the warehouse holds.
"""

from __future__ import annotations

import duckdb
import pytest

from junction.errors import TraceError
from junction.evidence.store import TraceStore
from junction.evidence.warehouse import CorruptFileWarning, RunData, Warehouse
from tests.helpers import trace_record


def _timing(run: str, strategy: str, task: str, select_ms: float) -> dict:
    return {"run_id": run, "suite": "s", "strategy": strategy, "task_id": task, "seed": 0,
            "budget_scale": 1.0, "select_ms": select_ms, "execute_ms": 1.0,
            "total_ms": select_ms + 1.0}


def _store(tmp_path) -> TraceStore:
    """Run r1: two strategies, units u1 then u0 written (tasks t3, t1 / t0, t2), and timings
    for exact only; run r2: one unit of its own."""
    store = TraceStore(str(tmp_path))
    for strategy in ("fixed_split", "exact"):
        for unit, tasks in (("u1", ("t3", "t1")), ("u0", ("t0", "t2"))):
            timings = ([_timing("r1", strategy, t, 10.0) for t in tasks]
                       if strategy == "exact" else [])
            store.write_unit("r1", "s", strategy, unit,
                             [trace_record(strategy=strategy, task_id=t) for t in tasks], timings)
    store.write_unit("r2", "s", "exact", "u0", [trace_record(run_id="r2", task_id="t9")],
                     [_timing("r2", "exact", "t9", 5.0)])
    return store


def test_run_data_reads_the_run_as_the_store_does_in_one_session(tmp_path, monkeypatch):
    store = _store(tmp_path)
    store.write_run_meta("r1", {"run_id": "r1", "suites": {"s": {"tasks": 4}}})
    opened = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
    data = Warehouse(str(tmp_path)).run_data("r1")
    assert len(opened) == 1
    expected = store.read_traces("r1")
    assert data.traces.column_names == expected.column_names
    # files by path (exact before fixed_split, u0 before u1), rows as written
    assert data.traces.to_pylist() == expected.to_pylist()
    assert [(r["strategy"], r["task_id"]) for r in data.traces.to_pylist()] == [
        ("exact", "t0"), ("exact", "t2"), ("exact", "t3"), ("exact", "t1"),
        ("fixed_split", "t0"), ("fixed_split", "t2"), ("fixed_split", "t3"),
        ("fixed_split", "t1")]
    assert data.timings.column_names == ["suite", "strategy", "select_ms", "execute_ms",
                                         "total_ms"]
    assert sorted(data.timings.column("select_ms").to_pylist()) == [10.0] * 4
    assert (data.run, data.suites) == ({"run_id": "r1", "suites": {"s": {"tasks": 4}}},
                                       {"s": {"tasks": 4}})


def test_run_data_without_a_run_file_or_timings(tmp_path):
    _store(tmp_path)
    data = Warehouse(str(tmp_path)).run_data("r1", suites={"x": {}})
    assert (data.run, data.suites) == ({"run_id": "r1"}, {"x": {}})
    given = {"run_id": "r2", "suites": {"s": {}}}
    data = Warehouse(str(tmp_path)).run_data("r2", run=given)
    assert data == RunData(given, data.traces, {"s": {}}, data.timings)
    assert data.traces.num_rows == 1 and data.timings.num_rows == 1
    TraceStore(str(tmp_path)).write_unit("r3", "s", "exact", "u0",
                                         [trace_record(run_id="r3")], [])
    assert Warehouse(str(tmp_path)).run_data("r3").timings is None


def test_a_corrupt_file_of_the_run_fails_another_runs_only_warns(tmp_path):
    _store(tmp_path)
    bad = tmp_path / "traces" / "run_id=r1" / "suite=s" / "strategy=exact" / "zz.parquet"
    bad.write_bytes(b"PAR1 truncated")
    with pytest.warns(CorruptFileWarning), pytest.raises(
            TraceError, match=f"corrupt trace file {bad} of run r1: move it away or re-run "
                              "its unit, then write the report again"):
        Warehouse(str(tmp_path)).run_data("r1")
    with pytest.warns(CorruptFileWarning):
        assert Warehouse(str(tmp_path)).run_data("r2").traces.num_rows == 1
