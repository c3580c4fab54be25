"""``metrics.json``: what it holds and how its numbers are rounded.

It holds only what the inputs determine: sorted keys, numbers rounded to ``ROUND_DIGITS``
decimals, no run id, timestamps or timings (those live in ``run.json``), so two reports of
the same inputs are byte-identical and a committed report diffs cleanly
(``junction.evidence.reports.write_report`` writes it).
"""

from __future__ import annotations

import math
from typing import Any

from junction.evidence import verdicts

__all__ = ["ROUND_DIGITS", "metrics_document", "rounded"]

ROUND_DIGITS = 6
"""Decimals kept for every number of ``metrics.json`` (the report rounds with it too)."""


def rounded(value: Any) -> Any:
    """A float to ``ROUND_DIGITS`` decimals, None when it is not finite; any other value
    unchanged."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, ROUND_DIGITS)
    return value


def _comparison(c: dict[str, Any]) -> dict[str, Any]:
    """One headline comparison as ``metrics.json`` holds it (``test``: ``mcnemar`` or
    ``corrected_cv``, with its repetitions, folds and P(A > B))."""
    cmp = c["comparison"]
    out = {"role": c["role"], "tasks": cmp.n, "rate_a": rounded(cmp.rate_a),
           "rate_b": rounded(cmp.rate_b), "difference": rounded(cmp.difference),
           "ci_low": rounded(cmp.ci_low), "ci_high": rounded(cmp.ci_high),
           "p_value": rounded(cmp.p_value), "test": cmp.test, "detected": cmp.detected,
           "decides": cmp.n >= verdicts.MIN_DECIDING_TASKS,
           "identical_exposed_sets": c.get("identical_sets")}
    if cmp.test == "corrected_cv":
        out.update(repetitions=cmp.repetitions, folds=cmp.folds,
                   p_a_better=rounded(cmp.p_a_better))
    return out


def _headline_document(headline: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline as ``metrics.json`` holds it: suite -> scale -> best and comparisons."""
    out: dict[str, Any] = {}
    for h in headline:
        cell = out.setdefault(h["suite"], {})[f"budget_scale={h['budget_scale']:g}"] = {
            "outcome": h["outcome"], "best": h["best"], "best_kind": h.get("best_kind"),
            "comparisons": {c["other"]: _comparison(c) for c in h["comparisons"]},
        }
        if h.get("passed_over"):
            cell["passed_over"] = dict(sorted(h["passed_over"].items()))
    return out


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
