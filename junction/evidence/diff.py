"""Report diffs between two runs, with paired intervals.

``run_scope`` first says what the two runs share (suites, strategies, seeds, budget scales,
tasks) and what only one has; ``check_comparable`` raises ``NothingComparableError`` with
the reason when no task is shared. ``param_changes`` lists the run parameters (run.json's
``params``) that differ, the learned fit's search among them (``fit_search: optimal →
hybrid``), which the command line prints above the metric rows.

For each suite, strategy and budget scale, and each metric, over the tasks both runs share
(matched on suite, strategy, budget scale, seed and task id): the mean before (run A),
after (run B), the change (B − A) and a paired 95% interval of the change:

- binary metrics (catalog ``value_type`` bool, e.g. ``success``): the report headline's
  test, ``junction.evidence.verdicts.paired_comparison`` (Newcombe's paired score interval and the
  exact McNemar test); marked significant when it detects a difference;
- other metrics: a 95% percentile bootstrap interval of the mean paired difference
  (``scipy.stats.bootstrap``, ``paired=True``, 2,000 resamples, seed 0; Efron & Tibshirani
  1993), marked when it excludes zero.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, TypedDict

import duckdb
import numpy as np
import pyarrow as pa
from scipy import stats

from junction.errors import JunctionError, UnknownNameError
from junction.evidence import metrics as catalog
from junction.evidence import verdicts
from junction.evidence.store import TraceStore

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "NothingComparableError",
    "ParamChange",
    "changed_verdicts",
    "check_comparable",
    "diff_page",
    "diff_runs",
    "format_row",
    "param_changes",
    "param_lines",
    "param_text",
    "resolve_run",
    "run_scope",
    "scope_lines",
]


class NothingComparableError(JunctionError):
    """Two runs share no task (suite, strategy, budget scale, seed and task id)."""

BOOTSTRAP_RESAMPLES = 2000
_KEYS = ("suite", "strategy", "budget_scale", "seed", "task_id")


def resolve_run(store: TraceStore, ref: str) -> str:
    """A run id from ``ref``: a run id, ``latest``, ``previous``, or a git commit (prefix,
    >= 4 hex digits: the latest run made at that commit), of a completed run.
    ``UnknownNameError`` otherwise; for a run id whose run is running, interrupted or
    failed, the message states that status and how to finish it (the run's recorded
    ``resume_command`` where it has one)."""
    metas = [m for m in store.run_metas() if m.get("status") == "completed"]
    ids = [m["run_id"] for m in metas]
    if ref == "latest":
        if not ids:
            raise UnknownNameError(f"no completed runs under {store.root}")
        return ids[-1]
    if ref == "previous":
        if len(ids) < 2:
            raise UnknownNameError(f"'previous' needs two completed runs; found {len(ids)}")
        return ids[-2]
    if ref in ids:
        return ref
    if len(ref) >= 4 and all(c in "0123456789abcdef" for c in ref.lower()):
        at_commit = [m["run_id"] for m in metas
                     if (m.get("git_commit") or "").startswith(ref.lower())]
        if at_commit:
            return at_commit[-1]
    unfinished = [m for m in store.run_metas() if m.get("run_id") == ref]
    if unfinished:
        status = unfinished[-1].get("status") or "of unknown status"
        command = unfinished[-1].get("resume_command")
        resume = (f"`{command}`" if command  # recorded by the command line that started it
                  else f"`junction bench --run-id {ref}` and the same options")
        hint = {"running": f"wait for it to finish, or resume it with {resume} if it was "
                           "stopped",
                "interrupted": f"resume it with {resume}",
                "failed": f"its error is in {store.run_meta_path(ref)}; resume it with "
                          f"{resume}"}.get(
            status, f"see its run.json ({unfinished[-1].get('problem') or 'no problem named'})")
        raise UnknownNameError(f"run {ref} is {status}, not completed: it has no report to "
                               f"read; {hint}")
    known = ", ".join(ids[-5:]) or "none"
    raise UnknownNameError(f"no run or commit matches {ref!r}; recent runs: {known}")


class ParamChange(TypedDict):
    """One run parameter that differs: its name and its value in each run (a JSON value of
    run.json's ``params``; None where a run lacks it)."""

    param: str
    before: object
    after: object


def param_changes(before: Mapping[str, object], after: Mapping[str, object],
                  leave_out: Collection[str] = ()) -> list[ParamChange]:
    """The parameters whose values differ between two runs' ``params`` (run.json), sorted
    by name, as {param, before, after}: a name one run lacks has the value None there (the
    caller fills in the defaults a run leaves out first). ``leave_out``: names not
    compared (the result-neutral ones, say)."""
    names = sorted((set(before) | set(after)) - set(leave_out))
    return [ParamChange(param=n, before=before.get(n), after=after.get(n)) for n in names
            if before.get(n) != after.get(n)]


def param_text(value: object) -> str:
    """A parameter's value in one short line: a list as ``a,b``, a dict as ``k=v k=v``,
    None as ``none``, a number as ``%g``, a bool as ``yes`` / ``no``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(param_text(v) for v in value) or "none"
    if isinstance(value, dict):
        return " ".join(f"{k}={param_text(v)}" for k, v in sorted(value.items())) or "none"
    return str(value)


def param_lines(changes: list[ParamChange]) -> list[str]:
    """``param_changes`` as lines: one per parameter, ``fit_search: optimal → hybrid``, after
    a line that says whether any differ."""
    if not changes:
        return [_SAME_PARAMS]
    return ["run parameters that differ:", *(f"  {_change_text(c)}" for c in changes)]


_SAME_PARAMS = "run parameters: the same (those that can change a result)"


def _change_text(change: ParamChange) -> str:
    return (f"{change['param']}: {param_text(change['before'])} → "
            f"{param_text(change['after'])}")


_DIMENSIONS = ("suite", "strategy", "seed", "budget_scale")
_PLURAL = {"suite": "suites", "strategy": "strategies", "seed": "seeds",
           "budget_scale": "budget scales"}


def run_scope(before: pa.Table, after: pa.Table) -> dict[str, Any]:
    """What two runs' traces share: per dimension (suite, strategy, seed, budget_scale)
    {shared, only_before, only_after} as sorted lists, and ``tasks``: the number of
    (suite, strategy, budget scale, seed, task id) rows present in both."""
    scope: dict[str, Any] = {}
    for dim in _DIMENSIONS:
        a = set(before.column(dim).to_pylist()) if before.num_rows else set()
        b = set(after.column(dim).to_pylist()) if after.num_rows else set()
        scope[dim] = {"shared": sorted(a & b), "only_before": sorted(a - b),
                      "only_after": sorted(b - a)}

    def keys(table: pa.Table) -> set[tuple]:
        if not table.num_rows:
            return set()
        return set(zip(*(table.column(k).to_pylist() for k in _KEYS), strict=True))

    scope["tasks"] = len(keys(before) & keys(after))
    return scope


def check_comparable(scope: dict[str, Any]) -> None:
    """Raise ``NothingComparableError`` saying why, when ``run_scope`` found no shared task."""
    if scope["tasks"]:
        return
    differ = [f"{_PLURAL[dim]} differ (before: {_values(scope[dim]['only_before'])}; "
              f"after: {_values(scope[dim]['only_after'])})"
              for dim in _DIMENSIONS if not scope[dim]["shared"]]
    why = "; ".join(differ) if differ else "the runs share suites, strategies, seeds and " \
        "budget scales but no task id (different samples?)"
    raise NothingComparableError(f"no task is shared, nothing to compare: {why}")


def _values(values: list) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) or "none"


def _ci(before: np.ndarray, after: np.ndarray) -> tuple[float | None, float | None]:
    if len(before) < 2:
        return None, None
    diff = after - before
    if np.all(diff == diff[0]):
        return float(diff[0]), float(diff[0])
    res = stats.bootstrap(
        (before, after), lambda a, b, axis: np.mean(b - a, axis=axis), paired=True,
        vectorized=True, n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=0.95,
        method="percentile", rng=np.random.default_rng(0),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def diff_runs(before: pa.Table, after: pa.Table,
              metrics: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Rows of {suite, strategy, budget_scale, metric, tasks, before, after, change,
    ci_low, ci_high, significant}, sorted; metrics NULL in either run are skipped per task.

    ``metrics``: trace columns to compare (default: the catalog's metrics marked ``diff``).
    """
    if metrics is None:
        metrics = [m.name for m in catalog.METRICS if m.diff]
    binary = {m.name for m in catalog.METRICS if m.value_type == "bool"}
    con = duckdb.connect(":memory:")
    try:
        con.register("a", before)
        con.register("b", after)
        cols = ", ".join(
            f"CAST(a.{m} AS DOUBLE) AS a_{m}, CAST(b.{m} AS DOUBLE) AS b_{m}" for m in metrics
        )
        joined = con.sql(
            f"SELECT a.suite, a.strategy, a.budget_scale, {cols} FROM a JOIN b USING "
            f"({', '.join(_KEYS)}) ORDER BY a.suite, a.strategy, a.budget_scale, a.seed, a.task_id"
        ).to_arrow_table().to_pylist()
    finally:
        con.close()
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in joined:
        groups.setdefault((row["suite"], row["strategy"], row["budget_scale"]), []).append(row)
    out = []
    for (suite, strategy, scale), rows in sorted(groups.items()):
        for m in metrics:
            pairs = [(r[f"a_{m}"], r[f"b_{m}"]) for r in rows
                     if r[f"a_{m}"] is not None and r[f"b_{m}"] is not None]
            if not pairs:
                continue
            a = np.array([p[0] for p in pairs], dtype=float)
            b = np.array([p[1] for p in pairs], dtype=float)
            low: float | None
            high: float | None
            if m in binary:
                cmp = verdicts.paired_comparison([bool(x) for x in b], [bool(x) for x in a])
                low, high, significant = cmp.ci_low, cmp.ci_high, cmp.detected
            else:
                low, high = _ci(a, b)
                # _ci gives both bounds or neither
                significant = low is not None and high is not None and (low > 0 or high < 0)
            out.append({
                "suite": suite, "strategy": strategy, "budget_scale": scale, "metric": m,
                "tasks": len(pairs), "before": round(float(a.mean()), 6),
                "after": round(float(b.mean()), 6),
                "change": round(float(b.mean() - a.mean()), 6),
                "ci_low": None if low is None else round(low, 6),
                "ci_high": None if high is None else round(high, 6),
                "significant": bool(significant),
            })
    return out


def scope_lines(scope: dict[str, Any]) -> list[str]:
    """Plain lines: per dimension what both runs have and what only one has; shared tasks."""
    lines = []
    for dim in _DIMENSIONS:
        part = scope[dim]
        line = f"{_PLURAL[dim]} shared: {_values(part['shared'])}"
        if part["only_before"]:
            line += f"; only before: {_values(part['only_before'])}"
        if part["only_after"]:
            line += f"; only after: {_values(part['only_after'])}"
        lines.append(line)
    lines.append(f"task evaluations in both runs: {scope['tasks']}")
    return lines


def format_row(row: dict[str, Any]) -> dict[str, str]:
    """A ``diff_runs`` row's numbers as the catalog's ``display`` prints them: before,
    after, change and 95% CI ("43%", "+12 points", "[+3, +20] points"; tokens whole,
    objectives to 2 decimals). Metrics outside the catalog print with 3 decimals."""
    metric = next((m for m in catalog.METRICS if m.name == row["metric"]), None)
    if metric is None:
        value = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
        change = lambda v: "–" if v is None else f"{v:+.3f}"  # noqa: E731
    else:
        value = lambda v: catalog.format_value(metric.display, v)  # noqa: E731
        change = lambda v: catalog.format_change(metric.display, v)  # noqa: E731
    if row["ci_low"] is None:
        ci = "–"
    elif metric is not None and metric.display == "percent":
        ci = f"[{100 * row['ci_low']:+.0f}, {100 * row['ci_high']:+.0f}] points"
    else:
        ci = f"[{change(row['ci_low'])}, {change(row['ci_high'])}]"
    return {"before": value(row["before"]), "after": value(row["after"]),
            "change": change(row["change"]), "ci": ci}


def changed_verdicts(rows: list[dict[str, Any]]) -> list[str]:
    """One line per row whose paired test detects a change (``significant``), in
    ``diff_runs`` order: "synthetic · exact · budget × 1 · success: 43% → 78%, +35 points
    [+20, +50] points over 40 shared tasks"."""
    out = []
    for r in rows:
        if not r["significant"]:
            continue
        f = format_row(r)
        out.append(f"{r['suite']} · {r['strategy']} · budget × {r['budget_scale']:g} · "
                   f"{r['metric']}: {f['before']} → {f['after']}, {f['change']} {f['ci']} over "
                   f"{r['tasks']} shared task{'s' if r['tasks'] != 1 else ''}")
    return out


def diff_page(run_a: str, run_b: str, scope: dict[str, Any], rows: list[dict[str, Any]],
              params: list[ParamChange] | None = None) -> str:
    """The diff as a self-contained HTML page. First screen: one line per changed verdict
    (``changed_verdicts``, inside ``<div id="verdicts">``) and one sentence on the rest;
    then the scope, the run parameters that differ (``params``: ``param_changes``, when
    given), then the table (changed rows first), numbers as the catalog prints them
    (``format_row``)."""
    import html

    from junction.evidence.page import html_page

    header = ("suite", "strategy", "scale", "metric", "tasks", "before", "after", "change",
              "95% CI", "sig")
    ordered = sorted(rows, key=lambda r: (not r["significant"], r["change"] == 0))
    cells = []
    for r in ordered:
        f = format_row(r)
        values = (r["suite"], r["strategy"], f"{r['budget_scale']:g}", r["metric"],
                  str(r["tasks"]), f["before"], f["after"], f["change"], f["ci"],
                  "*" if r["significant"] else "")
        cells.append("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in values) + "</tr>")
    n_changed = sum(r["change"] != 0 for r in rows)
    n_significant = sum(r["significant"] for r in rows)
    verdict_items = changed_verdicts(rows)
    verdict_html = ("<ul>" + "".join(f"<li>{html.escape(v)}</li>" for v in verdict_items)
                    + "</ul>") if verdict_items else (
        "<p>No metric changed detectably (by the paired test below).</p>")
    body = (f"<h1>Diff {html.escape(run_a)} &rarr; {html.escape(run_b)}</h1>"
            "<h2>What changed</h2><div id='verdicts'>" + verdict_html + "</div>"
            f"<p>{n_changed} of {len(rows)} metric rows changed, {n_significant} "
            "detectably (* : binary metrics by the exact McNemar test with Newcombe's paired "
            "interval, others by a paired bootstrap interval excluding 0); "
            f"{scope['tasks']} task evaluations in both runs.</p>"
            "<h2>Scope</h2><ul>"
            + "".join(f"<li>{html.escape(line)}</li>" for line in scope_lines(scope))
            + "</ul>"
            + ("" if params is None else "<h2>Run parameters that differ</h2><ul>" + "".join(
                f"<li>{html.escape(text)}</li>" for text in
                [_change_text(c) for c in params] or ["none (of those that can change a "
                                                      "result)"]) + "</ul>")
            + "<h2>Every metric row</h2><p>Significant and changed rows first.</p>"
            "<table><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in header) + "</tr></thead><tbody>"
            + "".join(cells) + "</tbody></table>")
    return html_page(f"Junction diff {run_a} -> {run_b}", body)
