"""The exact selections of a learned fit's λ × τ search, in this process or on worker
processes.

``solve_variants`` selects, for one training task, every distinct grid-point problem (the
task's pools and budget, one (unaries, interactions) pair per variant) with the exact
joint selector (``AutoJointSelector``), or by an approximate search of ``SEARCHES``
(``search_pick``). It is pure: the selections depend only on its arguments, so they are
the same in any process and in any order.

``solve_all`` runs ``solve_variants`` over many tasks: in this process with one worker,
else on a pool of worker processes (``python -c`` running ``serve_stdio``, started once per
process and kept for later fits; each reads pickled jobs on its standard input and writes
pickled selections on its standard output). Plain subprocesses rather than
``multiprocessing``: a spawned ``multiprocessing`` child re-imports the parent's main
script, which fails for a script without a ``__main__`` guard, and a forked one copies
the locks of the parent's other threads (Prefect's, llama.cpp's). Workers ignore SIGINT:
Ctrl-C is the parent's to handle; a worker exits when its standard input closes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from junction.environment import usable_cpus
from junction.errors import JunctionError, UnknownNameError
from junction.select.exact.auto import AutoJointSelector
from junction.select.exact.bnb import COMBINATORIAL_MAX
from junction.select.exact.local_search import local_search
from junction.select.exact.reduction import Reduced, fitting_alone, reduce
from junction.select.problem import JointProblem

__all__ = ["OPTIMAL_SEARCH", "SEARCHES", "GridWorkerError", "Pick", "Variant", "check_search",
           "fit_workers", "search_pick", "shutdown_workers", "solve_all", "solve_job",
           "solve_variants"]

Variant = tuple[dict[str, float], dict[tuple[str, str], float]]
"""One grid point's problem for a task: (unary utilities, kept interactions)."""

Picked = tuple[tuple[str, ...], tuple[str, ...]]
"""A selection: (context ids, tool ids)."""

Job = tuple[Sequence[Any], Sequence[Any], Any, Sequence[Variant], str]
"""One task's work: (contexts, tools, budget, variants, search), ``solve_variants``'s
arguments and the name of the search (``SEARCHES``)."""

Pick = Callable[[JointProblem, Reduced, "int | None"], Picked]
"""A selection of one grid-point problem from its reduced problem and size cap:
``(problem, reduced, max_size) -> (context ids, tool ids)``."""

OPTIMAL_SEARCH = "optimal"
"""The default search of ``SEARCHES``: the exact joint selector on every grid-point problem."""

SEARCHES = (OPTIMAL_SEARCH, "hybrid", "local")
"""How the λ × τ search selects each grid-point problem: ``optimal``, the exact joint
selector (the default: the fit's selections are the optimum's); ``hybrid``, the exact
combinatorial branch and bound up to ``bnb.COMBINATORIAL_MAX`` candidates after reduction
and local search above; ``local``, local search on every problem
(``junction.select.exact.local_search``: greedy insertion, improving flips and swaps; no
optimality claim). The approximate two are faster and may choose another λ and τ, so they
fit other models (bench/studies/grid_search_approximation.py, and the cross-fitted verdict
of each: bench/studies/tau2_gap.py; figures in docs/measurement.md, "Learned fit time")."""


def check_search(search: str) -> str:
    """``search`` if it names one of ``SEARCHES``; raises ``UnknownNameError`` listing them
    otherwise."""
    if search not in SEARCHES:
        raise UnknownNameError(f"unknown fit search {search!r}; valid searches: "
                               f"{', '.join(SEARCHES)}")
    return search


def search_pick(search: str) -> Pick | None:
    """The ``Pick`` of an approximate search of ``SEARCHES`` (None for ``optimal``:
    ``solve_variants``'s own exact selection). Raises ``UnknownNameError`` for another
    name."""
    if check_search(search) == OPTIMAL_SEARCH:
        return None
    exact = AutoJointSelector(combinatorial_max=COMBINATORIAL_MAX)

    def pick(problem: JointProblem, red: Reduced, max_size: int | None) -> Picked:
        if not red.items:
            return (), ()
        if search == "hybrid" and len(red.items) <= COMBINATORIAL_MAX:
            sel = exact.select_reduced(problem, red, max_size, time.perf_counter())
            return tuple(sel.context_ids), tuple(sel.tool_ids)
        chosen = local_search(red, problem.budget, max_size, swaps=True)
        # ``red.items``: the contexts (``red.n_ctx`` of them), then the tools
        return (tuple(red.items[i].id for i in chosen if i < red.n_ctx),
                tuple(red.items[i].id for i in chosen if i >= red.n_ctx))

    return pick


def solve_job(job: Job) -> list[Picked]:
    """``solve_variants`` on one ``Job``, by its search."""
    contexts, tools, budget, variants, search = job
    return solve_variants(contexts, tools, budget, variants, search_pick(search))


class GridWorkerError(JunctionError):
    """A worker process of the fit's search failed (it exited, or its selector raised);
    the message names the worker's exit status or the error."""


