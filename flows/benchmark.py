"""The ``benchmark`` flow: suites × strategies × seeds × budget scales → traces → report.

The flow takes a ``RunPlan`` (``flows.plan``) and reads as load → plan units → submit →
refresh → report. Work is submitted in units of (suite, seed, budget scale, strategy,
batch of tasks), not one Prefect task per benchmark task, so orchestration overhead stays
small. A unit whose trace file already exists is skipped, so re-running a run id
completes only what is missing and never duplicates a row. Only file I/O is retried
(``retry_condition_fn`` accepts ``OSError`` only); pure work that fails, fails once.
Units are submitted a few at a time, so a stop asked by a signal (``flows.interrupts``,
armed by the command line) takes effect between two units: the run is then marked
``interrupted`` and ``RunInterrupted`` says how many units were done. The checks before a
run are in ``flows.preflight``; the task runners and the entry points that run the flow
(``run_benchmark``) in ``flows.runners``.
"""

import contextlib
import dataclasses
import itertools
import queue
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from junction_datasets import SUITES, SuiteBuild, SuiteInfo, build_suite, family_all_tasks
from junction_datasets.jsonl import load_suite_file
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows import interrupts
from flows.interrupts import RunInterrupted
from flows.plan import REPORT_LEFT_OUT, RunPlan, new_run_id
from flows.preflight import check_resume, check_writable, prepared_for
from flows.run_record import finish_run, start_run
from flows.sampling import LoadedSuite, agent_sample, capped, short_agent_sample
from flows.workers import run_unit_now
from junction.errors import JunctionError
from junction.evidence.reports import write_report
from junction.evidence.store import TraceStore, check_name
from junction.evidence.warehouse import Warehouse
from junction.learned.crossfit import fold_assignment
from junction.strategies import strategy_info
from junction.tasks import BenchmarkTask
from junction.units import UnitSpec

__all__ = [
    "PlannedUnit",
    "RunPlan",
    "UnitFailedError",
    "benchmark",
    "load_suites",
    "plan_units",
    "progress_observer",
]

_PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("junction_progress",
                                                                     default=None)
"""The progress observer of the current run (``progress_observer`` sets it for the run's
duration only: ``flows.runners.run_prepared``).

Read only by ``_report_progress``, in the process that owns the flow, as unit futures
complete. Prefect ships the running flow (by value: ``benchmark`` names the Flow, not its
function) to every Dask worker inside the task-run context, so the flow's body must not
name anything that cannot be pickled (a progress bar holds a lock, a ContextVar cannot be
pickled); it names only this module-level function, which pickles by reference."""


def _report_progress(done: int, total: int) -> None:
    """Tell the current run's observer (if any) that ``done`` of ``total`` units finished."""
    observer = _PROGRESS.get()
    if observer is not None:
        observer(done, total)


@contextlib.contextmanager
def progress_observer(observer: Callable[[int, int], None] | None) -> Iterator[None]:
    """Make ``observer`` (None: none) the progress observer of the runs inside the block,
    called in this process with (units done, units total) as units finish; the previous
    observer is back after it."""
    token = _PROGRESS.set(observer)
    try:
        yield
    finally:
        _PROGRESS.reset(token)

# --------------------------------------------------------------------------- tasks

def _io_error(task_obj, task_run, state) -> bool:
    """Retry only I/O failures (``OSError``: disk, network, object store)."""
    try:
        state.result()
    except OSError:
        return True
    except Exception:
        return False
    return False


class TaskBatch:
    """An opaque batch of tasks for one unit.

    Prefect walks list, tuple, dict, dataclass and pydantic parameters looking for futures;
    on a batch of hundreds of task models that walk costs more than the work. A plain
    object is not walked (``prefect.utilities.collections.visit_collection``), and it
    pickles unchanged for Dask, unlike ``prefect.utilities.annotations.quote``.
    """

    __slots__ = ("tasks",)

    def __init__(self, tasks: list) -> None:
        self.tasks = list(tasks)

    def __len__(self) -> int:
        return len(self.tasks)


