"""The cross-fitted verdict: a learned joint selector against its split twin, with the
refit in the interval.

On a cross-fitted suite (``junction.learned.crossfit``) every task is evaluated in each of
R repetitions (the run's seeds) by a model fitted on the other K − 1 folds. Per
(suite, budget scale, pair) whose two strategies both carry a ``fold``:

- the fold scores: for each repetition and fold, the mean success of A and of B over the
  fold's tasks (K · R pairs of scores, repetition-major);
- the difference A − B and its interval from the corrected repeated cross-validation
  t-test (Nadeau and Bengio 2003, "Inference for the generalization error"; Bouckaert and
  Frank 2004): the variance of the K · R fold differences times (1/(K·R) + 1/(K − 1)),
  Student t with K·R − 1 degrees of freedom. The correction's second term counts the
  overlap of the training sets, i.e. the refit, which a paired test over tasks ignores.
  The mean, corrected variance and degrees of freedom are baycomp's
  (``baycomp.CorrelatedTTest.compute_statistics``, Corani and Benavoli 2015, whose
  posterior is that t distribution); the two-sided p-value and the 95% interval are its
  quantiles (scipy), and ``p_a_better`` is baycomp's posterior probability that A − B > 0;
- ``holds``: in how many of the R repetitions the repetition alone (every task once, one
  model per fold) gives a paired 95% interval (Newcombe, ``verdicts.paired_comparison``)
  on the same side of zero as the cross-fitted difference; 0 when that difference is 0;
- the same without the tasks named in ``excluded`` (``subset = "undisputed"``: the
  tasks whose gold is disputed upstream), beside ``subset = "all"``.

A fold without a shared task is left out; fewer than two fold scores give no interval.
Strategies without a fold (no refit) are compared by ``junction.evidence.joint_split``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from junction.evidence import verdicts
from junction.evidence.joint_split import joint_split_pairs
from junction.evidence.verdicts import corrected_cv_interval

__all__ = ["corrected_cv_interval", "cross_fitted_lines", "cross_fitted_verdicts"]


def _holds(by_rep: Mapping[int, tuple[list[bool], list[bool]]], difference: float) -> int:
    if difference == 0:
        return 0
    held = 0
    for xa, xb in by_rep.values():
        cmp = verdicts.paired_comparison(xa, xb)
        held += cmp.ci_low > 0 if difference > 0 else cmp.ci_high < 0
    return held


def cross_fitted_verdicts(rows: Sequence[Mapping[str, Any]],
                          excluded: Mapping[str, Collection[str]] | None = None,
                          ) -> list[dict[str, Any]]:
    """One dict per (suite, budget scale, pair, subset) where both strategies of a
    ``joint_split_pairs()`` pair ran with folds: suite, budget_scale, a, b, subset
    (``all``, or ``undisputed`` when ``excluded[suite]`` names tasks), n_tasks,
    repetitions, folds, rate_a, rate_b, difference, ci_low, ci_high, p_value, p_a_better,
    df, holds (module docstring). Sorted by suite, scale, pair order, subset.

    ``rows``: trace rows with suite, budget_scale, strategy, repetition, fold, task_id and
    success; rows without a fold are ignored.
    """
    cells: dict[tuple[str, float, str], dict[tuple[int, str], tuple[int, bool]]] = {}
    for row in rows:
        if row.get("fold") is None or row.get("repetition") is None:
            continue
        key = (row["suite"], float(row["budget_scale"]), row["strategy"])
        cells.setdefault(key, {})[(int(row["repetition"]), row["task_id"])] = (
            int(row["fold"]), bool(row["success"]))
    out = []
    for suite, scale in sorted({(s, x) for s, x, _ in cells}):
        for a, b in joint_split_pairs():
            va, vb = cells.get((suite, scale, a)), cells.get((suite, scale, b))
            if not va or not vb:
                continue
            drop = set((excluded or {}).get(suite, ()))
            for subset, left_out in (("all", set()), ("undisputed", drop)):
                if subset == "undisputed" and not drop:
                    continue
                result = _compare(va, vb, left_out)
                if result is not None:
                    out.append({"suite": suite, "budget_scale": scale, "a": a, "b": b,
                                "subset": subset, **result})
    return out


def _compare(va: Mapping[tuple[int, str], tuple[int, bool]],
             vb: Mapping[tuple[int, str], tuple[int, bool]],
             left_out: set[str]) -> dict[str, Any] | None:
    shared = sorted(k for k in set(va) & set(vb) if k[1] not in left_out)
    folds: dict[tuple[int, int], tuple[list[bool], list[bool]]] = {}
    by_rep: dict[int, tuple[list[bool], list[bool]]] = {}
    for key in shared:
        (fold, sa), (_, sb) = va[key], vb[key]
        xa, xb = folds.setdefault((key[0], fold), ([], []))
        xa.append(sa)
        xb.append(sb)
        xa, xb = by_rep.setdefault(key[0], ([], []))
        xa.append(sa)
        xb.append(sb)
    reps = sorted(by_rep)
    per_rep = {r: sorted(f for rr, f in folds if rr == r) for r in reps}
    k = min((len(v) for v in per_rep.values()), default=0)
    if len(reps) == 0 or k < 2 or any(len(v) != k for v in per_rep.values()):
        return None  # fold counts differ between repetitions: no balanced design
    order = [(r, f) for r in reps for f in per_rep[r]]
    fa = [float(np.mean(folds[c][0])) for c in order]
    fb = [float(np.mean(folds[c][1])) for c in order]
    test = corrected_cv_interval(fa, fb, runs=len(reps))
    n_eval = len(shared)
    rate_a = sum(va[s][1] for s in shared) / n_eval
    rate_b = sum(vb[s][1] for s in shared) / n_eval
    return {"n_tasks": len({t for _, t in shared}), "repetitions": len(reps), "folds": k,
            "evaluations": n_eval, "rate_a": rate_a, "rate_b": rate_b, **test,
            "holds": _holds(by_rep, test["difference"])}


def cross_fitted_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's cross-fitted section: one table row per verdict (empty when none)."""
    if not rows:
        return []
    lines = ["## Cross-fitted verdict (every task out of fold, refit in the interval)", "",
             "Each learned joint selector against its split twin on a cross-fitted suite: every "
             "task evaluated in each repetition by a model fitted without its fold. A − B in "
             "points over all evaluations; the 95% interval and p are the corrected repeated "
             "cross-validation t-test on the fold scores (Nadeau and Bengio 2003; variance "
             "and degrees of freedom from baycomp's correlated t-test), which counts the "
             "refits as well as the tasks; P(A > B) is baycomp's posterior. *Holds* counts the "
             "repetitions whose own paired interval (Newcombe) lies on the same side of zero. "
             "`undisputed` leaves out the tasks whose gold is disputed upstream "
             "(`junction.evidence.crossfit`).", "",
             "| suite | scale | A − B | tasks | R × K | A | B | difference [95%] | p | "
             "P(A > B) | holds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        what = "" if r["subset"] == "all" else " (undisputed)"
        lines.append(
            f"| {r['suite']}{what} | {r['budget_scale']:g} | {r['a']} − {r['b']} | "
            f"{r['n_tasks']} | {r['repetitions']} × {r['folds']} | {r['rate_a']:.3f} | "
            f"{r['rate_b']:.3f} | {100 * r['difference']:+.1f} [{100 * r['ci_low']:+.1f}, "
            f"{100 * r['ci_high']:+.1f}] | {r['p_value']:.3g} | {r['p_a_better']:.3f} | "
            f"{r['holds']} of {r['repetitions']} |")
    lines.append("")
    return lines
