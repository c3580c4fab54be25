"""The exact solvers' default limits: the work limit, the wall-clock safety net and the
clock's slack, shared by the branch and cut (bnc.py), the branch and bound (bnb.py), the
auto selector (auto.py) and the MILP reference (milp_reference.py)."""

__all__ = ["CLOCK_SLACK_S", "DEFAULT_TIME_LIMIT_S", "DEFAULT_WORK_LIMIT"]

DEFAULT_WORK_LIMIT = 500_000
"""Work limit of one ``select`` call of the branch and cut: simplex iterations summed over
its LPs (HiGHS's count; deterministic, so results never depend on the machine's load).
Chosen so every instance of the default benchmark proves optimal with room to spare
(bench/perf/exact_work.py prints the iterations each one uses; figures in docs/measurement.md)."""

DEFAULT_TIME_LIMIT_S = 300.0
"""Wall-clock safety net (seconds) of one ``select`` call of the LP-based solvers; a search
it stops is flagged ``stopped_by_clock``. Far above ``DEFAULT_WORK_LIMIT``'s time on a
loaded 2-core machine, so the work limit is what stops a search."""

CLOCK_SLACK_S = 2.0
"""A branch and cut ``select`` call with ``time_limit_s`` returns within ``time_limit_s``
plus this (seconds). Why a slack at all: the clock is read between steps (HiGHS reads it
inside each LP; the RENS sub-MIP is abandoned at the deadline), so what runs between two
reads can pass it: the set-up before the first LP (reduction, model, product rows), one
round of cut separation, one local search, one interior-point iteration. Measured
overshoot: docs/measurement.md, "Solver limits"."""
