"""A run's trace rows, summarised for its report: the rows a comparison may use, the
strategy summary, the headline, the agent table and the agent's distinct exposed sets.

Rows whose selection a wall-clock safety net cut short (``selection_status`` =
``stopped_by_clock``) depend on the machine's speed, so every comparison leaves them out
(``comparable_traces``); run.json counts them.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from junction.evidence import verdicts
from junction.evidence.arrow_sql import registered
from junction.evidence.metrics_json import rounded
from junction.strategies.catalog import reference_strategies

__all__ = [
    "CLOCK_STOPPED",
    "agent_rows",
    "comparable_traces",
    "distinct_exposed_sets",
    "exposed_set",
    "headline_rows",
    "summarise",
]


CLOCK_STOPPED = "stopped_by_clock"
"""``selection_status`` of a selection a wall-clock limit cut short (not reproducible)."""


def comparable_traces(traces: pa.Table) -> tuple[pa.Table, int]:
    """(the trace rows whose result the inputs alone determine, how many were left out).

    Leaves out the rows with ``selection_status`` = ``stopped_by_clock``: their selection
    depends on how fast the machine was, so they would make two runs of the same inputs
    differ. Rows stopped by the deterministic work limit (``work_limit``) stay."""
    if "selection_status" not in traces.column_names:
        return traces, 0
    status = traces.column("selection_status").to_pylist()
    keep = [s != CLOCK_STOPPED for s in status]
    return traces.filter(pa.array(keep, type=pa.bool_())), keep.count(False)



def summarise(traces: pa.Table,
              con: duckdb.DuckDBPyConnection | None = None) -> list[dict[str, Any]]:
    """Per suite, strategy and budget scale: task count and mean of each summary metric.

    Means skip NULLs (a task with no gold has no recall); values rounded to 6 decimals.
    ``con``: the DuckDB connection to compute in (``junction.evidence.arrow_sql.registered``;
    None: its own).
    """
    from junction.evidence.warehouse import view_statement

    with registered(con, traces=traces) as db:
        db.execute(view_statement("strategy_summary"))  # the warehouse's own definition
        try:
            rows = db.sql("SELECT * EXCLUDE (run_id) FROM strategy_summary "
                          "ORDER BY suite, strategy, budget_scale").to_arrow_table().to_pylist()
        finally:
            db.execute("DROP VIEW strategy_summary")
    return [{k: rounded(v) for k, v in row.items()} for row in rows]


def headline_rows(traces: pa.Table) -> list[dict[str, Any]]:
    """``verdicts.headline`` over the trace rows (only the columns it reads), leaving out
    the catalog's ``reference_strategies`` (they do not respect the budget).

    Each comparison also gets ``identical_sets``: on how many of its shared tasks (both
    outcomes set) the two strategies exposed the same contexts and tools. Those tasks are
    concordant by construction: the same exposed set is the same prompt, hence the same
    greedy generation.

    On a cross-fitted suite every repetition's rows go in, with their ``fold``: a
    comparison where either side is refitted per fold is the corrected repeated-CV one
    (``verdicts.compare_strategies``), which counts each repetition and refit.
    """
    keys = ("suite", "budget_scale", "strategy", "seed", "task_id")
    columns = [c for c in (*keys, "fold", *verdicts.PRIMARY_OUTCOMES)
               if c in traces.column_names]
    if traces.num_rows == 0:
        return []
    references = reference_strategies()
    rows = [r for r in traces.select(columns).to_pylist() if r["strategy"] not in references]
    out = verdicts.headline(rows)
    exposed = {}
    if {"exposed_context_ids", "exposed_tool_ids"} <= set(traces.column_names):
        for r in traces.select([*keys, "exposed_context_ids", "exposed_tool_ids",
                                *(c for c in verdicts.PRIMARY_OUTCOMES
                                  if c in traces.column_names)]).to_pylist():
            exposed[(r["suite"], float(r["budget_scale"]), r["strategy"], r["seed"],
                     r["task_id"])] = (r, exposed_set(r))
    for h in out:
        for c in h["comparisons"]:
            both = {}
            for name in (h["best"][0], c["other"]):
                both[name] = {(k[3], k[4]): v for k, v in exposed.items()
                              if k[:3] == (h["suite"], h["budget_scale"], name)
                              and v[0].get(h["outcome"]) is not None}
            shared = set(both[h["best"][0]]) & set(both[c["other"]])
            if shared and c["comparison"].test == "corrected_cv":  # n counts tasks once
                shared = {k for k in shared if k[0] == min(shared)[0]}
            c["identical_sets"] = sum(both[h["best"][0]][k][1] == both[c["other"]][k][1]
                                      for k in shared)
    return out


def exposed_set(row: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A trace row's exposed set: (sorted context ids, sorted tool ids)."""
    return tuple(sorted(row["exposed_context_ids"])), tuple(sorted(row["exposed_tool_ids"]))


def distinct_exposed_sets(traces: pa.Table) -> dict[str, dict[str, int]]:
    """Per suite, the agent's evaluations and how many (seed, task, exposed set) among them
    are distinct: ``{suite: {"agent_evaluations": n, "distinct_exposed_sets": k}}``.

    The agent's prompt is a function of the task and the exposed set, so it generates
    once per distinct pair (the generation cache answers the repeats): k is what the
    agent sample costs, in generations. Suites without agent rows are left out.
    """
    if traces.num_rows == 0 or "agent_success" not in traces.column_names:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for r in traces.select(["suite", "seed", "task_id", "agent_success",
                            "exposed_context_ids", "exposed_tool_ids"]).to_pylist():
        if r["agent_success"] is None:
            continue
        entry = out.setdefault(r["suite"], {"agent_evaluations": 0, "sets": set()})
        entry["agent_evaluations"] += 1
        entry["sets"].add((r["seed"], r["task_id"], exposed_set(r)))
    return {s: {"agent_evaluations": e["agent_evaluations"],
                "distinct_exposed_sets": len(e["sets"])} for s, e in sorted(out.items())}


def agent_rows(traces: pa.Table) -> list[dict[str, Any]]:
    """``verdicts.outcome_table`` of ``agent_success`` over every strategy, references
    included; [] when the traces have no agent outcome."""
    if "agent_success" not in traces.column_names or traces.num_rows == 0:
        return []
    rows = traces.select(["suite", "budget_scale", "strategy", "seed", "task_id",
                          "agent_success"]).to_pylist()
    return verdicts.outcome_table(rows, "agent_success")
