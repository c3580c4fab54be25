"""No result depends on the clock: the report leaves clock-stopped selections out."""

from __future__ import annotations

import pyarrow as pa

from junction.evidence.summary import comparable_traces


def test_comparable_traces_leave_out_only_clock_stopped_rows() -> None:
    traces = pa.table({"task_id": ["a", "b", "c", "d"],
                       "selection_status": ["optimal", "stopped_by_clock", "work_limit",
                                            None]})
    kept, left_out = comparable_traces(traces)
    # work_limit is deterministic (same inputs, same stop): it stays and is compared
    assert kept.column("task_id").to_pylist() == ["a", "c", "d"]
    assert left_out == 1


def test_traces_without_a_status_column_are_kept_whole() -> None:
    traces = pa.table({"task_id": ["a"]})
    assert comparable_traces(traces) == (traces, 0)
