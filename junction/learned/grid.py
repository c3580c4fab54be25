"""The exact selections of a learned fit's λ × τ search, in this process or on worker
processes.

``solve_variants`` selects, for one training task, every distinct grid-point problem (the
task's pools and budget, one (unaries, interactions) pair per variant) with the exact
joint selector (``AutoJointSelector``), or by an approximate search of ``SEARCHES``
(``search_pick``). It is pure: the selections depend only on its arguments, so they are
the same in any process and in any order.

``solve_all`` runs ``solve_variants`` over many tasks: in this process with one worker,
else on a pool of worker processes (loky's ``ProcessPoolExecutor``, from joblib: one pool
per process, kept between fits; its idle workers exit after ``IDLE_TIMEOUT_S``). loky
starts each worker by ``exec`` of a fresh interpreter that does not import the parent's
main script (so a script without a ``__main__`` guard works, and no lock of the parent's
other threads, Prefect's or llama.cpp's, is copied). Workers start with SIGINT blocked and
then ignore it: Ctrl-C is the parent's to handle, and it reaches a whole terminal process
group, so a worker still importing Python's ``site`` would otherwise die with a "Fatal
Python error". A worker exits within a second when its parent is gone. A job's error comes
back as its own type with the worker's traceback as its cause; a worker's death is seen
at once and named by its signal (``GridWorkerError``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from types import ModuleType
from typing import Any

from junction.budget import Budget
from junction.environment import usable_cpus
from junction.errors import JunctionError, UnknownNameError
from junction.resources import ContextResource, ToolResource
from junction.select.exact.auto import AutoJointSelector
from junction.select.exact.bnb import COMBINATORIAL_MAX
from junction.select.exact.local_search import local_search
from junction.select.exact.reduction import Reduced, fitting_alone, reduce
from junction.select.problem import JointProblem

__all__ = ["IDLE_TIMEOUT_S", "OPTIMAL_SEARCH", "SEARCHES", "WORKERS_ENV", "GridWorkerError", "Pick",
           "Variant", "check_fit_workers", "check_search", "fit_workers", "search_pick",
           "shutdown_workers", "solve_all", "solve_job", "solve_variants"]

Variant = tuple[dict[str, float], dict[tuple[str, str], float]]
"""One grid point's problem for a task: (unary utilities, kept interactions)."""

Picked = tuple[tuple[str, ...], tuple[str, ...]]
"""A selection: (context ids, tool ids)."""

Job = tuple[Sequence[ContextResource], Sequence[ToolResource], Budget, Sequence[Variant], str]
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
    """A worker process of the fit's search died (the message names the signal that
    killed it, or its exit status), or ``JUNCTION_FIT_WORKERS`` is not a worker count. A
    job's own error is raised as itself, not as this."""


def solve_variants(contexts: Sequence[ContextResource], tools: Sequence[ToolResource],
                   budget: Budget,
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


WORKERS_ENV = "JUNCTION_FIT_WORKERS"
"""Environment variable naming the worker processes of a fit's search (``fit_workers``)."""

IDLE_TIMEOUT_S = 30.0
"""Seconds a worker process waits for a job before it exits (the pool starts new ones for
a later fit)."""

_WORKER_SIGNALS = {signal.SIGINT}
"""Signals a worker process never acts on: Ctrl-C at a terminal reaches every process of
the foreground group, and it is the parent's to handle (``flows.interrupts``)."""


def _parse_workers(raw: str) -> int:
    """``raw`` as a worker count; ``GridWorkerError`` naming ``WORKERS_ENV`` and the valid
    values when it is not an integer >= 1."""
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        cpus = usable_cpus()
        raise GridWorkerError(f"{WORKERS_ENV} must be a whole number >= 1 (at most the {cpus} "
                              f"CPUs this process may use; unset: {cpus}), got {raw!r}")
    return value


def fit_workers() -> int:
    """Worker processes a fit's search uses by default: ``$JUNCTION_FIT_WORKERS`` when
    set, capped at the CPUs this process may run on (``usable_cpus``), else those CPUs.
    Raises ``GridWorkerError`` on a value that is not an integer >= 1. Silent:
    ``check_fit_workers`` says so once at a run's start when the value is capped."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if not raw:
        return usable_cpus()
    return min(_parse_workers(raw), usable_cpus())


def check_fit_workers() -> int:
    """``fit_workers()``, checked before a run starts: ``GridWorkerError`` (one line
    naming ``JUNCTION_FIT_WORKERS`` and its valid values) on a value that is not an integer
    >= 1, and one ``warnings.warn`` line when the value is past the CPUs available and
    capped at them."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    workers = fit_workers()
    if raw and _parse_workers(raw) > workers:
        warnings.warn(f"{WORKERS_ENV}={raw} is more than the {workers} CPUs this process may "
                      f"use: a fit runs on {workers} worker processes", stacklevel=2)
    return workers


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """Block ``_WORKER_SIGNALS`` in this thread while the pool may start processes (and
    threads): a child inherits the mask through ``exec``, so a Ctrl-C while it imports
    Python's ``site`` waits, pending, until its initializer ignores it (``_worker_start``);
    the pool's own threads keep it blocked. This process still sees the signal: Python
    runs its handler in the main thread, and a signal blocked there is taken when the
    mask is restored. The resource trackers that loky starts with its first worker are
    started first: multiprocessing's unblocks SIGINT after starting its process, instead of
    restoring the mask it found."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    _loky().backend.resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_start(parent: int) -> None:
    """A worker process's initializer: ignore ``_WORKER_SIGNALS`` (a pending one is
    dropped), and exit at once, quietly, when the process that started it is gone (its
    parent ended by ``os._exit`` or a signal, which leaves no one to stop the pool)."""
    for sig in _WORKER_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_SIGNALS)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="fit-parent-watch", daemon=True).start()


def _loky() -> ModuleType:
    """joblib's loky (its ``backend`` loaded with it), imported when a pool is first needed,
    not for a fit in one process."""
    from joblib.externals import loky  # type: ignore[import-untyped]

    importlib.import_module("joblib.externals.loky.backend.resource_tracker")

    return loky


class _Pool:
    """This process's loky pool for the fit's searches: one, kept between fits (its idle
    workers exit after ``IDLE_TIMEOUT_S``), started again after a failure or for another
    worker count while no fit uses it. A pool dropped while other fits use it (its worker
    count changed, or one fit failed) is stopped by the last of them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.executor: Any = None
        self.workers = 0
        self.users: dict[int, int] = {}  # id(executor) -> fits using it

    def acquire(self, workers: int) -> Any:
        loky = _loky()
        stop = None
        with self.lock:
            current = self.executor
            if current is not None and self.workers != workers:
                self.executor = None
                if not self.users.get(id(current)):
                    stop = current
            if self.executor is None:
                with _signals_blocked():
                    self.executor = loky.ProcessPoolExecutor(
                        max_workers=workers, context=loky.backend.get_context("loky"),
                        timeout=IDLE_TIMEOUT_S, initializer=_worker_start,
                        initargs=(os.getpid(),))
                self.workers = workers
            executor = self.executor
            self.users[id(executor)] = self.users.get(id(executor), 0) + 1
        if stop is not None:
            stop.shutdown(wait=True)
        return executor

    def release(self, executor: Any, discard: bool = False) -> None:
        """One fit is done with ``executor``; ``discard``: the fit failed or was
        interrupted, so the pool is dropped and, once no other fit uses it, its workers
        are killed (they may hold jobs nobody waits for)."""
        with self.lock:
            left = self.users.pop(id(executor)) - 1
            if left:
                self.users[id(executor)] = left
            if discard and self.executor is executor:
                self.executor = None
            stop = not left and self.executor is not executor
        if stop:
            with contextlib.suppress(Exception):
                executor.shutdown(wait=True, kill_workers=discard)

    def shutdown(self) -> None:
        """Drop the pool; stop its workers now unless a fit still uses it."""
        with self.lock:
            executor, self.executor = self.executor, None
            busy = executor is not None and self.users.get(id(executor))
        if executor is not None and not busy:
            executor.shutdown(wait=True)


