"""The joint-versus-split verdict: a joint selector against its split twin, per measure.

Pairs compared (``joint_split_pairs()``): ``learned_exact`` against ``learned_split`` (the
same learned utilities, with and without learned pairs and one shared budget) and
``exact`` against ``adaptive_split`` (the same lexical unary utilities and prior pairs).
For each suite, budget scale and pair that ran on shared (seed, task_id) tasks:

- ``success`` and ``pair_coverage`` (0/1 per task): ``verdicts.paired_comparison`` (the
  difference A − B, Newcombe's paired 95% interval, the exact McNemar p);
- ``tool_recall`` (a fraction per task): the mean paired difference with a 95% Student t
  interval and the Wilcoxon signed-rank p (``scipy.stats.wilcoxon``, zero differences
  dropped: "wilcox"; p = 1 when every difference is 0). McNemar needs 0/1 outcomes.

Tasks where a measure is undefined (NULL) for either strategy are left out of that measure.
On a cross-fitted suite, rows with a ``fold`` (a learned strategy refitted per fold) are
left to ``junction.evidence.crossfit``, whose interval counts the refits; rows with a
``repetition`` but no fold (no refit: every repetition makes the same selection) count
once, from their smallest repetition.
``tasks_needed`` is, for an interval wider than ±``TARGET_HALF_WIDTH``, the number of tasks
at which the same spread would give that half-width (half-width shrinks as 1/sqrt(n)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats

from junction.evidence import verdicts
from junction.strategies.catalog import STRATEGIES

__all__ = [
    "MEASURES",
    "TARGET_HALF_WIDTH",
    "joint_split_lines",
    "joint_split_pairs",
    "joint_split_verdicts",
]

def joint_split_pairs() -> tuple[tuple[str, str], ...]:
    """(joint, split twin) pairs from the strategy catalog's ``split_twin``, learned first
    (read at each call, so a strategy registered later is paired too)."""
    return tuple((name, info.split_twin) for name, info in sorted(
        STRATEGIES.items(), key=lambda kv: (kv[1].role != "learned", kv[0]))
        if info.split_twin)
MEASURES = ("success", "tool_recall", "pair_coverage")
TARGET_HALF_WIDTH = 0.15
"""The half-width (15 points) a deciding verdict must not exceed (the suite's verdict must
decide: docs/measurement.md, tau2-banking)."""


def _continuous(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = sum(diffs) / n
    if n > 1:
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
        half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    else:  # one task: no spread to estimate, the widest possible interval
        half = 2.0
    nonzero = [d for d in diffs if d != 0]
    p = float(stats.wilcoxon(nonzero).pvalue) if nonzero else 1.0
    return {"n": n, "rate_a": sum(a) / n, "rate_b": sum(b) / n, "difference": mean,
            "ci_low": mean - half, "ci_high": mean + half, "p_value": p, "test": "wilcoxon"}


def joint_split_verdicts(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One dict per (suite, budget scale, pair, measure) that ran: suite, budget_scale, a,
    b, measure, n, rate_a, rate_b, difference, ci_low, ci_high, p_value, test
    (``mcnemar`` or ``wilcoxon``), tasks_needed (None when the interval is within
    ``TARGET_HALF_WIDTH``); sorted by suite, scale, pair order, measure order.

    ``rows``: trace rows with suite, budget_scale, strategy, seed, task_id and the measures.
    """
    values: dict[tuple[str, float, str], dict[str, dict[tuple, Any]]] = {}
    first: dict[tuple[str, str], Any] = {}
    for row in rows:
        if row.get("repetition") is not None and row.get("fold") is None:
            rep_key = (row["suite"], row["strategy"])
            first[rep_key] = min(first.get(rep_key, row["repetition"]), row["repetition"])
    for row in rows:
        if row.get("fold") is not None:
            continue
        if row.get("repetition") is not None and \
                row["repetition"] != first[(row["suite"], row["strategy"])]:
            continue
        key = (row["suite"], float(row["budget_scale"]), row["strategy"])
        for m in MEASURES:
            if row.get(m) is not None:
                values.setdefault(key, {}).setdefault(m, {})[(row["seed"], row["task_id"])] = row[m]
    out = []
    for suite, scale in sorted({(s, x) for s, x, _ in values}):
        for a, b in joint_split_pairs():
            va, vb = values.get((suite, scale, a)), values.get((suite, scale, b))
            if not va or not vb:
                continue
            for m in MEASURES:
                shared = sorted(set(va.get(m, {})) & set(vb.get(m, {})))
                if not shared:
                    continue
                xa = [va[m][k] for k in shared]
                xb = [vb[m][k] for k in shared]
                if m == "tool_recall":
                    result = _continuous([float(x) for x in xa], [float(x) for x in xb])
                else:
                    cmp = verdicts.paired_comparison([bool(x) for x in xa], [bool(x) for x in xb])
                    result = {"n": cmp.n, "rate_a": cmp.rate_a, "rate_b": cmp.rate_b,
                              "difference": cmp.difference, "ci_low": cmp.ci_low,
                              "ci_high": cmp.ci_high, "p_value": cmp.p_value, "test": "mcnemar"}
                half = (result["ci_high"] - result["ci_low"]) / 2
                needed = (None if half <= TARGET_HALF_WIDTH else
                          math.ceil(result["n"] * (half / TARGET_HALF_WIDTH) ** 2))
                out.append({"suite": suite, "budget_scale": scale, "a": a, "b": b,
                            "measure": m, **result, "tasks_needed": needed})
    return out


def joint_split_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report section: one table row per verdict (empty when no pair ran)."""
    if not rows:
        return []
    lines = ["## Joint versus split", "",
             "Each joint selector against its split twin on the same tasks: difference A − B "
             "in points with its paired 95% interval; p is McNemar's exact test for success "
             "and pair coverage (0/1), Wilcoxon's signed-rank test for tool recall "
             "(`junction.evidence.joint_split`). A verdict decides when the interval is within "
             f"±{100 * TARGET_HALF_WIDTH:.0f} points; otherwise the tasks it would need.", "",
             "| suite | scale | A − B | measure | n | A | B | difference [95%] | p | "
             "tasks needed |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['suite']} | {r['budget_scale']:g} | {r['a']} − {r['b']} | {r['measure']} | "
            f"{r['n']} | {r['rate_a']:.3f} | {r['rate_b']:.3f} | "
            f"{100 * r['difference']:+.1f} [{100 * r['ci_low']:+.1f}, {100 * r['ci_high']:+.1f}] | "
            f"{r['p_value']:.3g} | {r['tasks_needed'] or '–'} |")
    lines.append("")
    return lines
