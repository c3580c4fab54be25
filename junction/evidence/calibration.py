"""Calibration of the learned p(gold) on a run's evaluation tasks (the report's "Learned
utility calibration" table and ``metrics.json``'s ``learned_calibration``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa

from junction.evidence.metrics_json import rounded
from junction.strategies.catalog import learned_strategies

__all__ = ["learned_calibration"]


def learned_calibration(traces: pa.Table) -> list[dict[str, Any]]:
    """Calibration of the learned p(gold) on the run's (evaluation) tasks.

    Per suite and budget scale, over every pool candidate of the first of the catalog's
    ``learned_strategies`` that ran (their traces carry ``learned_p``, p(gold) per
    candidate, from the same model): candidates, gold candidates, mean p, gold rate, the
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
    for strategy in learned_strategies():
        for r in rows:
            key = (r["suite"], float(r["budget_scale"]))
            if (r["strategy"] != strategy
                    or groups.get(key, {}).get("strategy", strategy) != strategy):
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
                    "mean_p": rounded(math.fsum(g["p"]) / n), "gold_rate": rounded(sum(g["y"]) / n),
                    "brier": rounded(float(brier_score_loss(g["y"], g["p"]))),
                    "models": sorted(g["models"])})
    return out
