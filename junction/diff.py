"""Report diffs between two runs, with paired bootstrap intervals.

For each suite, strategy and budget scale, and each metric, over the tasks both runs share
(matched on suite, strategy, budget scale, seed and task id): the mean before (run A),
after (run B), the change (B − A) and a 95% percentile bootstrap interval of the mean
paired difference (``scipy.stats.bootstrap``, ``paired=True``, 2,000 resamples, seed 0;
Efron & Tibshirani 1993). A change is marked when its interval excludes zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from scipy import stats

from junction import metrics as catalog
from junction.errors import UnknownNameError
from junction.store import TraceStore

__all__ = ["resolve_run", "diff_runs", "BOOTSTRAP_RESAMPLES"]

BOOTSTRAP_RESAMPLES = 2000
_KEYS = ("suite", "strategy", "budget_scale", "seed", "task_id")


def resolve_run(store: TraceStore, ref: str) -> str:
    """A run id from ``ref``: a run id, ``latest``, ``previous``, or a git commit (prefix,
    >= 4 hex digits: the latest run made at that commit). ``UnknownNameError`` otherwise."""
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
    known = ", ".join(ids[-5:]) or "none"
    raise UnknownNameError(f"no run or commit matches {ref!r}; recent runs: {known}")


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
            low, high = _ci(a, b)
            out.append({
                "suite": suite, "strategy": strategy, "budget_scale": scale, "metric": m,
                "tasks": len(pairs), "before": round(float(a.mean()), 6),
                "after": round(float(b.mean()), 6),
                "change": round(float(b.mean() - a.mean()), 6),
                "ci_low": None if low is None else round(low, 6),
                "ci_high": None if high is None else round(high, 6),
                "significant": bool(low is not None and (low > 0 or high < 0)),
            })
    return out
