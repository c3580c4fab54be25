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

from junction.evidence import metrics as catalog
from junction.evidence import plots, verdicts
from junction.evidence.calibration import ROUND_DIGITS, learned_calibration
from junction.evidence.joint_split import MEASURES, joint_split_lines, joint_split_verdicts
from junction.evidence.params import report_params
from junction.strategies.catalog import STRATEGIES, strategies_where, strategy_info
from junction.tasks import VERIFIER_MEANINGS

__all__ = ["ROUND_DIGITS", "comparable_traces", "summarise", "write_report", "render_markdown",
           "headline_rows", "run_timings", "html_page", "PAGE_STYLE", "plan_sentence",
           "agent_rows", "agent_pairs", "agent_fit", "primary_scale", "verdict_lines", "run_summary",
           "REFERENCE_NOTE"]


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
    from junction.evidence.warehouse import view_statement

    con = duckdb.connect(":memory:")
    try:
        con.register("traces", traces)
        con.execute(view_statement("strategy_summary"))  # the warehouse's own definition
        rows = con.sql("SELECT * EXCLUDE (run_id) FROM strategy_summary "
                       "ORDER BY suite, strategy, budget_scale").to_arrow_table().to_pylist()
    finally:
        con.close()
    return [{k: _round(v) for k, v in row.items()} for row in rows]


REFERENCE_STRATEGIES = strategies_where(respects_budget=False)
"""Strategies outside the budget (the catalog's ``respects_budget``): shown apart, never
named best."""


def headline_rows(traces: pa.Table) -> list[dict[str, Any]]:
    """``verdicts.headline`` over the trace rows (only the columns it reads), leaving out
    the reference strategies (``REFERENCE_STRATEGIES``: they do not respect the budget).

    Each comparison also gets ``identical_sets``: on how many of its shared tasks (both
    outcomes set) the two strategies exposed the same contexts and tools. Those tasks are
    concordant by construction: the same exposed set is the same prompt, hence the same
    greedy generation.
    """
    keys = ("suite", "budget_scale", "strategy", "seed", "task_id")
    columns = [c for c in (*keys, *verdicts.PRIMARY_OUTCOMES) if c in traces.column_names]
    if traces.num_rows == 0:
        return []
    rows = [r for r in traces.select(columns).to_pylist()
            if r["strategy"] not in REFERENCE_STRATEGIES]
    out = verdicts.headline(rows)
    exposed = {}
    if {"exposed_context_ids", "exposed_tool_ids"} <= set(traces.column_names):
        for r in traces.select([*keys, "exposed_context_ids", "exposed_tool_ids",
                                *(c for c in verdicts.PRIMARY_OUTCOMES
                                  if c in traces.column_names)]).to_pylist():
            exposed[(r["suite"], float(r["budget_scale"]), r["strategy"], r["seed"],
                     r["task_id"])] = (r, _exposed_set(r))
    for h in out:
        for c in h["comparisons"]:
            both = {}
            for name in (h["best"][0], c["other"]):
                both[name] = {(k[3], k[4]): v for k, v in exposed.items()
                              if k[:3] == (h["suite"], h["budget_scale"], name)
                              and v[0].get(h["outcome"]) is not None}
            shared = set(both[h["best"][0]]) & set(both[c["other"]])
            c["identical_sets"] = sum(both[h["best"][0]][k][1] == both[c["other"]][k][1]
                                      for k in shared)
    return out


