"""A run's record, ``runs/<run_id>.json``: written ``running`` when the flow starts and
``completed`` when every unit is done and the report written (``flows.benchmark``;
``interrupted`` and ``failed`` are written where the run stops: ``flows.interrupts``, the
flow's own handler).

The record names the plan (``params``, its hash), the code (git commit, a dirty flag) and
the packages' versions and the plug-ins loaded (``plugins``: each entry point of another
distribution, ``junction.registry.Plugin.record``, with the names it replaced), so a report
says what produced it; a run the command line started
also records ``resume_command``, the command that completes it (the armed
``flows.stopper.RunStopper``'s ``resume``).
"""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

from flows import interrupts
from flows.plan import (
    FIELD_POLICY,
    RESULT_NEUTRAL_PARAMS,
    RunPlan,
    default_suites,
    resume_params,
    skipped_default_suites,
)
from flows.sampling import LoadedSuite, suite_summary
from junction.environment import PROJECT_ROOT
from junction.evidence.store import TraceStore
from junction.registry import load_plugins

if TYPE_CHECKING:  # the diff module (duckdb, scipy) loads only when two runs are compared
    from junction.evidence.diff import ParamChange

__all__ = ["compared_params", "finish_run", "option_name", "recorded_params",
           "resume_differences", "start_run"]

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
    stopper = interrupts.armed()
    resume = (stopper.resume if stopper else None) or existing.get("resume_command")
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


_OPTIONS = {"suites": "--suite", "strategies": "--strategy", "seeds": "--seed",
            "budget_scales": "--budget-scale", "suite_files": "--suite-file",
            "strategy_scales": "--strategy-scale", "agent_strategies": "--agent-strategy",
            "data_folders": "--data", "output_root": "--warehouse",
            "reports_root": "--reports"}
"""``RunPlan`` fields whose ``junction bench`` option is not ``--`` and the field's name
with dashes (a repeatable option is named in the singular)."""

_LEARNED_ONLY = ("fit_search", "folds")
"""Fields that change only a learned strategy's results (its fit's search, its
cross-fitting folds): a diff of two runs without one leaves them out."""


def option_name(param: str) -> str:
    """The ``junction bench`` option that sets ``RunPlan`` field ``param``
    (``fit_search`` -> ``--fit-search``, ``strategies`` -> ``--strategy``)."""
    return _OPTIONS.get(param, "--" + param.replace("_", "-"))


def recorded_params(params: dict[str, Any]) -> dict[str, Any]:
    """A run.json's ``params`` with each ``RunPlan`` field that ``RunPlan.params`` leaves
    out filled in: its default (``ParamPolicy.omit_default``: ``fit_search`` optimal,
    ``folds`` 5) or the field it repeats (``omit_same_as``: ``agent_strategies``, the
    strategies), so two records compare field by field."""
    out = dict(params)
    for name, policy in FIELD_POLICY.items():
        if name in out:
            continue
        if policy.omit_same_as is not None and policy.omit_same_as in out:
            out[name] = out[policy.omit_same_as]
        elif policy.omit_default:
            out[name] = RunPlan.model_fields[name].get_default(call_default_factory=True)
    return out


def compared_params(before: dict[str, Any], after: dict[str, Any]) -> list[ParamChange]:
    """The parameters that differ between two runs' records (run.json dicts), as
    ``junction.evidence.diff.param_changes`` rows: every field that can change a result
    (the result-neutral ones left out), the fields only a learned strategy reads
    (``fit_search``, ``folds``) only where one of the two runs ran a learned strategy."""
    from junction.evidence.diff import param_changes
    from junction.strategies import STRATEGIES

    a, b = (recorded_params(p if isinstance(p := m.get("params"), dict) else {})
            for m in (before, after))
    learned = any(STRATEGIES[s].role == "learned" for p in (a, b)
                  for s in p.get("strategies") or () if s in STRATEGIES)
    return param_changes(a, b, leave_out={*RESULT_NEUTRAL_PARAMS,
                                          *(() if learned else _LEARNED_ONLY)})


def resume_differences(recorded: dict[str, Any] | None, plan: RunPlan) -> str | None:
    """What a resumed run repeats (``flows.plan.resume_params``) that ``plan`` changes, as
    the options that set it with both values, ``--fit-search optimal (now hybrid)``,
    comma-separated; None when ``recorded`` (run.json's ``params``) is missing or names no
    difference."""
    from junction.evidence.diff import param_changes, param_text

    if not isinstance(recorded, dict):
        return None
    changes = param_changes(resume_params(recorded_params(recorded)),
                            resume_params(recorded_params(plan.params())))
    return ", ".join(f"{option_name(c['param'])} {param_text(c['before'])} (now "
                     f"{param_text(c['after'])})" for c in changes) or None
