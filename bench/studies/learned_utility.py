"""Learned utility against BM25 on the evaluation part of every BFCL suite.

Fits each family's model on its training part (``junction_datasets.family_training_tasks``,
as the benchmark's learned strategies do), then on the evaluation part of each suite
(``--size`` tasks, all by default; the same tasks for every strategy, budget scale 1):

- candidate-level: ROC AUC (``sklearn.metrics.roc_auc_score``) of the lane's BM25 score
  and of the learned p(gold) over the pool candidates of every evaluation task (both lanes
  pooled, a lane without a gold candidate leaves the AUC undefined: null), and the learned
  model's Brier score (``brier_score_loss``); with ``--judge-tasks N``, the judge's score
  (embedded default judge, through the persistent score cache) on the first N tasks, and
  BM25 and learned AUC on the same N tasks beside it;
- task-level: verified success of ``exact``, ``adaptive_split``, ``learned_exact`` and
  ``learned_split`` (the retrieval proxy: every gold tool exposed, no tool exposed on
  irrelevance, an answer-bearing context exposed on memory), with Newcombe's paired 95%
  interval (``junction.evidence.verdicts.paired_comparison``) of learned_exact − exact and
  learned_exact − learned_split; on bfcl-irrelevance success is correct abstention;
- ``abstention_auc``: over the tool suites' evaluation tasks, the ROC AUC of the best
  tool's BM25 score, learned p (and judge score, on the judged subset) for telling a task
  that needs a tool from an irrelevance task: the ceiling on abstaining without losses;
- per family: lam, tau, training success per lam, learned pairs over the evaluation
  problems, the fit time; per suite the median learned_exact selection time per task.

A reliability curve of the learned model per family (``sklearn.calibration.
calibration_curve``, 10 uniform bins, evaluation candidates) is drawn to ``--plot``.

    python bench/studies/learned_utility.py --json [--size N] [--judge-tasks N] [--plot PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
import numpy as np  # noqa: E402
from junction_datasets import build_suite, get_suite, suite_family, training_source  # noqa: E402
from results import write_results  # noqa: E402
from sklearn.calibration import calibration_curve  # noqa: E402
from sklearn.metrics import brier_score_loss, roc_auc_score  # noqa: E402

from junction.agent.execution import execute  # noqa: E402
from junction.evidence.verdicts import paired_comparison  # noqa: E402
from junction.learned.features import candidate_labels  # noqa: E402
from junction.strategies import (  # noqa: E402
    Strategy,
    candidate_pools,
    make_strategy,
    reads_task,
)
from junction.strategies.learned import LearnedStrategy  # noqa: E402
from junction.verifiers import verify  # noqa: E402

SUITES = ("bfcl-multiple", "bfcl-live-multiple", "bfcl-parallel-multiple", "bfcl-irrelevance",
          "bfcl-memory")
STRATEGIES = ("exact", "adaptive_split", "learned_exact", "learned_split")


def _auc(y: list[int], s: list[float]) -> float | None:
    return round(float(roc_auc_score(y, s)), 4) if 0 < sum(y) < len(y) else None


def _cmp(a: list[bool], b: list[bool]) -> dict:
    c = paired_comparison(a, b)
    return {"difference": round(c.difference, 4), "ci95": [round(c.ci_low, 4), round(c.ci_high, 4)],
            "p_value": round(c.p_value, 4), "n": c.n, "detected": c.detected}


def _candidate_rows(task, pool, model, judge=None):
    """(labels, BM25 scores, learned p, judge scores or [], p by id) over the pool's
    candidates."""
    labels = candidate_labels(task, pool)
    p = model.probabilities(task.router_view(), pool)
    y, bm25, learned, js = [], [], [], []
    for lane, cands in (("context", pool.contexts), ("tool", pool.tools)):
        y.extend(int(v) for v in labels[lane])
        bm25.extend(c.score for c in cands)
        learned.extend(p[c.resource_id] for c in cands)
        if judge is not None:
            js.extend(judge[c.resource_id] for c in cands)
    return y, bm25, learned, js, p


def _judge_scores(tasks, pools) -> list[dict[str, float]]:
    from junction.environment import state_dir
    from junction.judge.cache import ScoreCache, judge_documents
    from junction.judge.instructions import RETRIEVAL_INSTRUCTION
    from junction.judge.scorer import load_judge
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG, candidate_text

    judge = load_judge(STRATEGY_JUDGE_CONFIG)
    cache = ScoreCache(state_dir() / "judge_scores.sqlite")
    out = []
    for task, pool in zip(tasks, pools, strict=False):
        view = task.router_view()
        cands = [*pool.contexts, *pool.tools]
        texts = [candidate_text(view, c) for c in cands]
        batch = judge_documents(judge, cache, view.objective, texts, RETRIEVAL_INSTRUCTION)
        assert None not in batch.scores  # every candidate text is non-empty
        out.append({c.resource_id: float(s) for c, s in zip(cands, batch.scores, strict=False)
                    if s is not None})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--size", type=int, default=None, help="evaluation tasks per suite (all)")
    ap.add_argument("--judge-tasks", type=int, default=0,
                    help="tasks per suite the judge scores for its AUC (0: none)")
    ap.add_argument("--plot", default=str(ROOT / "reports" / "learned-reliability.png"))
    args = ap.parse_args()

    # the benchmark's own strategies and training source (both learned strategies share
    # the process's fitted model)
    source = training_source()
    strategies: dict[str, Strategy] = {}
    for n in STRATEGIES:
        built = make_strategy(n, training=source)
        assert not reads_task(built, n)  # none of them is a reference
        strategies[n] = built
    fits, families = {}, {}
    for suite in SUITES:
        family = suite_family(suite)
        assert family is not None  # every suite studied here has a training part
        if family not in fits:
            t0 = time.perf_counter()
            learned_exact = strategies["learned_exact"]
            assert isinstance(learned_exact, LearnedStrategy)
            fits[family] = learned_exact.model(family, get_suite(suite).pool_limit)
            families[family] = {"training_tasks": fits[family].training["n_tasks"],
                                "build_and_fit_s": round(time.perf_counter() - t0, 2)}

    out: dict = {"suites": {}, "families": {}}
    reliability: dict[str, tuple[list[int], list[float]]] = {}
    # per tool-family task: (needs a tool, best tool's BM25, best tool's p, best judge or None)
    tops: list[tuple[int, float, float, float | None]] = []
    for suite in SUITES:
        info = get_suite(suite)
        assert info.family is not None
        tasks = build_suite(suite, seed=0, size=args.size).tasks
        model = fits[info.family]
        y, bm25, learned = [], [], []
        pools = [candidate_pools(t.router_view(), info.pool_limit) for t in tasks]
        for task, pool in zip(tasks, pools, strict=False):
            ty, tb, tl, _, p = _candidate_rows(task, pool, model)
            y += ty
            bm25 += tb
            learned += tl
            if info.family == "bfcl-tools" and pool.tools:
                tops.append((int(task.verifier.kind != "no_tools"),
                             max(c.score for c in pool.tools),
                             max(p[c.resource_id] for c in pool.tools), None))
        ry, rp = reliability.setdefault(info.family, ([], []))
        ry.extend(y)
        rp.extend(learned)
        success: dict[str, list[bool]] = {}
        times: list[float] = []
        pairs = 0
        for task in tasks:
            view = task.router_view()
            for name, fn in strategies.items():
                t0 = time.perf_counter()
                result = fn.select(view, info.pool_limit)
                if name == "learned_exact":
                    times.append((time.perf_counter() - t0) * 1000)
                    pairs += result.extra.get("learned_pairs", 0)
                sel = result.selection
                ok = verify(task, execute(task, sel.context_ids, sel.tool_ids)).success
                success.setdefault(name, []).append(ok)
        row = {
            "tasks": len(tasks), "candidates": len(y), "gold_candidates": sum(y),
            "auc_bm25": _auc(y, bm25), "auc_learned": _auc(y, learned),
            "brier_learned": round(float(brier_score_loss(y, learned)), 4) if y else None,
            "success": {n: round(float(np.mean(v)), 4) for n, v in success.items()},
            "learned_exact_vs_exact": _cmp(success["learned_exact"], success["exact"]),
            "learned_exact_vs_learned_split": _cmp(success["learned_exact"],
                                                   success["learned_split"]),
            "learned_pairs": pairs,
            "select_ms_median": round(statistics.median(times), 2),
        }
        if args.judge_tasks:
            k = min(args.judge_tasks, len(tasks))
            scores = _judge_scores(tasks[:k], pools[:k])
            jy, jb, jl, js = [], [], [], []
            for task, pool, sc in zip(tasks[:k], pools[:k], scores, strict=False):
                ty, tb, tl, tj, p = _candidate_rows(task, pool, model, sc)
                if info.family == "bfcl-tools" and pool.tools:
                    tops.append((int(task.verifier.kind != "no_tools"),
                                 max(c.score for c in pool.tools),
                                 max(p[c.resource_id] for c in pool.tools),
                                 max(sc[c.resource_id] for c in pool.tools)))
                jy += ty
                jb += tb
                jl += tl
                js += tj
            row["judge_subset"] = {"tasks": k, "auc_judge": _auc(jy, js),
                                   "auc_bm25": _auc(jy, jb), "auc_learned": _auc(jy, jl)}
        out["suites"][suite] = row
    # can the best tool's score tell a task that needs a tool from an irrelevance task?
    every = [t for t in tops if t[3] is None]
    judged = [t for t in tops if t[3] is not None]
    out["abstention_auc"] = {
        "tasks": len(every), "bm25": _auc([t[0] for t in every], [t[1] for t in every]),
        "learned": _auc([t[0] for t in every], [t[2] for t in every]),
        "judge_subset": None if not judged else {
            "tasks": len(judged),
            "bm25": _auc([t[0] for t in judged], [t[1] for t in judged]),
            "learned": _auc([t[0] for t in judged], [t[2] for t in judged]),
            "judge": _auc([t[0] for t in judged], [t[3] for t in judged if t[3] is not None])},
    }
    for family, model in fits.items():
        rec = model.record()
        out["families"][family] = {
            **families[family], "model_sha256": model.sha256, "lambda": model.lam,
            "tau": rec["tau"], "pair_model": rec["pair_model"] is not None,
            "gold_pairs_in_training": rec["training"]["gold_pairs"],
            "training_success_by_lambda": {str(r["lambda"]): r["training_success"]
                                           for r in rec["search"]},
            "training_success_by_lambda_and_suite": {str(r["lambda"]): r["by_suite"]
                                                     for r in rec["search"]},
        }
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 5))
        ax.plot([0, 1], [0, 1], ls=":", color="grey", label="perfectly calibrated")
        for family, (ry, rp) in sorted(reliability.items()):
            frac, mean = calibration_curve(ry, rp, n_bins=10, strategy="uniform")
            ax.plot(mean, frac, marker="o", label=f"{family} (Brier "
                    f"{brier_score_loss(ry, rp):.3f}, n={len(ry)})")
        ax.set_xlabel("predicted p(gold)")
        ax.set_ylabel("observed gold rate")
        ax.set_title("Learned relevance, evaluation candidates")
        ax.legend(loc="upper left", fontsize=8)
        os.makedirs(os.path.dirname(args.plot) or ".", exist_ok=True)
        fig.savefig(args.plot, dpi=100, bbox_inches="tight")
        out["plot"] = args.plot
    out["load"] = [round(x, 2) for x in os.getloadavg()]
    write_results(__file__, out)
    if args.json:
        print(json.dumps(out, indent=1, sort_keys=True))
    else:
        for suite, row in out["suites"].items():
            print(suite, row["success"], "AUC bm25", row["auc_bm25"], "learned",
                  row["auc_learned"], "Brier", row["brier_learned"])


if __name__ == "__main__":
    main()
