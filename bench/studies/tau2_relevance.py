"""τ-Knowledge: relevance you can measure: each relevance stage's ranking, out of fold.

For every configuration of ``junction.learned.relevance`` (``CONFIGS``; ``--config`` picks
some) and every fold draw of ``--draws`` (``junction.learned.crossfit.fold_assignment``,
K = ``--folds``), a model is fitted on the other folds' tasks (``fit_relevance``, pool rule
``--pool``, the suite's pool limit) and scores the held-out fold's tasks. Per task, from
the pools (``junction.learned.ranking``):

- tool depth: the rank (by p, among the pooled tools) of the last gold tool, on tasks with
  a gold tool; "never" when one is not pooled;
- document depth: for each gold tool of the task's gold pairs, the best rank among the
  pooled required documents that name it; the worst of those (tasks with a gold pair);
  "never" when a gold tool has no such document in the pool;
- recall@5, @10, @20 of the gold tools and of the required documents (``ir_measures``; an
  unpooled one counts as missed), and the required documents' recall@20 on the tasks
  without a gold tool (graded on their required documents).

The table gives median / p75 of both depths (with how many were "never") and the mean
recalls, per configuration, on draws 0-2 (choose) and 3-5 (confirm, no retuning), plus
each configuration's mean fit seconds. ``bm25`` ranks by the pool's own score (no model).

Usage: ``python bench/studies/tau2_relevance.py --tau2-data PATH [--draws 0,1,2,3,4,5]
[--config today --config stacked ...] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from junction_datasets import tau2_banking as tb

from junction.learned.crossfit import DEFAULT_FOLDS, fold_assignment
from junction.learned.ranking import depth_all, depth_cover, ranks, recall_at, summarise
from junction.learned.relevance import TODAY_CONFIG, RelevanceConfig, fit_relevance
from junction.learned.utility import training_view

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_anchors import data_arguments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

C = RelevanceConfig
P = "plain"
CONFIGS: dict[str, RelevanceConfig | None] = {
    "bm25": None,
    "today": TODAY_CONFIG,
    "plain": C(learner=P),
    "fixed": C(propagate="fixed"),
    "fixed x2": C(propagate="fixed", iterations=2),
    "stacked": C(learner=P, propagate="stacked"),
    "stacked x2": C(learner=P, propagate="stacked", iterations=2),
    "stacked needed": C(learner=P, propagate="stacked", target="needed"),
    "link_bm25": C(features=("link",), learner=P),
    "dense": C(features=("dense",), learner=P),
    "boosted": C(learner="boosted"),
    "prior": C(features=("prior",), learner=P),
    "knn": C(features=("knn",), learner=P),
    "prior+knn": C(features=("prior", "knn"), learner=P),
    "prior+knn fixed": C(features=("prior", "knn"), learner=P, propagate="fixed"),
    "prior+knn stacked needed": C(features=("prior", "knn"), learner=P,
                                  propagate="stacked", target="needed"),
    "prior+knn stacked needed x2": C(features=("prior", "knn"), learner=P,
                                     propagate="stacked", target="needed", iterations=2),
    "boosted prior+knn": C(features=("prior", "knn"), learner="boosted"),
    "boosted prior+knn stacked needed": C(features=("prior", "knn"), learner="boosted",
                                          propagate="stacked", target="needed"),
    "dense+prior+knn": C(features=("dense", "prior", "knn"), learner=P),
    "dense+prior+knn stacked needed": C(features=("dense", "prior", "knn"), learner=P,
                                        propagate="stacked", target="needed"),
    "boosted dense+prior+knn": C(features=("dense", "prior", "knn"), learner="boosted"),
}
"""The configurations measured (name -> ``RelevanceConfig``; None: the pool's score)."""
KS = (5, 10, 20)


def task_measures(task, pools, p_context: dict, p_tool: dict) -> dict:
    """One task's depths and recalls (module docstring) from its pools and scores."""
    rc, rt = ranks(p_context), ranks(p_tool)
    out: dict = {"task_id": task.task_id}
    gold_t = list(task.gold_tool_ids)
    if gold_t:
        out["tool_depth"] = depth_all(rt, gold_t)
        out.update({f"tool_R@{k}": v for k, v in
                    recall_at(sorted(rt, key=lambda t: rt[t]), gold_t, KS).items()})
    groups: dict[str, set[str]] = defaultdict(set)
    for pair in task.gold_pairs:
        groups[pair.tool_id].add(pair.context_id)
    if groups:
        out["doc_depth"] = depth_cover(rc, groups)
    needed = {p.context_id for p in task.gold_pairs} or set(task.gold_context_ids)
    out["sum_p_tool"] = sum(p_tool.values())
    out["gold_tool_pooled"] = sum(t in p_tool for t in gold_t)
    out["sum_p_context"] = sum(p_context.values())
    out["gold_context_pooled"] = sum(c in p_context for c in task.gold_context_ids)
    out["needed_context_pooled"] = sum(c in p_context for c in needed)
    if task.gold_context_ids:
        recall = recall_at(sorted(rc, key=lambda c: rc[c]), list(task.gold_context_ids), KS)
        key = "doc" if gold_t else "nogold_doc"
        out.update({f"{key}_R@{k}": v for k, v in recall.items()})
    return out


def run_config(tasks, name: str, config, draws, folds: int, pool: str) -> tuple[list, list]:
    """Per-task measures of one configuration in every draw, and its fit seconds."""
    rows, fit_s = [], []
    ids = [t.task_id for t in tasks]
    for draw in draws:
        assignment = fold_assignment(ids, folds, draw)
        for fold in range(folds):
            train = [t for t in tasks if assignment[t.task_id] != fold]
            held = [t for t in tasks if assignment[t.task_id] == fold]
            model = None
            if config is not None:
                t0 = time.perf_counter()
                model = fit_relevance(train, pool, pool_limit=tb.POOL_LIMIT, seed=0,
                                      config=config)
                fit_s.append(time.perf_counter() - t0)
            for task in held:
                view, pools, _ = training_view(task, tb.POOL_LIMIT, pool)
                if model is None:
                    pc = {c.resource_id: c.score for c in pools.contexts}
                    pt = {c.resource_id: c.score for c in pools.tools}
                else:
                    scores = model.score(view, pools)
                    pc, pt = dict(scores.context_p), dict(scores.tool_p)
                rows.append({"config": name, "draw": draw,
                             **task_measures(task, pools, pc, pt)})
        print(f"  {name}: draw {draw} done", file=sys.stderr, flush=True)
    return rows, fit_s


def summary(rows: list[dict]) -> dict:
    """Depth summaries and mean recalls of ``rows`` (one config, some draws)."""
    out: dict = {}
    for key in ("tool_depth", "doc_depth"):
        got = [r[key] for r in rows if key in r]
        if got:
            s = summarise(got)
            out[key] = {"n": s.n, "never": s.never, "median": s.median, "p75": s.p75}
    total = {k: sum(r[k] for r in rows) for k in ("sum_p_tool", "gold_tool_pooled",
                                                    "sum_p_context", "gold_context_pooled",
                                                    "needed_context_pooled")}
    # calibration in the large: expected positives (sum of p) over actual ones, pooled
    out["calibration"] = {
        "tool": round(total["sum_p_tool"] / max(1, total["gold_tool_pooled"]), 3),
        "context_gold": round(total["sum_p_context"] / max(1, total["gold_context_pooled"]), 3),
        "context_needed": round(total["sum_p_context"]
                                / max(1, total["needed_context_pooled"]), 3)}
    for key in [f"{lane}_R@{k}" for lane in ("tool", "doc", "nogold_doc") for k in KS]:
        got = [r[key] for r in rows if key in r]
        if got:
            out[key] = round(statistics.fmean(got), 4)
    return out


def _cell(d: dict | None) -> str:
    if not d:
        return "—"
    show = ["never" if v is None else str(v) for v in (d["median"], d["p75"])]
    return f"{show[0]} / {show[1]}" + (f" ({d['never']} never)" if d["never"] else "")


def choose(figures: dict, names: list[str], group: str) -> str:
    """The configuration with the smallest sum of both depths' median and p75 on
    ``group`` (never counted as 200, beyond any pool here); ties to fewer feature groups
    (a group, the dense embedder above all, must earn its place), then by name."""
    def cost(name: str) -> float:
        s = figures[name][group]
        return sum(200 if s[k][q] is None else s[k][q]
                   for k in ("tool_depth", "doc_depth") for q in ("median", "p75"))
    def groups(name: str) -> int:
        config = CONFIGS[name]
        return len(config.features) if config is not None else 0
    return min((n for n in names if CONFIGS[n] is not None),
               key=lambda n: (cost(n), groups(n), n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="0,1,2,3,4,5", help="fold-draw seeds")
    parser.add_argument("--choose", default="0,1,2",
                        help="the draws a configuration is chosen on (the rest confirm)")
    parser.add_argument("--folds", type=int, default=DEFAULT_FOLDS)
    parser.add_argument("--pool", default="bm25_named", help="pool rule")
    parser.add_argument("--config", action="append", choices=list(CONFIGS), metavar="NAME",
                        help="configuration (repeatable; default: all)")
    parser.add_argument("--json", default=None, help="also write per-task rows here")
    args = data_arguments(parser.description, argv, parser)
    if args is None:
        return 2
    draws = [int(d) for d in args.draws.split(",")]
    chosen_draws = {int(d) for d in args.choose.split(",")}
    names = args.config or list(CONFIGS)
    wall0 = time.perf_counter()
    tasks = tb.banking_suite(split="all").tasks
    groups = {"choose": [d for d in draws if d in chosen_draws],
              "confirm": [d for d in draws if d not in chosen_draws]}
    figures: dict = {}
    every_row: list[dict] = []
    print(f"τ-Knowledge, {len(tasks)} tasks, pools {args.pool} {tb.POOL_LIMIT}, "
          f"K = {args.folds}; depth = median / p75 (ranks by p among the pooled); "
          "recall = mean over tasks", flush=True)
    print(f"{'configuration':40s} {'draws':6s} {'tool depth':>18s} {'doc depth':>18s} "
          + " ".join(f"{'t@' + str(k):>5s}" for k in KS) + " "
          + " ".join(f"{'d@' + str(k):>5s}" for k in KS) + f" {'ng@20':>5s} {'fit s':>6s}",
          flush=True)
    for name in names:
        t0 = time.perf_counter()
        rows, fit_s = run_config(tasks, name, CONFIGS[name], draws, args.folds, args.pool)
        every_row += rows
        figures[name] = {g: summary([r for r in rows if r["draw"] in ds])
                         for g, ds in groups.items() if ds}
        figures[name]["fit_s_mean"] = round(statistics.fmean(fit_s), 3) if fit_s else 0.0
        figures[name]["wall_s"] = round(time.perf_counter() - t0, 1)
        for group, ds in groups.items():
            if not ds:
                continue
            s = figures[name][group]
            print(f"{name:40s} {','.join(map(str, ds)):6s} {_cell(s.get('tool_depth')):>18s} "
                  f"{_cell(s.get('doc_depth')):>18s} "
                  + " ".join(f"{s.get(f'tool_R@{k}', 0):5.3f}" for k in KS) + " "
                  + " ".join(f"{s.get(f'doc_R@{k}', 0):5.3f}" for k in KS)
                  + f" {s.get('nogold_doc_R@20', 0):5.3f} {figures[name]['fit_s_mean']:6.2f}",
                  flush=True)
    print("calibration in the large (sum of p / pooled positives; 1 = calibrated): "
          "tool, context (gold), context (needed)")
    for name in names:
        if CONFIGS[name] is not None:
            cal = figures[name][next(iter(g for g, ds in groups.items() if ds))]["calibration"]
            print(f"  {name:40s} {cal['tool']:6.3f} {cal['context_gold']:6.3f} "
                  f"{cal['context_needed']:6.3f}")
    if groups["choose"] and len(names) > 1:
        best = choose(figures, names, "choose")
        figures["chosen"] = best
        print(f"chosen on draws {args.choose} (smallest sum of both depths' median and p75; "
              f"ties to fewer feature groups): {best}")
    wall = time.perf_counter() - wall0
    print(f"wall {wall:.0f} s")
    write_results(__file__, {"configs": figures, "draws": draws, "pool": args.pool,
                             "wall_s": round(wall)})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"figures": figures, "rows": every_row}, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
