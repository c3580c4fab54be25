"""Fingerprint of the exact selectors' answers, to check that a refactor changes nothing.

Runs the exact selectors on a fixed set of seeded instances (``junction.select.instances``:
``random_problem``, ``gallo_problem``, ``family_problem``) and on every suite's tasks at its
default size (suites whose data is missing are skipped) (seed 0, budget scale 1, as
bench/perf/exact_work.py), with no clock (``time_limit_s=None``) so every figure is
deterministic, and writes or compares one JSON record per run: the whole ``Selection``
(the set, objective, status, gap, nodes and simplex iterations) but its solve time.

    python bench/checks/exact_identity.py --write before.json   # record
    python bench/checks/exact_identity.py --check before.json   # compare; exit 1 on a difference
    python bench/checks/exact_identity.py --check before.json --no-suites   # instances only

Configurations: ``AutoJointSelector`` (what the ``exact`` strategy runs) with the default
work limit; ``BranchAndCutJointSelector`` without a work limit, with and without product
rows and probing; and with small work limits (2,000 and 20,000 simplex iterations), the
only ones run on the four larger instances, so searches stopped by the work limit (status
``work_limit``, gap) are fingerprinted too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from junction.select import AutoJointSelector, BranchAndCutJointSelector, JointProblem, Selector
from junction.select.instances import family_problem, gallo_problem, random_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results


def _configs(large: bool) -> dict[str, Selector]:
    out: dict[str, Selector] = {
        "auto": AutoJointSelector(time_limit_s=None),
        "bnc": BranchAndCutJointSelector(time_limit_s=None, work_limit=None),
        "bnc_plain": BranchAndCutJointSelector(time_limit_s=None, work_limit=None,
                                               product_rows=False, probing=False),
        "bnc_no_probing": BranchAndCutJointSelector(time_limit_s=None, work_limit=None,
                                                    probing=False),
    }
    if large:  # no unlimited search: only work-limited ones
        out.clear()
    out["bnc_w2000"] = BranchAndCutJointSelector(time_limit_s=None, work_limit=2_000)
    out["bnc_w20000"] = BranchAndCutJointSelector(time_limit_s=None, work_limit=20_000)
    return out


def instances() -> list[tuple[str, JointProblem, bool]]:
    """(name, problem, large) for every seeded instance."""
    out = []
    for n in (12, 20, 40, 80):
        for tightness in (0.4, 0.7):
            for seed in range(2):
                out.append((f"random:{n}:{seed}:0.1:{tightness}",
                            random_problem(n, seed, 0.1, tightness), False))
    for seed in range(2):
        out.append((f"random:40:{seed}:0.3:0.4", random_problem(40, seed, 0.3, 0.4), False))
    for n in (16, 30, 60):
        for delta in (0.25, 0.5, 1.0):
            for seed in range(1 if (n, delta) == (60, 1.0) else 2):  # seed 1 there: minutes
                out.append((f"gallo:{n}:{seed}:{delta}", gallo_problem(n, seed, delta), False))
    # (gallo at 200 candidates, Δ = 0.5, is left out: its RENS sub-MIP alone takes minutes
    # when no clock stops it)
    for family, n, density, seed in (("gallo", 200, 0.25, 0), ("gallo", 100, 0.25, 0),
                                     ("gallo", 100, 0.5, 1), ("mixed", 200, 0.1, 0)):
        out.append((f"{family}:{n}:{seed}:{density}", family_problem(family, n, seed, density),
                    True))
    return out


def _dump(selection) -> dict:
    return selection.model_dump(mode="json", exclude={"solve_time_ms"})


def fingerprint(suites: bool) -> dict[str, dict]:
    records: dict[str, dict] = {}
    for name, problem, large in instances():
        began = time.perf_counter()
        for config, selector in _configs(large).items():
            records[f"{name}|{config}"] = _dump(selector.select(problem))
        print(f"  {name} {time.perf_counter() - began:.1f} s", file=sys.stderr, flush=True)
    if suites:
        from junction_datasets import build_suite, get_suite, suite_names

        from junction.strategies import run_selector

        selector = AutoJointSelector(time_limit_s=None)
        for suite in suite_names():
            info = get_suite(suite)
            if info.unavailable_reason() is not None:  # its data is not on this machine
                print(f"  suite {suite} skipped: {info.unavailable_reason()}", file=sys.stderr)
                continue
            for task in build_suite(suite, seed=0, size=info.default_size).tasks:
                sel = run_selector(selector, task.router_view(), info.pool_limit).selection
                records[f"suite:{suite}:{task.task_id}|auto"] = _dump(sel)
            print(f"  suite {suite}", file=sys.stderr, flush=True)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="FILE", help="record the fingerprint to FILE")
    group.add_argument("--check", metavar="FILE", help="compare with the one in FILE")
    parser.add_argument("--no-suites", action="store_true", help="seeded instances only")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    records = fingerprint(not args.no_suites)
    text = json.dumps(records, indent=1, sort_keys=True) + "\n"
    if args.write:
        with open(args.write, "w") as f:
            f.write(text)
        print(f"{len(records)} records written to {args.write} "
              f"({time.perf_counter() - started:.0f} s)")
        write_results(__file__, {"records": len(records), "written_to": args.write})
        return 0
    with open(args.check) as f:
        want = json.load(f)
    if args.no_suites:
        want = {k: v for k, v in want.items() if not k.startswith("suite:")}
    differ = sorted(k for k in want.keys() | records.keys() if want.get(k) != records.get(k))
    for key in differ:
        print(f"differs: {key}\n  before {want.get(key)}\n  after  {records.get(key)}")
    same = text == json.dumps(want, indent=1, sort_keys=True) + "\n"
    print(f"{len(records)} records, {len(differ)} differ, byte-identical: {same} "
          f"({time.perf_counter() - started:.0f} s)")
    write_results(__file__, {"records": len(records), "checked_against": args.check,
                             "differ": differ, "byte_identical": same})
    return 0 if same and not differ else 1


if __name__ == "__main__":
    raise SystemExit(main())
