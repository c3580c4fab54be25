"""Judge quality: ROC AUC of judge scores vs BM25 scores for gold vs non-gold candidates.

For each task of a suite, the candidates are the BM25 pools (``candidate_pools``, top
``--pool`` per lane, contexts and tools), labelled gold / non-gold from the task's gold ids;
judge scores are logit("yes") - logit("no") against the objective with the strategy's judge
config (``STRATEGY_JUDGE_CONFIG``), BM25 scores are the lanes' scores, max-normalised per
lane (as ``junction.strategies`` does for unary utility) so one ranking covers both lanes. Scores are comparable only within one query, so the AUC is computed per task
(Mann-Whitney U / (n_pos * n_neg), ties count one half; Hanley & McNeil 1982) and averaged
over tasks that have both a gold and a non-gold candidate ("macro"); ``*_pooled`` pools
every pair of the suite. ``pairs`` counts the (task, candidate) pairs scored.

    python bench/judge_quality.py --json [--size 12] [--pool 4] [--suites synthetic bfcl-memory]

Prints ``{"suites": {"<suite>": {"judge_auc", "bm25_auc", "pairs", ...}}, ...}``. A suite
that is not registered (or cannot be built here) is listed under ``skipped`` with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scipy.stats import rankdata  # noqa: E402

from junction.judge import ScoreCache, cached_scores, load_judge  # noqa: E402
from junction.environment import state_dir  # noqa: E402
from junction.strategies.judge_admission import (  # noqa: E402
    DEFAULT_POOL_PER_LANE,
    STRATEGY_JUDGE_CONFIG,
    candidate_text,
)
from junction.strategies import candidate_pools  # noqa: E402


def auc(scores: list[float], labels: list[bool]) -> float | None:
    """ROC AUC by the rank-sum (Mann-Whitney) formula; ``None`` without both classes."""
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(scores)
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return float((rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def evaluate_suite(judge, cache, tasks, pool: int) -> dict:
    per_judge, per_bm25 = [], []
    all_j, all_b, all_y = [], [], []
    pairs = 0
    for task in tasks:
        view = task.router_view()
        pools = candidate_pools(view, pool)
        gold = set(task.gold_context_ids) | set(task.gold_tool_ids)
        cands = [*pools.contexts, *pools.tools]
        if not cands:
            continue
        texts = [candidate_text(view, c) for c in cands]
        j = cached_scores(judge, cache, view.objective, texts)
        # BM25 lanes are scored separately; max-normalise per lane so one ranking covers both.
        b = []
        for lane in (pools.contexts, pools.tools):
            best = max((c.score for c in lane), default=0.0) or 1.0
            b.extend(c.score / best for c in lane)
        y = [c.resource_id in gold for c in cands]
        pairs += len(cands)
        all_j += j
        all_b += b
        all_y += y
        aj, ab = auc(j, y), auc(b, y)
        if aj is not None:
            per_judge.append(aj)
            per_bm25.append(ab)
    mean = (lambda xs: round(sum(xs) / len(xs), 4) if xs else None)
    pooled = (lambda s: None if auc(s, all_y) is None else round(auc(s, all_y), 4))
    return {"judge_auc": mean(per_judge), "bm25_auc": mean(per_bm25), "pairs": pairs,
            "tasks": len(tasks), "tasks_with_both_classes": len(per_judge),
            "judge_auc_pooled": pooled(all_j), "bm25_auc_pooled": pooled(all_b)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--size", type=int, default=12, help="tasks per suite (default 12)")
    parser.add_argument("--pool", type=int, default=DEFAULT_POOL_PER_LANE,
                        help=f"BM25 candidates per lane (default {DEFAULT_POOL_PER_LANE}, as the strategy)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--suites", nargs="+", default=["synthetic", "bfcl-memory"])
    parser.add_argument("--kv-type", default="q8_0")
    parser.add_argument("--template", default="auto")
    parser.add_argument("--no-cache", action="store_true", help="score without the score cache")
    args = parser.parse_args(argv)

    from junction_datasets import build_suite, suite_names

    judge = load_judge(STRATEGY_JUDGE_CONFIG.model_copy(
        update={"kv_type": args.kv_type, "template": args.template}))
    cache = None if args.no_cache else ScoreCache(state_dir() / "judge_scores.sqlite")
    out: dict = {"suites": {}, "skipped": {}, "model_hash": judge.model_hash,
                 "instruction_hash": judge.instruction_hash(), "template": judge.template.name,
                 "pool_per_lane": args.pool, "size": args.size, "seed": args.seed}
    for name in args.suites:
        if name not in suite_names():
            out["skipped"][name] = f"suite {name!r} is not registered in datasets/"
            continue
        try:
            tasks = build_suite(name, seed=args.seed, size=args.size).tasks
        except Exception as exc:  # a real-data suite may be unavailable on this machine
            out["skipped"][name] = f"cannot build suite {name!r}: {exc}"
            continue
        start = time.perf_counter()
        result = evaluate_suite(judge, cache, tasks, args.pool)
        result["seconds"] = round(time.perf_counter() - start, 2)
        out["suites"][name] = result
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        for name, r in out["suites"].items():
            print(f"{name:>16}: judge AUC {r['judge_auc']}  BM25 AUC {r['bm25_auc']}  "
                  f"pairs {r['pairs']}")
        for name, why in out["skipped"].items():
            print(f"{name:>16}: skipped ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
