"""Judge quality: the judge against BM25 on suites, on negation pairs, per layout, per tool
rendering.

**Suites** (always). For each task, the candidates are the BM25 pools (``candidate_pools``,
top ``--pool`` per lane, contexts and tools), labelled gold / non-gold from the task's gold
ids; judge scores are logit("yes") - logit("no") against the objective with the strategy's
judge config (``STRATEGY_JUDGE_CONFIG``, documents cut to 64 tokens), BM25 scores are the
lanes' scores, max-normalised per lane (as ``junction.strategies`` does for unary utility)
so one ranking covers both lanes. Scores are comparable only within one query, so the AUC
is computed per task (Mann-Whitney U / (n_pos * n_neg) from ``scipy.stats.mannwhitneyu``;
ties count one half) and averaged over tasks that have both a gold and a non-gold
candidate ("macro"); ``*_pooled`` pools every pair of the suite. ``pairs`` counts the
(task, candidate) pairs scored.

**Negation pairs** (always; ``--pairs``, default ``bench/data/negation_pairs.jsonl``): each
record is a query, a supporting passage and a refuting passage with the same entities
(negation, modality, counterfactual, cancelled, wrong tense). ``accuracy`` = share of pairs
where support scores above refute (ties count one half); ``mean_gap`` = mean of
score(support) - score(refute) (logits for the judge); ``above_noise`` = pairs whose gap
exceeds the q8_0 noise floor ``NOISE_FLOOR_LOGITS``. BM25 scores each pair as a corpus of
its two passages (as a task with two candidates).

**Layouts** (``--layouts``): per model (``--layout-models``: the ``--model`` and Gemma 3
270M by default) and layout (``few_shot``, ``qwen3_reranker``): pair accuracy and
bfcl-memory AUC; the measurement behind ``TEMPLATE_BY_FAMILY`` (junction/judge/templates.py).

**Tool rendering** (``--tool-rendering``): the text the judge reads for a tool, on
bfcl-multiple and bfcl-live-multiple (tool candidates only): ``schema`` (today's
``candidate_text``: ``Tool <id>: <description> Schema: <rendered schema>``),
``name_description`` (``Tool <id>: <description>``) and ``name_description_params``
(``... Parameters: <required names> (required), <other names>``); judge AUC, the mean
candidate tokens (uncut, and as judged after the 64-token cut) and the share cut.

    python bench/studies/judge_quality.py --json [--model PATH] [--size 40] [--layouts] \
        [--tool-rendering]

Scores go through the persistent score cache (``state_dir()/judge_scores.sqlite``), so a
re-run re-scores nothing. A suite that is not registered (or cannot be built here) is
listed under ``skipped`` with the reason. Fixed sizes and seeds: deterministic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402
from scipy.stats import mannwhitneyu  # noqa: E402

from junction.candidates import bm25_scores  # noqa: E402
from junction.environment import state_dir  # noqa: E402
from junction.judge import JudgeConfig, ScoreCache, cached_scores, load_judge  # noqa: E402
from junction.judge.templates import TEMPLATES, get_template  # noqa: E402
from junction.strategies import candidate_pools  # noqa: E402
from junction.strategies.judge_admission import (  # noqa: E402
    DEFAULT_POOL_PER_LANE,
    STRATEGY_JUDGE_CONFIG,
    candidate_text,
)

try:  # the q8_0 floor measured for Gemma 3 270M (a per-model floor may replace it)
    from junction.judge.scorer import NOISE_FLOOR_LOGITS
except ImportError:  # pragma: no cover
    NOISE_FLOOR_LOGITS = {"q8_0": 0.22}

PAIRS_FILE = ROOT / "bench" / "data" / "negation_pairs.jsonl"
DEFAULT_SUITES = ["bfcl-memory", "bfcl-multiple", "bfcl-live-multiple", "synthetic"]
TOOL_SUITES = ["bfcl-multiple", "bfcl-live-multiple"]
LAYOUT_SUITE = "bfcl-memory"

GOALS = {
    "pairs_accuracy_min": 0.90,
    "bfcl_memory_auc_within_bm25": 0.05,
    "tool_suite_auc_min": 0.70,
}
"""The judge's goals: above 90% on the pair set, within 0.05 of BM25's AUC on
bfcl-memory, gold tools above non-gold (AUC > 0.7) on both tool suites."""


def auc(scores: list[float], labels: list[bool]) -> float | None:
    """ROC AUC = Mann-Whitney U of the positives / (n_pos * n_neg); ``None`` without both
    classes. Ties count one half."""
    pos = [s for s, y in zip(scores, labels, strict=False) if y]
    neg = [s for s, y in zip(scores, labels, strict=False) if not y]
    if not pos or not neg:
        return None
    with warnings.catch_warnings():  # all-equal scores: the p-value warns, U is fine
        warnings.simplefilter("ignore")
        u = mannwhitneyu(pos, neg, alternative="two-sided", method="asymptotic").statistic
    return float(u / (len(pos) * len(neg)))


def _scored(scores: list[float | None]) -> list[float]:
    """The judge's scores of ``scores``' texts, every one non-empty (an empty text has no
    score: ``ValueError``)."""
    if any(s is None for s in scores):
        raise ValueError("an empty candidate text has no judge score")
    return [s for s in scores if s is not None]


def _mean(xs: Sequence[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


# -- tool renderings -------------------------------------------------------------------

def _params_summary(schema: dict) -> str:
    params = schema.get("parameters", schema) if isinstance(schema, dict) else {}
    props = list((params.get("properties") or {}).keys()) if isinstance(params, dict) else []
    required = [p for p in (params.get("required") or []) if p in props] \
        if isinstance(params, dict) else []
    names = [f"{p} (required)" for p in required] + [p for p in props if p not in required]
    return ", ".join(names) if names else "none"


def render_name_description(view, candidate) -> str:
    if candidate.kind == "context":
        return candidate_text(view, candidate)
    tool = view.tool(candidate.resource_id)
    return f"Tool {tool.id}: {tool.description}"


def render_name_description_params(view, candidate) -> str:
    if candidate.kind == "context":
        return candidate_text(view, candidate)
    tool = view.tool(candidate.resource_id)
    return f"Tool {tool.id}: {tool.description} Parameters: {_params_summary(tool.json_schema)}"


RENDERINGS: dict[str, Callable] = {
    "schema": candidate_text,
    "name_description": render_name_description,
    "name_description_params": render_name_description_params,
}


# -- measurements ----------------------------------------------------------------------

def evaluate_suite(judge, cache, tasks, pool: int, render: Callable = candidate_text,
                   tools_only: bool = False) -> dict:
    per_judge, per_bm25 = [], []
    all_j, all_b, all_y = [], [], []
    pairs, uncut_tokens, judged_tokens, cut = 0, [], [], 0
    start = time.perf_counter()
    for task in tasks:
        view = task.router_view()
        pools = candidate_pools(view, pool)
        gold = set(task.gold_context_ids) | set(task.gold_tool_ids)
        lanes = (pools.tools,) if tools_only else (pools.contexts, pools.tools)
        cands = [c for lane in lanes for c in lane]
        if not cands:
            continue
        texts = [render(view, c) for c in cands]
        for text in texts:
            toks, n = judge.document_tokens(text)
            uncut_tokens.append(n)
            judged_tokens.append(len(toks))
            cut += n > judge.config.max_document_tokens
        j = _scored(cached_scores(judge, cache, view.objective, texts))
        # BM25 lanes are scored separately; max-normalise per lane so one ranking covers both.
        b: list[float] = []
        for lane in lanes:
            best = max((c.score for c in lane), default=0.0) or 1.0
            b.extend(c.score / best for c in lane)
        y = [c.resource_id in gold for c in cands]
        pairs += len(cands)
        all_j += j
        all_b += b
        all_y += y
        aj, ab = auc(j, y), auc(b, y)
        if aj is not None and ab is not None:  # both or neither: the same labels
            per_judge.append(aj)
            per_bm25.append(ab)
    def pooled(s):
        return (None if auc(s, all_y) is None else round(auc(s, all_y), 4))
    return {
        "judge_auc": _mean(per_judge), "bm25_auc": _mean(per_bm25), "pairs": pairs,
        "tasks": len(tasks), "tasks_with_both_classes": len(per_judge),
        "judge_auc_pooled": pooled(all_j), "bm25_auc_pooled": pooled(all_b),
        "judge_mean_gold": _mean([s for s, y in zip(all_j, all_y, strict=False) if y]),
        "judge_mean_non_gold": _mean([s for s, y in zip(all_j, all_y, strict=False) if not y]),
        "mean_candidate_tokens": _mean(uncut_tokens),
        "mean_judged_tokens": _mean(judged_tokens),
        "share_cut": _mean([1.0] * cut + [0.0] * (len(uncut_tokens) - cut)),
        "seconds": round(time.perf_counter() - start, 2),
    }


def load_pairs(path: Path) -> tuple[list[dict], str]:
    rows, provenance = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "provenance" in row:
            provenance = row["provenance"]
            continue
        rows.append(row)
    return rows, provenance


def _pair_summary(gaps: list[float], ids: list[str], floor: float | None) -> dict:
    wins = sum(1.0 if g > 0 else 0.5 if g == 0 else 0.0 for g in gaps)
    out = {"n": len(gaps), "accuracy": round(wins / len(gaps), 4),
           "ties": sum(g == 0 for g in gaps),
           "mean_gap": _mean(gaps), "min_gap": round(min(gaps), 4),
           "wrong": [i for i, g in zip(ids, gaps, strict=False) if g <= 0]}
    if floor is not None:
        out["above_noise"] = sum(g > floor for g in gaps)
    return out


def evaluate_pairs(judge, cache, pairs: list[dict]) -> dict:
    start = time.perf_counter()
    gaps_j, gaps_b, ids = [], [], []
    by_kind: dict[str, list[float]] = {}
    for p in pairs:
        sj, rj = _scored(cached_scores(judge, cache, p["query"], [p["support"], p["refute"]]))
        sb, rb = bm25_scores(p["query"], [p["support"], p["refute"]])
        gaps_j.append(sj - rj)
        gaps_b.append(sb - rb)
        ids.append(p["id"])
        by_kind.setdefault(p["kind"], []).append(sj - rj)
    floor = NOISE_FLOOR_LOGITS.get(judge.config.kv_type)
    return {
        "judge": _pair_summary(gaps_j, ids, floor),
        "bm25": _pair_summary(gaps_b, ids, None),
        "judge_accuracy_by_kind": {
            k: round(sum(1.0 if g > 0 else 0.5 if g == 0 else 0.0 for g in v) / len(v), 4)
            for k, v in sorted(by_kind.items())},
        "noise_floor_logits": floor,
        "seconds": round(time.perf_counter() - start, 2),
    }


# -- driver ----------------------------------------------------------------------------

def _config(model: str | None, kv_type: str, template: str = "auto",
            threads: int | None = None) -> JudgeConfig:
    """The strategy's judge config for ``model`` (a GGUF path or an embedded name)."""
    update: dict = {"kv_type": kv_type, "template": template}
    if threads:
        update["n_threads"] = threads
    if model:
        if Path(model).is_file():
            update["model_path"] = Path(model)
        else:
            update["embedded"] = model
    return STRATEGY_JUDGE_CONFIG.model_copy(update=update)


