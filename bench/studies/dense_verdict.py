"""The τ verdict on BM25 pools against hybrid pools, from two finished runs.

Reads the traces of a run on BM25 pools and one on hybrid pools (same suite, strategies,
seeds and folds; by default ``tau2-study-3``, made by ``make bench-tau2``, and
``tau2-hybrid-3``, made by the command in docs/measurement.md, "Dense first stage") at one
budget scale and prints, side by side:

1. per run, the cross-fitted verdict learned_exact − learned_split (the report's
   ``junction.evidence.crossfit.cross_fitted_verdicts``: corrected repeated-CV t-test),
   and exact − adaptive_split (first repetition, paired Newcombe interval);
2. the pool rule's own effect per strategy, hybrid − BM25: for the learned strategies the
   corrected repeated-CV t-test on the (repetition, fold) success rates, which the two runs
   share (the fold draw depends on the seed and the task ids only); for the lexical ones,
   which run once, the paired Newcombe interval over tasks;
3. what the pools hold: the mean share of a task's required documents in its context pool
   (the 50 the strategies choose from), per run.

Usage: ``.venv/bin/python bench/studies/dense_verdict.py [--bm25 RUN] [--hybrid RUN] [--scale 1]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from junction.evidence import verdicts
from junction.evidence.crossfit import corrected_cv_interval, cross_fitted_verdicts
from junction.evidence.store import TraceStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

COLUMNS = ("strategy", "task_id", "seed", "repetition", "fold", "budget_scale", "success",
           "suite", "context_candidates", "gold_context_ids", "pool_rule")


def _rows(root: str, run: str, scale: float) -> list[dict]:
    table = TraceStore(root).read_traces(run)
    rows = [r for r in table.select([c for c in COLUMNS if c in table.column_names]).to_pylist()
            if r["budget_scale"] == scale]
    if not rows:
        raise SystemExit(f"run {run}: no traces at budget scale {scale:g} under {root}")
    return rows


def _fold_rates(rows, strategy) -> dict[tuple[int, int], float]:
    cells: dict[tuple[int, int], list[bool]] = defaultdict(list)
    for r in rows:
        if r["strategy"] == strategy:
            cells[(r["repetition"], r["fold"])].append(r["success"])
    return {k: sum(v) / len(v) for k, v in sorted(cells.items())}


def _first_repetition(rows, strategy) -> dict[str, bool]:
    """task id -> success of ``strategy`` in the run's first seed (a lexical strategy runs
    only there)."""
    first = min(r["seed"] for r in rows)
    return {r["task_id"]: r["success"] for r in rows
            if r["strategy"] == strategy and r["seed"] == first}


def _paired(a: dict[str, bool], b: dict[str, bool]):
    """``verdicts.paired_comparison`` of A and B on their shared tasks; None when none."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    return verdicts.paired_comparison([a[t] for t in shared], [b[t] for t in shared])


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bm25", default="tau2-study-3")
    parser.add_argument("--hybrid", default="tau2-hybrid-3")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--warehouse", default="warehouse")
    args = parser.parse_args(argv)
    runs = {"bm25": _rows(args.warehouse, args.bm25, args.scale),
            "hybrid": _rows(args.warehouse, args.hybrid, args.scale)}
    print(f"budget scale {args.scale:g}; runs: bm25 = {args.bm25}, hybrid = {args.hybrid}")
    figures: dict = {"scale": args.scale, "runs": {"bm25": args.bm25, "hybrid": args.hybrid},
                     "verdicts": [], "hybrid_minus_bm25": {}, "required_documents_pooled": {}}
    print()
    print("| pools | comparison | A rate | B rate | A − B, points | 95% interval | p | "
          "holds | n |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rule, rows in runs.items():
        for v in cross_fitted_verdicts(rows, {}):
            print(f"| {rule} | {v['a']} − {v['b']} (cross-fitted, {v['repetitions']} reps) | "
                  f"{v['rate_a']:.3f} | {v['rate_b']:.3f} | {_points(v['difference'])} | "
                  f"[{_points(v['ci_low'])}, {_points(v['ci_high'])}] | {v['p_value']:.3f} | "
                  f"{v['holds']}/{v['repetitions']} | {v['n_tasks']} |")
            figures["verdicts"].append({"pools": rule, **v})
        c = _paired(_first_repetition(rows, "exact"), _first_repetition(rows, "adaptive_split"))
        if c is not None:
            print(f"| {rule} | exact − adaptive_split (paired) | {c.rate_a:.3f} | "
                  f"{c.rate_b:.3f} | {_points(c.difference)} | [{_points(c.ci_low)}, "
                  f"{_points(c.ci_high)}] | {c.p_value:.3f} | | {c.n} |")
            figures["verdicts"].append({"pools": rule, "a": "exact", "b": "adaptive_split",
                                        "rate_a": c.rate_a, "rate_b": c.rate_b,
                                        "difference": c.difference, "ci_low": c.ci_low,
                                        "ci_high": c.ci_high, "p_value": c.p_value, "n": c.n})
    print()
    print("hybrid − BM25 pools, per strategy:")
    print()
    print("| strategy | BM25 rate | hybrid rate | hybrid − BM25, points | 95% interval | p | "
          "test |")
    print("|---|---|---|---|---|---|---|")
    for strategy in ("learned_exact", "learned_split"):
        a, b = _fold_rates(runs["hybrid"], strategy), _fold_rates(runs["bm25"], strategy)
        keys = sorted(set(a) & set(b))
        if len(keys) < 2:
            continue
        reps = len({k[0] for k in keys})
        ci = corrected_cv_interval([a[k] for k in keys], [b[k] for k in keys], reps)
        rate = {rule: statistics.mean(r["success"] for r in rows if r["strategy"] == strategy)
                for rule, rows in runs.items()}
        print(f"| {strategy} | {rate['bm25']:.3f} | {rate['hybrid']:.3f} | "
              f"{_points(ci['difference'])} | [{_points(ci['ci_low'])}, "
              f"{_points(ci['ci_high'])}] | {ci['p_value']:.3f} | corrected CV, "
              f"{len(keys)} folds |")
        figures["hybrid_minus_bm25"][strategy] = {"bm25": rate["bm25"], "hybrid": rate["hybrid"],
                                                  **ci}
    for strategy in ("exact", "adaptive_split"):
        c = _paired(_first_repetition(runs["hybrid"], strategy),
                    _first_repetition(runs["bm25"], strategy))
        if c is None:
            continue
        print(f"| {strategy} | {c.rate_b:.3f} | {c.rate_a:.3f} | {_points(c.difference)} | "
              f"[{_points(c.ci_low)}, {_points(c.ci_high)}] | {c.p_value:.3f} | paired "
              f"Newcombe, {c.n} tasks |")
        figures["hybrid_minus_bm25"][strategy] = {
            "bm25": c.rate_b, "hybrid": c.rate_a, "difference": c.difference,
            "ci_low": c.ci_low, "ci_high": c.ci_high, "p_value": c.p_value}
    print()
    for rule, rows in runs.items():
        seen, shares = set(), []
        for r in rows:
            if r["task_id"] in seen or not r["gold_context_ids"]:
                continue
            seen.add(r["task_id"])
            pool = {c["resource_id"] for c in r["context_candidates"]}
            shares.append(len(pool & set(r["gold_context_ids"])) / len(r["gold_context_ids"]))
        print(f"{rule}: required documents in the context pool: {statistics.mean(shares):.3f} "
              f"(mean over {len(shares)} tasks)")
        figures["required_documents_pooled"][rule] = round(statistics.mean(shares), 4)
    write_results(__file__, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
