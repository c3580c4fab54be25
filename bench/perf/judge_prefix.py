"""The judge's saved prefixes: a caller that alternates instructions, with the prefix of
an instruction decoded before restored from its saved KV state against decoded again.

``subtask_admission`` judges each proposal twice, under ``FOLLOWS_INSTRUCTION`` (the task
as query, the proposals as documents) and ``ECHO_INSTRUCTION`` (each proposal as query,
the task as document), task after task, so the judge's prefix changes at almost every
call. This script makes that pattern on the first ``--tasks`` tasks of the
``bfcl-subtasks`` suite (seed 0): per task, one follows call over its proposals, then one
echo call per proposal. Each round runs the calls twice back to back on one loaded
judge, with the saved prefixes on (``junction.judge.scorer._SAVED_PREFIXES``, the
default) and off (0: every switch decodes the prefix), in alternating order, and
compares the two: CPU seconds of this process (``time.process_time``; the judge decodes
on one thread) and whether every score is the same float.

Usage: ``.venv/bin/python bench/perf/judge_prefix.py [--tasks N] [--rounds N]``
(default 2 tasks, 2 rounds).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from junction_datasets import build_suite  # noqa: E402
from results import write_results  # noqa: E402

import junction.judge.scorer as scorer  # noqa: E402
from junction.judge.instructions import ECHO_INSTRUCTION, FOLLOWS_INSTRUCTION  # noqa: E402
from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG  # noqa: E402


def _calls(tasks) -> list[tuple[str, list[str], object]]:
    """(query, documents, instruction) in ``subtask_admission``'s order (module docstring)."""
    calls: list[tuple[str, list[str], object]] = []
    for task in tasks:
        proposals = [c.content for c in task.contexts]
        calls.append((task.objective, proposals, FOLLOWS_INSTRUCTION))
        calls.extend((p, [task.objective], ECHO_INSTRUCTION) for p in proposals)
    return calls


def _run(judge, calls, saved: int) -> tuple[float, list]:
    """CPU seconds and scores of ``calls`` with ``saved`` prefixes kept (0: none)."""
    scorer._SAVED_PREFIXES = saved
    judge._shared.saved.clear()
    judge._shared.prefix_key = None
    began = time.process_time()
    scores = [judge.score(q, docs, instruction).scores for q, docs, instruction in calls]
    return time.process_time() - began, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.tasks < 1 or args.rounds < 1:
        parser.error("--tasks and --rounds take a positive count")
    default = scorer._SAVED_PREFIXES
    judge = scorer.load_judge(STRATEGY_JUDGE_CONFIG)
    tasks = build_suite("bfcl-subtasks", seed=0, size=args.tasks).tasks
    calls = _calls(tasks)
    switches = sum(1 for a, b in itertools.pairwise(calls) if a[2] is not b[2])
    print(f"{len(tasks)} tasks: {len(calls)} judge calls, {switches} instruction switches")
    cpu: dict[str, list[float]] = {"restored": [], "decoded": []}
    same = True
    for i in range(args.rounds):
        order = (("restored", default), ("decoded", 0))
        results = {}
        for name, saved in (order if i % 2 == 0 else order[::-1]):
            took, scores = _run(judge, calls, saved)
            cpu[name].append(took)
            results[name] = scores
        equal = results["restored"] == results["decoded"]
        same = same and equal
        print(f"round {i + 1}: restored {cpu['restored'][-1]:.2f} CPU-s, decoded "
              f"{cpu['decoded'][-1]:.2f} CPU-s, same scores {equal}", flush=True)
    scorer._SAVED_PREFIXES = default
    print("| prefixes | CPU s, median | runs |\n|---|---|---|")
    for name, values in cpu.items():
        print(f"| {name} | {statistics.median(values):.2f} | "
              f"{', '.join(f'{v:.2f}' for v in values)} |")
    print(f"every score the same float: {same}")
    write_results(__file__, {"calls": len(calls), "switches": switches,
                             "same_scores": same,
                             **{f"{name}_cpu_s": {"median": round(statistics.median(v), 2),
                                                  "runs": [round(x, 2) for x in v]}
                                for name, v in cpu.items()}})
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
