"""Running the ``benchmark`` flow (``flows.benchmark``): its task runner and its entry points.

``task_runner`` makes the Prefect task runner a plan names (a thread pool, or Dask);
``local_dask_cluster`` the local Dask cluster a command line uses instead, quiet on Ctrl-C.
``run_benchmark`` checks a plan (``flows.preflight.prepare_run``), takes the run id's lock
and runs the flow; ``run_prepared`` runs it for a caller that has done both (the command
line), with the temporary Prefect server started and the progress observer in place. The
flow is handed the prepared run, so it checks nothing again and reads no suite file again.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows import interrupts, run_log, server
from flows.benchmark import benchmark, progress_observer
from flows.plan import RunPlan
from flows.preflight import PreparedRun, prepare_run, prepared
from junction.errors import JunctionError, UnknownNameError
from junction.evidence.store import TraceStore

__all__ = ["local_dask_cluster", "run_benchmark", "run_prepared", "task_runner"]


def task_runner(runner: str = "thread", workers: int | None = None,
                dask_address: str | None = None) -> TaskRunner[Any]:
    """The Prefect task runner for ``runner``: a thread pool, or Dask (a scheduler at
    ``dask_address``, else a ``LocalCluster`` of ``workers`` processes the runner starts and
    stops). ``local_dask_cluster`` makes the cluster a command line uses instead."""
    if runner == "thread":
        return ThreadPoolTaskRunner(max_workers=workers or 4)
    if runner == "dask":
        from prefect_dask import DaskTaskRunner

        if dask_address:
            return DaskTaskRunner(address=dask_address)
        return DaskTaskRunner(cluster_kwargs=_cluster_kwargs(workers))
    raise UnknownNameError(f"unknown runner {runner!r}; valid runners: dask, thread")


def _cluster_kwargs(workers: int | None) -> dict[str, Any]:
    return {"n_workers": workers or 2, "threads_per_worker": 1, "processes": True,
            "dashboard_address": None}


def local_dask_cluster(workers: int | None):
    """A ``distributed.LocalCluster`` (``workers`` processes, one thread each) whose
    processes ignore the terminal's Ctrl-C (started from a thread that blocks SIGINT:
    ``flows.server.in_thread_without_sigint``; the ``junction`` process stops the run and
    then them) and report to this process's temporary Prefect server
    (``PREFECT_API_URL`` in their environment), their log records and their stderr going
    to the run's log (``JUNCTION_RUN_LOG``, ``flows.run_log.route_worker``): a worker a
    Ctrl-C reaches while it starts prints its traceback there. Close it after the run."""
    from distributed import LocalCluster

    env = {"PREFECT_API_URL": server.api_url() or ""}
    if os.environ.get(run_log.LOG_ENV):
        env[run_log.LOG_ENV] = os.environ[run_log.LOG_ENV]
    env = {k: v for k, v in env.items() if v}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # a spawned worker process starts with this environment
    log = os.environ.get(run_log.LOG_ENV)
    try:
        with server.stderr_to(Path(log) if log else None):  # workers' fd 2: the log
            return server.in_thread_without_sigint(
                lambda: LocalCluster(**_cluster_kwargs(workers), silence_logs=logging.ERROR))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_benchmark(plan: RunPlan | None = None, *, run_id: str | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  write_reports: bool = True, **given: Any) -> dict[str, Any]:
    """Run the flow on ``plan`` (or ``RunPlan.build(**given)``) with the task runner it
    names.

    ``progress``, if given, is called in this process with (units done, units total) each
    time a unit finishes; it is never sent to a worker. The checks of ``prepare_run`` run
    first, then the run id's lock is taken (``TraceStore.run_lock``: a second writer fails
    at once), and only then does Prefect start. Returns the flow's result.
    """
    if plan is None:
        plan = RunPlan.build(**given)
    elif given:
        raise JunctionError(f"run_benchmark takes a plan or its fields, not both "
                            f"(got {', '.join(sorted(given))})")
    run = prepare_run(plan, run_id)
    with TraceStore(plan.output_root).run_lock(run.run_id):
        return run_prepared(run, progress, write_reports)


def run_prepared(run: PreparedRun, progress: Callable[[int, int], None] | None = None,
                 write_reports: bool = True) -> dict[str, Any]:
    """``run_benchmark`` for a caller that has run ``prepare_run`` (``run``) and holds the
    run id's lock (the command line takes it before it imports Prefect): start the
    temporary Prefect server if none is configured, then run the flow on ``run.plan``,
    handed the prepared run (``flows.preflight.prepared``)."""
    plan, run_id = run.plan, run.run_id
    cluster = None
    try:
        with progress_observer(progress), prepared(run):
            server.start()
            if plan.runner == "dask" and not plan.dask_address and interrupts.armed():
                from prefect_dask import DaskTaskRunner

                cluster = local_dask_cluster(plan.workers)  # a command line's: quiet on Ctrl-C
                # prefect_dask's class subclasses a bare TaskRunner (its default future type)
                runner = cast("TaskRunner[Any]",
                              DaskTaskRunner(address=cluster.scheduler_address))
            else:
                runner = task_runner(plan.runner, plan.workers, plan.dask_address)
            return benchmark.with_options(task_runner=runner)(plan, run_id, write_reports)
    finally:
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=10)
