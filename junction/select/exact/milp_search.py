"""The passes of the MILP reference (milp_reference.py) on one problem: root cuts, pass 1
for the best objective, then the tie passes (``MilpSearch``).

Model and reduction: the module docstrings of model.py and reduction.py. Root cuts (from
``CYCLE_CUT_MIN_CANDIDATES`` candidates up): rounds of LP relaxation plus exact separation
of the odd-cycle inequalities (``model.cycle_cuts``); the cuts stay in the model for
every pass.

Ties: broken by a documented second pass, not inside one model. Pass 1 maximises the
objective (value z); with root cuts it starts from an incumbent (the root LP point
rounded, then ``local_search.local_search``) and a row objective >= its value
(``MilpSearch.run``).
Pass 2 asks whether another set with a key tokens·(N+1) + |S| no larger than the best's
(N = number of candidates; the key orders sets exactly as the first two levels of the tie
rule: fewer tokens, then fewer resources) has an objective >= z - ``OBJECTIVE_TOLERANCE``
(a maximisation with a row on the objective; variables are fixed first by reduced costs
from the root LP). Usually it has none and pass 2 is one solve. Otherwise the smallest key
is found under the objective row, and pass 3 lists the other sets with that key (no-good
cuts, at most ``tie_enumeration_cap`` sets; past the cap it fixes ids one at a time,
binary search on the next id) and keeps the lexicographically smallest (context ids, then
tool ids). Every set the solver returns is re-checked in Python (``Reduced.exceeded``: the
budget's arithmetic; objective with ``math.fsum``); a set that only fits within the
solver's feasibility tolerance is cut off (a cover cut on the limit it breaks) and the
pass re-run. Pass 2's first solve runs with HiGHS's primal heuristics off
(``NO_HEURISTICS``: it is almost always an infeasibility proof).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from junction.errors import SelectionError
from junction.select.exact.local_search import local_search
from junction.select.exact.milp_lp import lp_bound
from junction.select.exact.model import Model, cycle_cuts
from junction.select.exact.reduction import Reduced
from junction.select.problem import OBJECTIVE_TOLERANCE, JointProblem

__all__ = ["MilpSearch"]

_CUT_ROUNDS = 20
"""At most this many rounds of odd-cycle separation at the root."""

_CUT_TIME_SHARE = 0.25
"""Share of the time left that the root separation rounds may use."""

_CUT_STALL = 1e-4
"""Stop separating when a round lowers the LP bound by less than this (relative)."""


@dataclass
class _Found:
    """A set the solver returned that passed the exact check."""

    chosen: tuple[int, ...]
    objective: float
    key: tuple


class MilpSearch:
    """The three passes for one problem (see the module docstring)."""

    def __init__(self, problem: JointProblem, red: Reduced, max_size: int | None,
                 deadline: float | None, tie_enumeration_cap: int,
                 cycle_cut_min_candidates: int = 0) -> None:
        self.problem = problem
        self.red = red
        self.max_size = max_size
        self.deadline = deadline
        self.cap = tie_enumeration_cap
        self.cut_min = cycle_cut_min_candidates
        self.root_lp: tuple[float, np.ndarray, np.ndarray] | None = None
        self.tie_bounds: tuple[np.ndarray, np.ndarray] | None = None
        self.n_fixed = 0
        self.model = Model(red, problem, max_size)
        self.found: dict[tuple[int, ...], _Found] = {}
        self.timed_out = False
        self.gap: float | None = 0.0
        self.nodes = 0

    # -- helpers -----------------------------------------------------------------------
    def _time_left(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - time.perf_counter()

    def _record(self, chosen: tuple[int, ...]) -> _Found:
        if chosen not in self.found:
            self.found[chosen] = _Found(chosen, *self.red.score(self.problem, chosen))
        return self.found[chosen]

    def _cover_cut(self, chosen: tuple[int, ...], limit: str) -> None:
        """Cut off every set containing ``chosen``'s part that breaks ``limit``."""
        if limit in ("max_latency_ms", "max_cost_usd", "max_tools"):
            part = [i for i in chosen if i >= self.red.n_ctx]
        else:
            part = list(chosen)
        coef = np.zeros(self.model.nvar)
        coef[part] = 1.0
        self.model.add_cut(coef, -np.inf, len(part) - 1)

    def _run(self, c, extra=(), lb=None, ub=None, heuristics: bool = True, start=None):
        """Solve; return (chosen set or None if infeasible, result). Handles exact checks."""
        if self.tie_bounds is not None:
            lb = self.tie_bounds[0] if lb is None else np.maximum(lb, self.tie_bounds[0])
            ub = self.tie_bounds[1] if ub is None else np.minimum(ub, self.tie_bounds[1])
        while True:
            left = self._time_left()
            if left is not None and left <= 0:
                self.timed_out = True
                return None, None
            res = self.model.solve(c, extra, lb, ub, left, heuristics, start)
            self.nodes += int(res.mip_node_count or 0)
            if res.status == 1:
                self.timed_out = True
            if res.x is None:
                if res.status in (0, 2):  # infeasible: no set in this region
                    return None, res
                if res.status == 1:
                    return None, res
                raise SelectionError(
                    f"MILP solver failed on a {self.red.n_ctx}+"
                    f"{len(self.red.items) - self.red.n_ctx} candidate problem: "
                    f"status {res.status}, {res.message}"
                )
            chosen = tuple(int(i) for i in np.flatnonzero(res.x[: self.model.nx] > 0.5))
            broken = self.red.exceeded(chosen, self.problem.budget, self.max_size)
            if broken is None:
                return chosen, res
            self._cover_cut(chosen, broken)

    def _objective_row(self, z: float) -> tuple[np.ndarray, float, float]:
        return self.model.obj, z - OBJECTIVE_TOLERANCE, np.inf

    def _best(self) -> float:
        return max(f.objective for f in self.found.values())

    # -- passes ------------------------------------------------------------------------
    def _root_cuts(self) -> None:
        """Rounds of LP relaxation + odd-cycle separation; the cuts stay for all passes.
        The last LP's bound and reduced costs are kept for ``_fix_for_ties``."""
        if self.model.nx < self.cut_min:
            return
        last = math.inf
        stop = None
        if self.deadline is not None:
            # the deadline is set, so the time left is a float
            stop = (time.perf_counter()
                    + _CUT_TIME_SHARE * max(cast(float, self._time_left()), 0.0))
        for _ in range(_CUT_ROUNDS):
            if stop is not None and time.perf_counter() >= stop:
                return
            lp = lp_bound(self.model, None if stop is None else stop - time.perf_counter())
            if lp is None:
                return
            self.root_lp = lp
            bound, point, _ = lp
            if bound > last - _CUT_STALL * max(1.0, abs(last)) or not self.red.pairs:
                return
            last = bound
            self._drop_slack_cuts(point)
            cuts = cycle_cuts(self.model, point, max_cuts=self.model.nx + 1)
            if not cuts:
                return
            self.model.cuts.extend(cuts)

    def _drop_slack_cuts(self, point: np.ndarray) -> None:
        """Keep only the cuts tight at the LP point (fewer rows: faster node LPs)."""
        self.model.cuts = [(coef, low, high) for coef, low, high in self.model.cuts
                           if coef @ point >= high - 1e-6]

    def _fix_for_ties(self) -> None:
        """Reduced-cost fixing for the tie passes (every set they look for has objective
        >= z - tolerance): x_i keeps its root LP value 0 or 1 when leaving it would bring
        the LP bound below that (Nemhauser & Wolsey 1988, reduced-cost fixing)."""
        if self.root_lp is None:
            return
        bound, point, loss = self.root_lp
        z = self._best()
        margin = OBJECTIVE_TOLERANCE + 1e-6 * max(1.0, abs(z))  # HiGHS's dual tolerance
        fixed = bound - loss < z - margin
        lb = np.zeros(self.model.nvar)
        ub = np.ones(self.model.nvar)
        values = np.round(point[: self.model.nx])
        lb[: self.model.nx][fixed] = values[fixed]
        ub[: self.model.nx][fixed] = values[fixed]
        self.tie_bounds = (lb, ub)
        self.n_fixed = int(fixed.sum())

    def _incumbent(self) -> tuple[tuple[int, ...], np.ndarray] | None:
        """Pass 1's first incumbent: the root LP point (after the cut rounds) rounded at 1/2,
        repaired and improved by ``local_search``; with its point (x, y = x_c·x_t) for
        ``Highs.setSolution``. None without a root LP (below ``cycle_cut_min_candidates``)."""
        if self.root_lp is None:
            return None
        nx = self.model.nx
        chosen = local_search(self.red, self.problem.budget, self.max_size,
                               start=self.root_lp[1][:nx] > 0.5)
        point = np.zeros(self.model.nvar)
        point[list(chosen)] = 1.0
        for k, (c, t, _) in enumerate(self.red.pairs):
            point[nx + k] = point[c] * point[t]
        return chosen, point

    def run(self) -> tuple[tuple[int, ...], str, float | None]:
        self._root_cuts()
        incumbent = self._incumbent()
        if incumbent is None:
            chosen, res = self._run(-self.model.obj)
        else:
            # A row objective >= z0 - tolerance (z0: the incumbent's exact objective, so the
            # optimum lies in the row's region) plus the incumbent as HiGHS's start. The row
            # lets presolve and propagation use the bound, which the start alone does not
            # (timings: docs/measurement.md).
            start_set, point = incumbent
            self._record(start_set)
            row = self._objective_row(self.found[start_set].objective)
            chosen, res = self._run(-self.model.obj, extra=[row], start=point)
            if chosen is None and not self.timed_out:
                chosen, res = self._run(-self.model.obj)  # numerically lost: ask without it
        if chosen is None:
            chosen = ()
        self._record(chosen)
        if self.timed_out:
            # Keep the best of HiGHS's set and the local searches'; gap against its bound.
            fallback = self._record(local_search(self.red, self.problem.budget,
                                                  self.max_size))
            if incumbent is not None:
                fallback = max([fallback, self.found[incumbent[0]]],
                               key=lambda f: (f.objective, f.chosen))
            best = max([self.found[chosen], fallback], key=lambda f: (f.objective, f.chosen))
            gap = None
            if res is not None and res.mip_dual_bound is not None:
                bound = -float(res.mip_dual_bound)
                gap = max(bound - best.objective, 0.0) / max(abs(best.objective), 1e-9)
            return best.chosen, "time_limit", gap
        self.gap = float(res.mip_gap) if res is not None and res.mip_gap is not None else 0.0
        self._fix_for_ties()
        key_sets = self._pass_key(chosen)
        if len(key_sets) > 1 and not self.timed_out:
            self._pass_lex(key_sets)
        z = self._best()
        ties = [f for f in self.found.values() if f.objective >= z - OBJECTIVE_TOLERANCE]
        best = min(ties, key=lambda f: f.key)
        if self.timed_out:
            return best.chosen, "time_limit", 0.0
        return best.chosen, "optimal", self.gap

    def _key_of(self, chosen: tuple[int, ...]) -> int:
        """tokens·(N+1) + |S|: orders sets as the tie rule's first two levels."""
        return round(float(self.model.key[list(chosen)].sum())) if chosen else 0

    def _exclude(self, chosen: tuple[int, ...]) -> tuple[np.ndarray, float, float]:
        """Row cutting off ``chosen``; valid where key <= key(chosen) (a superset of
        ``chosen`` has a larger key, so another set must miss one of its members)."""
        coef = np.zeros(self.model.nvar)
        coef[list(chosen)] = 1.0
        return coef, -np.inf, len(chosen) - 1

    def _key_rows(self, key: int) -> list[tuple[np.ndarray, float, float]]:
        return [self._objective_row(self._best()), (self.model.key, -np.inf, key + 0.5)]

    def _pass_key(self, first: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Pass 2: another tie with a key <= the best so far? Returns the sets found with
        the smallest key (one set: it is the only tie with that key)."""
        best = first
        key = self._key_of(best)
        if key == 0:
            return [best]  # the empty set: nothing else has key 0
        # Fast path: is there another set with a key <= key(best) and an objective within
        # tolerance of the best? Asked as a maximisation with a row on the objective
        # (faster than minimising the key, or than a pure feasibility problem).
        chosen, _ = self._run(-self.model.obj,
                              extra=[*self._key_rows(key), self._exclude(best)],
                              heuristics=False)
        if chosen is None:
            return [best]
        f = self._record(chosen)
        if f.objective >= self._best() - OBJECTIVE_TOLERANCE and self._key_of(chosen) < key:
            best = chosen
        # Ties or near ties: minimise the key under a row on the objective.
        while True:
            key = self._key_of(best)
            if key == 0:
                return [best]  # the empty set: nothing else has key 0
            rows = [*self._key_rows(key), self._exclude(best)]
            chosen, _ = self._run(self.model.key, extra=rows)
            if chosen is None:
                return [best]
            f = self._record(chosen)
            z = self._best()
            if f.objective < z - OBJECTIVE_TOLERANCE:
                self._no_good(chosen)  # within HiGHS's tolerance but not a tie
            elif f.objective > self.found[best].objective + OBJECTIVE_TOLERANCE:
                best = chosen  # pass 1 stopped within HiGHS's gap: go on from the better set
            elif self._key_of(chosen) < key:
                best = chosen
            else:
                return [best, chosen]

    def _no_good(self, chosen: tuple[int, ...]) -> None:
        coef = np.zeros(self.model.nvar)
        coef[: self.model.nx] = 1.0
        coef[list(chosen)] = -1.0
        self.model.add_cut(coef, 1.0 - len(chosen), np.inf)

    def _tie_rows(self) -> list[tuple[np.ndarray, float, float]]:
        return self._key_rows(self.key_value)

    def _pass_lex(self, seen: list[tuple[int, ...]]) -> None:
        """Pass 3: list the other sets with the smallest key (the final pick keeps the
        lexicographic smallest); past ``tie_enumeration_cap`` sets, fix ids instead."""
        self.key_value = self._key_of(seen[0])
        zero = np.zeros(self.model.nvar)
        for _ in range(self.cap):
            rows = [*self._tie_rows(), *(self._exclude(s) for s in seen)]
            chosen, _ = self._run(zero, extra=rows)
            if chosen is None or self.timed_out:
                return
            f = self._record(chosen)
            if f.objective < self._best() - OBJECTIVE_TOLERANCE:
                self._no_good(chosen)
                continue
            seen.append(chosen)
        self._lex_by_fixing()

    def _feasible(self, lb: np.ndarray, ub: np.ndarray,
                  rows: Sequence[tuple[np.ndarray, float, float]] = ()) -> bool:
        """Is there a verified tie with the smallest key inside the bounds and ``rows``?"""
        zero = np.zeros(self.model.nvar)
        while True:
            chosen, _ = self._run(zero, extra=[*self._tie_rows(), *rows], lb=lb, ub=ub)
            if chosen is None or self.timed_out:
                return False
            f = self._record(chosen)
            if f.objective >= self._best() - OBJECTIVE_TOLERANCE:
                return True
            self._no_good(chosen)

    def _lex_by_fixing(self) -> None:
        """Fix contexts, then tools, in id order: the lexicographic smallest tie.

        With the ids before position ``last`` fixed, either some tie has no further id of
        this kind (then none is added: a prefix sorts first), or the next id is the
        smallest i such that some tie holds an id in (last, i]: binary search on i.
        """
        nx = self.model.nx
        lb = np.zeros(self.model.nvar)
        ub = np.ones(self.model.nvar)
        for start, stop in ((0, self.red.n_ctx), (self.red.n_ctx, nx)):
            last = start - 1
            while True:
                trial = ub.copy()
                trial[last + 1: stop] = 0.0
                if self._feasible(lb, trial):
                    ub = trial
                    break
                if self.timed_out:
                    return
                low, high = last + 1, stop - 1
                while low < high:
                    mid = (low + high) // 2
                    coef = np.zeros(self.model.nvar)
                    coef[last + 1: mid + 1] = 1.0
                    if self._feasible(lb, ub, [(coef, 1.0, np.inf)]):
                        high = mid
                    else:
                        if self.timed_out:
                            return
                        low = mid + 1
                ub[last + 1: low] = 0.0
                lb[low] = 1.0
                last = low
