"""Page admission end to end: one long real page through ``junction admit``, and the page
strategies on ``bfcl-memory-pages``.

**Page** (always): ``python -m pydoc -w <module>`` (``--module``, default ``typing``: the
standard library's own documentation, rendered offline) writes the page into a temporary
folder; ``junction admit PAGE --query Q --json`` (the installed command, as a user runs it)
admits the best chunks; printed: the page's size (bytes, chunks, tokens), the chunks
admitted (index, score in logits, tokens, heading path, cut), admitted tokens against the
budget, and the command's wall time (seconds, model load included).

**Suite** (``--suite-size N``, default 4; 0 skips it): ``bm25_top_k`` and ``judge_top_k``
on the first N tasks of ``bfcl-memory-pages`` (seed 0), each through
``junction.evaluate.evaluate_batch`` with the suite's pool limit: verified success, chunk
recall (``context_recall``: gold chunks admitted / gold chunks), admitted tokens per task
and selection seconds per task. The judge's scores go through the persistent score cache
(``state_dir()/judge_scores.sqlite``): a re-run re-scores nothing, so its seconds then
measure the cache.

    python bench/studies/page_admission.py --json [--module typing] [--query Q] [--suite-size 4]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

DEFAULT_QUERY = "How do I declare a function parameter that can be None?"


def page_figures(module: str, query: str, budget: int, top_k: int) -> dict:
    """Render ``module`` with pydoc, run ``junction admit`` on it; the figures (docstring)."""
    junction = shutil.which("junction", path=str(Path(sys.executable).parent)) or "junction"
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "pydoc", "-w", module], cwd=folder, check=True,
                       capture_output=True)
        page = Path(folder) / f"{module}.html"
        start = time.perf_counter()
        out = subprocess.run([junction, "admit", str(page), "--query", query, "--budget",
                              str(budget), "--top-k", str(top_k), "--json"],
                             capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
        size = page.stat().st_size
    payload = json.loads(out.stdout)
    return {
        "command": f"python -m pydoc -w {module}; junction admit {module}.html --query "
                   f"{query!r} --budget {budget} --top-k {top_k} --json",
        "page_bytes": size, "chunks": payload["chunks"], "page_tokens": payload["page_tokens"],
        "admitted": [{k: a[k] for k in ("index", "score", "tokens_admitted", "heading_path",
                                        "cut", "truncated")} for a in payload["admitted"]],
        "admitted_tokens": payload["admitted_tokens"], "budget": budget,
        "best_rejected": [{k: r[k] for k in ("index", "score", "tokens", "reason")}
                          for r in payload["rejected"]],
        "degenerate": payload["degenerate"], "noise_floor": payload["noise_floor"],
        "seconds": round(seconds, 1),
    }


def suite_figures(size: int) -> dict:
    """``bm25_top_k`` and ``judge_top_k`` on ``size`` bfcl-memory-pages tasks (docstring)."""
    from junction_datasets import build_suite, get_suite

    from junction.evaluate import evaluate_batch
    from junction.strategies import make_strategy
    from junction.units import UnitSpec

    tasks = build_suite("bfcl-memory-pages", seed=0, size=size).tasks
    pool_limit = get_suite("bfcl-memory-pages").pool_limit
    out = {}
    for name in ("bm25_top_k", "judge_top_k"):
        strategy = make_strategy(name)
        records, timings = evaluate_batch(tasks, strategy, UnitSpec(
            strategy=name, run_id="bench", seed=0, scale=1.0, pool_limit=pool_limit))
        recalls = [r.context_recall for r in records if r.context_recall is not None]
        out[name] = {
            "tasks": len(records),
            "success": round(sum(r.success for r in records) / len(records), 3),
            "chunk_recall": round(sum(recalls) / len(recalls), 3) if recalls else None,
            "admitted_tokens": round(sum(r.tokens_used for r in records) / len(records), 1),
            "budget_tokens": records[0].budget_tokens,
            "select_s_per_task": round(sum(t["select_ms"] for t in timings)
                                       / 1000 / len(timings), 2),
        }
    return {"suite": "bfcl-memory-pages", "seed": 0, "pool_limit": pool_limit,
            "strategies": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="typing", help="stdlib module rendered by pydoc")
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--suite-size", type=int, default=4)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = {"page": page_figures(args.module, args.query, args.budget, args.top_k)}
    if args.suite_size:
        result["suite"] = suite_figures(args.suite_size)
    write_results(__file__, result)
    if args.json:
        print(json.dumps(result, sort_keys=True, indent=1))
        return
    page = result["page"]
    print(f"{page['command']}\n  page {page['page_bytes']} bytes, {page['chunks']} chunks, "
          f"{page['page_tokens']} tokens; admitted {len(page['admitted'])} chunks, "
          f"{page['admitted_tokens']} of {page['budget']} tokens in {page['seconds']} s")
    for a in page["admitted"]:
        print(f"  chunk {a['index']}: {a['score']:+.4f} logits, {a['tokens_admitted']} tokens,"
              f" {a['heading_path'] or '(no heading)'}{' cut ' + a['cut'] if a['cut'] else ''}")
    for name, row in result.get("suite", {}).get("strategies", {}).items():
        print(f"{name}: success {row['success']}, chunk recall {row['chunk_recall']}, "
              f"admitted {row['admitted_tokens']} of {row['budget_tokens']} tokens, "
              f"{row['select_s_per_task']} s/task over {row['tasks']} tasks")


if __name__ == "__main__":
    main()
