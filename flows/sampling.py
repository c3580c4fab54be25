"""Which tasks of a loaded suite each strategy, and the agent, runs on.

A suite's sample is built once per (suite, seed) by the flow; a strategy with a task cap
runs the suite's own sample of that size (BFCL and synthetic samples are prefix-stable,
so it lies inside the larger one), and the agent acts on the suite's own sample of the
plan's ``agent_size``. ``LoadedSuite`` carries all three, and ``suite_summary`` is what the
report says of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from junction_datasets import SuiteBuild, SuiteInfo

__all__ = ["LoadedSuite", "agent_gradable", "capped", "is_bfcl", "agent_sample", "suite_summary"]


@dataclass(frozen=True)
class LoadedSuite:
    """One built suite of a run: ``key`` names it in the report (``name@seed=N`` when a run
    has several seeds), ``sampling`` says how it was sampled, ``capped`` maps each task cap of the plan to the tasks a capped
    strategy runs, ``agent_ids`` are the ids of the tasks the agent acts on."""

    key: str
    name: str
    info: SuiteInfo
    seed: int
    built: SuiteBuild
    sampling: str
    capped: dict[int, list]
    agent_ids: frozenset[str]
    folds: dict[str, int] | None = None
    """Task id -> fold of this seed's draw, over every task of a cross-fitted suite's
    family (``junction.learned.crossfit.fold_assignment``); None for other suites."""

    @property
    def bfcl(self) -> bool:
        """Whether the suite's tasks are BFCL rows (the references read their listing)."""
        return is_bfcl(self.built.tasks)


def capped(tasks: list, cap: int, sample: Callable[[int], list]) -> list:
    """The tasks a strategy capped at ``cap`` runs: the suite's own sample of that size
    (``sample(cap)``; BFCL and synthetic samples are prefix-stable, so it lies inside
    ``tasks``), kept in ``tasks``' order; the first ``cap`` of ``tasks`` if it does not."""
    if cap >= len(tasks):
        return list(tasks)
    ids = {t.task_id for t in sample(cap)}
    inside = [t for t in tasks if t.task_id in ids]
    return inside if len(inside) == cap else list(tasks[:cap])


def is_bfcl(tasks: list) -> bool:
    """Whether a suite's tasks are BFCL rows (the agent and the references run on them)."""
    from junction.agent.grading import gradable

    return bool(tasks) and all(gradable(t) for t in tasks)


def agent_gradable(tasks: list) -> bool:
    """Whether the agent can act on a suite: some grader of the catalog
    (``junction.agent.graders``) grades one of its tasks."""
    from junction.agent.graders import gradable

    return any(gradable(t) for t in tasks)


def agent_sample(tasks: list, agent_size: int | None,
                 sample: Callable[[int], list]) -> frozenset[str]:
    """Ids of the tasks the agent acts on: none for a suite no agent grader grades
    (``agent_gradable``), every task for ``agent_size`` None, else the suite's own sample
    of that size (``capped``); of those, the tasks a grader grades (a τ task without a gold
    agent action is left out)."""
    if agent_size == 0 or not agent_gradable(tasks):
        return frozenset()
    from junction.agent.graders import gradable

    chosen = tasks if agent_size is None else capped(tasks, agent_size, sample)
    return frozenset(t.task_id for t in chosen if gradable(t))


def suite_summary(suite: LoadedSuite, max_tasks: dict[str, int | None]) -> dict[str, Any]:
    """What the report says of one built suite (deterministic: no timings). ``max_tasks``:
    strategy -> its task cap; ``strategy_tasks`` lists the strategies a cap gives fewer
    tasks than the suite's sample."""
    built = suite.built
    out = {"tasks": len(built.tasks), "rows_loaded": built.rows_loaded,
           "rows_skipped": dict(built.rows_skipped), "sampling": suite.sampling, "note": built.note,
           "verifier_kinds": sorted({t.verifier.kind for t in built.tasks})}
    fewer = {s: len(suite.capped[cap]) for s, cap in max_tasks.items()
             if cap is not None and len(suite.capped[cap]) < len(built.tasks)}
    if fewer:
        out["strategy_tasks"] = fewer
    if suite.agent_ids:
        out["agent_tasks"] = len(suite.agent_ids)
    if built.rows_held_out:
        out["rows_held_out"] = built.rows_held_out  # the training part, never evaluated
    disputed = sorted(t.task_id for t in built.tasks if t.metadata.get("disputed"))
    if disputed:  # gold disputed upstream: verdicts are also given without them
        out["disputed_task_ids"] = disputed
    if suite.folds is not None:
        out["cross_fit"] = True
    return out
