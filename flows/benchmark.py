"""The ``benchmark`` flow: suites × strategies × seeds × budget scales → traces → report.

Work is submitted in units of (suite, seed, budget scale, strategy, batch of tasks), not
one Prefect task per benchmark task, so orchestration overhead stays small. A unit whose
trace file already exists is skipped, so re-running a run id completes only what is
missing and never duplicates a row. Only file I/O is retried (``retry_condition_fn``
accepts ``OSError`` only); pure work that fails, fails once.
"""


import hashlib
import json
import math
import platform
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from junction_datasets import (
    SUITES,
    SuiteBuild,
    SuiteInfo,
    build_suite,
    calibration_tasks,
    training_source,
    get_suite,
    suite_names,
)
from junction_datasets.jsonl import load_suite_file
from flows.environment import start_temporary_server
from junction.environment import PROJECT_ROOT
from junction.errors import JunctionError, UnknownNameError
from junction.evaluate import evaluate_batch
from junction.evidence.params import resume_params
from junction.evidence.reports import run_timings, write_report
from junction.evidence.store import TraceStore, check_name
from junction.strategies import STRATEGIES, default_strategies, make_strategy, strategy_info
from junction.evidence.warehouse import Warehouse

__all__ = ["benchmark", "run_benchmark", "prepare_run", "DEFAULT_STRATEGIES", "default_suites",
           "new_run_id", "params_hash"]

DEFAULT_STRATEGIES = default_strategies()
"""The default benchmark's strategies: the catalog's ``in_default_run`` records
(``junction.strategies.catalog``, which says why each one is in or out)."""
DEFAULT_BUDGET_SCALES = (0.5, 1.0, 2.0)
"""The default benchmark's budget grid (× each task's own budget), when no scale is given."""

DEFAULT_SIZES: dict[str, int] = {
    "bfcl-multiple": 40, "bfcl-live-multiple": 40, "bfcl-parallel-multiple": 40,
    "bfcl-irrelevance": 40, "bfcl-memory": 40, "synthetic": 60,
    "synthetic-50": 20, "synthetic-100": 10, "synthetic-200": 3,
}
"""Tasks per suite in the default benchmark (no ``size``, no ``full``), for the strategies
without a ``strategy_size`` cap; a suite not listed takes its registered ``default_size``.
Kept here, not in ``junction_datasets``: sized by measuring the default run (README)."""

DEFAULT_STRATEGY_SIZE: dict[str, int] = {
    n: i.default_size for n, i in sorted(STRATEGIES.items()) if i.default_size is not None}
"""The default benchmark's per-strategy cap on tasks per suite (no ``size``, no ``full``):
the catalog's ``default_size`` (the judge scores every candidate with a llama.cpp model)."""

DEFAULT_STRATEGY_SCALES: dict[str, list[float]] = {
    n: list(i.default_scales) for n, i in sorted(STRATEGIES.items())
    if i.default_scales is not None}
"""The default benchmark's per-strategy budget scales (when no scale is given): the
catalog's ``default_scales`` (the references ignore the budget, so one scale says all
they can)."""

DEFAULT_AGENT_SIZE = 1
"""The default benchmark's agent sample: the language-model agent acts on this many tasks
of each BFCL suite (the suite's own sample of that size, inside every strategy's tasks),
for every strategy and reference, at budget scale 1 (see ``agent_plan``). ``--agent-size``
widens it; ``--full`` runs it on every task; an explicit ``--size`` alone runs no agent."""

AGENT_SCALE = 1.0
"""The budget scale the agent runs at (the run's first scale if it has no scale 1)."""
DEFAULT_WAREHOUSE = str(PROJECT_ROOT / "warehouse")
DEFAULT_REPORTS = str(PROJECT_ROOT / "reports")

_PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("junction_progress",
                                                                     default=None)
