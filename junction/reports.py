"""Run reports: ``metrics.json`` (deterministic), ``report.md``, ``report.html``, a plot.

``metrics.json`` holds only what the inputs determine: sorted keys, numbers rounded to
``ROUND_DIGITS`` decimals, no run id, timestamps or timings (those live in ``run.json``),
so two reports of the same inputs are byte-identical and a committed report diffs cleanly.
Rows whose selection a wall-clock safety net cut short (``selection_status`` =
``stopped_by_clock``) depend on the machine's speed, so every comparison leaves them out
(``comparable_traces``); run.json counts them.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import duckdb
import markdown as markdown_lib
import pyarrow as pa

from junction import metrics as catalog
from junction.params import report_params

__all__ = ["ROUND_DIGITS", "comparable_traces", "summarise", "write_report",
           "render_markdown"]

ROUND_DIGITS = 6

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


def _round(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, ROUND_DIGITS)
    return value


def summarise(traces: pa.Table) -> list[dict[str, Any]]:
    """Per suite, strategy and budget scale: task count and mean of each summary metric.

    Means skip NULLs (a task with no gold has no recall); values rounded to 6 decimals.
    """
    from junction.warehouse import view_statement

    con = duckdb.connect(":memory:")
    try:
        con.register("traces", traces)
        con.execute(view_statement("strategy_summary"))  # the warehouse's own definition
        rows = con.sql("SELECT * EXCLUDE (run_id) FROM strategy_summary "
                       "ORDER BY suite, strategy, budget_scale").to_arrow_table().to_pylist()
    finally:
        con.close()
    return [{k: _round(v) for k, v in row.items()} for row in rows]


def metrics_document(summary: list[dict[str, Any]], params: dict[str, Any],
                     suites: dict[str, Any]) -> dict[str, Any]:
    """The content of ``metrics.json``: params, suite load stats and the summary rows."""
    nested: dict[str, Any] = {}
    for row in summary:
        key = f"{row['suite']}"
        scale = f"budget_scale={row['budget_scale']:g}"
        nested.setdefault(key, {}).setdefault(scale, {})[row["strategy"]] = {
            k: v for k, v in row.items() if k not in ("suite", "strategy", "budget_scale")
        }
    return {"params": params, "suites": suites, "results": nested}


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table_columns() -> tuple[str, ...]:
    """The per-suite table's columns: task count, then the catalog's ``report_table`` metrics."""
    return ("tasks", *(m.column for m in catalog.METRICS if m.report_table))


def render_markdown(run: dict[str, Any], summary: list[dict[str, Any]],
                    suites: dict[str, Any], plot_name: str | None) -> str:
    """The Markdown report: run header, notes on sampling, one table per suite, the plot."""
    lines = [f"# Junction benchmark report: run `{run['run_id']}`", ""]
    lines.append(f"- commit: `{run.get('git_commit') or 'unknown'}`"
                 + (" (dirty working tree)" if run.get("git_dirty") else ""))
    params = run.get("params", {})
    lines.append(f"- strategies: {', '.join(params.get('strategies', []))}")
    lines.append(f"- seeds: {params.get('seeds')}; budget scales: {params.get('budget_scales')}")
    lines.append(f"- started {run.get('started_at')}, finished {run.get('finished_at')}")
    lines.append("")
    lines.append("Every strategy ran on the same tasks under the same budget. "
                 "Means skip tasks where a metric is undefined (–).")
    lines.append("")
    lines.append("## Suites")
    lines.append("")
    lines.append("| suite | tasks run | rows loaded | rows skipped | sampling | note |")
    lines.append("|---|---|---|---|---|---|")
    for name in sorted(suites):
        info = suites[name]
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(info.get("rows_skipped", {}).items()))
        lines.append(f"| {name} | {info.get('tasks')} | {info.get('rows_loaded')} | "
                     f"{skipped or '0'} | {info.get('sampling', '')} | "
                     f"{info.get('note', '')} |")
    lines.append("")
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for row in summary:
        by_suite.setdefault(row["suite"], []).append(row)
    columns = _table_columns()
    for suite in sorted(by_suite):
        lines.append(f"## {suite}")
        lines.append("")
        lines.append("| strategy | budget scale | " + " | ".join(columns) + " |")
        lines.append("|---|---|" + "---|" * len(columns))
        for row in by_suite[suite]:
            cells = " | ".join(_fmt(row[c]) for c in columns)
            lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
        lines.append("")
    if plot_name:
        lines.append("## Success and budget use per strategy")
        lines.append("")
        lines.append(f"![success and budget use]({plot_name})")
        lines.append("")
    return "\n".join(lines)


def _plot(summary: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in summary if r["budget_scale"] == 1.0] or summary
    suites = sorted({r["suite"] for r in rows})
    strategies = sorted({r["strategy"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.6 * len(suites) + 4), 4.5))
    width = 0.8 / max(1, len(strategies))
    for ax, metric, label in ((axes[0], "success_rate", "verified success rate"),
                              (axes[1], "budget_use", "token budget use")):
        for i, strategy in enumerate(strategies):
            values = []
            for suite in suites:
                match = [r for r in rows if r["suite"] == suite and r["strategy"] == strategy]
                values.append((match[0][metric] or 0.0) if match else 0.0)
            ax.bar([x + i * width for x in range(len(suites))], values, width, label=strategy)
        ax.set_xticks([x + width * (len(strategies) - 1) / 2 for x in range(len(suites))])
        ax.set_xticklabels(suites, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(label)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)


def write_report(out_dir: Path, run: dict[str, Any], traces: pa.Table,
                 suites: dict[str, Any]) -> dict[str, Path]:
    """Write metrics.json, run.json, report.md, report.html and plot.png under ``out_dir``.

    Each file is written to a temporary name and renamed. Returns name -> path.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    traces, clock_stopped = comparable_traces(traces)
    run = {**run, "rows_stopped_by_clock": clock_stopped}
    summary = summarise(traces)
    plot_path = out_dir / "plot.png"
    if summary:
        tmp_plot = out_dir / ".plot.tmp.png"
        _plot(summary, tmp_plot)
        tmp_plot.replace(plot_path)
    md = render_markdown(run, summary, suites, plot_path.name if summary else None)
    body = markdown_lib.markdown(md, extensions=["tables"])
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape('Junction run ' + run['run_id'])}</title>"
            "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
            "</style></head><body>" + body + "</body></html>")
    metrics = metrics_document(summary, report_params(run.get("params", {})), suites)
    files = {
        "metrics.json": json.dumps(metrics, sort_keys=True, indent=2, allow_nan=False) + "\n",
        "run.json": json.dumps(run, sort_keys=True, indent=2, allow_nan=False) + "\n",
        "report.md": md,
        "report.html": page,
    }
    paths = {}
    for name, text in files.items():
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(out_dir / name)
        paths[name] = out_dir / name
    if summary:
        paths["plot.png"] = plot_path
    return paths