def solve_variants(contexts: Sequence[Any], tools: Sequence[Any], budget: Any,
                   variants: Sequence[Variant], pick: Pick | None = None) -> list[Picked]:
    """(context ids, tool ids) that the exact joint selector selects for each of a task's
    grid-point problems (its pools ``contexts`` and ``tools``, ``budget``, and per variant
    the unaries and interactions), in ``variants`` order.

    A variant whose reduced problem (``reduction.reduce``: the candidates that can be
    selected, their unaries and pairs) equals an earlier one's reuses that selection: an
    exact selector's answer is a function of the reduced problem, the budget and the size
    cap (the same for every variant of a task). The selector is ``AutoJointSelector``
    with the combinatorial branch and bound up to ``bnb.COMBINATORIAL_MAX`` candidates:
    both of its searches are exact with the same tie rule, so they select the same set,
    and on these one-row (token budget) problems the combinatorial one is the faster up
    to there (docs/measurement.md, "Learned fit time"). ``pick``: another selection
    instead of the exact one, a function of the reduced problem and size cap as well
    (``search_pick``: the approximate searches of ``SEARCHES``)."""
    if pick is None:
        selector = AutoJointSelector(combinatorial_max=COMBINATORIAL_MAX)

        def pick(problem: JointProblem, red: Reduced, max_size: int | None) -> Picked:
            sel = selector.select_reduced(problem, red, max_size, time.perf_counter())
            return tuple(sel.context_ids), tuple(sel.tool_ids)

    solved: dict[tuple, Picked] = {}
    out = []
    fitting = None  # the candidates that fit alone: the same pools and budget in every variant
    for unary, interactions in variants:
        problem = JointProblem(contexts=tuple(contexts), tools=tuple(tools), budget=budget,
                               unary=unary, interactions=interactions)
        max_size = problem.max_size  # the selector's own cap is None: the problem's
        if fitting is None:
            fitting = fitting_alone(problem)
        red = reduce(problem, max_size, fitting)
        key = (tuple(r.id for r in red.items), red.n_ctx, tuple(red.pairs), tuple(red.unary))
        if key not in solved:
            solved[key] = pick(problem, red, max_size)
        out.append(solved[key])
    return out


def fit_workers() -> int:
    """Worker processes a fit's search uses by default: ``$JUNCTION_FIT_WORKERS`` when
    set, else the CPUs this process may run on. Raises ``GridWorkerError`` on a value that
    is not an integer >= 1."""
    raw = os.environ.get("JUNCTION_FIT_WORKERS", "").strip()
    if not raw:
        return usable_cpus()
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise GridWorkerError(f"JUNCTION_FIT_WORKERS must be an integer >= 1, got {raw!r}")
    return value


class _Worker:
    """One ``python -m junction.learned.grid`` process and its two pipes."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER_MAIN],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def call(self, job: Job) -> list[Picked]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            pickle.dump(job, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
            status, value = pickle.load(self.proc.stdout)
        except (BrokenPipeError, EOFError, pickle.UnpicklingError) as exc:
            code = self.proc.poll()
            raise GridWorkerError(f"a fit worker process (pid {self.proc.pid}) stopped "
                                  f"(exit status {code}): {type(exc).__name__}") from None
        if status != "ok":
            raise GridWorkerError(f"a fit worker process failed: {value}")
        return value

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_IDLE: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
_STARTED: list[_Worker] = []
_LOCK = threading.Lock()


def _take() -> _Worker:
    try:
        return _IDLE.get_nowait()
    except queue.Empty:
        worker = _Worker()
        with _LOCK:
            _STARTED.append(worker)
        return worker


def _run(job: Job) -> list[Picked]:
    worker = _take()
    try:
        result = worker.call(job)
    except BaseException:
        with _LOCK:
            if worker in _STARTED:
                _STARTED.remove(worker)
        worker.close()
        raise
    _IDLE.put(worker)
    return result


def solve_all(jobs: Sequence[Job], workers: int) -> list[list[Picked]]:
    """``solve_job(job)`` for each job, in job order: in this process when
    ``workers`` <= 1 or there is one job, else on ``workers`` worker processes (kept for
    later calls; ``shutdown_workers`` stops them). The selections are the same either
    way. Raises ``GridWorkerError`` when a worker process fails."""
    if workers <= 1 or len(jobs) <= 1:
        return [solve_job(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fit-worker") as pool:
        futures = [pool.submit(_run, job) for job in jobs]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def shutdown_workers() -> None:
    """Stop every idle worker process (a later ``solve_all`` starts new ones)."""
    with _LOCK:
        started = list(_STARTED)
        _STARTED.clear()
    while True:
        try:
            _IDLE.get_nowait()
        except queue.Empty:
            break
    for worker in started:
        worker.close()


def _serve(inp: BinaryIO, out: BinaryIO) -> None:
    """A worker's loop: a pickled job in, ("ok", selections) or ("error", text) out,
    until its input ends or its output is closed (the parent has exited)."""
    while True:
        try:
            job = pickle.load(inp)
        except EOFError:
            return
        try:
            reply: tuple[str, Any] = ("ok", solve_job(job))
        except Exception as exc:  # reported to the parent, which raises GridWorkerError
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            pickle.dump(reply, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
        except BrokenPipeError:  # the parent has gone (a run stopped): end quietly
            return


def serve_stdio() -> None:
    """A worker process's main: SIGINT ignored, the protocol on the original standard
    output (anything printed goes to standard error instead), jobs on standard input."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, out)
    with contextlib.suppress(BrokenPipeError):
        out.close()


_WORKER_MAIN = "from junction.learned.grid import serve_stdio; serve_stdio()"
