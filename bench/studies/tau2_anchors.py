"""τ-Knowledge: lexical anchors, and where the joint gain or loss comes from.

Prints, on the data ``$JUNCTION_TAU2_DATA`` (or ``--tau2-data PATH``) names:

1. Lexical anchors over every task, measured like the shared copy's README (bm25s,
   English stopwords, the scenario as query; document text = title + content; tool text =
   name with ``_`` as spaces + the description before ``Args:``): required-document
   recall@10/@50, gold agent-tool recall@5/@10 (all gold agent tools, and the
   discoverable ones only), and the recall of gold tools named in the top-10 documents.
   Beside them, the same recalls through Junction's own lanes (``junction.candidates``:
   ``lexical_tokens``, contexts with their source kind, tools with their rendered schema),
   which is what the strategies rank with.
2. The breakdown on the evaluation tasks at scales 0.5, 1, 2: success, tool recall and
   pair coverage of the joint selector and the split baseline, with the lexical prior
   (``exact``) and the learned utilities (``learned_exact``), on the suite's BM25 pools and
   on oracle pools (every gold document added to the context pool: an analysis, never a
   strategy), and the joint selector with its pairs switched off.

Usage: ``JUNCTION_TAU2_DATA=... python bench/studies/tau2_anchors.py [--tau2-data PATH]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
from junction_datasets import build_suite, family_training_tasks
from junction_datasets import tau2_banking as tb

from junction.agent.execution import ExecutionResult
from junction.candidates import Candidate, CandidatePools, candidate_pools
from junction.evaluate import scale_budget
from junction.evidence.metrics import pair_coverage, set_recall
from junction.select import AdaptiveSplitBaseline, AutoJointSelector, JointProblem
from junction.strategies.base import joint_problem
from junction.verifiers import verify

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

SCALES = (0.5, 1.0, 2.0)


def _recall_at(ranked: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold)


def readme_anchors(tasks) -> dict[str, float]:
    """The README's lexical baselines over ``tasks`` (bm25s, English stopwords)."""
    view = tasks[0]
    docs = list(view.contexts)
    tools = list(view.tools)
    d_ret = bm25s.BM25()
    d_ret.index(bm25s.tokenize([c.content for c in docs], stopwords="en", show_progress=False),
                show_progress=False)
    t_ret = bm25s.BM25()
    t_ret.index(bm25s.tokenize([f"{t.id.replace('_', ' ')} {t.description}" for t in tools],
                               stopwords="en", show_progress=False), show_progress=False)
    out: dict[str, list[float]] = {k: [] for k in (
        "doc@10", "doc@50", "tool@5", "tool@10", "disc_tool@5", "disc_tool@10", "named_top10",
        "disc_case@5", "disc_case@10")}
    discoverable = {t.id for t in tools if t.metadata.get("discoverable")}
    for task in tasks:
        ds, ts = (np.argsort(-r.get_scores(_ids(r, task.objective)), kind="stable")
                  for r in (d_ret, t_ret))
        ranked_d = [docs[i].id for i in ds]
        ranked_t = [tools[i].id for i in ts]
        gold_d, gold_t = set(task.gold_context_ids), set(task.gold_tool_ids)
        out["doc@10"].append(_recall_at(ranked_d, gold_d, 10))
        out["doc@50"].append(_recall_at(ranked_d, gold_d, 50))
        if gold_t:
            out["tool@5"].append(_recall_at(ranked_t, gold_t, 5))
            out["tool@10"].append(_recall_at(ranked_t, gold_t, 10))
            named = {t for d in ranked_d[:10] for t in gold_t
                     if tb.names_tool(task.context(d).content, t)}
            out["named_top10"].append(len(named) / len(gold_t))
        for t in sorted(gold_t & discoverable):  # one row per (task, gold discoverable tool)
            out["disc_case@5"].append(float(t in ranked_t[:5]))
            out["disc_case@10"].append(float(t in ranked_t[:10]))
        if gold_t & discoverable:
            out["disc_tool@5"].append(_recall_at(ranked_t, gold_t & discoverable, 5))
            out["disc_tool@10"].append(_recall_at(ranked_t, gold_t & discoverable, 10))
    return {k: statistics.mean(v) for k, v in out.items() if v}


def _ids(retriever, text: str) -> list[str]:
    tokens = bm25s.tokenize([text], stopwords="en", show_progress=False, return_ids=False)[0]
    return [t for t in tokens if t in retriever.vocab_dict]


def lane_anchors(tasks) -> dict[str, float]:
    """The same recalls through Junction's lanes (``candidate_pools`` without a limit)."""
    out: dict[str, list[float]] = {k: [] for k in ("doc@10", "doc@50", "tool@5", "tool@10")}
    for task in tasks:
        pools = candidate_pools(task.router_view(), None)
        ranked_d = [c.resource_id for c in pools.contexts]
        ranked_t = [t.resource_id for t in pools.tools]
        out["doc@10"].append(_recall_at(ranked_d, set(task.gold_context_ids), 10))
        out["doc@50"].append(_recall_at(ranked_d, set(task.gold_context_ids), 50))
        if task.gold_tool_ids:
            out["tool@5"].append(_recall_at(ranked_t, set(task.gold_tool_ids), 5))
            out["tool@10"].append(_recall_at(ranked_t, set(task.gold_tool_ids), 10))
    return {k: statistics.mean(v) for k, v in out.items()}


