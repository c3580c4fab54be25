"""Run reports: ``write_report`` writes a run's ``metrics.json`` (deterministic),
``run.json``, ``report.md``, ``report.html`` and its figures.

Each job has its module under ``junction.evidence``: ``summary`` (the trace rows
summarised, in DuckDB), ``metrics_json`` (what ``metrics.json`` holds and its rounding),
``verdict_text`` (the headline in words), ``report_markdown`` (``report.md``), ``cost`` (the
``timings`` view and the cost section), ``page`` (the HTML page), ``plots`` (the figures),
``calibration``, ``joint_split`` and ``agent_tables`` (their analyses).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import markdown as markdown_lib
import psutil
import pyarrow as pa

from junction.evidence import plots
from junction.evidence.agent_tables import agent_fit, agent_pairs
from junction.evidence.calibration import learned_calibration
from junction.evidence.cost import cost_lines, run_timings
from junction.evidence.crossfit import cross_fitted_verdicts
from junction.evidence.agent_actions import action_tables
from junction.evidence.joint_split import MEASURES, joint_split_verdicts
from junction.evidence.report_markdown import render_markdown
from junction.evidence.metrics_json import metrics_document, rounded
from junction.evidence.page import html_page
from junction.evidence.params import report_params
from junction.evidence.summary import (
    agent_rows,
    comparable_traces,
    distinct_exposed_sets,
    headline_rows,
    summarise,
)

__all__ = ["agent_fit", "agent_pairs", "run_timings", "write_report"]


def _disputed(suites: dict[str, Any]) -> dict[str, list[str]]:
    """Suite name -> task ids whose gold is disputed upstream (``disputed_task_ids`` of the
    run's suite summaries; a several-seed run keys them ``name@seed=N``)."""
    out: dict[str, set[str]] = {}
    for key, info in suites.items():
        if info.get("disputed_task_ids"):
            out.setdefault(key.split("@seed=")[0], set()).update(info["disputed_task_ids"])
    return {k: sorted(v) for k, v in out.items()}


def write_report(out_dir: Path, run: dict[str, Any], traces: pa.Table,
                 suites: dict[str, Any], timings: pa.Table | None = None) -> dict[str, Path]:
    """Write metrics.json, run.json, report.md, report.html, plot.png (success against budget)
    and time.png (selection and execution time per strategy) under ``out_dir``.

    ``timings``: the run's rows of the ``timings`` view (``run_timings``), shown in the
    report's cost table and time.png only (never metrics.json); no timings, no time.png.
    The whole folder is written as a hidden sibling (``.<name>.tmp-<pid>``) and renamed into
    place (an earlier folder is moved aside first, then removed), so ``out_dir`` never holds
    a half-written report: an interrupted write leaves the earlier report or none, and the
    hidden folder, which the next write removes. Returns name -> path (under ``out_dir``).
    """
    final = Path(out_dir)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.tmp-*"):
        if not _alive(stale.name.rsplit("-", 1)[-1]):  # another live writer keeps its own
            shutil.rmtree(stale, ignore_errors=True)
    out_dir = final.parent / f".{final.name}.tmp-{os.getpid()}"
    out_dir.mkdir()
    try:
        paths = _write_report_files(out_dir, run, traces, suites, timings)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise
    aside = final.parent / f".{final.name}.old-{os.getpid()}"
    if final.exists():
        final.rename(aside)
    out_dir.rename(final)
    shutil.rmtree(aside, ignore_errors=True)
    return {name: final / path.name for name, path in paths.items()}


def _alive(pid: str) -> bool:
    """Whether ``pid`` (text) names a live process other than a recycled number of ours
    (``psutil.pid_exists``)."""
    return pid.isdigit() and int(pid) != os.getpid() and psutil.pid_exists(int(pid))


def _write_report_files(out_dir: Path, run: dict[str, Any], traces: pa.Table,
                        suites: dict[str, Any], timings: pa.Table | None) -> dict[str, Path]:
    """``write_report``'s files, written into the (temporary) folder ``out_dir``."""
    every_trace = traces  # the cost table counts every selection, clock-stopped ones too
    traces, clock_stopped = comparable_traces(traces)
    run = {**run, "rows_stopped_by_clock": clock_stopped,
           "agent_exposed_sets": distinct_exposed_sets(every_trace)}
    summary = summarise(traces)
    headline = headline_rows(traces)
    plot_path = out_dir / "plot.png"
    plot_note = ""
    if summary:
        tmp_plot, tmp_lines = out_dir / ".plot.tmp.png", out_dir / ".plot.tmp.json"
        plot_note = plots.success_plot(summary, tmp_plot, tmp_lines, plot_path.name)
        tmp_plot.replace(plot_path)
        tmp_lines.replace(plots.sidecar_path(plot_path))
        limited = (run.get("params") or {}).get("strategy_scales") or {}
        if limited:  # a strategy the plan runs at fewer scales has fewer points, by design
            plot_note = (plot_note + " " if plot_note else "Every budget scale that ran is "
                         "shown; ") + "; ".join(
                f"{k} ran at scale{'s' if len(v) > 1 else ''} {', '.join(f'{x:g}' for x in v)} "
                "only (the per-strategy plan)" for k, v in sorted(limited.items())) + "."
    cost = cost_lines(every_trace, timings) if every_trace.num_rows else None
    time_path = out_dir / "time.png"
    has_times = timings is not None and timings.num_rows > 0
    if has_times:
        tmp_time = out_dir / ".time.tmp.png"
        plots.time_plot(timings, tmp_time)
        tmp_time.replace(time_path)
    calibration = learned_calibration(traces)
    columns = [c for c in ("suite", "budget_scale", "strategy", "seed", "repetition", "fold",
                           "task_id", *MEASURES) if c in traces.column_names]
    verdict_rows = traces.select(columns).to_pylist() if traces.num_rows else []
    joint_split = joint_split_verdicts(verdict_rows)
    cross_fitted = cross_fitted_verdicts(verdict_rows, _disputed(suites))
    pairs = agent_pairs(traces)
    actions = action_tables(traces)
    md = render_markdown(run, summary, suites, plot_path.name if summary else None,
                         headline=headline, cost=cost, plot_note=plot_note,
                         time_plot_name=time_path.name if has_times and cost else None,
                         calibration=calibration, agent=agent_rows(traces),
                         joint_split=joint_split, agent_pairs=pairs, fit=agent_fit(traces),
                         cross_fitted=cross_fitted, actions=actions)
    body = markdown_lib.markdown(md, extensions=["tables"])
    page = html_page("Junction run " + run["run_id"], body)
    metrics = metrics_document(summary, report_params(run.get("params", {})), suites, headline,
                               calibration)
    if joint_split:
        metrics["joint_split"] = joint_split
    if cross_fitted:
        metrics["cross_fitted"] = [{k: rounded(v) for k, v in r.items()} for r in cross_fitted]
    if pairs:
        metrics["agent_pairs"] = [{k: rounded(v) for k, v in r.items()} for r in pairs]
    if any(actions.values()):
        metrics["agent_actions"] = {name: [{k: rounded(v) for k, v in r.items()} for r in rows]
                                    for name, rows in actions.items()}
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
        paths["plot.json"] = plots.sidecar_path(plot_path)
    if has_times:
        paths["time.png"] = time_path
    return paths
