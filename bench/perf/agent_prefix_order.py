"""How much prompt evaluation the embedded agent could skip if the same task's prompts ran
back to back: the KV-cache prefix reused in strategy-major order against task-major order.

The embedded agent reuses the previous prompt's KV cache for the whole 512-token blocks
the next prompt shares with it (``LlamaAgent._keep_aligned_prefix``; a prompt cached whole
re-evaluates its last block), and a prompt asked before is a generation-cache hit that
leaves the KV cache as it was. This script builds the agent's prompts for the τ agent
sample (the first ``--tasks`` tasks with a gold agent action, ``$JUNCTION_TAU2_DATA`` or
``--tau2-data``; budget scale ``--scale``) under ``--strategy`` (default: the
non-learned strategies of ``make bench-tau2-agent``), fitted to the agent's window with
its own tokenizer, and counts for two orders:

- ``strategy-major``: every task of one strategy, then the next strategy (a run with
  ``--workers 1`` and one batch per strategy, as ``make bench-tau2-agent`` runs);
- ``task-major``: every strategy's prompt of one task, then the next task;

the prompts evaluated (distinct), their tokens, the tokens a reused prefix skips, and the
share skipped. No generation runs: the figures are token counts; seconds follow from the
prompt evaluation rate (``bench/perf/agent_threads.py``).

Usage: ``python bench/perf/agent_prefix_order.py [--tau2-data PATH] [--tasks 16]
[--scale 1] [--strategy NAME ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from llama_cpp import Llama  # noqa: E402
from results import write_results  # noqa: E402

from junction.agent.graders import gradable, prompt_layout  # noqa: E402
from junction.agent.llm import LlamaAgent, kept_prefix  # noqa: E402
from junction.agent.prompt import BFCL_LAYOUT, fit_prompt  # noqa: E402
from junction.evaluate import scale_budget  # noqa: E402
from junction.models import file_sha256, resolve_model_path  # noqa: E402
from junction.strategies import make_strategy, reads_task  # noqa: E402

STRATEGIES = ("exact", "adaptive_split", "gold_tools_only", "gold_tools_documents")
BLOCK = 512


def reused(previous: list[int] | None, ids: list[int]) -> int:
    """Tokens of ``ids`` the agent takes from the KV cache after ``previous``
    (``junction.agent.llm.kept_prefix`` of their common prefix, ``BLOCK``-token blocks)."""
    if not previous:
        return 0
    return kept_prefix(Llama.longest_token_prefix(previous, ids), len(ids), BLOCK)


def order_figures(prompts: list[list[int]]) -> dict[str, float]:
    """Prompts evaluated in this order (a repeat is a cache hit: skipped, the KV cache
    unchanged), their tokens and the tokens reused."""
    seen: set[tuple[int, ...]] = set()
    previous: list[int] | None = None
    evaluated = tokens = skipped = 0
    for ids in prompts:
        if tuple(ids) in seen:
            continue
        seen.add(tuple(ids))
        evaluated += 1
        tokens += len(ids)
        skipped += reused(previous, ids)
        previous = ids
    return {"prompts": evaluated, "prompt_tokens": tokens, "reused_tokens": skipped,
            "share_reused": round(skipped / tokens, 4) if tokens else 0.0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tau2-data", default=os.environ.get("JUNCTION_TAU2_DATA"))
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--strategy", action="append", dest="strategies")
    args = parser.parse_args(argv)
    if not args.tau2_data:
        parser.error("--tau2-data (or $JUNCTION_TAU2_DATA) names the τ-Knowledge folder")
    from junction_datasets import SUITES, tau2_banking

    strategies = tuple(args.strategies or STRATEGIES)
    tasks = [t for t in tau2_banking.banking_suite(split="all", path=Path(args.tau2_data)).tasks
             if gradable(t)][: args.tasks]
    path = resolve_model_path(None)
    agent = LlamaAgent(path, file_sha256(path))
    layout = prompt_layout("tau2-banking") or BFCL_LAYOUT
    ids: dict[tuple[str, str], list[int]] = {}
    for name in strategies:
        strategy = make_strategy(name)
        for task in tasks:
            scaled = scale_budget(task, args.scale)
            view = scaled.router_view()
            limit = SUITES["tau2-banking"].pool_limit
            # a reference reads the task itself
            sel = (strategy.select(scaled, limit) if reads_task(strategy, name)
                   else strategy.select(view, limit)).selection
            prompt, _ = fit_prompt(view, sel.context_ids, sel.tool_ids,
                                   agent.count_prompt_tokens, agent.prompt_limit, layout)
            ids[(name, task.task_id)] = agent.prompt_token_ids(prompt) or []
    orders = {
        "strategy-major": [ids[(s, t.task_id)] for s in strategies for t in tasks],
        "task-major": [ids[(s, t.task_id)] for t in tasks for s in strategies],
    }
    print(f"τ agent sample: {len(tasks)} tasks × {len(strategies)} strategies "
          f"({', '.join(strategies)}), budget scale {args.scale:g}, {BLOCK}-token blocks")
    print(f"{'order':16s} {'prompts':>7s} {'prompt tokens':>13s} {'reused':>8s} {'share':>6s}")
    figures = {}
    for name, prompts in orders.items():
        f = order_figures(prompts)
        figures[name] = f
        print(f"{name:16s} {f['prompts']:7d} {f['prompt_tokens']:13d} "
              f"{f['reused_tokens']:8d} {f['share_reused']:6.1%}")
    write_results(__file__, {"tasks": len(tasks), "strategies": list(strategies),
                             "scale": args.scale, "orders": figures})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
