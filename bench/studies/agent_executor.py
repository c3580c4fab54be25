"""Agent outcome and cost per strategy on one fixed sample, against the machine's limit.

For each task of the sample (the first ``--size`` tasks of each suite's seed-0 sample),
every strategy selects under the task's budget (scale 1; the references ignore it) and the
``llm`` executor (embedded Qwen2.5-Coder-0.5B-Instruct, or ``--model``) acts on the exposed
set; BFCL's checker grades it (``junction.agent.grading``). Strategies that expose the same
set hit the generation cache (a fresh one per run unless ``--cache`` names one). Before
each generation the model's KV cache is emptied (``LlamaAgent.forget_prefix``), so every
generation evaluates its whole prompt and its time compares with the limit below.

    python bench/studies/agent_executor.py --json [--size 2] [--suites ...] [--strategies ...]
        [--threads 1] [--rate-threads 1 2] [--no-reuse-check]

Prints ``{"sample", "strategies": {name: {"agent_success", "retrieval_success", "tasks",
"mean_prompt_tokens", "mean_s_per_task", "cache_hit_rate", "outcomes"}}, "best_budgeted",
"best_vs_all_tools", "raw_rates", "achieved", "prompt_tokens", "prefix_reuse"}``:

- ``raw_rates``: per thread count, llama.cpp's own prompt evaluation (``Llama.eval`` of
  the first ``--rate-prompts`` generated prompts' tokens, batches of 512) and generation
  (one token per ``eval``, 32 steps) in tokens/s: the machine's limit, with no chat
  template, sampling or Python;
- ``achieved``: over the generated prompts, the agent's seconds per generation against
  the limit for the same tokens (prompt tokens / raw prompt rate + generated tokens / raw
  generation rate, at the agent's thread count) and their ratio;
- ``prompt_tokens``: mean prompt tokens per strategy split into BFCL's instructions (the
  system prompt with no function, the chat template's markers), tool schemas, documents
  and the question;
- ``prefix_reuse``: prompt tokens to evaluate over the generated prompts in the order the
  benchmark asks them (suite, strategy, task) with no KV reuse, with llama-cpp-python's
  reuse of the previous call's prefix, with that reuse in whole 512-token blocks only
  (what the agent does: ``LlamaAgent.generate``) and with a cache of every earlier
  prompt's state (``LlamaRAMCache``), converted to seconds at the raw rate; and
  one measured pair (two questions on one bfcl-memory scenario's reference prompt,
  ``--pair-scenario``, asked back to back, then the second alone): seconds and whether
  the texts are identical.

``mean_s_per_task`` is the executor's wall time over the tasks it generated for (cache
hits excluded; their time is in ``mean_s_per_task_all``); the interval is Newcombe's
paired 95% interval (``junction.evidence.verdicts.paired_comparison``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from junction_datasets import build_suite, calibration_tasks, get_suite  # noqa: E402
from results import write_results  # noqa: E402

from junction.agent.generations import AgentCache  # noqa: E402
from junction.agent.llm import AgentConfig, LlamaAgent, LLMExecutor  # noqa: E402
from junction.agent.prompt import fit_prompt, render_prompt  # noqa: E402
from junction.environment import state_dir  # noqa: E402
from junction.evaluate import evaluate_batch  # noqa: E402
from junction.evidence.verdicts import paired_comparison  # noqa: E402
from junction.models import file_sha256, resolve_model_path  # noqa: E402
from junction.strategies import make_strategy, reference_strategies  # noqa: E402
from junction.units import UnitSpec  # noqa: E402

DEFAULT_SUITES = ("bfcl-multiple", "bfcl-live-multiple", "bfcl-irrelevance", "bfcl-memory")
DEFAULT_STRATEGIES = ("adaptive_split", "exact", "fixed_split", "bfcl_listed")
GENERATION_STEPS = 32
BATCH = 512
"""llama-cpp-python's default ``n_batch``: the agent reuses shared prefixes in whole blocks."""