"""The progress observer of the current ``run_benchmark`` call (set for its duration only).

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

_PACKAGES = ("junction", "prefect", "duckdb", "pyarrow", "pydantic", "bm25s", "scipy",
             "numpy", "llama_cpp_python", "ir_measures", "bfcl-eval")


def default_suites() -> list[str]:
    """Every registered suite the default benchmark runs (``SuiteInfo.in_default_run``),
    less those whose data is absent (``skipped_default_suites``)."""
    return [name for name in suite_names()
            if SUITES[name].in_default_run and SUITES[name].unavailable_reason() is None]


def skipped_default_suites() -> dict[str, str]:
    """Default suites left out of this run because their data is absent: name -> why."""
    return {name: reason for name in suite_names() if SUITES[name].in_default_run
            and (reason := SUITES[name].unavailable_reason()) is not None}


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYmmddTHHMMSSZ-<8 hex>``: sortable by time, unique per call."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def params_hash(params: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the parameters a resumed run must repeat
    (``junction.evidence.params.resume_params``)."""
    return hashlib.sha256(json.dumps(resume_params(params), sort_keys=True).encode()).hexdigest()


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


# --------------------------------------------------------------------------- workers

_STRATEGIES: dict[str, tuple[Any, threading.Lock]] = {}
_STRATEGIES_LOCK = threading.Lock()
_AGENTS: dict[tuple[str | None, str | None], Any] = {}


def _agent(model: str | None, url: str | None = None, concurrency: int = 1):
    """One agent executor per process and (model, url), loaded on first use, sharing the
    persistent generation cache ``state_dir()/agent_cache.sqlite``: the embedded ``llm``
    one, or with ``url`` the ``remote`` one (``junction.agent.remote``; ``model`` is the
    server's model id, checked against the server's list when first made)."""
    from junction.agent.llm import AgentCache, LlamaAgent, LLMExecutor
    from junction.environment import state_dir
    from junction.models import file_sha256, resolve_model_path

    with _STRATEGIES_LOCK:
        if (model, url) not in _AGENTS:
            if url is not None:
                from junction.agent.remote import (RemoteAgent, RemoteAgentConfig,
                                                   RemoteExecutor, RemoteGenerationCache)

                remote = RemoteAgent(url, model, RemoteAgentConfig(concurrency=concurrency))
                remote.check_model()
                _AGENTS[(model, url)] = RemoteExecutor(
                    remote, RemoteGenerationCache(state_dir() / "agent_cache.sqlite"))
            else:
                path = resolve_model_path(model)
                _AGENTS[(model, url)] = LLMExecutor(
                    LlamaAgent(path, file_sha256(path)),
                    AgentCache(state_dir() / "agent_cache.sqlite"))
        return _AGENTS[(model, url)]


def _strategy(name: str):
    """One strategy instance per process (a judge loads its model once), with a call lock.

    Strategies that calibrate get the calibration split (``calibration_tasks``) and the
    learned ones each family's training part (``training_source``); no benchmark run
    evaluates either."""
    with _STRATEGIES_LOCK:
        if name not in _STRATEGIES:
            _STRATEGIES[name] = (make_strategy(name, calibration_tasks=calibration_tasks(),
                                               training=training_source()),
                                 threading.Lock())
        return _STRATEGIES[name]


def _io_error(task_obj, task_run, state) -> bool:
    """Retry only I/O failures (``OSError``: disk, network, object store)."""
    try:
        state.result()
    except OSError:
        return True
    except Exception:  # noqa: BLE001 - anything else is not retried
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
def load_suite(name: str, seed: int, size: int | None) -> SuiteBuild:
    """Build one suite (reads the suite's data files)."""
    return build_suite(name, seed=seed, size=size)


