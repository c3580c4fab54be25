"""The branch and cut's LP relaxation in one ``highspy.Highs``, re-solved per node.

The model's LP (``model.Model``: McCormick rows, budget rows, size row), plus base rows
(``model.product_rows``) and cuts added later; dual simplex, presolve off, each solve
warm-started from the last basis. Every solve counts its simplex iterations (HiGHS's own
count), the deterministic work measure of the branch and cut (junction/select/exact/bnc.py).
"""

from __future__ import annotations

import math

import numpy as np

from junction.errors import SelectionError
from junction.select.exact.highs import highs_lp, new_highs, rows_to_csr
from junction.select.exact.model import Model

__all__ = ["EPS", "HIGHS_INT_MAX", "LPResult", "NodeLP"]

EPS = 1e-6
"""An x within this of 0 or 1 counts as integral (HiGHS's MIP feasibility tolerance)."""
HIGHS_INT_MAX = 2**31 - 1
"""HiGHS's integer options are C ints."""

LPResult = tuple[str, float, np.ndarray, np.ndarray]
"""What ``NodeLP.solve`` returns: (status, value, point, |reduced cost| of x)."""


class NodeLP:
    """The model's LP relaxation (plus cuts) in one ``highspy.Highs``, re-solved per node
    with new x bounds; HiGHS keeps the last basis, so each solve is warm-started."""

    def __init__(self, model: Model) -> None:
        self.nx = model.nx
        self.nvar = model.nvar
        h = new_highs()
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("simplex_strategy", 1)  # dual simplex: bound changes keep dual feasibility
        # Costs below 1 scaled up to max |c| = 1: HiGHS's tolerances (1e-7) are absolute, so
        # scores of 1e-7 would otherwise drown in them (found by fuzzing); values are
        # scaled back. Larger costs are left alone (slower; docs/measurement.md).
        obj = np.asarray(model.obj, dtype=float)
        top = float(np.abs(obj).max()) if obj.size else 0.0
        self.scale = top if 0.0 < top < 1.0 else 1.0
        # Minimise -objective: HiGHS's dual simplex honours ``objective_bound`` (stop once
        # the LP value is proven worse than the cutoff) for minimisation only (tried).
        h.passModel(highs_lp(-obj / self.scale, model.A, model.lo, model.hi,
                              np.zeros(self.nvar), np.ones(self.nvar)))
        self.h = h
        self._cols = np.arange(self.nx, dtype=np.int32)
        self.cuts: list[tuple[np.ndarray, float, float]] = []
        self.base_rows = model.A.shape[0]
        """Rows before the first cut: the model's, then ``add_base_rows``'s."""
        self.iterations = 0
        """Simplex iterations of every ``solve`` so far (HiGHS's ``simplex_iteration_count``)."""

    def add_rows(self, rows: list[tuple[np.ndarray, float, float]], keep: bool = True) -> None:
        """Append rows (dense coefficients, low, high); ``keep``: record them as cuts (a
        row not kept must be removed with ``delete_last_row`` before the next add)."""
        if not rows:
            return
        if keep:
            self.cuts.extend(rows)
        mat = rows_to_csr([r[0] for r in rows], self.nvar)
        self.h.addRows(len(rows), np.array([r[1] for r in rows], dtype=float),
                       np.array([r[2] for r in rows], dtype=float), int(mat.nnz),
                       mat.indptr[:-1].astype(np.int32), mat.indices.astype(np.int32),
                       mat.data.astype(float))

    def add_base_rows(self, A, lo: np.ndarray, hi: np.ndarray) -> None:
        """Append rows given as a sparse matrix (m, nvar), kept for every later solve and
        never dropped (``drop_slack_cuts`` starts after them); call before any cut."""
        if A.shape[0] == 0:
            return
        A = A.tocsr()
        self.h.addRows(A.shape[0], np.asarray(lo, dtype=float), np.asarray(hi, dtype=float),
                       int(A.nnz), A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32),
                       A.data.astype(float))
        self.base_rows += A.shape[0]

    def delete_last_row(self) -> None:
        last = self.h.getNumRow() - 1
        self.h.deleteRows(1, np.array([last], dtype=np.int32))

    def drop_slack_cuts(self, first: int) -> None:
        """Delete the cut rows (row ``first`` on) that are not tight at the last LP point:
        fewer rows, cheaper simplex iterations in every node after the root."""
        values = np.array(self.h.getSolution().row_value)
        rows = np.arange(first, len(values))
        slack = np.array([values[r] < self.cuts[r - first][2] - 1e-6 for r in rows], dtype=bool)
        if slack.any():
            drop = rows[slack].astype(np.int32)
            self.h.deleteRows(len(drop), drop)
            self.cuts = [c for c, s in zip(self.cuts, slack, strict=True) if not s]

    def solve(self, lb: np.ndarray, ub: np.ndarray, time_left: float | None,
              cutoff: float = -math.inf, iterations_left: float = math.inf,
              method: str = "simplex") -> LPResult:
        """("optimal" | "infeasible" | "cutoff" | "work_limit" | "time_limit", value,
        point, |reduced cost| of x), value and reduced costs in the objective's units.
        "cutoff": the dual simplex proved the LP value below ``cutoff`` (HiGHS's
        ``objective_bound``) and stopped early; "work_limit": ``iterations_left`` simplex
        iterations were spent first (HiGHS's ``simplex_iteration_limit``, and
        ``ipm_iteration_limit`` for ``method="ipm"``: deterministic);
        "time_limit": ``time_left`` seconds were (the clock: a safety net). Raises
        ``SelectionError`` if HiGHS fails twice (from the warm basis, then from scratch)
        in a way other than these. ``method="ipm"``: interior point with crossover (a
        basis for the next warm start; its iterations and the crossover's count as work
        too, as ``iterations``), for the first root LP of a large model."""
        h = self.h
        h.setOptionValue("solver", method)
        h.changeColsBounds(self.nx, self._cols, lb.astype(float), ub.astype(float))
        h.setOptionValue("objective_bound", -cutoff / self.scale)
        # HiGHS's time limit is on its own clock, which runs on across ``run`` calls.
        limit = math.inf if time_left is None else h.getRunTime() + max(time_left, 1e-3)
        h.setOptionValue("time_limit", limit)
        cap = int(min(max(iterations_left, 0), HIGHS_INT_MAX))
        h.setOptionValue("simplex_iteration_limit", cap)
        if method != "simplex":  # the interior point's own iterations are capped too
            h.setOptionValue("ipm_iteration_limit", cap)
        h.run()
        info = h.getInfo()
        self.iterations += max(int(info.simplex_iteration_count), 0)
        if method != "simplex":
            self.iterations += max(int(info.ipm_iteration_count), 0) + max(
                int(info.crossover_iteration_count), 0)
            h.setOptionValue("solver", "simplex")
        result = self._result()
        if result is None:  # numerical trouble: once more from scratch
            h.clearSolver()
            h.run()
            self.iterations += max(int(h.getInfo().simplex_iteration_count), 0)
            result = self._result()
        if result is None:
            raise SelectionError(
                f"HiGHS failed on a node LP: {h.modelStatusToString(h.getModelStatus())}")
        return result

    def _result(self) -> LPResult | None:
        import highspy

        h = self.h
        status = h.getModelStatus()
        S = highspy.HighsModelStatus
        empty = np.zeros(0)
        if status == S.kOptimal:
            sol = h.getSolution()
            d = np.abs(np.array(sol.col_dual)[: self.nx]) * self.scale
            return ("optimal", -float(h.getInfo().objective_function_value) * self.scale,
                    np.array(sol.col_value), d)
        if status == S.kObjectiveBound:
            return "cutoff", -math.inf, empty, empty
        if status in (S.kInfeasible, S.kUnboundedOrInfeasible):
            return "infeasible", -math.inf, empty, empty
        if status == S.kIterationLimit:
            return "work_limit", math.inf, empty, empty
        if status in (S.kTimeLimit, S.kInterrupt):
            return "time_limit", math.inf, empty, empty
        return None