def _raw_rates(path: Path, threads: int, prompts: list[list[int]]) -> dict:
    """llama.cpp's prompt-evaluation and generation rate (tokens/s) on ``prompts``."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=AgentConfig().n_ctx, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    prompt_s = generation_s = 0.0
    for tokens in prompts:
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(tokens)
        prompt_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(GENERATION_STEPS):
            llm.eval([tokens[-1]])
        generation_s += time.perf_counter() - t0
    n = sum(len(t) for t in prompts)
    return {"threads": threads, "prompts": len(prompts), "prompt_tokens": n,
            "prompt_tokens_per_s": round(n / prompt_s, 1),
            "generation_tokens_per_s": round(GENERATION_STEPS * len(prompts) / generation_s, 1)}


def _common(a: list[int], b: list[int]) -> int:
    from llama_cpp import Llama

    return Llama.longest_token_prefix(a, b)


def _reuse(prompts: list[list[int]], rate: float) -> dict:
    """Prompt tokens to evaluate in this order: no reuse, previous prefix, any earlier."""
    none = sum(len(p) for p in prompts)
    previous = sum(len(p) - (_common(p, prompts[i - 1]) if i else 0)
                   for i, p in enumerate(prompts))
    aligned = sum(len(p) - (_common(p, prompts[i - 1]) // BATCH * BATCH if i else 0)
                  for i, p in enumerate(prompts))
    earlier = sum(len(p) - max((_common(p, q) for q in prompts[:i]), default=0)
                  for i, p in enumerate(prompts))
    return {mode: {"tokens": t, "seconds_at_raw_rate": round(t / rate, 1)}
            for mode, t in (("no_reuse", none), ("previous_prefix", previous),
                            ("previous_prefix_whole_blocks", aligned),
                            ("every_earlier_prompt", earlier))}


def _breakdown(agent: LlamaAgent, view, tool_ids, total: int) -> dict:
    count = agent.count_prompt_tokens
    instructions = count(render_prompt(view, (), (), question=""))
    tools = count(render_prompt(view, (), tool_ids, question="")) - instructions
    question = count(render_prompt(view, (), ())) - instructions
    return {"instructions": instructions, "tool_schemas": tools, "question": question,
            "documents": total - instructions - tools - question}


def _reuse_pair(agent: LlamaAgent, scenario: str, limit: int) -> dict:
    """Two questions on one bfcl-memory scenario's reference prompt: the second asked right
    after the first (its long system prompt reused) and asked alone; each prompt fitted to
    ``limit`` tokens (``fit_prompt``: the most recent turns)."""
    first, second = [t for t in build_suite("bfcl-memory", seed=0, size=None).tasks
                     if t.metadata["scenario"] == scenario][:2]
    reference = make_strategy("bfcl_listed")

    def prompt(task):
        sel = reference.select(task, None).selection
        return fit_prompt(task.router_view(), sel.context_ids, sel.tool_ids,
                          agent.count_prompt_tokens, limit)[0]

    a, b = prompt(first), prompt(second)
    agent.forget_prefix()
    agent.generate(a)
    reused = agent.generate(b)
    agent.forget_prefix()
    alone = agent.generate(b)
    ta, tb = agent.prompt_token_ids(a), agent.prompt_token_ids(b)
    assert ta is not None and tb is not None  # an embedded agent reads its prompt's tokens
    return {"tasks": [first.task_id, second.task_id], "prompt_tokens": len(tb),
            "shared_prefix_tokens": _common(ta, tb),
            "second_alone_s": round(alone.wall_ms / 1000, 2),
            "second_after_first_s": round(reused.wall_ms / 1000, 2),
            "texts_identical": reused.text == alone.text}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the only format)")
    parser.add_argument("--size", type=int, default=2, help="tasks per suite")
    parser.add_argument("--suites", nargs="+", default=list(DEFAULT_SUITES))
    parser.add_argument("--strategies", nargs="+", default=list(DEFAULT_STRATEGIES))
    parser.add_argument("--model", default=None, help="GGUF path or embedded model name")
    parser.add_argument("--threads", type=int, default=AgentConfig().n_threads)
    parser.add_argument("--rate-threads", type=int, nargs="+", default=[1, 2],
                        help="thread counts of the raw-rate measurement")
    parser.add_argument("--rate-prompts", type=int, default=4,
                        help="generated prompts the raw rates are measured on (the first N)")
    parser.add_argument("--pair-scenario", default="notetaker",
                        help="bfcl-memory scenario of the measured prefix-reuse pair")
    parser.add_argument("--pair-tokens", type=int, default=AgentConfig().n_ctx
                        - AgentConfig().max_tokens - 1,
                        help="prompt tokens of the pair (default: the agent's whole window)")
    parser.add_argument("--no-reuse-check", action="store_true",
                        help="skip the measured prefix-reuse pair (three long generations)")
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
    asked: list[dict] = []
    t_run = time.perf_counter()
    for suite in args.suites:
        tasks = build_suite(suite, seed=0, size=args.size).tasks
        sample[suite] = [t.task_id for t in tasks]
        ids = {t.task_id for t in tasks}
        for name, strategy in strategies.items():  # the benchmark's order: a unit per strategy
            for task in tasks:
                agent.forget_prefix()
                spec = UnitSpec(strategy=name, run_id="bench", seed=0, scale=1.0,
                                pool_limit=get_suite(suite).pool_limit,
                                agent_task_ids=tuple(ids))
                (record,), (timing,) = evaluate_batch([task], strategy, spec, executor)
                outcomes[name][task.task_id] = bool(record.agent_success)
                print(f"{suite} {name} {task.task_id}: {record.agent_prompt_tokens} prompt "
                      f"tokens, {timing['agent_ms'] / 1000:.1f} s, cached "
                      f"{timing['agent_cached']}", file=sys.stderr, flush=True)
                rows[name].append({"success": record.success, "agent": record.agent_success,
                                   "outcome": record.agent_outcome,
                                   "prompt_tokens": record.agent_prompt_tokens,
                                   "ms": timing["agent_ms"], "cached": timing["agent_cached"]})
                view = task.router_view()
                prompt, _ = fit_prompt(view, record.exposed_context_ids,
                                       record.exposed_tool_ids, agent.count_prompt_tokens,
                                       agent.prompt_limit)
                assert record.agent_prompt_tokens is not None  # the agent acted on it
                asked.append({
                    "strategy": name, "cached": timing["agent_cached"],
                    "tokens": agent.prompt_token_ids(prompt), "ms": timing["agent_ms"],
                    "generated": record.agent_generated_tokens,
                    "parts": _breakdown(agent, view, record.exposed_tool_ids,
                                        record.agent_prompt_tokens)})
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
    generated = [f for f in asked if not f["cached"]]
    if generated:
        prompts = [f["tokens"] for f in generated]
        rates = {t: _raw_rates(path, t, prompts[:args.rate_prompts])
                 for t in sorted(set(args.rate_threads) | {args.threads})}
        result["raw_rates"] = list(rates.values())
        own = rates[args.threads]
        limit_s = (sum(len(p) for p in prompts) / own["prompt_tokens_per_s"]
                   + sum(f["generated"] for f in generated) / own["generation_tokens_per_s"])
        achieved_s = sum(f["ms"] for f in generated) / 1000
        result["achieved"] = {
            "generations": len(generated), "threads": args.threads,
            "prompt_tokens": sum(len(p) for p in prompts),
            "generated_tokens": sum(f["generated"] for f in generated),
            "seconds_per_generation": round(achieved_s / len(generated), 2),
            "limit_seconds_per_generation": round(limit_s / len(generated), 2),
            "ratio": round(achieved_s / limit_s, 3)}
        result["prompt_tokens"] = {
            name: {part: round(sum(f["parts"][part] for f in fs) / len(fs), 1)
                   for part in ("instructions", "tool_schemas", "documents", "question")}
            for name in strategies
            if (fs := [f for f in asked if f["strategy"] == name])}
        result["prefix_reuse"] = _reuse(prompts, own["prompt_tokens_per_s"])
        print(json.dumps(result, sort_keys=True), file=sys.stderr, flush=True)  # so far
    if not args.no_reuse_check:
        result["prefix_reuse_pair"] = _reuse_pair(agent, args.pair_scenario, args.pair_tokens)
    print(json.dumps(result, indent=2, sort_keys=True))
    write_results(__file__, result)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