@task(name="load-suite-file", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def load_file_suite(path: str, size: int | None) -> SuiteBuild:
    """Load and validate a JSON Lines suite file (``junction_datasets.jsonl``)."""
    return load_suite_file(path, size=size)


def run_unit_now(root: str, run_id: str, suite: str, strategy: str, seed: int, scale: float,
                 unit: str, tasks: list, pool_limit: int | None,
                 agent_task_ids: tuple[str, ...] = (),
                 agent_model: str | None = None, agent_url: str | None = None,
                 agent_concurrency: int = 1) -> dict[str, Any]:
    """Evaluate one unit and write its files, unless its trace file already exists.

    The agent (``agent_model``: None = the embedded default; with ``agent_url`` the model
    id on that server, ``agent_concurrency`` requests at once) acts on ``agent_task_ids``;
    it is loaded only when one of them is in the unit."""
    store = TraceStore(root)
    if store.unit_done(run_id, suite, strategy, unit):
        return {"unit": unit, "skipped": True, "tasks": len(tasks)}
    strategy_fn, lock = _strategy(strategy)
    ids = frozenset(agent_task_ids) & {t.task_id for t in tasks}
    agent = _agent(agent_model, agent_url, agent_concurrency) if ids else None
    with lock:
        records, timings = evaluate_batch(tasks, strategy_fn, strategy, run_id, seed, scale,
                                          pool_limit, agent=agent, agent_task_ids=ids)
    store.write_unit(run_id, suite, strategy, unit, records, timings)
    learned = [store.write_learned_model(m.family, m.sha256, m.record())
               for m in strategy_fn.artifacts()]
    return {"unit": unit, "skipped": False, "tasks": len(tasks),
            "successes": sum(r.success for r in records),
            "learned_models": [p.rsplit("/", 1)[-1] for p in learned]}


@task(name="run-unit", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def run_unit(root: str, run_id: str, suite: str, strategy: str, seed: int, scale: float,
             unit: str, tasks: TaskBatch, pool_limit: int | None,
             agent_task_ids: TaskBatch | None = None,
             agent_model: str | None = None, agent_url: str | None = None,
             agent_concurrency: int = 1) -> dict[str, Any]:
    """Prefect task around ``run_unit_now`` (writes a Parquet file: I/O is retried)."""
    return run_unit_now(root, run_id, suite, strategy, seed, scale, unit, tasks.tasks,
                        pool_limit, tuple(agent_task_ids.tasks if agent_task_ids else ()),
                        agent_model, agent_url, agent_concurrency)


@task(name="refresh-warehouse", retries=2, retry_delay_seconds=2, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def refresh_warehouse(root: str) -> None:
    """Recreate the DuckDB views over the traces."""
    Warehouse(root).refresh()


@task(name="write-report", retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE,
      retry_condition_fn=_io_error)
def write_run_report(root: str, reports_root: str, run_id: str,
                     suites: dict[str, Any]) -> str:
    """Write ``reports/<run_id>/`` and publish the Markdown as a Prefect artifact."""
    store = TraceStore(root)
    run = store.read_run_meta(run_id) or {"run_id": run_id}
    paths = write_report(Path(reports_root) / run_id, run, store.read_traces(run_id), suites,
                         timings=run_timings(root, run_id))
    create_markdown_artifact(markdown=paths["report.md"].read_text(),
                             key=f"report-{run_id.lower().replace('_', '-')[:60]}",
                             description=f"Junction report for run {run_id}")
    return str(paths["report.md"])


MAX_SEED = 2**63 - 1
"""Seeds are stored as the traces' int64 ``seed`` column."""


def _check_writable(output_root: str) -> None:
    """Refuse a local traces root that is a file or cannot be created and written (by
    making it and a temporary file in it, then removing what was made)."""
    store = TraceStore(output_root)
    if not store.is_local:
        return
    root = Path(store.base)
    if root.exists() and not root.is_dir():
        raise JunctionError(f"warehouse {output_root} is a file, not a folder; pass a folder "
                            "to --warehouse")
    created = next((p for p in [*reversed(root.parents), root] if not p.exists()), None)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=root):
            pass
    except OSError as exc:
        raise JunctionError(f"warehouse {output_root} is not a writable folder: "
                            f"{exc.strerror or exc}") from None
    finally:  # a check writes nothing: remove the folders it made
        if created is not None and created.is_dir():
            shutil.rmtree(created, ignore_errors=True)


def check_params(suites: list[str], strategies: list[str], budget_scales: list[float],
                 batch_size: int, runner: str, run_id: str | None, output_root: str,
                 seeds: list[int] = (), strategy_size: dict[str, int] | None = None,
                 strategy_scales: dict[str, list[float]] | None = None,
                 agent_size: int | None = None) -> None:
    """Refuse bad run parameters before anything starts (the CLI calls this too).

    Raises ``UnknownNameError`` (suite, strategy, runner) or ``JunctionError`` naming the
    parameter and its value: a seed outside [0, ``MAX_SEED``], a budget scale that is not
    a finite number > 0, a traces root that is a file or cannot be written, a
    ``strategy_size``/``strategy_scales`` entry for a strategy the run does not run, a
    per-strategy size that is not an integer >= 1, per-strategy scales that are empty or
    not among ``budget_scales``.
    """
    for name in suites:
        reason = get_suite(name).unavailable_reason()
        if reason is not None:
            raise JunctionError(reason)
    for name in strategies:
        strategy_info(name)
    if runner not in ("thread", "dask"):
        raise UnknownNameError(f"unknown runner {runner!r}; valid runners: dask, thread")
    if batch_size < 1:
        raise JunctionError(f"batch_size must be >= 1, got {batch_size}")
    for scale in budget_scales:
        if not (math.isfinite(scale) and scale > 0):
            raise JunctionError(f"budget scale must be a finite number > 0, got {scale:g}")
    for seed in seeds:
        if not 0 <= seed <= MAX_SEED:
            raise JunctionError(f"seed must be an integer in [0, {MAX_SEED}], got {seed}")
    check_strategy_plan(strategies, budget_scales, strategy_size or {}, strategy_scales or {})
    if agent_size is not None and (isinstance(agent_size, bool)
                                   or not isinstance(agent_size, int) or agent_size < 0):
        raise JunctionError(f"agent_size must be an integer >= 0, got {agent_size!r}")
    if run_id:
        check_name(run_id, "run_id")
    _check_writable(output_root)  # an unknown protocol or a missing fsspec backend fails too


def check_strategy_plan(strategies: list[str], budget_scales: list[float],
                        strategy_size: dict[str, int],
                        strategy_scales: dict[str, list[float]]) -> None:
    """Refuse a per-strategy size or scale list that cannot apply (one-line errors)."""
    for what, plan in (("strategy_size", strategy_size), ("strategy_scales", strategy_scales)):
        for name in plan:
            if name not in strategies:
                raise JunctionError(f"{what} names {name!r}, which this run does not run; "
                                    f"strategies: {', '.join(strategies)}")
    for name, n in strategy_size.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise JunctionError(f"strategy_size for {name} must be an integer >= 1, got {n!r}")
    for name, scales in strategy_scales.items():
        if not scales:
            raise JunctionError(f"strategy_scales for {name} is empty; give at least one of "
                                f"the run's budget scales")
        for scale in scales:
            if scale not in budget_scales:
                raise JunctionError(
                    f"strategy_scales for {name}: {scale:g} is not a budget scale of this run "
                    f"({', '.join(f'{x:g}' for x in budget_scales)})")


def strategy_plan(strategies: list[str], budget_scales: list[float],
                  strategy_size: dict[str, int],
                  strategy_scales: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """Per strategy: ``{"scales": [...], "max_tasks": int | None}`` (None: every task of
    each suite's sample), the plan ``_run_units`` follows and the report states."""
    return {s: {"scales": sorted(strategy_scales.get(s, budget_scales)),
                "max_tasks": strategy_size.get(s)} for s in strategies}


def check_resume(output_root: str, run_id: str, params: dict[str, Any]) -> None:
    """Refuse to resume ``run_id`` with parameters other than those it was started with."""
    existing = TraceStore(output_root).read_run_meta(run_id)
    if existing and existing.get("params_hash") != params_hash(params):
        raise JunctionError(f"run {run_id} was started with different parameters; "
                            "use a new run id or the same parameters")


def run_params(suites: list[str] | None = None, strategies: list[str] | None = None,
               seeds: list[int] | None = None, budget_scales: list[float] | None = None,
               size: int | None = None, full: bool = False, batch_size: int = 100,
               output_root: str = DEFAULT_WAREHOUSE, reports_root: str = DEFAULT_REPORTS,
               runner: str = "thread", workers: int | None = None,
               dask_address: str | None = None, suite_files: list[str] | None = None,
               strategy_size: dict[str, int] | None = None,
               strategy_scales: dict[str, list[float]] | None = None,
               agent_size: int | None = None, agent_model: str | None = None,
               agent_url: str | None = None, agent_concurrency: int = 1,
               **_: Any) -> dict[str, Any]:
    """The parameters a run records (defaults filled in, lists sorted): what
    ``params_hash`` hashes and a resumed run must repeat.

    ``strategy_size``/``strategy_scales`` left None take the default plan
    (``DEFAULT_STRATEGY_SIZE`` when neither ``size`` nor ``full`` is given,
    ``DEFAULT_STRATEGY_SCALES`` when no budget scale is given), limited to the strategies
    that run; an explicit ``size``, ``full`` or budget scale so applies to every strategy.
    ``agent_size`` None: ``DEFAULT_AGENT_SIZE`` in the default plan, every task with
    ``full``, none (0) with an explicit ``size``; ``agent_model`` None: the embedded
    default model; ``agent_url``: an OpenAI-compatible server (``agent_model`` is then the
    model id it serves) and ``agent_concurrency`` its requests at once."""
    suite_files = sorted(suite_files or [])
    strategies = sorted(strategies or DEFAULT_STRATEGIES)
    if strategy_size is None:
        strategy_size = ({} if size is not None or full else
                         {k: v for k, v in DEFAULT_STRATEGY_SIZE.items() if k in strategies})
    if strategy_scales is None:
        strategy_scales = ({} if budget_scales else
                           {k: v for k, v in DEFAULT_STRATEGY_SCALES.items() if k in strategies})
    if agent_size is None and not full:  # None with full: every task
        agent_size = 0 if size is not None else DEFAULT_AGENT_SIZE
    return {
        "suites": sorted(suites or ([] if suite_files else default_suites())),
        "strategies": strategies, "seeds": seeds or [0],
        "budget_scales": budget_scales or list(DEFAULT_BUDGET_SCALES), "size": size,
        "full": full,
        "strategy_size": {k: strategy_size[k] for k in sorted(strategy_size)},
        "strategy_scales": {k: sorted(strategy_scales[k]) for k in sorted(strategy_scales)},
        "batch_size": batch_size, "output_root": output_root, "reports_root": reports_root,
        "runner": runner, "workers": workers, "dask_address": dask_address,
        "suite_files": suite_files,
        "agent_size": agent_size, "agent_model": agent_model,
        "agent_url": agent_url, "agent_concurrency": agent_concurrency,
    }


def _capped(tasks: list, cap: int, sample: Callable[[int], list]) -> list:
    """The tasks a strategy capped at ``cap`` runs: the suite's own sample of that size
    (``sample(cap)``; BFCL and synthetic samples are prefix-stable, so it lies inside
    ``tasks``), kept in ``tasks``' order; the first ``cap`` of ``tasks`` if it does not."""
    if cap >= len(tasks):
        return list(tasks)
    ids = {t.task_id for t in sample(cap)}
    inside = [t for t in tasks if t.task_id in ids]
    return inside if len(inside) == cap else list(tasks[:cap])


def _is_bfcl(tasks: list) -> bool:
    """Whether a suite's tasks are BFCL rows (the agent and the references run on them)."""
    from junction.agent.grading import gradable

    return bool(tasks) and all(gradable(t) for t in tasks)


def _agent_sample(tasks: list, agent_size: int | None,
                  sample: Callable[[int], list]) -> frozenset[str]:
    """Ids of the tasks the agent acts on: none for a suite that is not BFCL, every task
    for ``agent_size`` None, else the suite's own sample of that size (``_capped``)."""
    if agent_size == 0 or not _is_bfcl(tasks):
        return frozenset()
    chosen = tasks if agent_size is None else _capped(tasks, agent_size, sample)
    return frozenset(t.task_id for t in chosen)


def _suite_summary(built: SuiteBuild, sampling: str,
                   plan: dict[str, dict[str, Any]] | None = None,
                   capped: dict[int, list] | None = None,
                   agent_ids: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What the report says of one built suite (deterministic: no timings); with a plan,
    ``strategy_tasks``: tasks per strategy where a cap makes it fewer than ``tasks``."""
    out = {"tasks": len(built.tasks), "rows_loaded": built.rows_loaded,
           "rows_skipped": dict(built.rows_skipped), "sampling": sampling, "note": built.note,
           "verifier_kinds": sorted({t.verifier.kind for t in built.tasks})}
    fewer = {s: len(capped[p["max_tasks"]]) for s, p in (plan or {}).items()
             if p["max_tasks"] is not None and len(capped[p["max_tasks"]]) < len(built.tasks)}
    if fewer:
        out["strategy_tasks"] = fewer
    if agent_ids:
        out["agent_tasks"] = len(agent_ids)
    if built.rows_held_out:
        out["rows_held_out"] = built.rows_held_out  # the training part, never evaluated
    return out


def _units(n_tasks: int, batch_size: int) -> list[tuple[int, int]]:
    return [(i, min(n_tasks, i + batch_size)) for i in range(0, n_tasks, batch_size)]


@flow(name="benchmark", log_prints=False, validate_parameters=True)
def benchmark(
    suites: list[str] | None = None,
    strategies: list[str] | None = None,
    seeds: list[int] | None = None,
    budget_scales: list[float] | None = None,
    size: int | None = None,
    full: bool = False,
    batch_size: int = 100,
    output_root: str = DEFAULT_WAREHOUSE,
    reports_root: str = DEFAULT_REPORTS,
    run_id: str | None = None,
    runner: str = "thread",
    workers: int | None = None,
    dask_address: str | None = None,
    write_reports: bool = True,
    suite_files: list[str] | None = None,
    strategy_size: dict[str, int] | None = None,
    strategy_scales: dict[str, list[float]] | None = None,
    agent_size: int | None = None,
    agent_model: str | None = None,
    agent_url: str | None = None,
    agent_concurrency: int = 1,
) -> dict[str, Any]:
    """Run every strategy on every task of every suite, under identical budgets.

    - ``suites``/``strategies``: registry names (default: all suites; the four strategies)
    - ``seeds``: suite seeds (default [0]); ``budget_scales``: token-budget multipliers
      applied to every task's own budget (default [1.0])
    - ``budget_scales`` default: ``DEFAULT_BUDGET_SCALES`` (0.5, 1, 2)
    - ``size``: tasks per suite (default: ``DEFAULT_SIZES``, else the suite's
      ``default_size``); ``full``: every task
    - ``strategy_size``: strategy -> at most this many tasks per suite (the suite's sample
      at that size, inside the others' sample); ``strategy_scales``: strategy -> the budget
      scales it runs (a subset of ``budget_scales``). None: the default plan
      (``DEFAULT_STRATEGY_SIZE`` without ``size``/``full``, ``DEFAULT_STRATEGY_SCALES``
      without budget scales: judge_admission 8 tasks at scale 1); ``{}``: no limit
    - ``batch_size``: tasks per work unit; ``run_id``: resume/complete this run
    - ``suite_files``: JSON Lines suite files (``junction_datasets.jsonl``), run beside ``suites``
    - ``agent_size``: tasks per BFCL suite the language-model agent acts on (every
      strategy, at ``AGENT_SCALE``); None: ``DEFAULT_AGENT_SIZE`` (all with ``full``, 0
      with ``size``); ``agent_model``: a GGUF path or embedded model name (None: default),
      or with ``agent_url`` (an OpenAI-compatible base URL) the server's model id;
      ``agent_concurrency``: requests in flight to that server
    - ``runner``/``workers``/``dask_address``: recorded here; the task runner itself is set by
      ``run_benchmark`` (``flow.with_options``)
    Returns {run_id, report, units, units_skipped, tasks}. Raises ``UnknownNameError`` for an
    unknown suite or strategy and ``JunctionError`` when a resumed run's parameters differ.
    """
    params = run_params(suites, strategies, seeds, budget_scales, size, full, batch_size,
                        output_root, reports_root, runner, workers, dask_address, suite_files,
                        strategy_size, strategy_scales, agent_size, agent_model, agent_url,
                        agent_concurrency)
    suites, strategies, seeds = params["suites"], params["strategies"], params["seeds"]
    budget_scales, suite_files = params["budget_scales"], params["suite_files"]
    check_params(suites, strategies, budget_scales, batch_size, runner, run_id, output_root,
                 seeds, params["strategy_size"], params["strategy_scales"],
                 params["agent_size"])
    plan = strategy_plan(strategies, budget_scales, params["strategy_size"],
                         params["strategy_scales"])
    run_id = run_id or new_run_id()  # a given id was checked by check_params
    check_resume(output_root, run_id, params)
    store = TraceStore(output_root)
    existing = store.read_run_meta(run_id)
    phash = params_hash(params)

    # Load (and so validate) every suite before anything is written.
    suite_info: dict[str, Any] = {}
    loaded = []
    caps = sorted({n for n in params["strategy_size"].values()})
    for name in suites:
        info = get_suite(name)
        n = None if full else (size if size is not None else
                               DEFAULT_SIZES.get(name, info.default_size))
        for seed in seeds:
            built = load_suite(name, seed, n)
            key = name if len(seeds) == 1 else f"{name}@seed={seed}"
            sampling = ("every task" if n is None else
                        f"{len(built.tasks)} tasks (the default benchmark size; --full runs "
                        "every task)" if size is None else f"size={size}")
            capped = {c: _capped(built.tasks, c, lambda c: load_suite(name, seed, c).tasks)
                      for c in caps}
            agent_ids = _agent_sample(built.tasks, params["agent_size"],
                                      lambda c: load_suite(name, seed, c).tasks)
            suite_info[key] = _suite_summary(built, sampling, plan, capped, agent_ids)
            loaded.append((name, info, seed, built, capped, agent_ids))
    for path in suite_files:
        built = load_file_suite(path, None if full else size)
        name = check_name(built.tasks[0].suite, f"suite of {path}")
        if name in SUITES or name in suite_info:
            raise JunctionError(f"{path}: suite name {name!r} is already taken; rename it")
        capped = {c: _capped(built.tasks, c, lambda c: built.tasks[:c]) for c in caps}
        agent_ids = _agent_sample(built.tasks, params["agent_size"], lambda c: built.tasks[:c])
        suite_info[name] = _suite_summary(built, f"file {Path(path).name}", plan, capped,
                                          agent_ids)
        loaded.append((name, SuiteInfo(name, load_suite_file, None), 0, built, capped,
                       agent_ids))
    meta = {
        "run_id": run_id, "params": params, "params_hash": phash, "seeds": seeds,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain")),
        "versions": _versions(),
        "started_at": (existing or {}).get("started_at") or datetime.now(UTC).isoformat(),
        "finished_at": None, "status": "running",
    }
    skipped_suites = {n: r for n, r in skipped_default_suites().items() if n not in suites}
    if skipped_suites and not suite_files and suites == default_suites():
        meta["suites_skipped"] = skipped_suites
    if (existing or {}).get("learned_models"):
        meta["learned_models"] = existing["learned_models"]
    store.write_run_meta(run_id, meta)
    try:
        result = _run_units(store, output_root, reports_root, run_id, loaded, plan,
                            batch_size, write_reports, meta, suite_info)
    except BaseException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        meta.update(finished_at=datetime.now(UTC).isoformat(), status="failed",
                    error=f"{type(exc).__name__}: {reason}")
        store.write_run_meta(run_id, meta)
        raise
    return result


def _run_units(store: TraceStore, output_root: str, reports_root: str, run_id: str,
               loaded: list, plan: dict[str, dict[str, Any]],
               batch_size: int, write_reports: bool, meta: dict[str, Any],
               suite_info: dict[str, Any]) -> dict[str, Any]:
    """Submit every unit of the plan (``strategy_plan``), wait for them, refresh the
    warehouse, mark the run completed and write its report."""
    futures = []
    agent_model = meta["params"].get("agent_model")
    agent_url = meta["params"].get("agent_url")
    agent_concurrency = meta["params"].get("agent_concurrency") or 1
    all_scales = sorted({x for step in plan.values() for x in step["scales"]})
    agent_scale = AGENT_SCALE if AGENT_SCALE in all_scales or not all_scales else all_scales[0]
    for name, info, seed, built, capped, agent_ids in loaded:
        bfcl = _is_bfcl(built.tasks)
        for strategy, step in plan.items():
            if strategy_info(strategy).reads_task and not bfcl:
                continue  # the references read a BFCL row's listing
            tasks = built.tasks if step["max_tasks"] is None else capped[step["max_tasks"]]
            for scale in step["scales"]:
                for lo, hi in _units(len(tasks), batch_size):
                    unit = f"seed{seed}-scale{scale:g}-{lo:06d}-{hi:06d}"
                    batch = tasks[lo:hi]
                    ids = ([t.task_id for t in batch if t.task_id in agent_ids]
                           if scale == agent_scale else [])
                    futures.append(run_unit.submit(
                        output_root, run_id, name, strategy, seed, scale, unit,
                        TaskBatch(batch), info.pool_limit, TaskBatch(ids) if ids else None,
                        agent_model, agent_url, agent_concurrency))
    results = []
    for future in as_completed(futures):
        results.append(future.result())
        _report_progress(len(results), len(futures))
    learned = sorted({*meta.get("learned_models", ()),
                      *(m for r in results for m in r.get("learned_models", ()))})
    if learned:  # file names under learned/ (a resumed run keeps the earlier ones)
        meta["learned_models"] = learned
    meta.update(finished_at=datetime.now(UTC).isoformat(), status="completed",
                suites=suite_info)
    store.write_run_meta(run_id, meta)
    refresh_warehouse(output_root)
    report = None
    if write_reports:
        report = write_run_report(output_root, reports_root, run_id, suite_info)
    return {
        "run_id": run_id, "report": report, "units": len(results),
        "units_skipped": sum(r["skipped"] for r in results),
        "tasks": sum(r["tasks"] for r in results),
    }


def task_runner(runner: str = "thread", workers: int | None = None,
                dask_address: str | None = None):
    """The Prefect task runner for ``runner``: a thread pool, or Dask (local or remote)."""
    if runner == "thread":
        return ThreadPoolTaskRunner(max_workers=workers or 4)
    if runner == "dask":
        from prefect_dask import DaskTaskRunner

        if dask_address:
            return DaskTaskRunner(address=dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers or 2,
                                              "threads_per_worker": 1, "processes": True,
                                              "dashboard_address": None})
    raise UnknownNameError(f"unknown runner {runner!r}; valid runners: dask, thread")


def run_benchmark(progress: Callable[[int, int], None] | None = None,
                  **params: Any) -> dict[str, Any]:
    """Run the flow with the task runner its ``runner`` parameters name.

    ``progress``, if given, is called in this process with (units done, units total) each
    time a unit finishes; it is never sent to a worker. ``params`` are the flow's.

    The checks of ``prepare_run`` run first, before Prefect starts, and the run id's lock
    (``TraceStore.run_lock``) is held for the whole run: a second writer fails at once.
    """
    params = prepare_run(**params)
    start_temporary_server()
    runner = task_runner(params.get("runner", "thread"), params.get("workers"),
                         params.get("dask_address"))
    token = _PROGRESS.set(progress)
    try:
        with TraceStore(params.get("output_root", DEFAULT_WAREHOUSE)).run_lock(params["run_id"]):
            return benchmark.with_options(task_runner=runner)(**params)
    finally:
        _PROGRESS.reset(token)


def prepare_run(**params: Any) -> dict[str, Any]:
    """Check the flow's ``params`` before anything starts; return them with a run id.

    Runs every check that needs no suite data (``check_params``; for an existing run id,
    ``check_resume``), so a mistake is one error before Prefect or any work starts.
    """
    full = run_params(**params)
    params = {**params, "run_id": params.get("run_id") or new_run_id()}
    check_params(full["suites"], full["strategies"], full["budget_scales"], full["batch_size"],
                 full["runner"], params["run_id"], full["output_root"], full["seeds"],
                 full["strategy_size"], full["strategy_scales"], full["agent_size"])
    check_resume(full["output_root"], params["run_id"], full)
    if full["agent_url"] is not None or full["agent_concurrency"] != 1:
        _check_remote_agent(full)
    return params


def _check_remote_agent(params: dict[str, Any]) -> None:
    """Refuse a bad ``agent_url``/``agent_concurrency``, or a model id the server does not
    list (``RemoteAgent.check_model``), before anything starts (``AgentError``, one line)."""
    from junction.agent.llm import AgentError
    from junction.agent.remote import check_agent_url

    url, model, n = params["agent_url"], params["agent_model"], params["agent_concurrency"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise JunctionError(f"agent_concurrency must be an integer >= 1, got {n!r}")
    if url is None:
        raise JunctionError("agent_concurrency applies to a remote agent only (--agent-url)")
    check_agent_url(url)
    if not model:
        raise AgentError(f"--agent-url {url} needs --agent-model, the model id the server "
                         "serves")
    if params["agent_size"] != 0:
        _agent(model, url, n)  # lists the server's models once per process
