"""The metric catalog: it agrees with the trace record and schema, the summary view, the
report's table and the diff's rows read from it, and the lane measures are ir_measures'."""

from __future__ import annotations

import dataclasses
import types
import typing

import duckdb
import pyarrow as pa
import pytest

from junction.evidence import metrics as catalog
from junction.evidence.diff import diff_runs
from junction.evidence.metrics import METRICS, LaneRanking, Metric, lane_ranking_metrics
from junction.evidence.report_markdown import ReportSections, render_markdown
from junction.evidence.summary import summarise
from junction.evidence.traces import TRACE_SCHEMA, TaskTraceRecord, records_to_table
from junction.evidence.warehouse import view_statement
from tests.helpers import trace_record

# Trace columns that are not per-task metrics: identity, budget, pools, exposed set, token
# split, objective terms, solver status, calls, outcome reason, gold, free JSON. A new trace
# column must go either here or into the catalog.
NOT_METRICS = {
    "schema_version", "run_id", "suite", "strategy", "task_id", "seed", "repetition", "fold",
    "pool_rule",
    "budget_scale",
    "budget_tokens", "budget_tools", "budget_latency_ms", "budget_cost_usd",
    "context_candidates", "tool_candidates", "exposed_context_ids", "exposed_tool_ids",
    "context_tokens", "tool_tokens", "unary", "interaction", "selector", "selection_status",
    "selection_gap", "tool_calls", "failure_reason", "loss_cause", "gold_context_ids",
    "gold_tool_ids",
    "extra_json", "executor", "agent_outcome", "agent_error_type", "agent_generated_tokens",
    "agent_model_sha256", "agent_prompt_sha256", "agent_output", "agent_remote",
    "agent_dropped_context_ids", "agent_grader", "agent_measures",
}
SUMMARY_KEYS = ["run_id", "suite", "strategy", "budget_scale", "tasks"]
ARROW_TYPES = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64()}
PYTHON_TYPES = {"bool": bool, "int": int, "float": float}


def _traces() -> pa.Table:
    # t1: success, recall 1.0; t2: failure, no gold context (recall NULL), objective 0.5
    return records_to_table([
        trace_record(task_id="t1", context_recall=1.0, pair_coverage=True, budget_use=0.4),
        trace_record(task_id="t2", success=False, failure_reason="x", objective=0.5,
                     pair_coverage=False, budget_use=0.4),
    ])


def test_catalog_and_trace_record_name_the_same_metric_columns():
    names = [m.name for m in METRICS]
    assert len(set(names)) == len(names)
    assert not set(names) & NOT_METRICS
    assert set(TaskTraceRecord.model_fields) == NOT_METRICS | set(names)
    assert {f.name for f in TRACE_SCHEMA} == NOT_METRICS | set(names)


@pytest.mark.parametrize("m", METRICS, ids=lambda m: m.name)
def test_catalog_types_and_nullability_match_the_trace(m):
    assert TRACE_SCHEMA.field(m.name).type == ARROW_TYPES[m.value_type]
    annotation = TaskTraceRecord.model_fields[m.name].annotation
    args = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    assert PYTHON_TYPES[m.value_type] in args
    assert (type(None) in args) == (m.undefined_when is not None)


def test_strategy_summary_has_one_column_per_metric_in_catalog_order():
    con = duckdb.connect(":memory:")
    con.register("traces", _traces())
    con.execute(view_statement("strategy_summary"))
    columns = [d[0] for d in con.sql("SELECT * FROM strategy_summary").description]
    assert columns == SUMMARY_KEYS + [m.column for m in METRICS]


def test_summary_aggregates_each_metric_as_the_catalog_says():
    (row,) = summarise(_traces())
    assert row["tasks"] == 2
    assert row["success_rate"] == 0.5  # mean_of_bool: (1 + 0) / 2
    assert row["pair_coverage"] == 0.5
    assert row["context_recall"] == 1.0  # mean skips t2's NULL
    assert row["objective"] == 1.0  # (1.5 + 0.5) / 2
    assert row["tokens_used"] == 40.0
    assert row["tool_recall"] is None  # NULL in every task