def _exposed_set(row: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
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
        entry["sets"].add((r["seed"], r["task_id"], _exposed_set(r)))
    return {s: {"agent_evaluations": e["agent_evaluations"],
                "distinct_exposed_sets": len(e["sets"])} for s, e in sorted(out.items())}


def _headline_document(headline: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline as ``metrics.json`` holds it: suite -> scale -> best and comparisons."""
    out: dict[str, Any] = {}
    for h in headline:
        cell = out.setdefault(h["suite"], {})[f"budget_scale={h['budget_scale']:g}"] = {
            "outcome": h["outcome"], "best": h["best"],
            "comparisons": {
                c["other"]: {
                    "role": c["role"], "tasks": c["comparison"].n,
                    "difference": _round(c["comparison"].difference),
                    "ci_low": _round(c["comparison"].ci_low),
                    "ci_high": _round(c["comparison"].ci_high),
                    "mcnemar_p": _round(c["comparison"].p_value),
                    "detected": c["comparison"].detected,
                    "decides": c["comparison"].n >= verdicts.MIN_DECIDING_TASKS,
                    "identical_exposed_sets": c.get("identical_sets"),
                } for c in h["comparisons"]
            },
        }
        if h.get("passed_over"):
            cell["passed_over"] = dict(sorted(h["passed_over"].items()))
    return out


def agent_rows(traces: pa.Table) -> list[dict[str, Any]]:
    """``verdicts.outcome_table`` of ``agent_success`` over every strategy, references
    included; [] when the traces have no agent outcome."""
    if "agent_success" not in traces.column_names or traces.num_rows == 0:
        return []
    rows = traces.select(["suite", "budget_scale", "strategy", "seed", "task_id",
                          "agent_success"]).to_pylist()
    return verdicts.outcome_table(rows, "agent_success")


def primary_scale(scales: list[float]) -> float:
    """The budget scale a first screen reports: 1 when it ran, else the one nearest to 1
    on a log scale (the smaller on a tie)."""
    if 1.0 in scales:
        return 1.0
    return min(scales, key=lambda x: (abs(math.log(x)) if x > 0 else math.inf, x))


_OUTCOME_WORDS = {"agent_success": "agent success", "success": "verified success"}


def verdict_lines(headline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per suite at its ``primary_scale``, from ``verdicts.headline``'s rows:
    {suite, budget_scale, outcome, n, status, text}. ``status``: "detected", "none" (no
    detectable difference), "too few" (the first comparison shares fewer than
    ``verdicts.MIN_DECIDING_TASKS`` tasks) or "alone" (nothing to compare with)."""
    by_suite: dict[str, dict[float, dict[str, Any]]] = {}
    for h in headline:
        by_suite.setdefault(h["suite"], {})[h["budget_scale"]] = h
    out = []
    for suite, cells in sorted(by_suite.items()):
        scale = primary_scale(sorted(cells))
        h = cells[scale]
        words = _OUTCOME_WORDS.get(h["outcome"], h["outcome"])
        if not h["comparisons"]:
            rate, n = h["rates"][h["best"][0]]
            out.append({"suite": suite, "budget_scale": scale, "outcome": h["outcome"], "n": n,
                        "status": "alone",
                        "text": f"**{suite}** (budget × {scale:g}, {words}, n = {n}): only "
                                f"{' = '.join(h['best'])} ran ({_percent(rate)})."})
            continue
        c = h["comparisons"][0]
        cmp = c["comparison"]
        best = h["best"][0]
        points = (f"{_pct(cmp.difference)} points [{_pct(cmp.ci_low)}, {_pct(cmp.ci_high)}]")
        rates = f"{best} {_percent(cmp.rate_a)} against {c['other']} {_percent(cmp.rate_b)}"
        if cmp.n < verdicts.MIN_DECIDING_TASKS:
            status, verdict = "too few", f"too few tasks to decide; {rates}, {points}"
        elif cmp.detected:
            status, verdict = "detected", f"{best} beats {c['other']} by {points} ({rates})"
        else:
            status, verdict = "none", (f"no detectable difference between {best} and "
                                       f"{c['other']}, {points} ({rates})")
        tie = (f" Tied for best: {', '.join(h['best'])}." if len(h["best"]) > 1 else "")
        passed = "".join(f" Not decided on {_OUTCOME_WORDS.get(k, k)}: {verdicts.too_few(v)}."
                         for k, v in sorted(h.get("passed_over", {}).items()))
        out.append({"suite": suite, "budget_scale": scale, "outcome": h["outcome"], "n": cmp.n,
                    "status": status,
                    "text": f"**{suite}** (budget × {scale:g}, {words}, n = {cmp.n}): "
                            f"{verdict}.{tie}{passed}"})
    return out


def run_summary(lines: list[dict[str, Any]]) -> str:
    """One sentence over ``verdict_lines``: where a difference was detected, where not, and
    which suites are too small to decide."""
    if not lines:
        return "No task was evaluated."
    groups = {status: [v["suite"] for v in lines if v["status"] == status]
              for status in ("detected", "none", "too few", "alone")}
    parts = []
    if groups["detected"]:
        parts.append(f"a difference is detected on {', '.join(groups['detected'])}")
    if groups["none"]:
        parts.append(f"no detectable difference on {', '.join(groups['none'])}")
    if groups["too few"]:
        parts.append(f"too few tasks to decide (under {verdicts.MIN_DECIDING_TASKS} shared) "
                     f"on {', '.join(groups['too few'])}")
    if groups["alone"]:
        parts.append(f"a single strategy on {', '.join(groups['alone'])}")
    text = "; ".join(parts)
    return (f"Of {len(lines)} suite{'s' if len(lines) != 1 else ''} at the primary budget "
            f"scale: {text}.")


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


def _percent(rate: float) -> str:
    return catalog.format_value("percent", rate)


def _table_cell(column: str, value: Any) -> str:
    """A per-suite table cell, printed as the catalog's ``display`` for that column says."""
    display = {m.column: m.display for m in catalog.METRICS}.get(column)
    if display is None:
        return _fmt(value)
    return catalog.format_value(display, value)


def _table_columns() -> tuple[str, ...]:
    """The per-suite table's columns: task count, then the catalog's ``report_table`` metrics."""
    return ("tasks", *(m.column for m in catalog.METRICS if m.report_table))


def _pct(x: float) -> str:
    return f"{100 * x:+.0f}"


def _first_screen_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The report's first screen: one verdict line per suite (``verdict_lines``) inside
    ``<!-- verdicts -->`` markers (the HTML page turns them into ``<div id="verdicts">``),
    then the one-sentence ``run_summary``."""
    lines = ["## Headline", ""]
    found = verdict_lines(headline)
    if not found:
        return lines + ["No task was evaluated.", ""]
    lines += ["<!-- verdicts -->", ""]
    lines += [f"- {v['text']}" for v in found]
    lines += ["", "<!-- /verdicts -->", "", run_summary(found), ""]
    return lines


def _headline_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The full comparison table: every suite, budget scale and comparison. In the HTML
    page it sits in a closed ``<details>`` block (``<!-- details -->`` markers)."""
    lines = ["## Full comparison", ""]
    if not headline:
        return lines + ["No task was evaluated.", ""]
    lines.append(
        "Per suite: the best strategy by the primary outcome, compared with the best strategy "
        "that ignores interactions "
        f"({', '.join(verdicts.INTERACTION_BLIND)}) and with every other "
        "strategy, on the tasks both ran. The primary outcome is agent success where the "
        f"compared strategies share at least {verdicts.MIN_DECIDING_TASKS} tasks with an agent "
        "outcome, else verified success (see Definitions). Differences are in points "
        "(percentage points of success rate), with Newcombe's paired-difference 95% score "
        "interval (1998, method 10) and the exact McNemar test (two-sided binomial test on "
        "the discordant pairs, scipy's `binomtest`). A difference counts only if its "
        f"interval excludes 0 and p < {verdicts.ALPHA:g}; otherwise it is \"no detectable "
        f"difference\"; on fewer than {verdicts.MIN_DECIDING_TASKS} shared tasks it is "
        "\"too few tasks to decide\".")
    lines += ["", "<!-- details -->", ""]
    lines.append("| suite | budget scale | outcome | best (rate) | compared with (rate) | tasks | "
                 "difference, points | 95% CI | McNemar p | verdict |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for h in headline:
        best = " = ".join(h["best"])
        rate = h["rates"][h["best"][0]][0]
        if not h["comparisons"]:
            n = h["rates"][h["best"][0]][1]
            lines.append(f"| {h['suite']} | {h['budget_scale']:g} | {h['outcome']} | {best} "
                         f"({_percent(rate)}) | – | {n} | – | – | – | only strategy |")
        for c in h["comparisons"]:
            cmp = c["comparison"]
            tag = " (best interaction-blind)" if c["role"] == "interaction-blind best" else ""
            verdict = ("difference" if cmp.detected else "no detectable difference")
            if cmp.n < verdicts.MIN_DECIDING_TASKS:
                verdict += f"; {verdicts.too_few(cmp.n)}"
            lines.append(
                f"| {h['suite']} | {h['budget_scale']:g} | {h['outcome']} | {best} "
                f"({_percent(cmp.rate_a)}) | {c['other']}{tag} ({_percent(cmp.rate_b)}) | "
                f"{cmp.n} | {_pct(cmp.difference)} | [{_pct(cmp.ci_low)}, {_pct(cmp.ci_high)}] "
                f"| {cmp.p_value:.2g} | {verdict} |")
    same = [f"{h['suite']} × {h['budget_scale']:g}, {h['best'][0]} against {c['other']}: "
            f"{c['identical_sets']} of {c['comparison'].n}"
            for h in headline for c in h["comparisons"] if c.get("identical_sets")]
    if same:
        lines.append("")
        lines.append("Shared tasks on which both strategies exposed the identical set (the "
                     "same prompt: concordant by construction, so only the others can "
                     "differ): " + "; ".join(same) + ".")
    lines += ["", "<!-- /details -->", ""]
    return lines


def _agent_table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Agent success per suite, scale and strategy (references too): n, rate, Wilson 95%
    interval, and whether n reaches ``verdicts.MIN_DECIDING_TASKS``."""
    if not rows:
        return []
    lines = ["## Agent outcome", "",
             "`agent_success` per strategy on the agent sample, with its Wilson 95% interval "
             "(scipy). It decides a headline cell only where the compared strategies share at "
             f"least {verdicts.MIN_DECIDING_TASKS} tasks with an agent outcome; below that "
             "it is shown here only.", "",
             "| suite | budget scale | strategy | n | agent success | 95% CI | decides |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        decides = "yes" if r["decides"] else verdicts.too_few(r["n"])
        lines.append(f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | {r['n']} | "
                     f"{r['successes']}/{r['n']} = {_percent(r['rate'])} | "
                     f"[{_percent(r['ci_low'])}, {_percent(r['ci_high'])}] | {decides} |")
    lines.append("")
    return lines


AGENT_JOINT = strategies_where(sees_interactions=True)
"""Strategies that use context–tool interactions (the catalog's ``sees_interactions``):
the joint side of the agent's paired comparisons."""


def agent_pairs(traces: pa.Table) -> list[dict[str, Any]]:
    """``agent_success`` of each joint strategy (``AGENT_JOINT``) against each
    interaction-blind one (``verdicts.INTERACTION_BLIND``) that has agent rows in the same
    suite and budget scale, paired on (seed, task_id): {suite, budget_scale, a, b, n,
    rate_a, rate_b, difference, ci_low, ci_high, p_value, identical_sets}; the interval is
    Newcombe's paired 95% and p the exact McNemar test (``verdicts.paired_comparison``);
    ``identical_sets``: shared tasks where both exposed the same set (concordant by
    construction). [] without agent rows."""
    if traces.num_rows == 0 or "agent_success" not in traces.column_names:
        return []
    values: dict[tuple[str, float, str], dict[tuple, tuple[bool, Any]]] = {}
    for r in traces.select(["suite", "budget_scale", "strategy", "seed", "task_id",
                            "agent_success", "exposed_context_ids",
                            "exposed_tool_ids"]).to_pylist():
        if r["agent_success"] is not None:
            values.setdefault((r["suite"], float(r["budget_scale"]), r["strategy"]), {})[
                (r["seed"], r["task_id"])] = (bool(r["agent_success"]), _exposed_set(r))
    out = []
    for suite, scale in sorted({(s, x) for s, x, _ in values}):
        for a in AGENT_JOINT:
            for b in verdicts.INTERACTION_BLIND:
                va, vb = values.get((suite, scale, a)), values.get((suite, scale, b))
                shared = sorted(set(va or {}) & set(vb or {}))
                if not shared:
                    continue
                cmp = verdicts.paired_comparison([va[k][0] for k in shared],
                                                 [vb[k][0] for k in shared])
                out.append({"suite": suite, "budget_scale": scale, "a": a, "b": b,
                            "n": cmp.n, "rate_a": cmp.rate_a, "rate_b": cmp.rate_b,
                            "difference": cmp.difference, "ci_low": cmp.ci_low,
                            "ci_high": cmp.ci_high, "p_value": cmp.p_value,
                            "identical_sets": sum(va[k][1] == vb[k][1] for k in shared)})
    return out


def _agent_pair_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The agent's joint-against-split table (``agent_pairs``); empty without rows."""
    if not rows:
        return []
    lines = ["Agent success of each joint strategy against each interaction-blind one on "
             "the tasks both ran (difference A − B in points, Newcombe's paired 95% "
             "interval, exact McNemar p; identical: shared tasks where both exposed the "
             "same set, concordant by construction).", "",
             "| suite | budget scale | A − B | n | A | B | difference [95% CI] | McNemar p | "
             "identical sets |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        decides = "" if r["n"] >= verdicts.MIN_DECIDING_TASKS else f" ({verdicts.too_few(r['n'])})"
        lines.append(
            f"| {r['suite']} | {r['budget_scale']:g} | {r['a']} − {r['b']} | {r['n']} | "
            f"{_percent(r['rate_a'])} | {_percent(r['rate_b'])} | {_pct(r['difference'])} "
            f"[{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]{decides} | {r['p_value']:.2g} | "
            f"{r['identical_sets']} of {r['n']} |")
    lines.append("")
    return lines


def _cell(text: str) -> str:
    """A Markdown table cell: a literal ``|`` escaped so it does not split the cell."""
    return text.replace("|", "\\|")


_DISPLAY_WORDS = {"percent": "percent, no decimals", "integer": "whole number",
                  "decimals2": "2 decimals"}


def _definitions_lines(suites: dict[str, Any]) -> list[str]:
    """Every catalog metric (``junction.evidence.metrics.METRICS``) and, per suite, what success means."""
    lines = ["## Definitions", "",
             "Every metric of the catalog (`junction.evidence.metrics.METRICS`); the per-suite tables "
             "show those marked *table*, as the mean over tasks where the metric is defined.",
             "", "| metric | summary column | definition | undefined when | unit and range | "
             "better | shown in | source | printed as |", "|---|---|---|---|---|---|---|---|---|"]
    for m in catalog.METRICS:
        shown = ", ".join(w for w, on in (("table", m.report_table), ("diff", m.diff)) if on)
        cells = (m.name, m.column, m.definition, m.undefined_when or "–", m.unit, m.direction,
                 shown or "metrics.json", m.source, _DISPLAY_WORDS[m.display])
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    lines.append("The lane metrics (`*_lane_*`) rank the first-stage BM25 candidate lanes, "
                 "before any strategy selects, not a strategy's selection.")
    lines.append("")
    lines.append(f"Which outcome decides a verdict: agent success decides a (suite, budget "
                 f"scale) cell only when two of its compared strategies share at least "
                 f"{verdicts.MIN_DECIDING_TASKS} tasks with an agent outcome "
                 f"(`junction.evidence.verdicts.MIN_DECIDING_TASKS`); otherwise the cell is decided on "
                 "verified success and the agent numbers appear in the Agent outcome table "
                 "only. Below that many shared tasks a verdict reads \"too few tasks to decide "
                 "(n = …)\": at 20 tasks a Wilson 95% interval of a 50% rate is already "
                 "[30%, 70%], and the exact McNemar test needs 6 discordant pairs all one way "
                 "to reach p < 0.05.")
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
    from junction.evidence.warehouse import Warehouse

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
    lines.append("| strategy | tasks | selection | selection per task | execution | "
                 "share of run time | not proven optimal |")
    lines.append("|---|---|---|---|---|---|---|")
    for strategy in sorted(set(by_strategy) | set(times)):
        counts = by_strategy.get(strategy, {})
        if "optimal" in counts or (strategy in STRATEGIES and strategy_info(strategy).claims_optimal):
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


MEMORY_REFERENCE_NOTE = (
    "On this suite bfcl_listed shows what BFCL's own setting gives the model: the memory "
    "API plus the scenario's whole prior conversation (every turn, outside the budget), "
    "which BFCL replays to the model before it asks the question; Junction's single-turn "
    "agent reads the turns as documents. Its agent success is what the agent does when "
    "nothing is selected away, the budgeted strategies' ceiling for this agent; its "
    "verified success is 100% by construction (every turn is exposed). A conversation "
    "longer than the agent's context window (with the memory API's 2,148 tokens, four of "
    "the five scenarios exceed the embedded agent's 8,192 tokens) is cut: the agent sees "
    "the most recent turns that fit, the prompt says how many earlier ones were left out, "
    "and the trace lists them (`agent_dropped_context_ids`); an answer in a left-out turn "
    "is then out of the agent's reach.")
"""The reference note of the bfcl-memory suites (what ``bfcl_listed`` exposes there:
``junction.strategies.references``; the window rule: ``junction.agent.llm.fit_prompt``;
2,148 tokens: the memory_kv API's prompt with no document, Qwen2.5's tokenizer)."""


def agent_fit(traces: pa.Table) -> dict[tuple[str, str], dict[str, int]]:
    """Per (suite, strategy) with agent rows whose prompt left contexts out
    (``agent_dropped_context_ids``): ``{"agent_evaluations", "cut", "contexts_exposed",
    "contexts_left_out"}`` (counts summed over the agent rows); {} when none was cut."""
    needed = {"agent_success", "agent_dropped_context_ids", "exposed_context_ids"}
    if traces.num_rows == 0 or not needed <= set(traces.column_names):
        return {}
    out: dict[tuple[str, str], dict[str, int]] = {}
    for r in traces.select(["suite", "strategy", *sorted(needed)]).to_pylist():
        if r["agent_success"] is None:
            continue
        e = out.setdefault((r["suite"], r["strategy"]), {
            "agent_evaluations": 0, "cut": 0, "contexts_exposed": 0, "contexts_left_out": 0})
        dropped = r["agent_dropped_context_ids"] or []
        e["agent_evaluations"] += 1
        e["cut"] += bool(dropped)
        e["contexts_exposed"] += len(r["exposed_context_ids"] or [])
        e["contexts_left_out"] += len(dropped)
    return {k: v for k, v in sorted(out.items()) if v["cut"]}


def _fit_lines(fit: dict[tuple[str, str], dict[str, int]], suite: str) -> list[str]:
    """One sentence per strategy of ``suite`` whose agent prompts were cut (``agent_fit``)."""
    parts = [f"{strategy}: {e['cut']} of {e['agent_evaluations']} agent prompts cut, "
             f"{e['contexts_left_out']} of {e['contexts_exposed']} exposed turns left out "
             f"({_percent(e['contexts_left_out'] / max(e['contexts_exposed'], 1))})"
             for (s, strategy), e in fit.items() if s == suite]
    return [f"In this run, {'; '.join(parts)}."] if parts else []


def _agent_lines(params: dict[str, Any],
                 distinct: dict[str, dict[str, int]] | None = None) -> list[str]:
    """The run's agent sample (``agent_size``; absent in runs before the agent), where it
    ran (``agent_url``: the server, never a key) and, per suite, its distinct exposed sets
    (``distinct_exposed_sets``)."""
    if "agent_size" not in params or params["agent_size"] == 0:
        return []
    n = params["agent_size"]
    sample = "every task" if n is None else f"{n} task{'s' if n != 1 else ''}"
    where = ("the model's sha256 is in the traces" if not params.get("agent_url") else
             f"model `{params.get('agent_model')}` on the OpenAI-compatible server "
             f"{params['agent_url']}, named in the traces' `agent_remote`")
    lines = [f"- agent: a language-model agent acted on {sample} of each BFCL suite (the "
             "suite's own sample), for every strategy and reference, at budget scale 1 "
             f"(`agent_success`, graded by BFCL's checker; {where})."]
    if distinct:
        lines.append("- agent cost: it generates once per distinct (task, exposed set); "
                     "strategies that expose the same set share that generation. "
                     + "; ".join(f"{s}: {d['distinct_exposed_sets']} distinct of "
                                 f"{d['agent_evaluations']} evaluations"
                                 for s, d in distinct.items()) + ".")
    return lines


REFERENCE_NOTE = ("References (bfcl_listed: the row's own listed functions, BFCL's setting; "
                  "all_tools: the whole pool) sit outside the budget: they frame the "
                  "strategies and are never named best. In each suite's table they follow "
                  "the strategies, below the *references* row.")
"""What the references are, said once per report."""


def render_markdown(run: dict[str, Any], summary: list[dict[str, Any]],
                    suites: dict[str, Any], plot_name: str | None, *,
                    headline: list[dict[str, Any]] | None = None,
                    cost: list[str] | None = None,
                    plot_note: str = "", time_plot_name: str | None = None,
                    calibration: list[dict[str, Any]] | None = None,
                    agent: list[dict[str, Any]] | None = None,
                    joint_split: list[dict[str, Any]] | None = None,
                    agent_pairs: list[dict[str, Any]] | None = None,
                    fit: dict[tuple[str, str], dict[str, int]] | None = None) -> str:
    """The Markdown report. First screen: the verdict line per suite, the run in one
    sentence and the success-against-budget plot; then the run header, the full comparison
    table, the agent outcome table, joint versus split, suites, one table per suite
    (strategies, then references), learned calibration, cost and definitions."""
    lines = [f"# Junction benchmark report: run `{run['run_id']}`", ""]
    if headline is not None:
        lines.extend(_first_screen_lines(headline))
    if plot_name:
        lines.append(f"![success against budget]({plot_name})")
        lines.append("")
        lines.append("Verified success rate per strategy against the token-budget scale, one "
                     "panel per suite; bars are Wilson 95% intervals (scipy); references "
                     "dashed. " + (plot_note or "Every budget scale that ran is shown."))
        lines.append("")
    lines.append("## Run")
    lines.append("")
    lines.append(f"- commit: `{run.get('git_commit') or 'unknown'}`"
                 + (" (dirty working tree)" if run.get("git_dirty") else ""))
    params = run.get("params", {})
    lines.append(f"- strategies: {', '.join(params.get('strategies', []))}")
    lines.append(f"- seeds: {params.get('seeds')}; budget scales: {params.get('budget_scales')}")
    lines.extend(_plan_lines(params))
    lines.extend(_agent_lines(params, run.get("agent_exposed_sets")))
    lines.append(f"- started {run.get('started_at')}, finished {run.get('finished_at')}")
    lines.append("")
    if headline is not None:
        lines.extend(_headline_lines(headline))
    lines.extend(_agent_table_lines(agent or []))
    lines.extend(_agent_pair_lines(agent_pairs or []))
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
                 "(Suites: `agent`) at budget scale 1. Rates and fractions are in percent, "
                 "tokens whole, objectives and ranking scores to 2 decimals (each metric's "
                 "`display` in the catalog); `metrics.json` keeps full precision.")
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
    if any(r["strategy"] in REFERENCE_STRATEGIES for r in summary):
        lines.append(REFERENCE_NOTE)
        lines.append("")
    for suite in sorted(by_suite):
        lines.append(f"## {suite}")
        lines.append("")
        lines.append("| strategy | budget scale | " + " | ".join(columns) + " |")
        lines.append("|---|---|" + "---|" * len(columns))
        rows = by_suite[suite]
        strategies = [r for r in rows if r["strategy"] not in REFERENCE_STRATEGIES]
        references = [r for r in rows if r["strategy"] in REFERENCE_STRATEGIES]
        for row in strategies:
            cells = " | ".join(_table_cell(c, row[c]) for c in columns)
            lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
        if references:
            lines.append("| *references* | |" + " |" * len(columns))
            for row in references:
                cells = " | ".join(_table_cell(c, row[c]) for c in columns)
                lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
            if suite.startswith("bfcl-memory"):
                lines.append("")
                lines.append(" ".join([MEMORY_REFERENCE_NOTE,
                                       *_fit_lines(fit or {}, suite)]))
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


PAGE_STYLE = ("body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;"
              "overflow-wrap:break-word}"
              "img{max-width:100%;height:auto}"
              ".table-wrap{overflow-x:auto;max-width:100%}"
              "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}")
"""The report page's CSS: images scale to the page width, wide tables scroll in their box."""


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (no remote fonts or scripts); tables wrapped to scroll.

    The Markdown report's markers become HTML: ``<!-- verdicts -->`` … ``<!-- /verdicts -->``
    a ``<div id="verdicts">`` (the browser check looks for it), ``<!-- details -->`` …
    ``<!-- /details -->`` a ``<details>`` block, closed by default."""
    body = body.replace("<table>", "<div class='table-wrap'><table>").replace(
        "</table>", "</table></div>")
    body = body.replace("<!-- verdicts -->", "<div id='verdicts'>").replace(
        "<!-- /verdicts -->", "</div>")
    body = body.replace("<!-- details -->", "<details><summary>the full comparison table"
                        "</summary>").replace("<!-- /details -->", "</details>")
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
    cost = _cost_lines(every_trace, timings) if every_trace.num_rows else None
    time_path = out_dir / "time.png"
    has_times = timings is not None and timings.num_rows > 0
    if has_times:
        tmp_time = out_dir / ".time.tmp.png"
        plots.time_plot(timings, tmp_time)
        tmp_time.replace(time_path)
    calibration = learned_calibration(traces)
    columns = [c for c in ("suite", "budget_scale", "strategy", "seed", "task_id", *MEASURES)
               if c in traces.column_names]
    joint_split = joint_split_verdicts(traces.select(columns).to_pylist()
                                       if traces.num_rows else [])
    pairs = agent_pairs(traces)
    md = render_markdown(run, summary, suites, plot_path.name if summary else None,
                         headline=headline, cost=cost, plot_note=plot_note,
                         time_plot_name=time_path.name if has_times and cost else None,
                         calibration=calibration, agent=agent_rows(traces),
                         joint_split=joint_split, agent_pairs=pairs, fit=agent_fit(traces))
    body = markdown_lib.markdown(md, extensions=["tables"])
    page = html_page("Junction run " + run["run_id"], body)
    metrics = metrics_document(summary, report_params(run.get("params", {})), suites, headline,
                               calibration)
    if joint_split:
        metrics["joint_split"] = joint_split
    if pairs:
        metrics["agent_pairs"] = [{k: _round(v) for k, v in r.items()} for r in pairs]
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