def _describe(judge) -> dict:
    return {"model_path": str(judge.model_path), "model_hash": judge.model_hash,
            "family": judge.metadata.get("general.architecture", ""),
            "name": judge.metadata.get("general.name", ""),
            "template": judge.template.name, "instruction_hash": judge.instruction_hash(),
            "kv_type": judge.config.kv_type, "n_threads": judge.config.n_threads,
            "max_document_tokens": judge.config.max_document_tokens}


def _build(name: str, seed: int, size: int, skipped: dict):
    from junction_datasets import build_suite, suite_names
    if name not in suite_names():
        skipped[name] = f"suite {name!r} is not registered in datasets/"
        return None
    try:
        return build_suite(name, seed=seed, size=size).tasks
    except Exception as exc:  # a real-data suite may be unavailable on this machine
        skipped[name] = f"cannot build suite {name!r}: {exc}"
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--model", default=None,
                        help="GGUF path or embedded model name (default: the embedded default)")
    parser.add_argument("--size", type=int, default=40, help="tasks per suite (default 40)")
    parser.add_argument("--pool", type=int, default=DEFAULT_POOL_PER_LANE,
                        help=f"BM25 candidates per lane (default {DEFAULT_POOL_PER_LANE}, "
                             "as the strategy)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--suites", nargs="*", default=DEFAULT_SUITES)
    parser.add_argument("--pairs", type=Path, default=PAIRS_FILE)
    parser.add_argument("--kv-type", default="q8_0")
    parser.add_argument("--template", default="auto")
    parser.add_argument("--threads", type=int, default=None,
                        help="decode threads (default: the config's); 1 is several times "
                             "faster when other processes share the cores, same scores")
    parser.add_argument("--layouts", action="store_true",
                        help="pair accuracy and bfcl-memory AUC per model and layout")
    parser.add_argument("--layout-models", nargs="+", default=None,
                        help="models for --layouts (default: --model and gemma3-270m)")
    parser.add_argument("--layout-size", type=int, default=None,
                        help="bfcl-memory tasks for --layouts (default: --size)")
    parser.add_argument("--tool-rendering", action="store_true",
                        help="judge AUC per tool rendering on the tool suites")
    parser.add_argument("--no-cache", action="store_true", help="score without the score cache")
    args = parser.parse_args(argv)

    t_start = time.perf_counter()
    judge = load_judge(_config(args.model, args.kv_type, args.template, args.threads))
    cache = None if args.no_cache else ScoreCache(state_dir() / "judge_scores.sqlite")
    pairs, provenance = load_pairs(args.pairs)
    out: dict = {"judge": _describe(judge), "suites": {}, "skipped": {},
                 "pool_per_lane": args.pool, "size": args.size, "seed": args.seed}
    built: dict[str, list] = {}
    for name in args.suites:
        tasks = _build(name, args.seed, args.size, out["skipped"])
        if tasks is None:
            continue
        built[name] = tasks
        out["suites"][name] = evaluate_suite(judge, cache, tasks, args.pool)
    out["pairs"] = {"file": str(args.pairs.relative_to(ROOT) if args.pairs.is_relative_to(ROOT)
                                else args.pairs), "provenance": provenance,
                    **evaluate_pairs(judge, cache, pairs)}

    goals: dict = {"pairs_accuracy": out["pairs"]["judge"]["accuracy"]}
    goals["pairs_met"] = goals["pairs_accuracy"] > GOALS["pairs_accuracy_min"]
    mem = out["suites"].get("bfcl-memory")
    if mem and mem["judge_auc"] is not None:
        goals["bfcl_memory_auc_minus_bm25"] = round(mem["judge_auc"] - mem["bm25_auc"], 4)
        goals["bfcl_memory_met"] = (goals["bfcl_memory_auc_minus_bm25"]
                                    >= -GOALS["bfcl_memory_auc_within_bm25"])
    for name in TOOL_SUITES:
        r = out["suites"].get(name)
        if r and r["judge_auc"] is not None:
            goals[f"{name}_met"] = r["judge_auc"] > GOALS["tool_suite_auc_min"]
    out["goals"] = goals

    if args.layouts:
        out["layouts"] = []
        models = args.layout_models or [args.model or STRATEGY_JUDGE_CONFIG.embedded,
                                        "gemma3-270m"]
        layout_size = args.layout_size or args.size
        mem_tasks = (built.get(LAYOUT_SUITE) if layout_size == args.size else None) \
            or _build(LAYOUT_SUITE, args.seed, layout_size, out["skipped"])
        out["layout_size"] = layout_size
        for model in models:
            base = load_judge(_config(model, args.kv_type, threads=args.threads))
            for layout in sorted(TEMPLATES):
                view = base.with_template(get_template(layout))
                start = time.perf_counter()
                pr = evaluate_pairs(view, cache, pairs)
                row = {"model": model, "family": base.metadata.get("general.architecture", ""),
                       "model_hash": base.model_hash, "layout": layout,
                       "auto_picks": base.template.name == layout,
                       "pairs_accuracy": pr["judge"]["accuracy"],
                       "pairs_mean_gap": pr["judge"]["mean_gap"],
                       "pairs_above_noise": pr["judge"].get("above_noise"),
                       "pairs_wrong": pr["judge"]["wrong"]}
                if mem_tasks is not None:
                    r = evaluate_suite(view, cache, mem_tasks, args.pool)
                    row.update({f"{LAYOUT_SUITE}_auc": r["judge_auc"],
                                f"{LAYOUT_SUITE}_bm25_auc": r["bm25_auc"]})
                row["seconds"] = round(time.perf_counter() - start, 2)
                out["layouts"].append(row)

    if args.tool_rendering:
        out["tool_rendering"] = {}
        for rendering, render in RENDERINGS.items():
            row = {}
            for name in TOOL_SUITES:
                tasks = built.get(name) or _build(name, args.seed, args.size, out["skipped"])
                if tasks is None:
                    continue
                built[name] = tasks
                r = evaluate_suite(judge, cache, tasks, args.pool, render, tools_only=True)
                row[name] = {k: r[k] for k in (
                    "judge_auc", "bm25_auc", "judge_mean_gold", "judge_mean_non_gold",
                    "mean_candidate_tokens", "mean_judged_tokens", "share_cut", "pairs",
                    "seconds")}
            out["tool_rendering"][rendering] = row

    out["seconds"] = round(time.perf_counter() - t_start, 2)
    write_results(__file__, out)
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        for name, r in out["suites"].items():
            print(f"{name:>20}: judge AUC {r['judge_auc']}  BM25 AUC {r['bm25_auc']}  "
                  f"pairs {r['pairs']}  {r['seconds']} s")
        pj, pb = out["pairs"]["judge"], out["pairs"]["bm25"]
        print(f"{'negation pairs':>20}: judge {pj['accuracy']} (mean gap {pj['mean_gap']})  "
              f"BM25 {pb['accuracy']}  n {pj['n']}")
        for row in out.get("layouts", []):
            print(f"{row['model'][-40:]:>40} {row['layout']:>15}: pairs {row['pairs_accuracy']}"
                  f"  gap {row['pairs_mean_gap']}  {LAYOUT_SUITE} AUC "
                  f"{row.get(LAYOUT_SUITE + '_auc')}")
        for rendering, row in out.get("tool_rendering", {}).items():
            for name, r in row.items():
                print(f"{rendering:>24} {name:>20}: judge AUC {r['judge_auc']}  "
                      f"tokens {r['mean_candidate_tokens']} (judged {r['mean_judged_tokens']})")
        for name, why in out["skipped"].items():
            print(f"{name:>20}: skipped ({why})")
        print(f"goals: {out['goals']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
