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

__all__ = ["LoadedSuite", "agent_gradable", "agent_sample", "capped",
           "short_agent_sample", "suite_summary"]


@dataclass(frozen=True)
class LoadedSuite:
    """One built suite of a run: ``key`` names it in the report (``name@seed=N`` when a run
    has several seeds), ``sampling`` says how it was sampled, ``capped`` maps each task cap
    of the plan to the tasks a capped strategy runs, ``agent_ids`` are the ids of the tasks
    the agent acts on."""

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
    agent_short: str | None = None
    """``short_agent_sample``'s line when the agent acts on fewer tasks than asked."""



def capped(tasks: list, cap: int, sample: Callable[[int], list]) -> list:
    """The tasks a strategy capped at ``cap`` runs: the suite's own sample of that size
    (``sample(cap)``; BFCL and synthetic samples are prefix-stable, so it lies inside
    ``tasks``), kept in ``tasks``' order; the first ``cap`` of ``tasks`` if it does not."""
    if cap >= len(tasks):
        return list(tasks)
    ids = {t.task_id for t in sample(cap)}
    inside = [t for t in tasks if t.task_id in ids]
    return inside if len(inside) == cap else list(tasks[:cap])


def agent_gradable(tasks: list) -> bool:
    """Whether the agent can act on a suite: some grader of the catalog
    (``junction.agent.graders``) grades one of its tasks."""
    from junction.agent.graders import gradable

    return any(gradable(t) for t in tasks)


def agent_sample(tasks: list, agent_size: int | None, sample: Callable[[int], list],
                 within: frozenset[str] | None = None) -> frozenset[str]:
    """Ids of the tasks the agent acts on: none for a suite no agent grader grades
    (``agent_gradable``), every gradable task for ``agent_size`` None, else the gradable
    tasks of the suite's own sample of that size (``capped``), topped up to ``agent_size``
    with the suite's other gradable tasks in its order (a τ task without a gold agent
    action cannot be graded: another one takes its place). The top-up takes only tasks in
    ``within`` (None: any), the tasks every strategy runs. Fewer than ``agent_size`` when
    the suite has fewer gradable tasks (``short_agent_sample`` says so)."""
    if agent_size == 0 or not agent_gradable(tasks):
        return frozenset()
    from junction.agent.graders import gradable

    chosen = tasks if agent_size is None else capped(tasks, agent_size, sample)
    picked = [t.task_id for t in chosen if gradable(t)]
    if agent_size is not None and len(picked) < agent_size:
        taken = set(picked)
        for t in tasks:
            if len(picked) >= agent_size:
                break
            if t.task_id not in taken and (within is None or t.task_id in within) \
                    and gradable(t):
                picked.append(t.task_id)
    return frozenset(picked)


def short_agent_sample(suite: str, tasks: list, agent_size: int | None,
                       agent_ids: frozenset[str]) -> str | None:
    """One line when the agent acts on fewer of ``suite``'s tasks than ``agent_size``
    asked and the suite is of a kind an agent grader grades (``junction.agent.graders``);
    None otherwise."""
    from junction.agent.graders import AGENT_GRADERS

    if not agent_size or len(agent_ids) >= min(agent_size, len(tasks)):
        return None
    kinds = {k for g in AGENT_GRADERS.values() for k in g.kinds}
    if not any(t.verifier.kind in kinds for t in tasks):
        return None
    return (f"{suite}: the agent acts on {len(agent_ids)} of the {agent_size} tasks asked: "
            f"only {len(agent_ids)} of the {len(tasks)} tasks run have a gold action the "
            "agent can be graded on")


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
    if suite.agent_short:
        out["agent_short"] = suite.agent_short
    if built.rows_held_out:
        out["rows_held_out"] = built.rows_held_out  # the training part, never evaluated
    disputed = sorted(t.task_id for t in built.tasks if t.metadata.get("disputed"))
    if disputed:  # gold disputed upstream: verdicts are also given without them
        out["disputed_task_ids"] = disputed
    if suite.folds is not None:
        out["cross_fit"] = True
    return out
