"""Which embedded model acts on τ-Knowledge: the coupling pair on the same tasks, per model.

For each model (``--models``: embedded names or GGUF paths) and each of the first
``--tasks`` gradable ``tau2-banking`` tasks with a gold tool (id order, every split), the
agent acts on the coupling pair (``gold_tools_only`` / ``gold_tools_documents``: the same
tools, without and with the documents naming them) and tau2's action check grades it
(``junction.agent.tau2_grading``). Printed side by side, one row per (model, condition):
parse rate (answers that are not ``unparseable``), calls per answer, action recall,
agent success, wrong-variant calls, seconds per generation (prompt + generation, no
cache), prompt tokens; then per model the paired coupling value (documents − none) on
agent success and action recall. A fresh generation cache per run: every figure is a
generation.

    python bench/studies/tau2_agent.py --tau2-data ../shared/data/tau2-banking-knowledge \
        --tasks 10 --models qwen2.5-coder-0.5b-instruct qwen2.5-coder-1.5b-instruct
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from dataclasses import replace

from results import write_results

from junction.agent.generations import AgentCache
from junction.agent.graders import gradable, grade_agent
from junction.agent.llm import AgentConfig, LlamaAgent, LLMExecutor
from junction.agent.prompt import PromptLayout
from junction.agent.tau2_grading import TAU2_LAYOUT
from junction.evidence.verdicts import paired_comparison
from junction.models import file_sha256, resolve_model_path
from junction.strategies.references import gold_tools_and_siblings, naming_documents
from junction.suites import SUITES

CONDITIONS = ("gold_tools_only", "gold_tools_documents")

LAYOUTS = {
    "current": TAU2_LAYOUT,
    "bare": PromptLayout(
        documents_header=TAU2_LAYOUT.documents_header,
        question=TAU2_LAYOUT.question.replace(
            " of calls with their arguments and nothing else, for example "
            "[tool_a(arg=\"value\"), tool_b(other=1)].", ".")),
}
"""Prompt layouts compared (``--layouts``): the suite's own (``TAU2_LAYOUT``, with an
example of the answer's form) and the first one, without it ("bare": the 0.5B model
listed bare tool names)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tau2-data", required=True, help="tau2-bench banking_knowledge folder")
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b-instruct"])
    parser.add_argument("--threads", type=int, default=AgentConfig().n_threads)
    parser.add_argument("--layouts", nargs="+", default=["current"], choices=sorted(LAYOUTS),
                        help="prompt layouts to compare (each model answers in each)")
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    args = parser.parse_args()
    os.environ["JUNCTION_TAU2_DATA"] = args.tau2_data
    from junction_datasets.tau2_banking import banking_suite

    tasks = [t for t in banking_suite(split="all", path=args.tau2_data).tasks
             if gradable(t) and t.gold_tool_ids][:args.tasks]
    rows, pairs = [], []
    suite = SUITES.get_record("tau2-banking")
    for model, layout in [(m, x) for m in args.models for x in args.layouts]:
        # the layout is the suite record's (SuiteInfo.prompt_layout): swap it per condition
        # (the layout itself, not its "module:attribute": junction.registry.load takes both)
        SUITES.register(suite.name, replace(suite, prompt_layout=LAYOUTS[layout]),  # type: ignore[arg-type]
                        replace=True)
        path = resolve_model_path(model)
        t0 = time.perf_counter()
        agent = LlamaAgent(path, file_sha256(path), AgentConfig(n_threads=args.threads))
        load_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            executor = LLMExecutor(agent, AgentCache(Path(tmp) / "agent.sqlite"))
            graded: dict[str, list] = {c: [] for c in CONDITIONS}
            for task in tasks:
                tools = gold_tools_and_siblings(task)
                for condition in CONDITIONS:
                    docs = naming_documents(task) if condition == "gold_tools_documents" else ()
                    agent.forget_prefix()
                    result = executor.execute(task, docs, tools)
                    graded[condition].append((result, grade_agent(task, result)))
        for condition in CONDITIONS:
            got = graded[condition]
            rows.append({
                "model": f"{Path(path).name} [{layout}]", "condition": condition, "tasks": len(got),
                "load_s": round(load_s, 1),
                "parse_rate": sum(r.output_kind != "unparseable" for r, _ in got) / len(got),
                "calls_per_answer": statistics.mean(len(r.tool_calls) for r, _ in got),
                "action_recall": statistics.mean(g.measures["action_recall"] for _, g in got),
                "agent_success": sum(g.success for _, g in got) / len(got),
                "wrong_variant_calls": int(sum(g.measures["wrong_variant_calls"]
                                               for _, g in got)),
                "s_per_generation": statistics.mean(r.wall_ms for r, _ in got) / 1000,
                "prompt_tokens": statistics.mean(r.prompt_tokens for r, _ in got),
                "outcomes": dict(sorted(
                    {o: sum(g.outcome == o for _, g in got) for o in {g.outcome for _, g in got}}
                    .items())),
            })
        with_docs = [g for _, g in graded["gold_tools_documents"]]
        without = [g for _, g in graded["gold_tools_only"]]
        cmp = paired_comparison([g.success for g in with_docs], [g.success for g in without])
        pairs.append({"model": f"{Path(path).name} [{layout}]", "n": cmp.n,
                      "success_with": cmp.rate_a,
                      "success_without": cmp.rate_b, "difference": cmp.difference,
                      "ci_low": cmp.ci_low, "ci_high": cmp.ci_high,
                      "recall_difference": statistics.mean(
                          a.measures["action_recall"] - b.measures["action_recall"]
                          for a, b in zip(with_docs, without, strict=True))})
        del agent, executor
    print(f"tau2-banking, first {len(tasks)} gradable tasks (id order): "
          + " ".join(t.metadata["tau2_id"] for t in tasks))
    SUITES.register(suite.name, suite, replace=True)
    print(f"{'model [layout]':52} {'condition':22} {'parse':>6} {'calls':>6} {'recall':>7} "
          f"{'success':>8} {'variant':>8} {'s/gen':>6} {'prompt':>7}")
    for r in rows:
        print(f"{r['model']:52} {r['condition']:22} {r['parse_rate']:6.2f} "
              f"{r['calls_per_answer']:6.2f} {r['action_recall']:7.3f} {r['agent_success']:8.2f} "
              f"{r['wrong_variant_calls']:8d} {r['s_per_generation']:6.1f} "
              f"{r['prompt_tokens']:7.0f}  {r['outcomes']}")
    print("coupling value (documents − none), paired on tasks:")
    for p in pairs:
        print(f"  {p['model']:52} n={p['n']} success {p['success_with']:.2f} vs "
              f"{p['success_without']:.2f}: {100 * p['difference']:+.1f} "
              f"[{100 * p['ci_low']:+.1f}, {100 * p['ci_high']:+.1f}] points; action recall "
              f"{p['recall_difference']:+.3f}")
    if args.json:
        print(json.dumps({"rows": rows, "pairs": pairs}, indent=2))
    write_results(__file__, {"tasks": [t.metadata["tau2_id"] for t in tasks], "rows": rows,
                             "pairs": pairs})


if __name__ == "__main__":
    main()