@task(name="load-suite", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def load_suite(name: str, seed: int, size: int | None,
               data_folders: dict[str, str] | None = None) -> SuiteBuild:
    """Build one suite (reads the suite's data files; ``data_folders``: suite name -> the
    folder a suite of third-party data reads, ``RunPlan.data_folders``)."""
    return build_suite(name, seed=seed, size=size, data_folders=data_folders)


@task(name="load-suite-file", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def load_file_suite(path: str, size: int | None) -> SuiteBuild:
    """Load and validate a JSON Lines suite file (``junction_datasets.jsonl``)."""
    return load_suite_file(path, size=size)


@task(name="run-unit", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def run_unit(spec: UnitSpec, tasks: TaskBatch) -> dict[str, Any]:
    """Prefect task around ``run_unit_now`` (writes a Parquet file: I/O is retried)."""
    return run_unit_now(spec, tasks.tasks)


@task(name="refresh-warehouse", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def refresh_warehouse(root: str) -> None:
    """Recreate the DuckDB views over the traces."""
    Warehouse(root).refresh()


@task(name="write-report", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def write_run_report(root: str, reports_root: str, run_id: str,
                     suites: dict[str, Any], run: dict[str, Any] | None = None) -> str:
    """Write ``reports/<run_id>/`` from the run's ``RunData``, read once through the
    warehouse's views (``Warehouse.run_data``; ``run``: its run.json dict, None: the stored
    one), metrics.json without the parameters the plan leaves out of it
    (``flows.plan.REPORT_LEFT_OUT``), and publish the Markdown as a Prefect artifact."""
    paths = write_report(Path(reports_root) / run_id,
                         Warehouse(root).run_data(run_id, run=run, suites=suites),
                         params_left_out=REPORT_LEFT_OUT)
    create_markdown_artifact(markdown=paths["report.md"].read_text(),
                             key=f"report-{run_id.lower().replace('_', '-')[:60]}",
                             description=f"Junction report for run {run_id}")
    return str(paths["report.md"])


# --------------------------------------------------------------------------- the flow

def load_suites(plan: RunPlan, files: Sequence[SuiteBuild] | None = None
                ) -> list[LoadedSuite]:
    """Build (and so validate) every suite of the plan, with each strategy cap's sample and
    the agent's, before anything is written; ``files``: the plan's suite files as already
    read (``flows.preflight.PreparedRun.suite_files``, every task; None: read them here).
    Raises ``DatasetError`` for a malformed suite and ``JunctionError`` for a suite file
    whose suite name is already taken."""
    caps = sorted(set(plan.strategy_size.values()))
    loaded: list[LoadedSuite] = []
    for name in plan.suites:
        for seed in plan.seeds:
            def sample(c: int, name: str = name, seed: int = seed) -> list:
                sampled: SuiteBuild = load_suite(name, seed, c, plan.data_folders)
                return sampled.tasks

            built: SuiteBuild = load_suite(name, seed, plan.suite_size(name),
                                           plan.data_folders)
            info = SUITES[name]
            key = name if len(plan.seeds) == 1 else f"{name}@seed={seed}"
            runs = {c: capped(built.tasks, c, sample) for c in caps}
            agent_ids = agent_sample(built.tasks, plan.agent_size, sample, _inside(runs))
            loaded.append(LoadedSuite(
                key=key, name=name, info=info, seed=seed, built=built,
                sampling=_sampling(plan, name, len(built.tasks)), capped=runs,
                agent_ids=agent_ids, folds=_folds(plan, info, seed),
                agent_short=_short(key, built.tasks, plan.agent_size, agent_ids)))
    taken = {s.key for s in loaded}
    size = None if plan.full else plan.size
    for i, path in enumerate(plan.suite_files):
        built = (load_file_suite(path, size) if files is None  # as load_suite_file keeps:
                 else dataclasses.replace(files[i], tasks=files[i].tasks[:size]))
        name = check_name(built.tasks[0].suite, f"suite of {path}")
        if name in SUITES or name in taken:
            raise JunctionError(f"{path}: suite name {name!r} is already taken; rename it")
        taken.add(name)

        def prefix(c: int, tasks: list = built.tasks) -> list:
            return tasks[:c]

        runs = {c: capped(built.tasks, c, prefix) for c in caps}
        agent_ids = agent_sample(built.tasks, plan.agent_size, prefix, _inside(runs))
        loaded.append(LoadedSuite(
            # the references the file declares ("reference_set" on its lines; none: none)
            key=name, name=name, seed=0, info=SuiteInfo(
                name, load_suite_file, None, reference_set=built.reference_set),
            built=built, sampling=f"file {Path(path).name}", capped=runs,
            agent_ids=agent_ids,
            agent_short=_short(name, built.tasks, plan.agent_size, agent_ids)))
    return loaded


def _inside(runs: dict[int, list]) -> frozenset[str] | None:
    """The ids of the tasks every capped strategy runs (None: no strategy is capped)."""
    if not runs:
        return None
    return frozenset.intersection(*(frozenset(t.task_id for t in ts) for ts in runs.values()))


def _short(key: str, tasks: list, agent_size: int | None,
           agent_ids: frozenset[str]) -> str | None:
    """``short_agent_sample``'s line, also given as a ``warning:`` line at start."""
    line = short_agent_sample(key, tasks, agent_size, agent_ids)
    if line is not None:
        warnings.warn(line, stacklevel=2)
    return line


def _folds(plan: RunPlan, info: SuiteInfo, seed: int) -> dict[str, int] | None:
    """The fold of every task of a cross-fitted suite's family in repetition ``seed``
    (the draw the learned strategies fit by); None for other suites or when no learned
    strategy runs."""
    if not info.cross_fit or info.family is None or not any(
            strategy_info(s).role == "learned" for s in plan.strategies):
        return None
    ids = [t.task_id for t in family_all_tasks(info.family, plan.data_folders)]
    return fold_assignment(ids, plan.folds, seed)


def _sampling(plan: RunPlan, name: str, n_tasks: int) -> str:
    """How the report says registered suite ``name`` was sampled."""
    if plan.suite_size(name) is None:
        return "every task"
    if plan.size is None:
        return f"{n_tasks} tasks (the default benchmark size; --full runs every task)"
    return f"size={plan.size}"


PlannedUnit = tuple[UnitSpec, list[BenchmarkTask]]
"""One unit of work: the ``UnitSpec`` the worker takes, and the batch of tasks that travels
beside it (``TaskBatch``). On a cross-fitted suite the spec's ``repetition`` is the seed,
and a learned strategy's unit holds the tasks of one ``fold`` only (its model is fitted on
the others)."""


def plan_units(plan: RunPlan, suites: list[LoadedSuite], run_id: str) -> list[PlannedUnit]:
    """Every unit of run ``run_id``, in submission order: round-robin over the strategies
    (``plan.steps()`` order), each strategy's units per suite, scale, batch of
    ``plan.batch_size`` tasks. The references (catalog ``reads_task``) run only on the
    suites of their ``reference_set`` (``SuiteInfo.reference_set``); the agent acts at
    ``plan.agent_scale()`` only, for ``plan.agent_strategies`` only.

    Why round-robin: a process runs one strategy's units one at a time (one instance and
    call lock per strategy, ``flows.workers.strategy_instance``) and the agent's
    generations one at a time (one model), so a run is as long as its longest such chain.
    Submitted strategy by strategy, the judge's units start at once, beside the agent's,
    instead of queuing behind every BFCL suite's agent units (docs/measurement.md, "The
    default benchmark (`make bench`)")."""
    agent_scale = plan.agent_scale()
    chains: dict[str, list[PlannedUnit]] = {name: [] for name in plan.steps()}
    for suite in suites:
        for strategy, step in plan.steps().items():
            info = strategy_info(strategy)
            if info.reads_task and (info.reference_set is None
                                    or info.reference_set != suite.info.reference_set):
                continue  # a reference reads what its suites' tasks hold (a BFCL listing)
            tasks = (suite.built.tasks if step.max_tasks is None
                     else suite.capped[step.max_tasks])
            repetition = suite.seed if suite.info.cross_fit else None
            learned = strategy_info(strategy).role == "learned"
            if repetition is not None and not learned and suite.seed != min(plan.seeds):
                continue  # no refit: another repetition would repeat the same selections
            groups: list[tuple[int | None, list]] = [(None, tasks)]
            if repetition is not None and learned:
                folds = cast("dict[str, int]", suite.folds)  # set: cross-fitted, learned
                groups = [(f, [t for t in tasks if folds[t.task_id] == f])
                          for f in range(plan.folds)]
            for scale in step.scales:
                for fold, group in groups:
                    tag = "" if fold is None else f"-fold{fold}"
                    for lo in range(0, len(group), plan.batch_size):
                        hi = min(len(group), lo + plan.batch_size)
                        batch = group[lo:hi]
                        ids = ([t.task_id for t in batch if t.task_id in suite.agent_ids]
                               if scale == agent_scale and strategy in plan.agent_strategies
                               else [])
                        chains[strategy].append((plan.unit_spec(
                            run_id, suite=suite.name, strategy=strategy, seed=suite.seed,
                            scale=scale, unit=f"seed{suite.seed}-scale{scale:g}{tag}"
                                              f"-{lo:06d}-{hi:06d}",
                            pool_limit=suite.info.pool_limit, agent_task_ids=tuple(ids),
                            repetition=repetition, fold=fold), batch))
    rounds = itertools.zip_longest(*chains.values())
    return [unit for one_round in rounds for unit in one_round if unit is not None]


@flow(name="benchmark", log_prints=False, validate_parameters=True)
def benchmark(plan: RunPlan, run_id: str | None = None,
              write_reports: bool = True) -> dict[str, Any]:
    """Run every strategy of ``plan`` on every task of its suites, under identical budgets.

    ``run_id``: resume/complete this run (default: a new id, ``new_run_id``);
    ``write_reports``: write ``reports/<run_id>/`` at the end. The task runner is set by
    ``flows.runners.run_benchmark`` (``flow.with_options``). Returns {run_id, report, units,
    units_skipped, tasks}. Raises ``JunctionError`` when a resumed run's parameters differ
    or the traces root cannot be written, ``DatasetError`` for a malformed suite; a run that
    fails after it started is marked ``failed`` in its run.json.
    """
    interrupts.reinstall()  # Prefect swapped the SIGTERM handler for the flow run
    prepared = prepared_for(plan, run_id)  # the caller's checks (flows.runners.run_prepared)
    if prepared is None:  # called directly, or a scheduled run: check what a run needs
        run_id = check_name(run_id, "run_id") if run_id else new_run_id()
        check_writable(plan.output_root)
        check_resume(plan, run_id)
    else:
        run_id = prepared.run_id
    suites = load_suites(plan, None if prepared is None else prepared.suite_files)
    store = TraceStore(plan.output_root)
    meta = start_run(store, plan, run_id, suites)
    interrupts.track(root=plan.output_root, meta=meta, reports=plan.reports_root)
    try:
        results = _submit(plan, plan_units(plan, suites, run_id))
        completed = finish_run(store, meta, results, suites, plan)
        report = (write_run_report(plan.output_root, plan.reports_root, run_id,
                                   completed["suites"], completed) if write_reports else None)
        store.write_run_meta(run_id, completed)  # only now: the report is in place
        meta.update(completed)  # what an exit from here on (exit_now) sees
        refresh_warehouse(plan.output_root)
    except RunInterrupted as exc:
        store.write_run_meta(run_id, interrupts.mark_interrupted(meta, exc.done, exc.total))
        raise
    except BaseException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        meta.update(finished_at=datetime.now(UTC).isoformat(), status="failed",
                    error=reason if isinstance(exc, UnitFailedError)  # names its error
                    else f"{type(exc).__name__}: {reason}")
        meta.pop("suites", None)
        store.write_run_meta(run_id, meta)
        raise
    return {"run_id": run_id, "report": report, "units": len(results),
            "units_skipped": sum(r["skipped"] for r in results),
            "tasks": sum(r["tasks"] for r in results)}


class UnitFailedError(JunctionError):
    """A unit of the run raised; the message names the unit and the error's first line
    (the traceback is the ``__cause__``)."""


def _submit(plan: RunPlan, units: list[PlannedUnit]) -> list[dict[str, Any]]:
    """Submit the units to the task runner, at most ``2 × workers`` in flight, and wait
    for them (progress per finished unit); returns their results in completion order.

    Between submissions it reads ``interrupts.stop_requested()``: once set, nothing more
    is submitted, the units in flight end (one not yet started returns at once) and
    ``RunInterrupted`` says how many of all units were done. A unit that raises is
    ``UnitFailedError`` naming it."""
    window = 2 * (plan.workers or 4)
    finished: queue.SimpleQueue = queue.SimpleQueue()
    waiting = iter(units)
    in_flight, results = 0, []
    interrupts.track(done=0, total=len(units))
    while True:
        while in_flight < window and not interrupts.stop_requested():
            unit = next(waiting, None)
            if unit is None:
                break
            spec, tasks = unit
            future = run_unit.submit(spec, TaskBatch(tasks))

            def on_done(f: Any, u: UnitSpec = spec) -> None:
                finished.put((f, u))

            future.add_done_callback(on_done)
            in_flight += 1
        if not in_flight:
            break
        try:  # a short wait: the stop flag is read between waits
            future, unit = finished.get(timeout=0.25)
        except queue.Empty:
            continue
        in_flight -= 1
        try:
            result = _unit_result(future, unit)
        except UnitFailedError as exc:
            if not interrupts.stop_requested():
                if in_flight:  # learned fits still running: the command line ends now
                    interrupts.fail_now(exc)
                raise
            continue  # a unit the interrupt ended (a Dask worker got the Ctrl-C too)
        if not result.get("cancelled"):
            results.append(result)
            interrupts.track(done=len(results))
            _report_progress(len(results), len(units))
    if interrupts.stop_requested():
        raise RunInterrupted(len(results), len(units))
    return results


def _unit_result(future, unit: UnitSpec) -> dict[str, Any]:
    """The unit's result, or ``UnitFailedError`` naming it if it raised."""
    try:
        return future.result()
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UnitFailedError(f"unit {unit.suite}/{unit.strategy}/{unit.unit} failed: "
                              f"{type(exc).__name__}: {first}".rstrip(": ")) from exc
