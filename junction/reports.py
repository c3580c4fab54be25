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
from junction import verdicts
from junction.joint_split import MEASURES, joint_split_lines, joint_split_verdicts
from junction.params import report_params
from junction.strategies.references import REFERENCE_STRATEGIES
from junction.tasks import VERIFIER_MEANINGS

__all__ = ["ROUND_DIGITS", "comparable_traces", "summarise", "write_report", "render_markdown",
           "headline_rows", "run_timings", "html_page", "PAGE_STYLE", "plan_sentence",
           "strategy_times"]

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


def headline_rows(traces: pa.Table) -> list[dict[str, Any]]:
    """``verdicts.headline`` over the trace rows (only the columns it reads), leaving out
    the reference strategies (``REFERENCE_STRATEGIES``: they do not respect the budget)."""
    keys = ("suite", "budget_scale", "strategy", "seed", "task_id")
    columns = [c for c in (*keys, *verdicts.PRIMARY_OUTCOMES) if c in traces.column_names]
    if traces.num_rows == 0:
        return []
    rows = [r for r in traces.select(columns).to_pylist()
            if r["strategy"] not in REFERENCE_STRATEGIES]
    return verdicts.headline(rows)


def _headline_document(headline: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline as ``metrics.json`` holds it: suite -> scale -> best and comparisons."""
    out: dict[str, Any] = {}
    for h in headline:
        out.setdefault(h["suite"], {})[f"budget_scale={h['budget_scale']:g}"] = {
            "outcome": h["outcome"], "best": h["best"],
            "comparisons": {
                c["other"]: {
                    "role": c["role"], "tasks": c["comparison"].n,
                    "difference": _round(c["comparison"].difference),
                    "ci_low": _round(c["comparison"].ci_low),
                    "ci_high": _round(c["comparison"].ci_high),
                    "mcnemar_p": _round(c["comparison"].p_value),
                    "detected": c["comparison"].detected,
                } for c in h["comparisons"]
            },
        }
    return out


LEARNED_STRATEGIES = ("learned_exact", "learned_split")
"""Strategies whose traces carry ``learned_p`` (p(gold) per candidate); both use the same
model, so calibration is read from the first that ran."""


def learned_calibration(traces: pa.Table) -> list[dict[str, Any]]:
    """Calibration of the learned p(gold) on the run's (evaluation) tasks.

    Per suite and budget scale, over every pool candidate of the first of
    ``LEARNED_STRATEGIES`` that ran: candidates, gold candidates, mean p, gold rate, the
    Brier score (``sklearn.metrics.brier_score_loss``: mean squared p − label) and the
    model sha256s (``learned_model``). Rows without ``learned_p`` (a fallback) are left
    out; [] when no learned strategy ran.
    """
    if not traces.num_rows:
        return []
    from sklearn.metrics import brier_score_loss

    rows = traces.select(["suite", "strategy", "budget_scale", "seed", "task_id", "extra_json",
                          "gold_context_ids", "gold_tool_ids"]).to_pylist()
    rows.sort(key=lambda r: (r["suite"], r["budget_scale"], r["seed"], r["task_id"]))
    groups: dict[tuple[str, float], dict[str, Any]] = {}
    for strategy in LEARNED_STRATEGIES:
        for r in rows:
            key = (r["suite"], float(r["budget_scale"]))
            if r["strategy"] != strategy or groups.get(key, {}).get("strategy", strategy) != strategy:
                continue
            extra = json.loads(r["extra_json"] or "{}")
            p = extra.get("learned_p")
            if not p:
                continue
            gold = {*(r["gold_context_ids"] or ()), *(r["gold_tool_ids"] or ())}
            g = groups.setdefault(key, {"strategy": strategy, "y": [], "p": [], "models": set()})
            for rid in sorted(p):
                g["y"].append(int(rid in gold))
                g["p"].append(float(p[rid]))
            g["models"].add(extra["learned_model"])
    out = []
    for (suite, scale), g in sorted(groups.items()):
        n = len(g["y"])
        out.append({"suite": suite, "budget_scale": scale, "strategy": g["strategy"],
                    "candidates": n, "gold": sum(g["y"]),
                    "mean_p": _round(math.fsum(g["p"]) / n), "gold_rate": _round(sum(g["y"]) / n),
                    "brier": _round(float(brier_score_loss(g["y"], g["p"]))),
                    "models": sorted(g["models"])})
    return out


def _calibration_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Learned utility calibration", "",
             "p(gold) of the learned model over every pool candidate of the run's tasks "
             "(evaluation rows only: the model was fitted on the training part). Brier: mean "
             "squared difference of p and the gold label (0 is perfect; a model that knew "
             "only the gold rate r scores r(1 − r)).", "",
             "| suite | budget scale | from | candidates | gold | mean p | gold rate | Brier | model |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | "
                     f"{r['candidates']} | {r['gold']} | {_fmt(r['mean_p'])} | "
                     f"{_fmt(r['gold_rate'])} | {_fmt(r['brier'])} | "
                     f"{', '.join(m[:12] for m in r['models'])} |")
    lines.append("")
    return lines


def metrics_document(summary: list[dict[str, Any]], params: dict[str, Any],
                     suites: dict[str, Any],
                     headline: list[dict[str, Any]] | None = None,
                     calibration: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The content of ``metrics.json``: params, suite load stats, the summary rows, the
    headline and, when a learned strategy ran, ``learned_calibration`` (suite -> scale ->
    ``learned_calibration``'s row); no timings: those are not determined by the inputs."""
    nested: dict[str, Any] = {}
    for row in summary:
        key = f"{row['suite']}"
        scale = f"budget_scale={row['budget_scale']:g}"
        nested.setdefault(key, {}).setdefault(scale, {})[row["strategy"]] = {
            k: v for k, v in row.items() if k not in ("suite", "strategy", "budget_scale")
        }
    doc = {"params": params, "suites": suites, "results": nested}
    if headline is not None:
        doc["headline"] = _headline_document(headline)
    if calibration:
        doc["learned_calibration"] = {
            r["suite"]: {} for r in calibration}
        for r in calibration:
            doc["learned_calibration"][r["suite"]][f"budget_scale={r['budget_scale']:g}"] = {
                k: v for k, v in r.items() if k not in ("suite", "budget_scale")}
    return doc


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table_columns() -> tuple[str, ...]:
    """The per-suite table's columns: task count, then the catalog's ``report_table`` metrics."""
    return ("tasks", *(m.column for m in catalog.METRICS if m.report_table))


def _pct(x: float) -> str:
    return f"{100 * x:+.0f}"


def _headline_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The headline table and one sentence per suite and budget scale."""
    lines = ["## Headline", ""]
    if not headline:
        return lines + ["No task was evaluated.", ""]
    lines.append(
        "Per suite: the best strategy by the primary outcome (agent success where the trace "
        "has it, else verified success), compared with the best strategy that ignores "
        f"interactions ({', '.join(verdicts.INTERACTION_BLIND)}) and with every other "
        "strategy, on the tasks both ran. Differences are in points (percentage points of "
        "success rate), with Newcombe's paired-difference 95% score interval (1998, "
        "method 10) and the exact McNemar test (two-sided binomial test on the discordant "
        f"pairs, scipy's `binomtest`). A difference counts only if its interval excludes 0 "
        f"and p < {verdicts.ALPHA:g}; otherwise it is \"no detectable difference\".")
    lines.append("")
    lines.append("| suite | budget scale | best (rate) | compared with (rate) | tasks | "
                 "difference, points | 95% CI | McNemar p | verdict |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for h in headline:
        best = " = ".join(h["best"])
        rate = h["rates"][h["best"][0]][0]
        if not h["comparisons"]:
            lines.append(f"| {h['suite']} | {h['budget_scale']:g} | {best} ({rate:.2f}) | – | "
                         f"{h['rates'][h['best'][0]][1]} | – | – | – | only strategy |")
        for c in h["comparisons"]:
            cmp = c["comparison"]
            tag = " (best interaction-blind)" if c["role"] == "interaction-blind best" else ""
            verdict = ("difference" if cmp.detected else "no detectable difference")
            lines.append(
                f"| {h['suite']} | {h['budget_scale']:g} | {best} ({cmp.rate_a:.2f}) | "
                f"{c['other']}{tag} ({cmp.rate_b:.2f}) | {cmp.n} | {_pct(cmp.difference)} | "
                f"[{_pct(cmp.ci_low)}, {_pct(cmp.ci_high)}] | {cmp.p_value:.3g} | {verdict} |")
    lines.append("")
    lines.extend(f"- {h['sentence']}" for h in headline)
    lines.append("")
    return lines


def _cell(text: str) -> str:
    """A Markdown table cell: a literal ``|`` escaped so it does not split the cell."""
    return text.replace("|", "\\|")


def _definitions_lines(suites: dict[str, Any]) -> list[str]:
    """Every catalog metric (``junction.metrics.METRICS``) and, per suite, what success means."""
    lines = ["## Definitions", "",
             "Every metric of the catalog (`junction.metrics.METRICS`); the per-suite tables "
             "show those marked *table*, as the mean over tasks where the metric is defined.",
             "", "| metric | summary column | definition | undefined when | unit and range | "
             "better | shown in | source |", "|---|---|---|---|---|---|---|---|"]
    for m in catalog.METRICS:
        shown = ", ".join(w for w, on in (("table", m.report_table), ("diff", m.diff)) if on)
        cells = (m.name, m.column, m.definition, m.undefined_when or "–", m.unit, m.direction,
                 shown or "metrics.json", m.source)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    lines.append("The lane metrics (`*_lane_*`) rank the first-stage BM25 candidate lanes, "
                 "before any strategy selects, not a strategy's selection.")
    lines.append("")
    lines.append("What verified success (`success`) means per suite:")
    lines.append("")
    for name in sorted(suites):
        info = suites[name]
        kinds = info.get("verifier_kinds")
        if kinds:
            meaning = "; or ".join(VERIFIER_MEANINGS.get(k, k) for k in kinds)
            kind_text = ", ".join(f"`{k}`" for k in kinds)
            lines.append(f"- **{name}** (verifier {kind_text}): success when {meaning}.")
        else:
            lines.append(f"- **{name}**: verifier kind not recorded for this run; "
                         f"{info.get('note') or 'no note'}.")
    lines.append("")
    return lines


def run_timings(root: str, run_id: str) -> pa.Table | None:
    """The ``timings`` view's rows of one run, or None when the run has none."""
    from junction.warehouse import Warehouse

    table = Warehouse(root).query(
        "SELECT suite, strategy, select_ms, execute_ms, total_ms FROM timings WHERE run_id = ?",
        [run_id])
    return table if table.num_rows else None


def _cost_lines(traces: pa.Table, timings: pa.Table | None) -> list[str]:
    """Selection and execution time per strategy, and selections not proven optimal."""
    lines = ["## Cost", ""]
    con = duckdb.connect(":memory:")
    try:
        con.register("traces", traces.select(["strategy", "selection_status"]))
        status = con.sql("SELECT strategy, selection_status, count(*) AS n FROM traces "
                         "GROUP BY ALL ORDER BY ALL").fetchall()
        times: dict[str, tuple] = {}
        if timings is not None:
            con.register("timings", timings)
            for row in con.sql(
                    "SELECT strategy, count(*), sum(select_ms) / 1000, avg(select_ms), "
                    "sum(execute_ms) / 1000, sum(total_ms) / 1000 FROM timings "
                    "GROUP BY strategy ORDER BY strategy").fetchall():
                times[row[0]] = row[1:]
    finally:
        con.close()
    by_strategy: dict[str, dict[str, int]] = {}
    for strategy, state, n in status:
        by_strategy.setdefault(strategy, {})[state] = n
    grand = sum(t[4] for t in times.values()) or None
    lines.append("Wall-clock time from the `timings` view (kept out of `metrics.json`). "
                 "*Not proven optimal* counts selections whose `selection_status` is not "
                 "`optimal`, for strategies that claim optimality (any `optimal` status); "
                 "heuristic strategies show –.")
    lines.append("")
    lines.append("| strategy | tasks | selection s | selection ms/task | execution s | "
                 "share of run time | not proven optimal |")
    lines.append("|---|---|---|---|---|---|---|")
    for strategy in sorted(set(by_strategy) | set(times)):
        counts = by_strategy.get(strategy, {})
        if "optimal" in counts or strategy == "exact":
            others = {k: v for k, v in counts.items() if k != "optimal"}
            unproven = str(sum(others.values()))
            if others:
                unproven += " (" + ", ".join(f"{k} {v}" for k, v in sorted(others.items())) + ")"
        else:
            unproven = "– (" + ", ".join(sorted(counts)) + ")"
        t = times.get(strategy)
        cells = (("–",) * 5 if t is None else
                 (str(t[0]), f"{t[1]:.2f}", f"{t[2]:.1f}", f"{t[3]:.2f}",
                  f"{t[4] / grand:.0%}" if grand else "–"))
        lines.append(f"| {strategy} | " + " | ".join(cells) + f" | {unproven} |")
    if timings is None:
        lines.append("")
        lines.append("No timing rows were found for this run.")
    lines.append("")
    return lines


def plan_sentence(strategy: str, max_tasks: int | None, scales: list[float] | None) -> str:
    """One strategy's limits in words: "judge_admission: 8 tasks per suite at scale 1 only"."""
    parts = []
    if max_tasks is not None:
        parts.append(f"{max_tasks} tasks per suite (fewer where the suite has fewer)")
    if scales is not None:
        parts.append(f"at scale{'s' if len(scales) > 1 else ''} "
                     f"{', '.join(f'{x:g}' for x in scales)} only")
    return f"{strategy}: " + " ".join(parts)


def _plan_lines(params: dict[str, Any]) -> list[str]:
    """The run's per-strategy limits (``strategy_size``, ``strategy_scales``), if any."""
    sizes = params.get("strategy_size") or {}
    scales = params.get("strategy_scales") or {}
    limited = sorted(set(sizes) | set(scales))
    if not limited:
        return []
    others = [s for s in params.get("strategies", []) if s not in limited]
    text = "; ".join(plan_sentence(s, sizes.get(s), scales.get(s)) for s in limited)
    tail = (f"; {', '.join(others)}: every task in the Suites table at every budget scale"
            if others else "")
    return [f"- per-strategy plan: {text}{tail}. The headline pairs strategies on the tasks "
            "both ran, so a smaller sample is compared on its own tasks only."]


def _agent_lines(params: dict[str, Any]) -> list[str]:
    """The run's agent sample (``agent_size``; absent in runs before the agent)."""
    if "agent_size" not in params or params["agent_size"] == 0:
        return []
    n = params["agent_size"]
    sample = "every task" if n is None else f"{n} task{'s' if n != 1 else ''}"
    return [f"- agent: a language-model agent acted on {sample} of each BFCL suite (the "
            "suite's own sample), for every strategy and reference, at budget scale 1 "
            "(`agent_success`, graded by BFCL's checker; the model's sha256 is in the traces)."]


def render_markdown(run: dict[str, Any], summary: list[dict[str, Any]],
                    suites: dict[str, Any], plot_name: str | None, *,
                    headline: list[dict[str, Any]] | None = None,
                    cost: list[str] | None = None,
                    plot_note: str = "", time_plot_name: str | None = None,
                    calibration: list[dict[str, Any]] | None = None,
                    joint_split: list[dict[str, Any]] | None = None) -> str:
    """The Markdown report: run header, headline, joint versus split, suites, one table
    per suite, budget curves, learned calibration, cost and definitions."""
    lines = [f"# Junction benchmark report: run `{run['run_id']}`", ""]
    lines.append(f"- commit: `{run.get('git_commit') or 'unknown'}`"
                 + (" (dirty working tree)" if run.get("git_dirty") else ""))
    params = run.get("params", {})
    lines.append(f"- strategies: {', '.join(params.get('strategies', []))}")
    lines.append(f"- seeds: {params.get('seeds')}; budget scales: {params.get('budget_scales')}")
    lines.extend(_plan_lines(params))
    lines.extend(_agent_lines(params))
    lines.append(f"- started {run.get('started_at')}, finished {run.get('finished_at')}")
    lines.append("")
    if headline is not None:
        lines.extend(_headline_lines(headline))
    lines.extend(joint_split_lines(joint_split or []))
    for name, reason in sorted((run.get("suites_skipped") or {}).items()):
        lines.append(f"- suite {name} was skipped: {reason}")
    if run.get("suites_skipped"):
        lines.append("")
    lines.append("Every strategy ran on the same tasks under the same budget. "
                 "Means skip tasks where a metric is undefined (–); see Definitions. "
                 "`success_rate` is the retrieval proxy (`retrieval_success`); "
                 "`agent_success_rate` is a language-model agent acting on the exposed set, "
                 "graded by BFCL's checker, on the agent sample of each BFCL suite only "
                 "(Suites: `agent`) at budget scale 1.")
    lines.append("")
    lines.append("## Suites")
    lines.append("")
    lines.append("| suite | tasks run | rows loaded | rows skipped | sampling | note |")
    lines.append("|---|---|---|---|---|---|")
    for name in sorted(suites):
        info = suites[name]
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(info.get("rows_skipped", {}).items()))
        fewer = dict(info.get("strategy_tasks") or {})
        if info.get("agent_tasks"):
            fewer["agent"] = info["agent_tasks"]
        tasks = str(info.get("tasks")) + (
            " (" + ", ".join(f"{k}: {v}" for k, v in sorted(fewer.items())) + ")" if fewer else "")
        lines.append(f"| {name} | {tasks} | {info.get('rows_loaded')} | "
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
        rows = by_suite[suite]
        for row in (r for r in rows if r["strategy"] not in REFERENCE_STRATEGIES):
            cells = " | ".join(_fmt(row[c]) for c in columns)
            lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
        lines.append("")
        references = [r for r in rows if r["strategy"] in REFERENCE_STRATEGIES]
        if references:
            lines.append("References, outside the budget (bfcl_listed: the row's own listed "
                         "functions, BFCL's setting; all_tools: the whole pool); never "
                         "named best:")
            lines.append("")
            lines.append("| reference | budget scale | " + " | ".join(columns) + " |")
            lines.append("|---|---|" + "---|" * len(columns))
            for row in references:
                cells = " | ".join(_fmt(row[c]) for c in columns)
                lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
            lines.append("")
    if plot_name:
        lines.append("## Success against budget")
        lines.append("")
        lines.append("Verified success rate per strategy against the token-budget scale, one "
                     "panel per suite; bars are Wilson 95% intervals (scipy). "
                     + (plot_note or "Every budget scale that ran is shown."))
        lines.append("")
        lines.append(f"![success against budget]({plot_name})")
        lines.append("")
    lines.extend(_calibration_lines(calibration or []))
    if cost:
        lines.extend(cost)
    if time_plot_name:
        lines.append("Selection and execution time per strategy (seconds summed over the run's "
                     "tasks, log scale; from `timings`, never in `metrics.json`):")
        lines.append("")
        lines.append(f"![selection and execution time per strategy]({time_plot_name})")
        lines.append("")
    lines.extend(_definitions_lines(suites))
    return "\n".join(lines)


def _plot(summary: list[dict[str, Any]], path: Path) -> str:
    """Small multiples of success rate against budget scale (one panel per suite, one line
    per strategy, Wilson 95% intervals). Returns a note on anything left out ("" if none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = sorted({r["suite"] for r in summary})
    strategies = sorted({r["strategy"] for r in summary})
    cols = min(3, len(suites))
    nrows = math.ceil(len(suites) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows + 0.6),
                             squeeze=False, sharey=True)
    offsets = {s: (i - (len(strategies) - 1) / 2) * 0.015 for i, s in enumerate(strategies)}
    for ax, suite in zip(axes.flat, suites):
        for strategy in strategies:
            rows = sorted((r for r in summary if r["suite"] == suite and r["strategy"] == strategy
                           and r["success_rate"] is not None), key=lambda r: r["budget_scale"])
            if not rows:
                continue
            xs = [r["budget_scale"] * (1 + offsets[strategy]) for r in rows]
            ys = [r["success_rate"] for r in rows]
            cis = [verdicts.wilson_interval(round(r["success_rate"] * r["tasks"]), r["tasks"])
                   for r in rows]
            err = [[y - lo for y, (lo, _) in zip(ys, cis)], [hi - y for y, (_, hi) in zip(ys, cis)]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=strategy)
        scales = sorted({r["budget_scale"] for r in summary if r["suite"] == suite})
        ax.set_xscale("log", base=2)
        ax.set_xticks(scales, [f"{x:g}" for x in scales])
        ax.set_xlim(scales[0] / 1.6, scales[-1] * 1.6)
        ax.minorticks_off()
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(suite, fontsize=9)
        ax.set_xlabel("budget scale", fontsize=8)
    for ax in list(axes.flat)[len(suites):]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("verified success rate")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(strategies), fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
    scales = sorted({r["budget_scale"] for r in summary})
    if len(scales) == 1:
        return (f"Only budget scale {scales[0]:g} ran, so each panel has one point per "
                "strategy; `--budget-scale 0.5 --budget-scale 1 --budget-scale 2` draws curves.")
    return ""


def strategy_times(timings: pa.Table) -> list[tuple[str, float, float]]:
    """(strategy, selection s, execution s) per strategy from ``timings`` rows, by name."""
    con = duckdb.connect(":memory:")
    try:
        con.register("timings", timings)
        return [(r[0], float(r[1] or 0.0), float(r[2] or 0.0)) for r in con.sql(
            "SELECT strategy, sum(select_ms) / 1000, sum(execute_ms) / 1000 FROM timings "
            "GROUP BY strategy ORDER BY strategy").fetchall()]
    finally:
        con.close()


def _time_plot(timings: pa.Table, path: Path) -> None:
    """Horizontal bars: selection and execution seconds per strategy (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = strategy_times(timings)
    fig, ax = plt.subplots(figsize=(7, 0.7 * len(rows) + 1.4))
    ys = range(len(rows))
    floor = 1e-3  # a log axis cannot show 0 s: bars start at 1 ms
    for offset, (label, index) in ((-0.2, ("selection", 1)), (0.2, ("execution", 2))):
        values = [max(r[index], floor) for r in rows]
        bars = ax.barh([y + offset for y in ys], values, height=0.38, label=label)
        for bar, r in zip(bars, rows):
            ax.text(bar.get_width() * 1.1, bar.get_y() + bar.get_height() / 2,
                    f"{r[index]:.3g} s", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yticks(list(ys), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds, summed over the run's tasks (log scale)")
    top = max([max(r[1], r[2]) for r in rows] + [floor])
    ax.set_xlim(floor / 2, top * 8)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("selection and execution time per strategy", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)


PAGE_STYLE = ("body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;"
              "overflow-wrap:break-word}"
              "img{max-width:100%;height:auto}"
              ".table-wrap{overflow-x:auto;max-width:100%}"
              "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}")
"""The report page's CSS: images scale to the page width, wide tables scroll in their box."""


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (no remote fonts or scripts); tables wrapped to scroll."""
    body = body.replace("<table>", "<div class='table-wrap'><table>").replace(
        "</table>", "</table></div>")
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{PAGE_STYLE}</style></head><body>"
            + body + "</body></html>")


def write_report(out_dir: Path, run: dict[str, Any], traces: pa.Table,
                 suites: dict[str, Any], timings: pa.Table | None = None) -> dict[str, Path]:
    """Write metrics.json, run.json, report.md, report.html, plot.png (success against budget)
    and time.png (selection and execution time per strategy) under ``out_dir``.

    ``timings``: the run's rows of the ``timings`` view (``run_timings``), shown in the
    report's cost table and time.png only (never metrics.json); no timings, no time.png. Each file is written to a temporary name and renamed.
    Returns name -> path.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    every_trace = traces  # the cost table counts every selection, clock-stopped ones too
    traces, clock_stopped = comparable_traces(traces)
    run = {**run, "rows_stopped_by_clock": clock_stopped}
    summary = summarise(traces)
    headline = headline_rows(traces)
    plot_path = out_dir / "plot.png"
    plot_note = ""
    if summary:
        tmp_plot = out_dir / ".plot.tmp.png"
        plot_note = _plot(summary, tmp_plot)
        tmp_plot.replace(plot_path)
        limited = (run.get("params") or {}).get("strategy_scales") or {}
        if limited:  # a strategy the plan runs at fewer scales has fewer points, by design
            plot_note = (plot_note + " " if plot_note else "Every budget scale that ran is "
                         "shown; ") + "; ".join(
                f"{k} ran at scale{'s' if len(v) > 1 else ''} {', '.join(f'{x:g}' for x in v)} "
                "only (the per-strategy plan)" for k, v in sorted(limited.items())) + "."
    cost = _cost_lines(every_trace, timings) if every_trace.num_rows else None
    time_path = out_dir / "time.png"
    has_times = timings is not None and timings.num_rows > 0
    if has_times:
        tmp_time = out_dir / ".time.tmp.png"
        _time_plot(timings, tmp_time)
        tmp_time.replace(time_path)
    calibration = learned_calibration(traces)
    columns = [c for c in ("suite", "budget_scale", "strategy", "seed", "task_id", *MEASURES)
               if c in traces.column_names]
    joint_split = joint_split_verdicts(traces.select(columns).to_pylist()
                                       if traces.num_rows else [])
    md = render_markdown(run, summary, suites, plot_path.name if summary else None,
                         headline=headline, cost=cost, plot_note=plot_note,
                         time_plot_name=time_path.name if has_times and cost else None,
                         calibration=calibration, joint_split=joint_split)
    body = markdown_lib.markdown(md, extensions=["tables"])
    page = html_page("Junction run " + run["run_id"], body)
    metrics = metrics_document(summary, report_params(run.get("params", {})), suites, headline,
                               calibration)
    if joint_split:
        metrics["joint_split"] = joint_split
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
    if has_times:
        paths["time.png"] = time_path
    return paths