def _oracle(task, pools: CandidatePools) -> CandidatePools:
    """``pools`` with every gold document appended (score 0, after the BM25 ranks)."""
    have = {c.resource_id for c in pools.contexts}
    extra = [Candidate(resource_id=d, kind="context", score=0.0, rank=len(pools.contexts) + i)
             for i, d in enumerate(d for d in task.gold_context_ids if d not in have)]
    return CandidatePools(contexts=[*pools.contexts, *extra], tools=pools.tools)


def _measure(task, selection) -> tuple[bool, float | None, bool | None]:
    outcome = verify(task, ExecutionResult(context_ids=selection.context_ids,
                                           tool_ids=selection.tool_ids))
    return (outcome.success, set_recall(selection.tool_ids, task.gold_tool_ids),
            pair_coverage(selection.context_ids, selection.tool_ids, task.gold_context_ids,
                          task.gold_tool_ids,
                          [(p.context_id, p.tool_id) for p in task.gold_pairs]))


def breakdown(tasks, model) -> dict[tuple[str, str, float], tuple[float, float, float]]:
    """(utility, variant, scale) -> (success, tool recall, pair coverage) means."""
    joint, split = AutoJointSelector(), AdaptiveSplitBaseline()
    rows: dict[tuple[str, str, float], list[tuple]] = {}
    statuses: Counter[str] = Counter()
    most_work = 0
    for scale in SCALES:
        for base in tasks:
            task = scale_budget(base, scale)
            view = task.router_view()
            bm25 = candidate_pools(view, tb.POOL_LIMIT)
            for pool_name, pools in (("bm25", bm25), ("oracle", _oracle(task, bm25))):
                lexical = joint_problem(view, pools)
                learned, _ = model.problem(view, pools, pairs=True)
                for utility, problem in (("lexical", lexical), ("learned", learned)):
                    off = JointProblem(problem.contexts, problem.tools, problem.budget,
                                       problem.unary, {})
                    for variant, selector, prob in (("joint", joint, problem),
                                                    ("joint_pairs_off", joint, off),
                                                    ("split", split, off)):
                        sel = selector.select(prob)
                        if selector is joint:
                            statuses[sel.status] += 1
                            most_work = max(most_work, sel.lp_iterations)
                        rows.setdefault((utility, f"{pool_name}:{variant}", scale), []).append(
                            _measure(task, sel))
    out = {}
    for key, values in rows.items():
        s = [v[0] for v in values]
        tr = [v[1] for v in values if v[1] is not None]
        pc = [v[2] for v in values if v[2] is not None]
        out[key] = (float(np.mean(s)), float(np.mean(tr)), float(np.mean(pc)))
    print(f"joint selector statuses over the breakdown: {dict(sorted(statuses.items()))}; "
          f"largest work: {most_work} simplex iterations")
    return out


def data_arguments(description: str | None, argv: list[str] | None,
                   parser: argparse.ArgumentParser | None = None) -> argparse.Namespace | None:
    """Parse ``--tau2-data PATH`` (it sets ``$JUNCTION_TAU2_DATA``) and the options of
    ``parser``, if given; None, after printing why on stderr, when the suite's data is
    unavailable. Shared by the τ-Knowledge bench scripts."""
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument("--tau2-data", default=None)
    args = parser.parse_args(argv)
    if args.tau2_data:
        os.environ[tb.DATA_ENV] = os.path.abspath(args.tau2_data)
    reason = tb.unavailable_reason()
    if reason:
        print(reason, file=sys.stderr)
        return None
    return args


def fit_family_model():
    """The tau2-banking family model, fitted as ``learned_exact`` fits it (its training
    tasks, the suite's pool limit)."""
    from junction.learned.utility import fit_learned_utility

    return fit_learned_utility("tau2-banking", family_training_tasks("tau2-banking"),
                               tb.POOL_LIMIT)


def main(argv: list[str] | None = None) -> int:
    if data_arguments(__doc__.splitlines()[0], argv) is None:
        return 2
    every = build_suite(tb.SUITE, split="all").tasks
    figures: dict = {"readme_anchors": readme_anchors(every),
                     "lane_anchors": lane_anchors(every[:: max(1, len(every) // 24)]),
                     "breakdown": {}}
    print(f"lexical anchors over {len(every)} tasks (README's way: bm25s, English stopwords):")
    for k, v in figures["readme_anchors"].items():
        print(f"  {k:14s} {v:.3f}")
    print("the same through Junction's lanes (lexical_tokens, source kind, rendered schema; "
          "every 4th task, one BM25 index per task):")
    for k, v in figures["lane_anchors"].items():
        print(f"  {k:14s} {v:.3f}")
    evaluation = build_suite(tb.SUITE, split="eval").tasks
    model = fit_family_model()
    print(f"learned model: lambda {model.lam}, tau {model.tau}, training "
          f"{model.training['n_tasks']} tasks, {model.training['gold_pairs']} gold pairs of "
          f"{model.training['pair_rows']} rows")
    print(f"breakdown on {len(evaluation)} evaluation tasks: success / tool recall / pair "
          "coverage")
    for (utility, variant, scale), (s, tr, pc) in sorted(breakdown(evaluation, model).items()):
        print(f"  {utility:8s} {variant:22s} scale {scale:<4g} {s:.3f} {tr:.3f} {pc:.3f}")
        figures["breakdown"][f"{utility} {variant} scale {scale:g}"] = {
            "success": s, "tool_recall": tr, "pair_coverage": pc}
    figures["learned_model"] = {"lambda": model.lam, "tau": model.tau,
                                "training_tasks": model.training["n_tasks"]}
    write_results(__file__, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
