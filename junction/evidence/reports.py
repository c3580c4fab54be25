"""Run reports: ``write_report`` writes a run's ``metrics.json`` (deterministic),
``run.json``, ``report.md``, ``report.html`` and its figures from one ``RunData`` (what
``junction.evidence.warehouse.Warehouse.run_data`` reads through the warehouse's views).

``report_sections`` computes every analysis of the run once, into one ``ReportSections``,
in one in-memory DuckDB connection over the run's Arrow tables (nothing is read again from
the files); every file is written from it. So a report opens two DuckDB connections: the
warehouse reader that reads the ``RunData`` and this one.

Each job has its module under ``junction.evidence``: ``summary`` (the trace rows
summarised, in DuckDB), ``metrics_json`` (what ``metrics.json`` holds and its rounding),
``verdict_text`` (the headline in words), ``report_markdown`` (``report.md``), ``cost`` (the
cost section), ``page`` (the HTML page), ``plots`` (the figures), ``calibration``,
``joint_split``, ``losses`` and ``agent_tables`` (their analyses).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

import duckdb
import markdown as markdown_lib
import psutil

from junction.evidence import plots
from junction.evidence.agent_measures import measure_tables
from junction.evidence.agent_tables import agent_fit, agent_pairs
from junction.evidence.calibration import learned_calibration
from junction.evidence.cost import cost_lines
from junction.evidence.crossfit import cross_fitted_verdicts
from junction.evidence.joint_split import MEASURES, joint_split_verdicts
from junction.evidence.losses import loss_breakdown, loss_document
from junction.evidence.metrics_json import metrics_document, rounded
from junction.evidence.page import html_page
from junction.evidence.report_markdown import ReportSections, render_markdown
from junction.evidence.summary import (
    agent_rows,
    comparable_traces,
    distinct_exposed_sets,
    headline_rows,
    summarise,
)
from junction.evidence.warehouse import RunData

__all__ = [
    "ReportSections",
    "RunData",
    "agent_fit",
    "agent_pairs",
    "remove_unfinished_report",
    "report_sections",
    "write_report",
]

PLOT_NAME = "plot.png"
"""The success-against-budget figure's file (its lines beside it: ``plots.sidecar_path``)."""

TIME_PLOT_NAME = "time.png"
"""The selection-and-execution-time figure's file."""


def _disputed(suites: dict[str, Any]) -> dict[str, list[str]]:
    """Suite name -> task ids whose gold is disputed upstream (``disputed_task_ids`` of the
    run's suite summaries; a several-seed run keys them ``name@seed=N``)."""
    out: dict[str, set[str]] = {}
    for key, info in suites.items():
        if info.get("disputed_task_ids"):
            out.setdefault(key.split("@seed=")[0], set()).update(info["disputed_task_ids"])
    return {k: sorted(v) for k, v in out.items()}


