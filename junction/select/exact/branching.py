"""Branching in the branch and cut: reliability branching on fractional x, the exact
check and tie split at integral nodes, reduced-cost fixing, pseudo-costs.

At a fractional node: reduced-cost fixing (Nemhauser & Wolsey 1988, §II.5), then
reliability branching (Achterberg, Koch & Martin 2005). At an integral node (its set S):
S is recorded if it fits exactly (``Reduced.exceeded``), else the node is branched on the
member with the largest use of the broken limit; then the node is split into {S} and k
children "x_1..x_{j-1} as in S, x_j flipped" over its open x, unless one LP shows no other
set in it can tie (``Brancher._no_other_set``).
"""

from __future__ import annotations

import math

import numpy as np

from junction.select.exact.nodelp import EPS
from junction.select.exact.reduction import LIMIT_COLUMNS
from junction.select.exact.search import Node, Search

__all__ = ["Brancher"]

_RELIABLE = 1
"""Pseudo-costs of an x count as reliable after this many observations per direction
(HiGHS uses 8; why 1: docs/measurement.md)."""
_LOOKAHEAD = 8
"""Stop evaluating branching candidates after this many without a better score."""


class Brancher:
    """Branches the nodes of one ``Search`` and learns its pseudo-costs (bound drop per
    unit change of x_i, down and up, with their observation counts)."""

    def __init__(self, search: Search) -> None:
        self.search = search
        nx = search.nx
        self.pc_down = np.zeros(nx)
        self.pc_up = np.zeros(nx)
        self.pc_down_n = np.zeros(nx)
        self.pc_up_n = np.zeros(nx)

    def branch(self, node: Node, value: float, point: np.ndarray, d: np.ndarray,
               stack: list[Node]) -> None:
        """Push the children of ``node``, whose LP gave ``value``, ``point`` (nvar,) and
        |reduced costs| ``d`` (nx,), onto ``stack`` (see the module docstring); every
        16th node the point seeds a local search."""
        s = self.search
        x = point[: s.nx]
        lb, ub = node.lb.copy(), node.ub.copy()
        free = (lb < 0.5) & (ub > 0.5)
        low = x <= EPS
        high = x >= 1 - EPS
        frac = free & ~low & ~high
        if frac.any():
            if s.nodes <= 1 or s.nodes % 16 == 0:
                s.heuristic(point)
            self._fix(value, x, d, lb, ub, free)
            picked = self._pick(np.flatnonzero(frac), x, lb, ub, value)
            if picked is None:
                return  # strong branching cut off both children of some x
            if picked < 0:
                stack.append(Node(lb, ub, value))  # strong branching fixed some x: again
                return
            self._push_pair(stack, lb, ub, picked, x[picked], bound=value)
            return
        chosen = tuple(int(i) for i in np.flatnonzero(x > 0.5))
        broken = s.red.exceeded(chosen, s.problem.budget, s.max_size)
        if broken is not None:
            members = [i for i in chosen if free[i]]
            if not members:
                return  # every member fixed: no set in this node fits exactly
            use = s.arrays.use[:, LIMIT_COLUMNS.index(broken)]
            i = max(members, key=lambda k: (use[k], -k))
            self._push_pair(stack, lb, ub, i, 0.0, bound=value)
            return
        s.record(chosen)
        self._fix(value, x, d, lb, ub, free)
        open_ = np.flatnonzero((lb < 0.5) & (ub > 0.5))
        if not len(open_) or self._no_other_set(lb, ub, x, open_):
            return
        # Split the node into {chosen} and "open_[:j] as in chosen, open_[j] flipped".
        pushed = []
        for j, col in enumerate(open_):
            clb, cub = lb.copy(), ub.copy()
            agree = open_[:j]
            clb[agree] = np.round(x[agree])
            cub[agree] = np.round(x[agree])
            flipped = 1.0 - round(float(x[col]))
            clb[col] = cub[col] = flipped
            pushed.append(Node(clb, cub, value - d[col]))
        stack.extend(reversed(pushed))

    def learn(self, node: Node, value: float) -> None:
        """Update the pseudo-cost of the branching that made ``node`` (bound drop per
        unit of change; an LP stopped at the cutoff counts as a drop to the cutoff)."""
        if node.var < 0 or not math.isfinite(node.bound):
            return
        change = node.frac if node.up == 0 else 1.0 - node.frac
        if change <= EPS:
            return
        self._learn_one(node.var, node.up, max(node.bound - value, 0.0) / change)

    def _no_other_set(self, lb: np.ndarray, ub: np.ndarray, x: np.ndarray,
                      open_: np.ndarray) -> bool:
        """One LP instead of the split: the node plus the row "differ from the set in at
        least one open x" (Σ_{x_i=0} x_i + Σ_{x_i=1} (1 - x_i) >= 1 over the open x; a
        local-branching row, Fischetti & Lodi 2003). True if that LP is below the cutoff
        or infeasible: no other set in the node can tie. The row is deleted afterwards."""
        s = self.search
        ones = np.round(x[open_]) > 0.5
        coef = np.zeros(s.model.nvar)
        coef[open_] = np.where(ones, -1.0, 1.0)
        s.lp.add_rows([(coef, 1.0 - float(ones.sum()), math.inf)], keep=False)
        status, value, _, _ = s.solve(lb, ub, s.cutoff())
        s.lp.delete_last_row()
        s.nodes += 1
        return status in ("infeasible", "cutoff") or (
            status == "optimal" and value < s.cutoff())

    def _fix(self, value: float, x: np.ndarray, d: np.ndarray, lb: np.ndarray,
             ub: np.ndarray, free: np.ndarray) -> None:
        """Reduced-cost fixing in place: flipping x_i lowers the bound by >= d_i."""
        hopeless = free & (value - d < self.search.cutoff())
        ub[hopeless & (x <= EPS)] = 0.0
        lb[hopeless & (x >= 1 - EPS)] = 1.0

    def _pick(self, frac: np.ndarray, x: np.ndarray, lb: np.ndarray, ub: np.ndarray,
              value: float) -> int | None:
        """Branching variable by reliability branching (Achterberg, Koch & Martin 2005):
        pseudo-cost scores (bound drop per unit change down and up, product rule), with
        both children LPs solved ("strong branching", stopped at the cutoff) for
        candidates branched on fewer than ``_RELIABLE`` times, at most ``_LOOKAHEAD``
        of them without a better score. A strong-branching child below the cutoff fixes
        the x the other way in ``lb``/``ub``; returns -1 if it fixed any (solve the node
        again), None if both children of one x are below the cutoff (the node is empty),
        else the index to branch on. Ties: the more fractional, then the smaller index."""
        score = self._pc_score(frac, x)
        order = frac[np.lexsort((frac, np.abs(x[frac] - 0.5), -score))]
        best, best_score, stale, fixed = int(order[0]), -1.0, 0, False
        rank = {int(i): k for k, i in enumerate(order)}
        for i in order:
            i = int(i)
            if min(self.pc_down_n[i], self.pc_up_n[i]) >= _RELIABLE:
                sc = float(score[np.searchsorted(frac, i)])
            else:
                cut = self.search.cutoff()
                t = ub.copy()
                t[i] = 0.0
                down = self._child_value(lb, t, cut)
                t = lb.copy()
                t[i] = 1.0
                up = self._child_value(t, ub, cut)
                for v, side, change in ((down, 0, x[i]), (up, 1, 1 - x[i])):
                    self._learn_one(i, side, max(value - max(v, cut), 0.0) / change)
                if down < cut and up < cut:
                    return None
                if down < cut or up < cut:
                    lb[i] = 1.0 if down < cut else lb[i]
                    ub[i] = 0.0 if up < cut else ub[i]
                    fixed = True
                    continue
                sc = max(value - down, 1e-6) * max(value - up, 1e-6)
            if sc > best_score or (sc == best_score and rank[i] < rank[best]):
                best, best_score, stale = i, sc, 0
            else:
                stale += 1
                if stale >= _LOOKAHEAD:
                    break
        return -1 if fixed else best

    def _child_value(self, lb: np.ndarray, ub: np.ndarray, cut: float) -> float:
        status, v, _, _ = self.search.solve(lb, ub, cut)
        if status == "optimal":
            return v
        if status in ("work_limit", "time_limit"):
            return math.inf  # no bound known
        return -math.inf  # infeasible or stopped at the cutoff

    def _pc_score(self, frac: np.ndarray, x: np.ndarray) -> np.ndarray:
        est = []
        for pc, n in ((self.pc_down, self.pc_down_n), (self.pc_up, self.pc_up_n)):
            seen = n > 0
            mean = float(pc[seen].sum() / n[seen].sum()) if seen.any() else 1.0
            est.append(np.where(seen, pc / np.maximum(n, 1), mean)[frac])
        xf = x[frac]
        return np.maximum(est[0] * xf, 1e-6) * np.maximum(est[1] * (1 - xf), 1e-6)

    def _learn_one(self, i: int, up: int, drop: float) -> None:
        if up:
            self.pc_up[i] += drop
            self.pc_up_n[i] += 1
        else:
            self.pc_down[i] += drop
            self.pc_down_n[i] += 1

    @staticmethod
    def _push_pair(stack: list[Node], lb: np.ndarray, ub: np.ndarray, i: int,
                   xi: float, bound: float) -> None:
        """Children x_i = 0 and x_i = 1; the one ``xi`` rounds to is popped first."""
        down_ub = ub.copy()
        down_ub[i] = 0.0
        up_lb = lb.copy()
        up_lb[i] = 1.0
        down = Node(lb, down_ub, bound, i, 0, xi)
        up = Node(up_lb, ub, bound, i, 1, xi)
        stack.extend([down, up] if xi >= 0.5 else [up, down])
