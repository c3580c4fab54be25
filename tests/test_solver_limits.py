"""The exact solver's limits hold, on the two instances where they did not.

- ``gallo`` 400 candidates, Δ = 0.5, seed 3 (``junction.select.instances``), 10 s
  limit: ``select`` stops on the clock and returns a selection inside the budget (it took
  43 s when the RENS sub-MIP ran past its time limit). How far past the limit it returns
  is a measurement, not a test (no test asserts a time): ``bench/perf/solver_limits.py``
  prints it against ``CLOCK_SLACK_S``.
- ``gallo`` 200, Δ = 0.5, seed 4: the objective with a 20 s limit is at least the one
  with 5 s (a clock-cut RENS point once seeded a local search that a longer run never
  started, and the 60 s answer was the worse one). Each limit runs in a fresh process:
  a RENS sub-MIP abandoned at an earlier call's deadline (the 400 test's, in the same
  pytest worker) keeps running until HiGHS next checks, and a call that starts meanwhile
  skips RENS (``highs.highs_milp``), which can make the 20 s answer the worse one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from junction.select import AutoJointSelector
from junction.select.instances import family_problem


@pytest.mark.slow
def test_a_time_limit_stops_the_search_with_a_selection_inside_the_budget():
    # 4 s: stopped by the clock at 1, 2, 4 and 10 s alike on an idle machine
    problem = family_problem("gallo", 400, 3, 0.5)
    got = AutoJointSelector(time_limit_s=4.0).select(problem)
    assert got.status == "stopped_by_clock"
    assert got.tokens_used <= problem.budget.max_tokens


_SELECT_IN_A_FRESH_PROCESS = """
import json, os, sys
from junction.select import AutoJointSelector
from junction.select.instances import family_problem
got = AutoJointSelector(time_limit_s=float(sys.argv[1])).select(
    family_problem("gallo", 200, 4, 0.5))
print(json.dumps({"objective": got.objective, "status": got.status}), flush=True)
os._exit(0)  # not waiting at exit for a sub-MIP abandoned at the deadline
"""


def _select_alone(time_limit_s: float) -> dict:
    done = subprocess.run([sys.executable, "-c", _SELECT_IN_A_FRESH_PROCESS,
                           str(time_limit_s)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_more_time_never_gives_a_worse_set():
    # 8 s against 2 s: on an idle machine the 2 s call is cut inside RENS (its sub-MIP
    # abandoned at the deadline, 15,155) and the 8 s call finishes it (37,638), the path a
    # worse longer call once took; 20 against 5 both finished RENS (37,638 each) and cost
    # 15 s more of make test. One process each, so neither waits on the other's
    # abandoned sub-MIP.
    long = _select_alone(8.0)
    short = _select_alone(2.0)
    assert long["objective"] >= short["objective"], (short, long)
