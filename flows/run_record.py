"""A run's record, ``runs/<run_id>.json``: written ``running`` when the flow starts and
``completed`` when every unit is done and the report written (``flows.benchmark``;
``interrupted`` and ``failed`` are written where the run stops: ``flows.interrupts``, the
flow's own handler).

The record names the plan (``params``, its hash), the code (git commit, a dirty flag) and
the packages' versions and the plug-ins loaded (``plugins``: each entry point of another
distribution, ``junction.registry.Plugin.record``, with the names it replaced), so a report
says what produced it; a run the command line started
also records ``resume_command``, the command that completes it (``flows.interrupts``).
"""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from flows import interrupts
from flows.plan import RunPlan, default_suites, skipped_default_suites
from flows.sampling import LoadedSuite, suite_summary
from junction.environment import PROJECT_ROOT
from junction.evidence.store import TraceStore
from junction.registry import load_plugins

__all__ = ["finish_run", "start_run"]

_PACKAGES = ("junction", "prefect", "duckdb", "pyarrow", "pydantic", "bm25s", "scipy",
             "numpy", "llama_cpp_python", "ir_measures", "bfcl-eval")


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


def start_run(store: TraceStore, plan: RunPlan, run_id: str,
              suites: list[LoadedSuite]) -> dict[str, Any]:
    """Write the run's run.json as ``running`` (keeping a resumed run's start time and
    learned models) and return it."""
    existing = store.read_run_meta(run_id) or {}
    meta = {
        "run_id": run_id, "params": plan.params(), "params_hash": plan.params_hash(),
        "seeds": plan.seeds, "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain")), "versions": _versions(),
        "plugins": [p.record() for p in load_plugins()],
        "started_at": existing.get("started_at") or datetime.now(UTC).isoformat(),
        "finished_at": None, "status": "running",
    }
    skipped = {n: r for n, r in skipped_default_suites(plan.data_folders).items()
               if n not in plan.suites}
    if skipped and not plan.suite_files and plan.suites == default_suites(plan.data_folders):
        meta["suites_skipped"] = skipped
    resume = interrupts.resume_command() or existing.get("resume_command")
    if resume:  # what `junction report` / `diff` of an unfinished run tell the user to run
        meta["resume_command"] = resume
    if existing.get("learned_models"):
        meta["learned_models"] = existing["learned_models"]
    crossed = cross_fit_record(plan, suites)
    if crossed:
        meta["cross_fit"] = crossed
    store.write_run_meta(run_id, meta)
    return meta


def cross_fit_record(plan: RunPlan, suites: list[LoadedSuite]) -> dict[str, Any]:
    """run.json's ``cross_fit``: per cross-fitted suite, K and, per repetition (seed), the
    task ids of each fold (over the suite's family; ``junction.learned.crossfit``)."""
    out: dict[str, Any] = {}
    for s in suites:
        if s.folds is None:
            continue
        entry = out.setdefault(s.name, {"folds": plan.folds, "repetitions": {}})
        entry["repetitions"][str(s.seed)] = {
            str(f): sorted(t for t, g in s.folds.items() if g == f) for f in range(plan.folds)}
    return out


def finish_run(store: TraceStore, meta: dict[str, Any], results: list[dict[str, Any]],
               suites: list[LoadedSuite], plan: RunPlan) -> dict[str, Any]:
    """The run's metadata marked completed, with its suites' summaries and learned-model
    files: a new dict, not yet written (the flow writes it once the report is in place, so
    a run whose report was cut short is never ``completed``)."""
    meta = dict(meta)
    learned = sorted({*meta.get("learned_models", ()),
                      *(m for r in results for m in r.get("learned_models", ()))})
    if learned:  # file names under learned/ (a resumed run keeps the earlier ones)
        meta["learned_models"] = learned
    max_tasks = {s: step.max_tasks for s, step in plan.steps().items()}
    meta.update(finished_at=datetime.now(UTC).isoformat(), status="completed",
                suites={s.key: suite_summary(s, max_tasks)
                        for s in suites})
    return meta
