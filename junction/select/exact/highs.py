"""HiGHS glue for the exact solvers: building ``highspy`` models and reading results.

Nothing here knows the joint objective: matrices in, solver status and points out.
``highspy`` is imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import atexit
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_array

__all__ = [
    "NO_HEURISTICS",
    "MipResult",
    "SparseRows",
    "highs_lp",
    "highs_milp",
    "new_highs",
    "rows_to_csr",
]


@dataclass
class MipResult:
    """What a caller reads from one HiGHS MIP solve (named as in scipy's
    ``OptimizeResult``, same meanings): ``status`` 0 optimal,
    1 time limit, 2 infeasible, 4 other; ``x`` None when HiGHS holds no feasible point;
    ``mip_dual_bound`` in the minimisation's sense. ``solutions``: every improving point
    HiGHS reported (``kCallbackMipImprovingSolution``), in the order found. A solve
    abandoned at its deadline (``highs_milp``) has status 1, the last reported point as
    ``x``, node count 0 and no gap or bound."""

    status: int
    x: np.ndarray | None
    mip_node_count: int
    mip_gap: float | None
    mip_dual_bound: float | None
    message: str
    solutions: list[np.ndarray] = field(default_factory=list)


NO_HEURISTICS: dict[str, object] = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}
"""HiGHS options that switch its primal heuristics off, for solves that are almost always
infeasibility proofs (junction/select/exact/milp_reference.py's tie pass; timings in
docs/measurement.md)."""

_HIGHS_BANNER_SHOWN = False

_THREADED = threading.Lock()
"""Held around a solve in highspy's solver thread: ``Highs.startSolve`` guards its thread
with a class-level lock, so a process runs one such solve at a time (a second raises
"Solver is already running")."""
_ABANDONED: list[threading.Thread] = []
"""Solver threads abandoned at a deadline and perhaps still running (HiGHS stops at its
next check); the next threaded solve waits for them, up to its own deadline."""


def _join_abandoned() -> None:
    """At exit, wait for abandoned solver threads: one still running while the interpreter
    shuts down calls back into Python (its improving-solution callback) and crashes it."""
    for thread in _ABANDONED:
        thread.join()


atexit.register(_join_abandoned)


def new_highs():
    """A silent ``highspy.Highs``. highspy prints a banner on C-level stdout when the first
    instance of a process is built (before any option can be set); that one construction
    runs with file descriptor 1 sent to /dev/null so ``--json`` output stays clean."""
    global _HIGHS_BANNER_SHOWN
    import os
    import sys

    import highspy

    if _HIGHS_BANNER_SHOWN:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _HIGHS_BANNER_SHOWN = True
    h.setOptionValue("output_flag", False)
    return h


def highs_lp(c: np.ndarray, A: csr_array, row_lo: np.ndarray, row_hi: np.ndarray,
             col_lo: np.ndarray, col_hi: np.ndarray):
    """``highspy.HighsLp``: minimise ``c @ v`` s.t. row_lo <= A v <= row_hi (A row-wise
    CSR; -inf / inf are HiGHS's infinities), col_lo <= v <= col_hi."""
    import highspy

    nvar = len(c)
    lp = highspy.HighsLp()
    lp.num_col_ = nvar
    lp.num_row_ = A.shape[0]
    lp.sense_ = highspy.ObjSense.kMinimize
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_ = np.asarray(col_lo, dtype=float)
    lp.col_upper_ = np.asarray(col_hi, dtype=float)
    lp.row_lower_ = np.asarray(row_lo, dtype=float)
    lp.row_upper_ = np.asarray(row_hi, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = nvar
    lp.a_matrix_.num_row_ = A.shape[0]
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    return lp


def highs_milp(c: np.ndarray, A: csr_array, row_lo: np.ndarray, row_hi: np.ndarray,
               col_lo: np.ndarray, col_hi: np.ndarray, n_int: int,
               options: dict[str, object], start: np.ndarray | None = None,
               deadline: float | None = None) -> MipResult:
    """Minimise ``c @ v`` s.t. row_lo <= A v <= row_hi, col_lo <= v <= col_hi, the first
    ``n_int`` columns integer, with HiGHS through ``highspy`` (``Highs.passModel``; same
    solver as ``scipy.optimize.milp``, which does not expose the heuristic options).

    ``deadline`` (a ``time.perf_counter()`` value; None: none): HiGHS runs in highspy's
    solver thread (``Highs.startSolve``) and is abandoned at the deadline: HiGHS checks
    its own ``time_limit`` only between root separation rounds and nodes, which took
    tens of seconds on large sub-MIPs (docs/measurement.md, "Solver limits"), so the caller
    stops waiting instead, asks HiGHS to stop (``cancelSolve``; it does at its next
    check, in the background) and gets the improving points reported so far."""
    import highspy

    h = new_highs()
    for key, value in options.items():
        h.setOptionValue(key, value)
    nvar = len(c)
    lp = highs_lp(c, A, row_lo, row_hi, col_lo, col_hi)
    lp.integrality_ = ([highspy.HighsVarType.kInteger] * n_int
                       + [highspy.HighsVarType.kContinuous] * (nvar - n_int))
    h.passModel(lp)
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = [float(v) for v in start]
        solution.value_valid = True
        h.setSolution(solution)
    found: list[np.ndarray] = []

    def keep(event) -> None:
        found.append(np.array(event.data_out.mip_solution, dtype=float))

    h.cbMipImprovingSolution += keep
    if deadline is None:
        h.run()
    else:
        abandoned = MipResult(1, None, 0, None, None, "abandoned at the deadline", [])
        if not _THREADED.acquire(timeout=max(deadline - time.perf_counter(), 0.0)):
            return abandoned
        try:
            for earlier in list(_ABANDONED):  # highspy runs one threaded solve at a time
                earlier.join(max(deadline - time.perf_counter(), 0.0))
                if not earlier.is_alive():
                    _ABANDONED.remove(earlier)
            if _ABANDONED:
                return abandoned
            h.HandleUserInterrupt = True
            thread = h.startSolve()
            thread.join(max(deadline - time.perf_counter(), 0.0))
            if thread.is_alive():
                h.cancelSolve()
                _ABANDONED.append(thread)
                points = list(found)
                return MipResult(1, points[-1] if points else None, 0, None, None,
                                 "abandoned at the deadline", points)
        finally:
            _THREADED.release()
    model_status = h.getModelStatus()
    info = h.getInfo()
    has_point = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value) if has_point else None
    S = highspy.HighsModelStatus
    if model_status == S.kOptimal:
        status = 0
    elif model_status in (S.kTimeLimit, S.kInterrupt):
        status = 1
    elif model_status in (S.kInfeasible, S.kUnboundedOrInfeasible):
        status, x = 2, None  # every variable is bounded: "or unbounded" cannot be
    else:
        status = 4
    bound = float(info.mip_dual_bound)
    return MipResult(status, x, max(int(info.mip_node_count), 0),
                     float(info.mip_gap) if math.isfinite(info.mip_gap) else None,
                     bound if math.isfinite(bound) else None,
                     h.modelStatusToString(model_status), list(found))


def rows_to_csr(coefs: Sequence[np.ndarray], ncols: int) -> csr_array:
    """Stack dense coefficient rows into a sparse matrix without a dense intermediate."""
    cols = [np.flatnonzero(c) for c in coefs]
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    data = np.concatenate([c[i] for c, i in zip(coefs, cols, strict=True)]) if cols else np.zeros(0)
    return csr_array((data, indices, indptr), shape=(len(coefs), ncols))


class SparseRows:
    """Rows ``lo <= A v <= hi`` built one at a time from (column, coefficient) entries, as
    the exact and coverage models write their constraints; ``matrix(ncols)`` gives
    (A as a ``csr_array`` of shape (rows, ncols), lo, hi), bounds as float arrays."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, entries: Sequence[tuple[int, float]], low: float, high: float) -> None:
        """One row: ``low <= Σ coefficient · v[column] <= high`` (±inf: no bound)."""
        r = len(self.lo)
        for col, v in entries:
            self.rows.append(r)
            self.cols.append(col)
            self.vals.append(v)
        self.lo.append(low)
        self.hi.append(high)

    def matrix(self, ncols: int) -> tuple[csr_array, np.ndarray, np.ndarray]:
        """(A, lo, hi) of every row added so far."""
        return (csr_array((self.vals, (self.rows, self.cols)), shape=(len(self.lo), ncols)),
                np.array(self.lo, dtype=float), np.array(self.hi, dtype=float))
