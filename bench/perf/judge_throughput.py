"""Judge throughput and noise floor: prefix-shared batch path vs naive path, same inputs.

Inputs: one objective and ``--candidates`` candidate texts (contexts and tools of the
synthetic suite, seed 0, read as the strategy reads them, cut to ``max_document_tokens``).
Measured side by side in one run: each of ``--repeats`` rounds times the three paths back
to back, ratios are taken within a round (so load from other processes hits both sides of
a ratio alike) and the median over rounds is printed:

- batch: ``LlamaJudge.score`` with the prefix already decoded (steady state: the prefix is
  paid once per judge); the query branch is decoded in every call;
- naive: ``LlamaJudge.score_naive``: every candidate's whole prompt from an empty cache;
- raw: one prompt of ``--raw-tokens`` tokens decoded in one batch (the model's prompt speed).

``fraction_of_raw`` = batch candidate tokens/s / raw prompt tokens/s.
Noise floor per KV cache type: the spread (max - min, logits) of the scores of one passage
placed in every candidate slot of a batch, and the largest |batch - naive| difference;
``noise_floor`` is the larger of the two.

    python bench/perf/judge_throughput.py --json [--model NAME|PATH] [--kv-types f16 q8_0 q4_0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402

from junction.judge import RETRIEVAL_INSTRUCTION, JudgeConfig, load_judge  # noqa: E402
from junction.models import EMBEDDED_MODELS, resolve_model_path  # noqa: E402
from junction.strategies import candidate_pools  # noqa: E402
from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG, candidate_text  # noqa: E402


def _inputs(n: int) -> tuple[str, list[str]]:
    from junction_datasets import build_suite

    tasks = build_suite("synthetic", seed=0, size=max(1, n // 12 + 1)).tasks
    query = tasks[0].objective
    texts: list[str] = []
    for task in tasks:
        view = task.router_view()
        pools = candidate_pools(view, None)
        texts += [candidate_text(view, c) for c in (*pools.contexts, *pools.tools)]
    return query, texts[:n]


def _best(fn, repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def noise_floor(config: JudgeConfig, query: str, docs: list[str]) -> dict:
    """Noise floor of one KV cache type (logits; see the module docstring)."""
    judge = load_judge(config)
    slots = config.n_seq - 2
    same = judge.score(query, [docs[0]] * slots).scores
    mixed = judge.score(query, docs).scores
    naive = judge.score_naive(query, docs).scores
    spread = max(same) - min(same)
    diff = max(abs(a - b) for a, b in zip(mixed, naive, strict=False))
    return {"identical_passage_spread": round(spread, 4), "max_abs_batch_naive": round(diff, 4),
            "noise_floor": round(max(spread, diff), 4), "candidates": len(docs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--candidates", type=int, default=28, help="default 28 (2 groups of 14)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--raw-tokens", type=int, default=512)
    parser.add_argument("--kv-types", nargs="+", default=["f16", "q8_0", "q4_0"])
    parser.add_argument("--kv-type", default=STRATEGY_JUDGE_CONFIG.kv_type,
                        help="cache type of the throughput figures (default q8_0)")
    parser.add_argument("--model", default=None,
                        help="embedded model name or GGUF path (default: the default judge)")
    args = parser.parse_args(argv)

    update = {"kv_type": args.kv_type}
    if args.model in EMBEDDED_MODELS:
        update["embedded"] = args.model
    elif args.model is not None:
        update["model_path"] = resolve_model_path(args.model)
    config = STRATEGY_JUDGE_CONFIG.model_copy(update=update)
    judge = load_judge(config)
    query, docs = _inputs(args.candidates)
    judge.score(query, docs[:2])  # decode the shared prefix once (steady state)
    raw_tokens = (judge.prefix_tokens(RETRIEVAL_INSTRUCTION) * 8)[: args.raw_tokens]

    rows = []
    batch = naive = None
    for _ in range(args.repeats):  # the three paths back to back, so load hits them alike
        t_batch, batch = _best(lambda: judge.score(query, docs), 1)
        t_naive, naive = _best(lambda: judge.score_naive(query, docs), 1)
        t_raw, _ = _best(lambda: judge.decode_raw(raw_tokens), 1)
        judge.score(query, docs[:1])  # restore the prefix after the naive/raw paths
        rows.append((t_batch, t_naive, t_raw))
    assert batch is not None and naive is not None  # --repeats is at least 1

    cand_tokens = sum(batch.candidate_tokens)
    med = statistics.median
    result = {
        "batch_candidates_per_s": round(med(len(docs) / r[0] for r in rows), 2),
        "naive_candidates_per_s": round(med(len(docs) / r[1] for r in rows), 2),
        "speedup": round(med(r[1] / r[0] for r in rows), 2),
        "max_abs_score_diff": round(max(abs(a - b) for a, b in zip(batch.scores, naive.scores,
                                                                   strict=False)), 4),
        "raw_prompt_tokens_per_s": round(med(len(raw_tokens) / r[2] for r in rows), 1),
        "batch_candidate_tokens_per_s": round(med(cand_tokens / r[0] for r in rows), 1),
        "fraction_of_raw": round(med((cand_tokens / r[0]) / (len(raw_tokens) / r[2])
                                     for r in rows), 3),
        "repeats": args.repeats,
        "candidates": len(docs),
        "mean_candidate_tokens": round(cand_tokens / len(docs), 1),
        "prefix_tokens": len(judge.prefix_tokens(RETRIEVAL_INSTRUCTION)),
        "kv_type": args.kv_type,
        "model_hash": judge.model_hash,
        "n_threads": config.n_threads,
        "n_seq": config.n_seq,
        "n_ubatch": config.n_ubatch,
        "cpu_count": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    result["noise_floor"] = {
        kv: noise_floor(config.model_copy(update={"kv_type": kv}), query, docs)
        for kv in args.kv_types
    }
    write_results(__file__, result)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        for key, value in result.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
