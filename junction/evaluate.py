"""Evaluate one strategy on a batch of tasks: select, execute, verify, act, grade, record.

``evaluate_batch`` is the unit of work of a benchmark run (one ``junction.units.UnitSpec``);
the Prefect flow and a plain loop call the same function, so their results are identical.
Its steps are functions of their own: ``select_step``, ``agent_step``, ``record_step``; the
trace row is built in one place, ``junction.evidence.traces.trace_row``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from junction.agent.execution import ExecutionResult, Executor, execute
from junction.agent.graders import grader_for
from junction.candidates import Candidate, PoolRequest, check_pool_rule
from junction.evidence import metrics as catalog
from junction.evidence.metrics import LaneRanking, lane_ranking_metrics
from junction.evidence.traces import AgentOutcome, TaskTraceRecord, trace_row
from junction.strategies import AnyStrategy, StrategyResult, reads_task
from junction.tasks import BenchmarkTask
from junction.units import UnitSpec
from junction.verifiers import Outcome, verify

__all__ = ["TaskStep", "agent_step", "evaluate_batch", "record_step", "scale_budget",
           "select_step"]


def scale_budget(task: BenchmarkTask, scale: float) -> BenchmarkTask:
    """The task with its token budget multiplied by ``scale`` (floored); 1.0 returns it as is."""
    if scale == 1.0:
        return task
    return task.model_copy(update={"budget": task.budget.scaled(scale)})


def _matched_ids(candidates: Sequence[Candidate]) -> list[str]:
    """Ids of the lane's matches (``Candidate.matched``), in rank order."""
    return [c.resource_id for c in candidates if c.matched]


