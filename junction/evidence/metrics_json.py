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


def _headline_document(headline: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline as ``metrics.json`` holds it: suite -> scale -> best and comparisons."""
    out: dict[str, Any] = {}
    for h in headline:
        cell = out.setdefault(h["suite"], {})[f"budget_scale={h['budget_scale']:g}"] = {
            "outcome": h["outcome"], "best": h["best"],
            "comparisons": {
                c["other"]: {
                    "role": c["role"], "tasks": c["comparison"].n,
                    "difference": rounded(c["comparison"].difference),
                    "ci_low": rounded(c["comparison"].ci_low),
                    "ci_high": rounded(c["comparison"].ci_high),
                    "mcnemar_p": rounded(c["comparison"].p_value),
                    "detected": c["comparison"].detected,
                    "decides": c["comparison"].n >= verdicts.MIN_DECIDING_TASKS,
                    "identical_exposed_sets": c.get("identical_sets"),
                } for c in h["comparisons"]
            },
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
