"""The report's cost section: wall-clock time per strategy from the warehouse's
``timings`` view (never in ``metrics.json``) and the selections not proven optimal."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from junction.evidence import metrics as catalog
from junction.evidence.arrow_sql import registered
from junction.strategies.catalog import STRATEGIES, strategy_info

__all__ = ["cost_lines"]


def cost_lines(traces: pa.Table, timings: pa.Table | None,
               con: duckdb.DuckDBPyConnection | None = None) -> list[str]:
    """Selection and execution time per strategy, and selections not proven optimal.

    ``traces``: every trace row (clock-stopped ones too); ``timings``: the ``timings`` view's
    rows (milliseconds), None when there are none. ``con``: the DuckDB connection to
    compute in (``junction.evidence.arrow_sql.registered``; None: its own)."""
    lines = ["## Cost", ""]
    with registered(con, traces=traces.select(["strategy", "selection_status"]),
                    timings=timings) as db:
        status = db.sql("SELECT strategy, selection_status, count(*) AS n FROM traces "
                        "GROUP BY ALL ORDER BY ALL").fetchall()
        times: dict[str, tuple] = {}
        if timings is not None:
            for row in db.sql(
                    "SELECT strategy, count(*), sum(select_ms) / 1000, avg(select_ms), "
                    "sum(execute_ms) / 1000, sum(total_ms) / 1000 FROM timings "
                    "GROUP BY strategy ORDER BY strategy").fetchall():
                times[row[0]] = row[1:]
    by_strategy: dict[str, dict[str, int]] = {}
    for strategy, state, n in status:
        by_strategy.setdefault(strategy, {})[state] = n
    grand = sum(t[4] for t in times.values()) or None
    lines.append("Wall-clock time from the `timings` view (kept out of `metrics.json`). "
                 "*Not proven optimal* counts selections whose `selection_status` is not "
                 "`optimal`, for strategies that claim optimality (any `optimal` status); "
                 "heuristic strategies show –.")
    lines.append("")
    lines.append("| strategy | tasks | selection | selection per task | execution | "
                 "share of run time | not proven optimal |")
    lines.append("|---|---|---|---|---|---|---|")
    for strategy in sorted(set(by_strategy) | set(times)):
        counts = by_strategy.get(strategy, {})
        if "optimal" in counts or (strategy in STRATEGIES
                                   and strategy_info(strategy).claims_optimal):
            others = {k: v for k, v in counts.items() if k != "optimal"}
            unproven = str(sum(others.values()))
            if others:
                unproven += " (" + ", ".join(f"{k} {v}" for k, v in sorted(others.items())) + ")"
        else:
            unproven = "– (" + ", ".join(sorted(counts)) + ")"
        t = times.get(strategy)
        cells = (("–",) * 5 if t is None else
                 (str(t[0]), catalog.format_duration(t[1]), catalog.format_duration(t[2] / 1000),
                  catalog.format_duration(t[3]), f"{t[4] / grand:.0%}" if grand else "–"))
        lines.append(f"| {strategy} | " + " | ".join(cells) + f" | {unproven} |")
    if timings is None:
        lines.append("")
        lines.append("No timing rows were found for this run.")
    lines.append("")
    return lines
