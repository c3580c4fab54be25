"""Agent outcome per strategy on one fixed sample: does what a strategy exposes help the agent?

For each task of the sample (the first ``--size`` tasks of each suite's seed-0 sample),
every strategy selects under the task's budget (scale 1; the references ignore it) and the
``llm`` executor (embedded Qwen2.5-Coder-0.5B-Instruct, or ``--model``) acts on the exposed
set; BFCL's checker grades it (``junction.agent.grading``). A row's strategies run back to back
so llama.cpp reuses the shared prompt prefix, and strategies that expose the same set hit
the generation cache (a fresh one per run unless ``--cache`` names one).

    python bench/agent_executor.py --json [--size 3] [--suites bfcl-multiple bfcl-irrelevance]
        [--strategies fixed_split adaptive_split exact bfcl_listed all_tools] [--threads 2]

Prints ``{"sample", "strategies": {name: {"agent_success", "retrieval_success", "tasks",
"mean_prompt_tokens", "mean_s_per_task", "cache_hit_rate", "outcomes"}}, "best_budgeted",
"best_vs_all_tools": {"difference", "ci95", "p_value", "n"}}``. ``mean_s_per_task`` is the
executor's wall time over the tasks it generated for (cache hits excluded; their time is
in ``mean_s_per_task_all``); the interval is Newcombe's paired 95% interval
(``junction.evidence.verdicts.paired_comparison``) over the sample's tasks.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from junction.agent.llm import AgentCache, AgentConfig, LlamaAgent, LLMExecutor  # noqa: E402
from junction.environment import state_dir  # noqa: E402
from junction.evaluate import evaluate_batch  # noqa: E402
from junction.models import file_sha256, resolve_model_path  # noqa: E402
from junction.strategies import make_strategy, reference_strategies  # noqa: E402
from junction.evidence.verdicts import paired_comparison  # noqa: E402
from junction_datasets import build_suite, calibration_tasks, get_suite  # noqa: E402

DEFAULT_SUITES = ("bfcl-multiple", "bfcl-irrelevance")
DEFAULT_STRATEGIES = ("adaptive_split", "exact", "fixed_split", "bfcl_listed", "all_tools")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only format)")
    parser.add_argument("--size", type=int, default=3, help="tasks per suite")
    parser.add_argument("--suites", nargs="+", default=list(DEFAULT_SUITES))
    parser.add_argument("--strategies", nargs="+", default=list(DEFAULT_STRATEGIES))
    parser.add_argument("--model", default=None, help="GGUF path or embedded model name")
    parser.add_argument("--threads", type=int, default=AgentConfig().n_threads)
    parser.add_argument("--cache", default=None,
                        help="generation cache file (default: a fresh one for this run; "
                             f"the benchmark's is {state_dir() / 'agent_cache.sqlite'})")
    args = parser.parse_args()

    path = resolve_model_path(args.model)
    t_load = time.perf_counter()
    agent = LlamaAgent(path, file_sha256(path), AgentConfig(n_threads=args.threads))
    load_s = time.perf_counter() - t_load
    tmp = None
    if args.cache is None:
        tmp = tempfile.TemporaryDirectory()
        cache_path = Path(tmp.name) / "agent.sqlite"
    else:
        cache_path = Path(args.cache)
    executor = LLMExecutor(agent, AgentCache(cache_path))
    calibration = calibration_tasks() if "judge_admission" in args.strategies else ()
    strategies = {s: make_strategy(s, calibration_tasks=calibration) for s in args.strategies}

    outcomes: dict[str, dict[str, bool]] = {s: {} for s in strategies}
    rows: dict[str, list[dict]] = {s: [] for s in strategies}
    sample = {}
    t_run = time.perf_counter()
    for suite in args.suites:
        tasks = build_suite(suite, seed=0, size=args.size).tasks
        sample[suite] = [t.task_id for t in tasks]
        ids = {t.task_id for t in tasks}
        for task in tasks:  # a row's strategies back to back: shared prompt prefix
            for name, strategy in strategies.items():
                (record,), (timing,) = evaluate_batch(
                    [task], strategy, name, "bench", 0, 1.0, get_suite(suite).pool_limit,
                    agent=executor, agent_task_ids=ids)
                outcomes[name][task.task_id] = bool(record.agent_success)
                rows[name].append({"success": record.success, "agent": record.agent_success,
                                   "outcome": record.agent_outcome,
                                   "prompt_tokens": record.agent_prompt_tokens,
                                   "ms": timing["agent_ms"], "cached": timing["agent_cached"]})
    run_s = time.perf_counter() - t_run

    out_strategies = {}
    references = reference_strategies()
    for name, rs in rows.items():
        fresh = [r["ms"] for r in rs if not r["cached"]]
        out_strategies[name] = {
            "tasks": len(rs),
            "agent_success": sum(r["agent"] for r in rs) / len(rs),
            "retrieval_success": sum(r["success"] for r in rs) / len(rs),
            "mean_prompt_tokens": sum(r["prompt_tokens"] for r in rs) / len(rs),
            "mean_s_per_task": (sum(fresh) / len(fresh) / 1000) if fresh else None,
            "mean_s_per_task_all": sum(r["ms"] for r in rs) / len(rs) / 1000,
            "cache_hit_rate": sum(bool(r["cached"]) for r in rs) / len(rs),
            "outcomes": dict(sorted(Counter(r["outcome"] for r in rs).items())),
            "respects_budget": name not in references,
        }
    budgeted = [s for s in strategies if s not in references]
    result = {"model": str(path), "model_sha256": agent.model_sha256, "threads": args.threads,
              "sample": sample, "strategies": out_strategies,
              "model_load_s": round(load_s, 1), "run_s": round(run_s, 1)}
    if budgeted:
        best = max(budgeted, key=lambda s: (out_strategies[s]["agent_success"], s))
        result["best_budgeted"] = best
        if "all_tools" in strategies:
            keys = sorted(outcomes[best])
            cmp = paired_comparison([outcomes[best][k] for k in keys],
                                    [outcomes["all_tools"][k] for k in keys])
            result["best_vs_all_tools"] = {
                "difference": cmp.difference, "ci95": [cmp.ci_low, cmp.ci_high],
                "p_value": cmp.p_value, "n": cmp.n,
                "interval": "Newcombe paired 95% (junction.evidence.verdicts.paired_comparison)"}
    print(json.dumps(result, indent=2, sort_keys=True))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