def test_report_table_and_diff_rows_are_todays_columns():
    # the columns these had before the catalog, spelled out once here to pin them (and
    # tokens_used, a page strategy's admitted tokens, and context_precision,
    # the precision of sub-task admission)
    assert [m.column for m in METRICS if m.report_table] == [
        "success_rate", "agent_success_rate", "agent_prompt_tokens", "context_recall",
        "context_precision", "tool_recall", "pair_coverage", "budget_use", "tokens_used",
        "objective",
        "context_lane_ndcg_at_5", "tool_lane_ndcg_at_5"]
    assert [m.name for m in METRICS if m.diff] == [
        "success", "agent_success", "context_recall", "tool_recall", "pair_coverage",
        "budget_use", "objective"]


def test_a_metric_added_to_the_catalog_reaches_summary_report_and_diff(monkeypatch):
    fake = Metric("fake_score", "fake_score_mean", "a metric made up for this test", None,
                  "fraction, [0, 1]", "float", "higher", "mean", "this test",
                  report_table=True, diff=True)
    monkeypatch.setattr(catalog, "METRICS", (*METRICS, fake))
    before = _traces().append_column("fake_score", pa.array([0.25, 0.75]))
    after = _traces().append_column("fake_score", pa.array([0.5, 1.0]))
    (row,) = summarise(before)
    assert row["fake_score_mean"] == 0.5
    markdown = render_markdown(ReportSections({"run_id": "r1"}, summary=[row]))
    header = next(line for line in markdown.splitlines() if line.startswith("| strategy"))
    assert header.endswith("| tool_lane_ndcg_at_5 | fake_score_mean |")
    fake_rows = [r for r in diff_runs(before, after) if r["metric"] == "fake_score"]
    assert [(r["before"], r["after"], r["change"]) for r in fake_rows] == [(0.5, 0.75, 0.25)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "Bad Name"}, "metric name must be a lower-case identifier, got 'Bad Name'"),
        ({"column": "x; drop"}, "metric column must be a lower-case identifier, got 'x; drop'"),
        ({"lane": "tool"}, "metric 'success': lane and measure go together"),
    ],
)
def test_bad_catalog_entries_are_refused(change, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        dataclasses.replace(METRICS[0], **change)


def test_lane_metrics_cover_both_lanes_and_each_measure():
    lanes = {(m.lane, m.measure) for m in METRICS if m.lane is not None}
    assert lanes == {(lane, measure) for lane in ("context", "tool")
                     for measure in ("R@5", "nDCG@5", "RR")}


def test_lane_ranking_metrics_worked_example():
    # gold b at rank 2 of [a, b, c]: R@5 = 1/1, RR = 1/2, nDCG@5 = (1/log2 3) / 1 = 0.6309
    out = lane_ranking_metrics([LaneRanking("q", ["a", "b", "c"], ["b"]),
                                LaneRanking("none", ["a"], []),
                                LaneRanking("empty", [], ["b"])])
    assert out["q"] == pytest.approx({"R@5": 1.0, "RR": 0.5, "nDCG@5": 0.6309297535714575})
    assert out["none"] == {"R@5": None, "nDCG@5": None, "RR": None}
    assert out["empty"] == {"R@5": 0.0, "nDCG@5": 0.0, "RR": 0.0}


@pytest.mark.parametrize(("display", "value", "text", "change"), [
    ("percent", 0.625, "62%", "+62 points"),      # round half to even: 62.5 -> 62
    ("percent", None, "–", "–"),
    ("integer", 1002.275, "1002", "+1002"),
    ("decimals2", 2.247, "2.25", "+2.25"),
    ("decimals2", -0.004, "-0.00", "-0.00"),
])
def test_display_precision(display, value, text, change):
    assert catalog.format_value(display, value) == text
    assert catalog.format_change(display, value) == change


@pytest.mark.parametrize(("seconds", "text"), [
    (4.0, "4.00 s"), (123.4, "123 s"), (1234.5, "1234 s"), (0.25, "250 ms"), (0.0005, "0.500 ms"),
    (0.99999, "1.00 s"), (0.0, "0 s"), (None, "–"),
])
def test_durations_have_three_significant_digits(seconds, text):
    assert catalog.format_duration(seconds) == text


def test_every_metric_states_its_display_and_a_bad_one_is_refused():
    shown = {m.name: m.display for m in METRICS}
    assert (shown["success"], shown["tokens_used"], shown["objective"]) == (
        "percent", "integer", "decimals2")
    with pytest.raises(ValueError, match="display must be percent, integer or decimals2, "
                                         "got 'sci'"):
        dataclasses.replace(METRICS[0], display="sci")