def _run_agent(agent: Executor, jobs: list[tuple[BenchmarkTask, Any]]) -> list[ExecutionResult]:
    """``agent.execute`` on each (task, selection), in order; up to ``agent.concurrency``
    at once (a remote agent's attribute; 1 for the others) in a thread pool."""
    def one(job: tuple[BenchmarkTask, Any]) -> ExecutionResult:
        task, sel = job
        return agent.execute(task, sel.context_ids, sel.tool_ids)

    workers = min(getattr(agent, "concurrency", 1), len(jobs))
    if workers <= 1:
        return [one(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


@dataclass
class TaskStep:
    """One task of a batch as it passes the steps: the (budget-scaled) task, the strategy's
    result, what the toy executor did and the verifier's outcome, the wall-clock ms of
    selection and execution, and, where the agent acted, its execution and the grade."""

    task: BenchmarkTask
    result: StrategyResult
    execution: ExecutionResult
    outcome: Outcome
    select_ms: float
    execute_ms: float
    agent: AgentOutcome | None = None


def select_step(tasks: Sequence[BenchmarkTask], strategy: AnyStrategy,
                spec: UnitSpec) -> list[TaskStep]:
    """Select: ``strategy`` on each task at ``spec.scale`` with ``spec``'s pool rule and
    limit (a ``reads_task`` strategy, a reference, is given the task, else its router
    view); then execute and verify: the toy executor on the exposed set and the suite's
    verifier (``success``, the retrieval proxy on BFCL suites)."""
    request = PoolRequest(spec.pool_limit, check_pool_rule(spec.pool))
    steps = []
    for raw_task in tasks:
        task = scale_budget(raw_task, spec.scale)
        t0 = time.perf_counter()
        result = (strategy.select(task, request) if reads_task(strategy, spec.strategy)
                  else strategy.select(task.router_view(), request))
        t1 = time.perf_counter()
        sel = result.selection
        execution = execute(task, sel.context_ids, sel.tool_ids)
        steps.append(TaskStep(task, result, execution, verify(task, execution),
                              (t1 - t0) * 1000, (time.perf_counter() - t1) * 1000))
    return steps


def agent_step(steps: list[TaskStep], agent: Executor | None,
               agent_task_ids: Iterable[str]) -> None:
    """Act and grade: on the tasks named in ``agent_task_ids`` that a grader of
    ``junction.agent.graders`` grades, ``agent`` acts on the exposed set (once every
    selection of the batch is made, so an agent with a ``concurrency`` above 1 gets that
    many tasks at once) and the task's grader grades it; fills each such step's ``agent``
    and adds the agent's wall-clock ms to its ``execute_ms``."""
    if agent is None:
        return
    ids = set(agent_task_ids)
    acting = [(s, info) for s in steps
              if s.task.task_id in ids and (info := grader_for(s.task)) is not None]
    if not acting:
        return
    executions = _run_agent(agent, [(s.task, s.result.selection) for s, _ in acting])
    for (step, info), execution in zip(acting, executions, strict=True):
        step.agent = AgentOutcome(agent.name, execution, info.grade(step.task, execution),
                                  info.name)
        step.execute_ms += execution.wall_ms or 0.0


def record_step(steps: list[TaskStep],
                spec: UnitSpec) -> tuple[list[TaskTraceRecord], list[dict[str, Any]]]:
    """Record: one trace row per step (``junction.evidence.traces.trace_row``) with the
    batch's lane ranking metrics, and one timing row per step."""
    lanes: list[LaneRanking] = []
    rows, timings = [], []
    for step in steps:
        rows.append(trace_row(spec, step.task, step.result, step.execution, step.outcome,
                              step.agent))
        pools = step.result.pools
        # lane metrics rank the matches only: a candidate at score 0 is no retrieval
        lanes.append(LaneRanking(f"{len(lanes)}:c", _matched_ids(pools.contexts),
                                 step.task.gold_context_ids))
        lanes.append(LaneRanking(f"{len(lanes)}:t", _matched_ids(pools.tools),
                                 step.task.gold_tool_ids))
        execution = step.agent.execution if step.agent is not None else None
        timings.append({
            "run_id": spec.run_id, "suite": step.task.suite, "strategy": spec.strategy,
            "task_id": step.task.task_id, "seed": spec.seed, "budget_scale": spec.scale,
            "select_ms": step.select_ms, "execute_ms": step.execute_ms,
            "total_ms": step.select_ms + step.execute_ms,
            "agent_ms": execution.wall_ms if execution is not None else None,
            "agent_cached": execution.cached if execution is not None else None,
        })
    ranking = lane_ranking_metrics(lanes)
    records = []
    for i, row in enumerate(rows):
        keys = {"context": f"{2 * i}:c", "tool": f"{2 * i + 1}:t"}
        for m in catalog.METRICS:
            if m.lane is not None and m.measure is not None:
                row[m.name] = ranking[keys[m.lane]][m.measure]
        records.append(TaskTraceRecord(**row))
    return records, timings


def evaluate_batch(tasks: Sequence[BenchmarkTask], strategy: AnyStrategy, spec: UnitSpec,
                   agent: Executor | None = None,
                   ) -> tuple[list[TaskTraceRecord], list[dict[str, Any]]]:
    """Run ``strategy`` on each task as unit ``spec`` says; return (trace records, timing
    rows), in task order: ``select_step`` (select, execute, verify), ``agent_step`` (the
    model ``agent`` acts on ``spec.agent_task_ids`` and a grader of
    ``junction.agent.graders`` gives ``agent_success``; its calls are the trace's
    ``tool_calls``), ``record_step`` (the rows).

    Every trace records ``spec``'s run id, strategy, seed, budget scale, ``repetition`` and
    ``fold`` (a cross-fitted suite's repetition, and the fold of a learned strategy bound
    to it) and ``pool`` (``pool_rule``: the rule every selection of the batch ranks its
    candidates by, ``junction.candidates.POOL_RULES``). A failed retrieval proxy gets its
    ``loss_cause`` (``junction.evidence.losses.loss_cause``).

    Timing rows hold wall-clock milliseconds (``select_ms``, ``execute_ms``: the toy
    executor's plus the agent's own ``agent_ms``, ``total_ms``, and ``agent_cached`` where
    the agent ran).
    Raises ``TraceError``/``ValidationError`` if a strategy produces an inconsistent trace.
    """
    steps = select_step(tasks, strategy, spec)
    agent_step(steps, agent, spec.agent_task_ids)
    return record_step(steps, spec)