def write_report(out_dir: Path, data: RunData, *,
                 params_left_out: Collection[str] = ()) -> dict[str, Path]:
    """Write metrics.json, run.json, report.md, report.html, plot.png (success against budget)
    and time.png (selection and execution time per strategy) of ``data`` under ``out_dir``.

    metrics.json records the run's ``params`` (run.json's) but those named in
    ``params_left_out``: the run plan's result-neutral parameters and machine paths, which
    the plan declares (``flows.plan.REPORT_LEFT_OUT``), so the same inputs give the same
    bytes on any machine. run.json and report.md keep every parameter.

    ``data.timings`` are shown in the report's cost table and time.png only (never
    metrics.json); no timings, no time.png. Every analysis is computed first
    (``report_sections``). The whole folder is written as a hidden sibling
    (``.<name>.tmp-<pid>``) and renamed into place (an earlier folder is moved aside first,
    then removed), so ``out_dir`` never holds a half-written report: an interrupted write
    leaves the earlier report or none, and the hidden folder, which the next write removes
    (or, in a process ending mid-write, ``remove_unfinished_report``).
    Returns name -> path (under ``out_dir``).
    """
    sections = report_sections(data)
    final = Path(out_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.tmp-*"):
        if not _alive(stale.name.rsplit("-", 1)[-1]):  # another live writer keeps its own
            shutil.rmtree(stale, ignore_errors=True)
    out_dir = _hidden(final, "tmp")
    out_dir.mkdir()
    try:
        paths = _write_report_files(out_dir, sections, params_left_out)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    aside = _hidden(final, "old")
    if final.exists():
        final.rename(aside)
    out_dir.rename(final)
    shutil.rmtree(aside, ignore_errors=True)
    return {name: final / path.name for name, path in paths.items()}


def remove_unfinished_report(out_dir: Path) -> None:
    """Undo what this process's ``write_report`` of ``out_dir`` left if it was cut short
    (the process is ending mid-write: ``flows.interrupts``): its hidden folder
    (``.<name>.tmp-<pid>``) is removed; an earlier report moved aside (``.<name>.old-<pid>``)
    goes back in place if the new one was not yet renamed there, else is removed. Nothing
    to undo is a no-op; raises ``OSError`` where a folder cannot be moved."""
    final = Path(out_dir)
    shutil.rmtree(_hidden(final, "tmp"), ignore_errors=True)
    aside = _hidden(final, "old")
    if aside.exists() and not final.exists():
        aside.rename(final)
    shutil.rmtree(aside, ignore_errors=True)


def _hidden(final: Path, kind: str) -> Path:
    """This process's hidden sibling of report folder ``final``: ``.<name>.tmp-<pid>``
    (being written) or ``.<name>.old-<pid>`` (the earlier report, moved aside)."""
    return final.parent / f".{final.name}.{kind}-{os.getpid()}"


def _alive(pid: str) -> bool:
    """Whether ``pid`` (text) names a live process other than a recycled number of ours
    (``psutil.pid_exists``)."""
    return pid.isdigit() and int(pid) != os.getpid() and psutil.pid_exists(int(pid))


def report_sections(data: RunData) -> ReportSections:
    """Every analysis of ``data``'s report, computed once. The SQL ones (``summarise``,
    ``cost_lines``, ``plots.strategy_times``) share one in-memory DuckDB connection over
    ``data``'s tables.

    Comparisons leave out the rows a wall-clock limit cut short (``comparable_traces``;
    run.json counts them as ``rows_stopped_by_clock``); the cost table counts every row.
    """
    every_trace = data.traces
    traces, clock_stopped = comparable_traces(every_trace)
    run = {**data.run, "rows_stopped_by_clock": clock_stopped,
           "agent_exposed_sets": distinct_exposed_sets(every_trace)}
    timed = data.timings is not None and data.timings.num_rows > 0
    with duckdb.connect(":memory:") as con:
        summary = summarise(traces, con)
        cost = cost_lines(every_trace, data.timings, con) if every_trace.num_rows else None
        times = plots.strategy_times(data.timings, con) if timed else []
    columns = [c for c in ("suite", "budget_scale", "strategy", "seed", "repetition", "fold",
                           "task_id", "loss_cause", *MEASURES) if c in traces.column_names]
    verdict_rows = traces.select(columns).to_pylist() if traces.num_rows else []
    return ReportSections(
        run=run, suites=data.suites, summary=summary, headline=headline_rows(traces),
        plot_name=PLOT_NAME if summary else None,
        plot_note=_plot_note(summary, run) if summary else "",
        time_plot_name=TIME_PLOT_NAME if times and cost else None, times=times, cost=cost,
        calibration=learned_calibration(traces), agent=agent_rows(traces),
        joint_split=joint_split_verdicts(verdict_rows), agent_pairs=agent_pairs(traces),
        fit=agent_fit(traces),
        cross_fitted=cross_fitted_verdicts(verdict_rows, _disputed(data.suites)),
        measures=measure_tables(traces), losses=loss_breakdown(verdict_rows),
        graders=_suite_graders(every_trace))


def _suite_graders(traces: Any) -> dict[str, list[str]]:
    """Suite -> the agent graders named in its rows' ``agent_grader``, sorted (a suite no
    agent acted on is left out)."""
    if not traces.num_rows or "agent_grader" not in traces.column_names:
        return {}
    out: dict[str, set[str]] = {}
    for row in traces.select(["suite", "agent_grader"]).to_pylist():
        if row["agent_grader"]:
            out.setdefault(row["suite"], set()).add(row["agent_grader"])
    return {suite: sorted(names) for suite, names in sorted(out.items())}


def _plot_note(summary: list[dict[str, Any]], run: dict[str, Any]) -> str:
    """What the success plot cannot show (``plots.scales_note``), and the strategies the
    plan ran at fewer scales (run.json's ``params.strategy_scales``)."""
    note = plots.scales_note(summary)
    limited = (run.get("params") or {}).get("strategy_scales") or {}
    if limited:  # a strategy the plan runs at fewer scales has fewer points, by design
        note = (note + " " if note else "Every budget scale that ran is shown; ") + "; ".join(
            f"{k} ran at scale{'s' if len(v) > 1 else ''} {', '.join(f'{x:g}' for x in v)} "
            "only (the per-strategy plan)" for k, v in sorted(limited.items())) + "."
    return note


def _metrics(sections: ReportSections, params_left_out: Collection[str]) -> dict[str, Any]:
    """metrics.json's document (``metrics_document``, then the sections that hold rows);
    its ``params``: run.json's but ``params_left_out``."""
    params = {k: v for k, v in sections.run.get("params", {}).items()
              if k not in params_left_out}
    metrics = metrics_document(sections.summary, params, sections.suites, sections.headline,
                               sections.calibration)
    if sections.joint_split:
        metrics["joint_split"] = sections.joint_split
    if sections.cross_fitted:
        metrics["cross_fitted"] = [{k: rounded(v) for k, v in r.items()}
                                   for r in sections.cross_fitted]
    if sections.agent_pairs:
        metrics["agent_pairs"] = [{k: rounded(v) for k, v in r.items()}
                                  for r in sections.agent_pairs]
    if sections.losses:
        metrics["loss_breakdown"] = loss_document(sections.losses)
    if any(sections.measures.values()):
        metrics["agent_measures"] = {name: [{k: rounded(v) for k, v in r.items()}
                                            for r in rows]
                                     for name, rows in sections.measures.items()}
    return metrics


def _write_report_files(out_dir: Path, sections: ReportSections,
                        params_left_out: Collection[str]) -> dict[str, Path]:
    """``write_report``'s files, written into the (temporary) folder ``out_dir``."""
    if sections.plot_name:
        tmp_plot, tmp_lines = out_dir / ".plot.tmp.png", out_dir / ".plot.tmp.json"
        plots.success_plot(sections.summary, tmp_plot, tmp_lines, sections.plot_name)
        tmp_plot.replace(out_dir / sections.plot_name)
        tmp_lines.replace(plots.sidecar_path(out_dir / sections.plot_name))
    if sections.times:
        tmp_time = out_dir / ".time.tmp.png"
        plots.time_plot(sections.times, tmp_time)
        tmp_time.replace(out_dir / TIME_PLOT_NAME)
    md = render_markdown(sections)
    page = html_page("Junction run " + sections.run["run_id"],
                     markdown_lib.markdown(md, extensions=["tables"]))
    files = {
        "metrics.json": json.dumps(_metrics(sections, params_left_out), sort_keys=True,
                                   indent=2, allow_nan=False) + "\n",
        "run.json": json.dumps(sections.run, sort_keys=True, indent=2, allow_nan=False) + "\n",
        "report.md": md,
        "report.html": page,
    }
    paths = {}
    for name, text in files.items():
        tmp = out_dir / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(out_dir / name)
        paths[name] = out_dir / name
    if sections.plot_name:
        paths["plot.png"] = out_dir / sections.plot_name
        paths["plot.json"] = plots.sidecar_path(out_dir / sections.plot_name)
    if sections.times:
        paths["time.png"] = out_dir / TIME_PLOT_NAME
    return paths