_POOL = _Pool()


_SIGNAL_NUMBERS = frozenset(int(s) for s in signal.Signals)


def _worker_death(exc: BaseException) -> GridWorkerError:
    """One line for a pool that lost a worker process: the signal that killed it, or its
    exit status (loky's ``TerminatedWorkerError`` lists the exit codes of the dead, as
    ``{SIGKILL(-9)}``)."""
    listed = re.search(r"\{([^}]*)\}", str(exc))
    codes = [int(c) for c in re.findall(r"\((-?\d+)\)", listed.group(1) if listed else "")]
    how = [f"was killed by {signal.Signals(-c).name}" if c < 0 and -c in _SIGNAL_NUMBERS
           else f"exited with status {c}" for c in codes]
    if not how:
        return GridWorkerError(f"a fit worker process stopped unexpectedly "
                               f"({type(exc).__name__}); the fit stopped")
    return GridWorkerError(f"a fit worker process {' and another '.join(dict.fromkeys(how))}; "
                           "the fit stopped")


def solve_all(jobs: Sequence[Job], workers: int) -> list[list[Picked]]:
    """``solve_job(job)`` for each job, in job order: in this process when
    ``workers`` <= 1 or there is one job, else on a pool of ``workers`` worker processes
    (loky's ``ProcessPoolExecutor``; kept for later calls, idle workers exit after
    ``IDLE_TIMEOUT_S``, ``shutdown_workers`` stops them). The selections are the same
    either way. A job's error is raised as itself (its worker's traceback chained as its
    cause), the first in job order among those seen; a worker process that dies raises
    ``GridWorkerError`` naming the signal or exit status, as soon as the pool sees it. On
    either, or on ``KeyboardInterrupt`` in this process, the pool's workers are killed
    before the error propagates, so none is left running."""
    if workers <= 1 or len(jobs) <= 1:
        return [solve_job(job) for job in jobs]
    executor = _POOL.acquire(workers)
    futures: list[Future] = []
    ok = False
    try:
        with _signals_blocked():
            futures = [executor.submit(solve_job, job) for job in jobs]
        wait(futures, return_when=FIRST_EXCEPTION)
        failed = next((f for f in futures if f.done() and not f.cancelled()
                       and f.exception() is not None), None)
        if failed is not None:
            exc = failed.exception()
            assert exc is not None
            if isinstance(exc, _loky().BrokenProcessPool):
                raise _worker_death(exc) from exc
            raise exc
        result = [f.result() for f in futures]
        ok = True
        return result
    finally:  # a failed search's pending jobs end with its pool (none cancelled first:
        _POOL.release(executor, discard=not ok)  # loky's own shutdown sets their error)


def shutdown_workers() -> None:
    """Stop the pool's worker processes (a later ``solve_all`` starts new ones)."""
    _POOL.shutdown()
