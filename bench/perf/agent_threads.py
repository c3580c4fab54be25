"""The embedded agent near the hardware: seconds per generation against llama.cpp's raw
prompt evaluation plus decode of the same tokens, at 1 and 2 threads, in one run.

Prompts: the ``exact`` strategy's exposed set at budget scale 1 on the first ``--bfcl``
tasks of each default agent suite (the default run's agent prompts, BFCL's layout) and on
the first ``--tau`` τ-Knowledge tasks with a gold agent action (``$JUNCTION_TAU2_DATA`` or
``--tau2-data``; τ's layout). For each thread count, one ``LlamaAgent`` generates each
prompt with its KV cache emptied first (``forget_prefix``: the whole prompt evaluated),
then a bare ``llama_cpp.Llama`` with the same threads evaluates the same prompt tokens
(``eval``, batches of 512) and decodes as many tokens as the agent generated (one
``eval`` per token): the raw cost with no chat template, sampling or Python around it.
Printed per prompt set and thread count: prompts, mean prompt and generated tokens, mean
seconds per generation, mean raw seconds, and their ratio (goal: at most 1.3).

Usage: ``python bench/perf/agent_threads.py [--tau2-data PATH] [--bfcl 1] [--tau 2]
[--threads 1 2]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from junction_datasets import build_suite  # noqa: E402
from results import write_results  # noqa: E402

from junction.agent.graders import gradable, prompt_layout  # noqa: E402
from junction.agent.llm import AgentConfig, LlamaAgent  # noqa: E402
from junction.agent.prompt import BFCL_LAYOUT, fit_prompt  # noqa: E402
from junction.evaluate import scale_budget  # noqa: E402
from junction.models import file_sha256, resolve_model_path  # noqa: E402
from junction.strategies import make_strategy, reads_task  # noqa: E402

BFCL_SUITES = ("bfcl-multiple", "bfcl-live-multiple", "bfcl-irrelevance", "bfcl-memory")
BATCH = 512


def exposed_views(suite: str, tasks: list) -> list[tuple]:
    """(router view, context ids, tool ids) of ``exact``'s selection per task, scale 1."""
    from junction_datasets import SUITES

    strategy = make_strategy("exact")
    out = []
    for task in tasks:
        view = scale_budget(task, 1.0).router_view()
        assert not reads_task(strategy, "exact")
        sel = strategy.select(view, SUITES[suite].pool_limit).selection
        out.append((view, list(sel.context_ids), list(sel.tool_ids)))
    return out


def raw_seconds(llm, tokens: list[int], generated: int) -> float:
    """Seconds for llama.cpp to evaluate ``tokens`` (512 at a time) and decode
    ``generated`` more, one ``eval`` each."""
    llm.reset()
    t0 = time.perf_counter()
    for i in range(0, len(tokens), BATCH):
        llm.eval(tokens[i:i + BATCH])
    for _ in range(generated):
        llm.eval([tokens[-1]])
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tau2-data", default=os.environ.get("JUNCTION_TAU2_DATA"))
    parser.add_argument("--bfcl", type=int, default=1, help="tasks per default agent suite")
    parser.add_argument("--tau", type=int, default=2, help="τ tasks with a gold action")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    from llama_cpp import Llama

    sets: dict[str, list[tuple]] = {"default run (BFCL)": []}
    for suite in BFCL_SUITES:
        tasks = build_suite(suite, seed=0, size=args.bfcl).tasks
        sets["default run (BFCL)"] += exposed_views(suite, tasks)
    if args.tau and args.tau2_data:
        from junction_datasets import tau2_banking

        tasks = [t for t in tau2_banking.banking_suite(split="all", path=Path(args.tau2_data))
                 .tasks if gradable(t)][: args.tau]
        sets["τ agent sample"] = exposed_views("tau2-banking", tasks)
    path = resolve_model_path(None)
    sha = file_sha256(path)
    print(f"model {path.name}; prompts: " + ", ".join(f"{k} {len(v)}" for k, v in sets.items()))
    print(f"{'prompts':22s} {'threads':>7s} {'n':>3s} {'prompt tok':>10s} {'gen tok':>7s} "
          f"{'s/generation':>12s} {'raw s':>7s} {'ratio':>6s}")
    rows = []
    for threads in args.threads:
        agent = LlamaAgent(path, sha, AgentConfig(n_threads=threads))
        raw = Llama(model_path=str(path), n_ctx=AgentConfig().n_ctx, n_threads=threads,
                    n_threads_batch=threads, verbose=False)
        for name, items in sets.items():
            gen_s = raw_s = 0.0
            p_tok = g_tok = 0
            for view, cs, ts in items:
                prompt, _ = fit_prompt(view, cs, ts, agent.count_prompt_tokens,
                                       agent.prompt_limit,
                                       prompt_layout(view.suite) or BFCL_LAYOUT)
                agent.forget_prefix()
                generation = agent.generate(prompt)
                gen_s += generation.wall_ms / 1000
                tokens = agent.prompt_token_ids(prompt) or []
                raw_s += raw_seconds(raw, tokens, generation.generated_tokens)
                p_tok += generation.prompt_tokens
                g_tok += generation.generated_tokens
            n = max(len(items), 1)
            print(f"{name:22s} {threads:7d} {len(items):3d} {p_tok / n:10.0f} {g_tok / n:7.0f} "
                  f"{gen_s / n:12.1f} {raw_s / n:7.1f} {gen_s / max(raw_s, 1e-9):6.2f}")
            rows.append({"prompts": name, "threads": threads, "n": len(items),
                         "prompt_tokens": round(p_tok / n), "generated_tokens": round(g_tok / n),
                         "s_per_generation": round(gen_s / n, 2), "raw_s": round(raw_s / n, 2),
                         "ratio": round(gen_s / max(raw_s, 1e-9), 3)})
        del agent, raw
    write_results(__file__, {"model": path.name, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
