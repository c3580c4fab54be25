"""Before a run: what a ``RunPlan`` needs of this machine and its warehouse, checked
before Prefect or any work starts.

``prepare_run`` runs every check and returns the prepared run (``PreparedRun``: the plan,
its run id and its suite files, read once): the traces root can be written
(``check_writable``), a resumed run repeats its parameters (``check_resume``), the suite
files are valid, the sqlite caches are sound, a cross-fitted suite can fill its folds
(``check_folds``), the dense embedder is in place for a pool rule that uses it, and a
remote agent's server serves the model. So a mistake is one error line, not a failed run.
A caller that runs the flow after it (``flows.runners.run_prepared``) hands the prepared
run over (``prepared``), and the flow neither checks again nor reads the files again
(``prepared_for``).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from junction_datasets import SuiteBuild, get_suite
from junction_datasets.jsonl import check_suite_files

from flows.plan import RunPlan, new_run_id
from junction.candidates import DEFAULT_POOL_RULE
from junction.environment import state_dir
from junction.errors import JunctionError
from junction.evidence.store import TraceStore, check_name
from junction.learned.grid import check_fit_workers
from junction.sqlite_cache import check_caches
from junction.strategies import strategy_info

__all__ = ["PreparedRun", "check_folds", "check_resume", "check_writable", "prepare_run",
           "prepared", "prepared_for"]


@dataclass(frozen=True)
class PreparedRun:
    """A plan that passed every check of ``prepare_run``, with its run id and its suite
    files as read then (``suite_files``: one ``SuiteBuild`` per ``plan.suite_files`` path,
    in order, every task), so the flow reads no file twice."""

    plan: RunPlan
    run_id: str
    suite_files: tuple[SuiteBuild, ...] = ()


_PREPARED: ContextVar[PreparedRun | None] = ContextVar("junction_prepared", default=None)
"""The prepared run a caller hands the flow (``prepared``); read by ``prepared_for``."""


@contextlib.contextmanager
def prepared(run: PreparedRun) -> Iterator[None]:
    """Within the block, a flow run of ``run.plan`` under ``run.run_id`` is ``run``: its
    checks done and its suite files read (``prepared_for``)."""
    token = _PREPARED.set(run)
    try:
        yield
    finally:
        _PREPARED.reset(token)


def prepared_for(plan: RunPlan, run_id: str | None) -> PreparedRun | None:
    """The prepared run (``prepared``) of ``plan`` under ``run_id``, or None when the
    caller prepared none or another (the flow called directly, a scheduled run): then
    the flow checks what it needs itself."""
    run = _PREPARED.get()
    return run if run is not None and run.run_id == run_id and run.plan == plan else None


def check_writable(output_root: str) -> None:
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


def check_resume(plan: RunPlan, run_id: str) -> None:
    """Refuse to resume ``run_id`` with a plan other than the one it was started with
    (``JunctionError`` naming each option that differs with both values,
    ``flows.run_record.resume_differences``)."""
    existing = TraceStore(plan.output_root).read_run_meta(run_id)
    if existing and existing.get("params_hash") != plan.params_hash():
        from flows.run_record import resume_differences

        changed = resume_differences(existing.get("params"), plan)
        raise JunctionError(f"run {run_id} was started with different parameters"
                            f"{f': {changed}' if changed else ''}; use a new run id or the "
                            "same parameters")
    if existing and "plugins" in existing:
        changed = plugin_differences(existing["plugins"])
        if changed:
            raise JunctionError(f"run {run_id} was started with other plug-ins: {changed}; "
                                "use a new run id or the plug-ins it started with")


def plugin_differences(recorded: list[dict]) -> str:
    """How the plug-ins loaded now differ from ``recorded`` (a run's ``run.json``
    ``plugins``, ``junction.registry.Plugin.record``): ``"X 0.1 → 0.2"``, ``"X 0.1 → not
    installed"``, ``"not installed → X 0.1"``, joined by ``"; "``; empty when they agree.
    A resumed run's units would otherwise mix two plug-ins' code under one run id."""
    from junction.registry import load_plugins

    def key(p: dict) -> tuple[str, str]:
        return (str(p.get("entry_point")), str(p.get("distribution")))

    before = {key(p): p for p in recorded}
    now = {key(r): r for r in (p.record() for p in load_plugins())}
    out = []
    for k in sorted(before.keys() | now.keys()):
        a, b = before.get(k), now.get(k)
        label = f"{k[0]} ({k[1]})"
        if a is None or b is None:
            out.append(f"{label} {'not installed' if a is None else a['version']} → "
                       f"{'not installed' if b is None else b['version']}")
        elif a != b:
            out.append(f"{label} {a['version']} → {b['version']}"
                       + ("" if a["version"] != b["version"] else " (other records)"))
    return "; ".join(out)


def check_folds(plan: RunPlan) -> None:
    """Refuse a fold count that a cross-fitted suite of ``plan`` cannot fill: every fold
    needs at least one of the family's tasks (``junction.learned.crossfit.fold_assignment``),
    so ``folds`` may not exceed the family's task count. One ``JunctionError`` line naming
    the suite and its task count; nothing to check when no learned strategy runs (then no
    fold is drawn). Builds each such family once (the τ family: about a second)."""
    if not any(strategy_info(s).role == "learned" for s in plan.strategies):
        return
    from junction_datasets import family_all_tasks

    for name in plan.suites:
        info = get_suite(name)
        if not info.cross_fit or info.family is None:
            continue
        n = len(family_all_tasks(info.family, plan.data_folders))
        if plan.folds > n:
            raise JunctionError(f"folds: {plan.folds} folds cannot be filled: suite {name} "
                                f"has {n} tasks to deal into folds; give --folds {n} or fewer")


def prepare_run(plan: RunPlan, run_id: str | None = None) -> PreparedRun:
    """Check what ``plan`` needs of the world before anything starts; return it prepared
    (``PreparedRun``: the plan, the run id, the suite files as read).

    The run id (``check_name``; a new one when None), the traces root
    (``check_writable``), a resumed run's parameters (``check_resume``), its suite files
    (``junction_datasets.jsonl.check_suite_files``: each valid, its suite name free), the
    sqlite caches
    (``check_caches``: a corrupt one is set aside with a warning), the fold count of a
    cross-fitted suite (``check_folds``), the dense embedder for
    a pool rule that uses it (``junction.dense.DenseError``: missing or off its pin) and,
    for a remote agent that will act, the server's model list (``AgentError``, one line).
    So a mistake is one error before Prefect or any work starts.
    """
    check_fit_workers()  # JUNCTION_FIT_WORKERS, for every suite: one line; capped with a warning
    run_id = check_name(run_id, "run_id") if run_id else new_run_id()
    check_writable(plan.output_root)  # an unknown protocol or a missing fsspec backend too
    check_resume(plan, run_id)
    files = check_suite_files(plan.suite_files)  # malformed, a name taken: one line
    check_caches(state_dir())  # a corrupt cache: one warning, set aside; unwritable: one line
    check_folds(plan)
    if plan.pool != DEFAULT_POOL_RULE:
        from junction.dense import dense_model_dir

        dense_model_dir()
    if plan.agent_url is not None and plan.agent_size != 0:
        from flows.workers import agent_executor

        agent_executor(plan.agent_spec())
    return PreparedRun(plan, run_id, tuple(files))
