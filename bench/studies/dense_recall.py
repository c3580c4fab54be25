"""The dense first stage against BM25: recall of the candidate lanes, and the cost.

Prints, in one run:

1. The seconds to load the embedder (``junction.dense``) and to embed the τ-Knowledge
   corpus cold (every document's passages and every tool, into an empty vector cache in a
   temporary state folder), with passage and document counts.
2. The recall table: for each pool rule (``junction.candidates.POOL_RULES``: bm25, dense,
   hybrid) and each lane (documents = context candidates, tools), recall@10 and recall@50
   of the gold ids, on every task of ``tau2-banking`` (split ``all``) and ``bfcl-memory``
   (every row). Recall is ir-measures' ``R@k`` over the lane's matches (a candidate at score
   0 is no retrieval, as in the traces' lane metrics), averaged over the tasks that have
   gold in that lane (n beside it). Rows ``dense (first passage)`` score a text by its
   first passage only: what plain truncation would give, against MaxP.

Usage: ``JUNCTION_TAU2_DATA=... .venv/bin/python bench/studies/dense_recall.py [--tau2-data PATH]``
(without τ data only bfcl-memory is measured).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ir_measures

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tau2-data", type=Path, default=None,
                        help="a tau2-bench checkout or the shared copy (else $JUNCTION_TAU2_DATA)")
    return parser.parse_args(argv)


def _recall(runs: dict[str, list[str]],
            gold: dict[str, list[str]]) -> dict[str, float | None]:
    """Mean R@10 and R@50 over the queries with gold (ir-measures), and n."""
    qrels = [ir_measures.Qrel(q, g, 1) for q, ids in gold.items() for g in ids]
    run = [ir_measures.ScoredDoc(q, rid, float(-rank)) for q, ids in runs.items()
           if gold.get(q) for rank, rid in enumerate(ids)]
    per: dict[str, dict[str, float]] = {q: {"R@10": 0.0, "R@50": 0.0}
                                        for q, ids in gold.items() if ids}
    for m in ir_measures.iter_calc([ir_measures.R @ 10, ir_measures.R @ 50], qrels, run):
        per[m.query_id][str(m.measure)] = float(m.value)
    if not per:
        return {"R@10": None, "R@50": None, "n": 0}
    return {"R@10": statistics.mean(p["R@10"] for p in per.values()),
            "R@50": statistics.mean(p["R@50"] for p in per.values()), "n": len(per)}


def _first_passage_lane(query: str, texts: list[str], ids: list[str]) -> list[str]:
    from junction.dense import embed_texts, passages

    vectors = embed_texts([query, *(passages(t)[0] for t in texts)])
    cosines = vectors[1:] @ vectors[0]
    scores = [round(max(0.0, float(c)), 6) for c in cosines]
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
            if scores[i] > 0]


def measure(tasks) -> dict[tuple[str, str], dict[str, float | None]]:
    """(rule, lane) -> recall over ``tasks``."""
    from junction.candidates import POOL_RULES, candidate_pools, context_text

    out = {}
    gold = {"documents": {t.task_id: list(t.gold_context_ids) for t in tasks},
            "tools": {t.task_id: list(t.gold_tool_ids) for t in tasks}}
    for rule in POOL_RULES:
        runs: dict[str, dict[str, list[str]]] = {"documents": {}, "tools": {}}
        for task in tasks:
            pools = candidate_pools(task.router_view(), None, rule)
            runs["documents"][task.task_id] = [c.resource_id for c in pools.contexts if c.matched]
            runs["tools"][task.task_id] = [c.resource_id for c in pools.tools if c.matched]
        for lane in runs:
            out[(rule, lane)] = _recall(runs[lane], gold[lane])
    first = {}
    for task in tasks:
        view = task.router_view()
        first[task.task_id] = _first_passage_lane(
            view.objective, [context_text(c) for c in view.contexts], [c.id for c in view.contexts])
    out[("dense (first passage)", "documents")] = _recall(first, gold["documents"])
    return out


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.tau2_data is not None:
        os.environ["JUNCTION_TAU2_DATA"] = str(args.tau2_data.resolve())
    state = tempfile.mkdtemp(prefix="junction-dense-bench-")
    os.environ["JUNCTION_STATE_DIR"] = state  # a cold vector cache: the embedding is timed
    from junction_datasets import SUITES, build_suite

    from junction.candidates import context_text, tool_text
    from junction.dense import _EMBEDDER, embed_texts, passages

    suites = ["bfcl-memory"]
    if SUITES["tau2-banking"].unavailable_reason() is None:
        suites.insert(0, "tau2-banking")
    else:
        print("tau2-banking: no data (set JUNCTION_TAU2_DATA or --tau2-data); skipped")
    built = {s: build_suite(s, split="all").tasks for s in suites}

    t0 = time.perf_counter()
    _EMBEDDER._load()
    load_s = time.perf_counter() - t0
    print(f"embedder load: {load_s:.1f} s (PyTorch import and weights)")
    figures: dict = {"embedder_load_s": round(load_s, 1), "recall": {}}
    if "tau2-banking" in built:
        view = built["tau2-banking"][0].router_view()
        texts = [context_text(c) for c in view.contexts] + [tool_text(t) for t in view.tools]
        flat = [p for t in texts for p in passages(t)]
        t0 = time.perf_counter()
        embed_texts(flat)
        figures["tau2_corpus_cold_s"] = round(time.perf_counter() - t0, 1)
        figures["tau2_corpus_passages"] = len(flat)
        print(f"tau2-banking corpus, cold: {len(view.contexts)} documents + {len(view.tools)} "
              f"tools = {len(flat)} passages embedded in {time.perf_counter() - t0:.1f} s "
              f"({os.cpu_count()} cores)")

    print()
    print("| suite | tasks | rule | lane | recall@10 | recall@50 | n |")
    print("|---|---|---|---|---|---|---|")
    for suite, tasks in built.items():
        t0 = time.perf_counter()
        table = measure(tasks)
        for (rule, lane), r in table.items():
            cells = " | ".join("—" if r[k] is None else f"{r[k]:.3f}" for k in ("R@10", "R@50"))
            print(f"| {suite} | {len(tasks)} | {rule} | {lane} | {cells} | {r['n']} |")
            figures["recall"][f"{suite} {rule} {lane}"] = r
        print(f"<!-- {suite}: measured in {time.perf_counter() - t0:.1f} s -->")
    write_results(__file__, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
