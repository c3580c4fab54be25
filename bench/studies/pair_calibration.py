"""τ-Knowledge: the learned pair model's own calibration, and the pairs it keeps.

The learned family model (``junction.learned.utility``) fits a pair model p(pair gold |
pair features) on the training tasks' gold pairs; ``learned_exact`` uses w(c, t) =
p(pair) − p(c)·p(t) where |w| ≥ τ. This script fits the family model exactly as the
strategy does (``fit_learned_utility`` on ``family_training_tasks("tau2-banking")``, the
suite's pool limit) and measures, on the evaluation tasks only (an analysis: gold is read
here, never by a strategy), over every (context, tool) pair of each task's pools at budget
scale 1 (pools do not depend on the budget):

1. the pair model's calibration: pairs, gold pairs, mean p against the gold rate, the Brier
   score (``sklearn.metrics.brier_score_loss``) beside the Brier of the constant gold rate
   r(1 − r), ROC AUC (``sklearn.metrics.roc_auc_score``), and a reliability table
   (``BIN_EDGES``: mean p against the observed gold rate per bin);
2. the interactions kept at the fitted τ: how many per task, how many are positive (w > 0:
   a bonus for exposing both) rather than negative (a penalty), how many are gold pairs
   (precision), and how many of the evaluation tasks' gold pairs that sit in the
   pools are kept (recall); the same at every τ of ``TAU_GRID`` for comparison.

Usage: ``JUNCTION_TAU2_DATA=... python bench/studies/pair_calibration.py
[--tau2-data PATH]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from junction_datasets import build_suite
from junction_datasets import tau2_banking as tb

from junction.candidates import candidate_pools
from junction.learned.features import pair_features
from junction.learned.utility import TAU_GRID

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments, fit_family_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
import itertools

from results import write_results

BIN_EDGES = (0.0, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Reliability bins of p(pair): log-spaced below 0.01, where almost every pair sits."""


def pair_rows(model, tasks) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """(p(pair), w, label, pairs per task) over every pool pair of ``tasks``."""
    ps, ws, ys, per_task = [], [], [], []
    for task in tasks:
        view = task.router_view()
        pools = candidate_pools(view, tb.POOL_LIMIT)
        if not (pools.contexts and pools.tools):
            per_task.append(0)
            continue
        p = model.probabilities(view, pools)
        keys, X = pair_features(view, pools, p, model.prior)
        p_pair = model.pair.predict(X)
        gold = {(g.context_id, g.tool_id) for g in task.gold_pairs}
        for (c, t), pp in zip(keys, p_pair, strict=False):
            ps.append(float(pp))
            ws.append(float(pp) - p[c] * p[t])
            ys.append(int((c, t) in gold))
        per_task.append(len(keys))
    return np.array(ps), np.array(ws), np.array(ys), per_task


def main(argv: list[str] | None = None) -> int:
    if data_arguments(__doc__.splitlines()[0], argv) is None:
        return 2
    from sklearn.metrics import brier_score_loss, roc_auc_score

    model = fit_family_model()
    if model.pair is None:
        print("the fitted model has no pair model (fewer than 2 gold pairs in training)")
        return 1
    evaluation = build_suite(tb.SUITE, split="eval").tasks
    p, w, y, _per_task = pair_rows(model, evaluation)
    n, k = len(y), int(y.sum())
    rate = k / n
    print(f"pair model: fitted on {model.training['n_tasks']} training tasks "
          f"({model.training['gold_pairs']} gold pairs of {model.training['pair_rows']} rows); "
          f"lambda {model.lam}, tau {model.tau}")
    print(f"evaluation: {len(evaluation)} tasks, {n} pool pairs, {k} gold pairs in the pools "
          f"(rate {rate:.5f})")
    print(f"  mean p(pair) {p.mean():.5f} against gold rate {rate:.5f} "
          f"(ratio {p.mean() / rate:.2f})")
    print(f"  Brier {brier_score_loss(y, p):.6f}; constant gold rate r(1-r) "
          f"{rate * (1 - rate):.6f}")
    print(f"  ROC AUC {roc_auc_score(y, p):.3f}")
    figures: dict = {"training_tasks": model.training["n_tasks"], "lambda": model.lam,
                     "tau": model.tau, "evaluation_tasks": len(evaluation), "pairs": n,
                     "gold_pairs": k, "gold_rate": rate, "mean_p": float(p.mean()),
                     "mean_p_over_gold_rate": float(p.mean() / rate),
                     "brier": float(brier_score_loss(y, p)), "brier_constant": rate * (1 - rate),
                     "roc_auc": float(roc_auc_score(y, p)), "reliability": [], "kept": {}}
    print("  reliability (bins of p; most pairs sit near 0, so the bins are on a log scale):")
    print("    p in       | pairs  | gold | mean p  | gold rate")
    for lo, hi in itertools.pairwise(BIN_EDGES):
        inside = (p >= lo) & (p < hi) if hi < 1 else (p >= lo)
        m = int(inside.sum())
        if m:
            print(f"    [{lo:g}, {hi:g}) | {m:6d} | {int(y[inside].sum()):4d} | "
                  f"{p[inside].mean():.5f} | {y[inside].mean():.5f}")
            figures["reliability"].append({"bin": [lo, hi], "pairs": m,
                                           "gold": int(y[inside].sum()),
                                           "mean_p": float(p[inside].mean()),
                                           "gold_rate": float(y[inside].mean())})
    print("kept interactions |w| >= tau (per evaluation task; precision = kept pairs that are "
          "gold; recall = gold pool pairs kept):")
    for tau in sorted({*TAU_GRID, model.tau}):
        kept = np.abs(w) >= tau
        n_kept = int(kept.sum())
        gold_kept = int((kept & (y == 1)).sum())
        positive = kept & (w > 0)
        mark = "  <- fitted" if tau == model.tau else ""
        print(f"  tau {tau:<5g} kept {n_kept:6d} ({n_kept / len(evaluation):6.1f} per task; "
              f"{int(positive.sum())} with w > 0, {gold_kept} gold, "
              f"{int((positive & (y == 1)).sum())} of them with w > 0), "
              f"precision {gold_kept / max(n_kept, 1):.3f}, recall {gold_kept / max(k, 1):.3f}"
              f"{mark}")
        figures["kept"][f"{tau:g}"] = {"kept": n_kept, "positive": int(positive.sum()),
                                       "gold": gold_kept,
                                       "precision": gold_kept / max(n_kept, 1),
                                       "recall": gold_kept / max(k, 1)}
    write_results(__file__, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
