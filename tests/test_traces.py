"""Trace records: invariants, finite JSON, Parquet round trip, atomic store writes."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from junction.errors import TraceError
from junction.evidence.store import TraceStore
from junction.evidence.traces import (
    TRACE_SCHEMA,
    MeasureValue,
    TaskTraceRecord,
    ToolCallRecord,
    records_to_table,
)
from tests.helpers import trace_record


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"exposed_context_ids": ("zz",)}, "exposed context 'zz' is not a context candidate"),
        ({"exposed_tool_ids": ("c1",), "tool_tokens": 10, "tokens_used": 20},
         "exposed tool 'c1' is not a tool candidate"),
        ({"tokens_used": 41}, "tokens_used 41 != context_tokens 10 + tool_tokens 30"),
        ({"context_tokens": 20, "tokens_used": 50}, "exposed resources cost 10+30 tokens"),
        ({"tool_calls": (ToolCallRecord(index=1, tool_id="t1"),)},
         "tool call indexes must be 0..n-1, got 1 at 0"),
        ({"success": False}, "a failure needs a failure_reason"),
        ({"failure_reason": "x"}, "a success carries no failure_reason"),
        ({"objective": float("nan")}, "objective"),
        ({"unary": float("inf")}, "unary"),
        ({"extra_json": '{"score": NaN}'}, "extra_json is not finite JSON"),
        ({"agent_success": True, "agent_outcome": "correct"},
         "agent_success and agent_grader are set together"),
        ({"agent_measures": (MeasureValue(name="m", value=1.0),)},
         "agent_measures \\['m'\\] need an agent grader"),
        ({"agent_success": True, "agent_outcome": "correct", "agent_grader": "g",
          "agent_measures": (MeasureValue(name="b", value=1.0),
                             MeasureValue(name="a", value=0.0))},
         "distinct names in sorted order"),
        ({"agent_success": True, "agent_outcome": "correct", "agent_grader": "g",
          "agent_measures": ({"name": "a", "value": float("nan")},)}, "finite"),
    ],
)
def test_trace_invariants_are_enforced(overrides, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace("+", r"\+")):
        trace_record(**overrides)


def test_record_round_trips_through_parquet_by_name(tmp_path):
    records = [trace_record(), trace_record(task_id="t2")]
    table = records_to_table(records)
    assert table.schema == TRACE_SCHEMA
    path = tmp_path / "x.parquet"
    pq.write_table(table, path)
    back = [TaskTraceRecord.from_row(row) for row in pq.read_table(path).to_pylist()]
    assert back == records


def test_store_writes_atomically_and_is_idempotent(tmp_path):
    store = TraceStore(str(tmp_path))
    records = [trace_record()]
    store.write_unit("r1", "s", "exact", "u0", records, [])
    store.write_unit("r1", "s", "exact", "u0", records, [])  # re-run of the same unit
    assert store.unit_done("r1", "s", "exact", "u0")
    assert store.read_traces("r1").num_rows == 1
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_store_refuses_unsafe_names(tmp_path):
    with pytest.raises(TraceError, match=r"suite '../x' must start with a letter or digit"):
        TraceStore(str(tmp_path)).trace_path("r1", "../x", "exact", "u0")


def test_corrupt_file_is_named(tmp_path):
    store = TraceStore(str(tmp_path))
    store.write_unit("r1", "s", "exact", "u0", [trace_record()], [])
    bad = tmp_path / "traces" / "run_id=r1" / "suite=s" / "strategy=exact" / "u1.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(TraceError, match=r"corrupt trace file .*u1.parquet"):
        store.read_traces("r1")


def test_memory_filesystem_store_and_warehouse_views():
    from junction.evidence.warehouse import Warehouse

    root = "memory://junction-test-traces"
    store = TraceStore(root)
    store.write_unit("r1", "s", "exact", "u0", [trace_record(), trace_record(task_id="t2")], [])
    store.write_run_meta("r1", {"run_id": "r1", "status": "completed", "params": {},
                                "git_commit": None, "git_dirty": False, "started_at": "x",
                                "finished_at": "y", "params_hash": "h"})
    rows = Warehouse(root).query(
        "select task_id, tokens_used from traces order by task_id").to_pylist()
    assert rows == [{"task_id": "t1", "tokens_used": 40}, {"task_id": "t2", "tokens_used": 40}]


def _agent(task_id: str, grader: str, **measures: float):
    return trace_record(task_id=task_id, executor="llm", agent_success=True,
                        agent_outcome="correct", agent_grader=grader,
                        agent_measures=tuple(MeasureValue(name=k, value=v)
                                             for k, v in sorted(measures.items())))


def test_the_agent_measures_view_is_the_long_form_and_empty_on_older_traces(tmp_path):
    from junction.evidence.warehouse import Warehouse

    store = TraceStore(str(tmp_path / "now"))
    store.write_unit("r1", "s", "exact", "u0", [
        _agent("t1", "tau2_actions", action_recall=0.5, wrong_variant_calls=1.0),
        _agent("t2", "bfcl"), trace_record(task_id="t3")], [])
    rows = Warehouse(str(tmp_path / "now")).query(
        "select task_id, agent_grader, measure, value from agent_measures "
        "order by task_id, measure").to_pylist()
    assert rows == [
        {"task_id": "t1", "agent_grader": "tau2_actions", "measure": "action_recall",
         "value": 0.5},
        {"task_id": "t1", "agent_grader": "tau2_actions", "measure": "wrong_variant_calls",
         "value": 1.0}]
    # a warehouse whose files predate the column: the view is there, with no rows
    old = tmp_path / "old" / "traces" / "run_id=r0" / "suite=s" / "strategy=exact"
    old.mkdir(parents=True)
    pq.write_table(records_to_table([trace_record(run_id="r0")]).drop_columns(
        ["agent_grader", "agent_measures"]), old / "u0.parquet")
    warehouse = Warehouse(str(tmp_path / "old"))
    assert warehouse.query("select count(*) as n from agent_measures").to_pylist() == [{"n": 0}]
    assert warehouse.query("select count(*) as n from traces").to_pylist() == [{"n": 1}]


def _timing(**overrides) -> dict:
    return {"run_id": "r1", "suite": "s", "strategy": "exact", "task_id": "t1", "seed": 0,
            "budget_scale": 1.0, "select_ms": 1.5, "execute_ms": 0.5, "total_ms": 2.0,
            "agent_ms": None, "agent_cached": None, **overrides}


@pytest.mark.parametrize(("records", "timings", "message"), [
    # model_copy(update=...) skips validation: the store validates again as it writes
    ([trace_record().model_copy(update={"objective": float("nan")})], [_timing()],
     "trace r1/s/exact/t1: objective: Input should be a finite number"),
    ([trace_record().model_copy(update={"tokens_used": 41})], [_timing()],
     "tokens_used 41 != context_tokens 10 \\+ tool_tokens 30"),
    ([TaskTraceRecord.model_construct(**{**dict(trace_record()), "unary": float("inf")})],
     [_timing()], "unary: Input should be a finite number"),
    ([trace_record(run_id="other")], [_timing()],
     "a trace row of unit r1/s/exact/u0 names run_id 'other'"),
    ([trace_record()], [_timing(total_ms=float("nan"))], "timing total_ms=nan of task 't1' is not "
     "finite"),
    ([trace_record()], [_timing(select_ms=-1.0)], "timing select_ms=-1.0 of task 't1' is negative"),
    ([trace_record()], [_timing(select_ms="fast")], "timing select_ms='fast' of task 't1' is not a "
     "number"),
    ([trace_record()], [{**_timing(), "extra": 1}], "must have the keys run_id"),
    ([trace_record()], [_timing(strategy="fixed_split")],
     "a timing row of unit r1/s/exact/u0 names strategy 'fixed_split'"),
    ([trace_record()], [_timing(agent_cached="yes")], "agent_cached='yes'"),
])
def test_the_store_validates_every_row_as_it_writes(tmp_path, records, timings, message):
    store = TraceStore(str(tmp_path))
    with pytest.raises(TraceError, match=message) as caught:
        store.write_unit("r1", "s", "exact", "u0", records, timings)
    assert "\n" not in str(caught.value)
    assert not store.unit_done("r1", "s", "exact", "u0")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []  # neither file, no tmp


def test_a_valid_timing_row_with_an_agent_is_written(tmp_path):
    store = TraceStore(str(tmp_path))
    store.write_unit("r1", "s", "exact", "u0", [trace_record()],
                     [_timing(agent_ms=12.0, agent_cached=True)])
    assert store.unit_done("r1", "s", "exact", "u0")
