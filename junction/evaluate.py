"""Evaluate one strategy on a batch of tasks: select, execute, verify, measure, trace.

``evaluate_batch`` is the unit of work of a benchmark run; the Prefect flow and a plain
loop call the same function, so their results are identical.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from junction.agent.execution import ExecutionResult, Executor, execute
from junction.agent.graders import gradable, grade_agent
from junction.candidates import (
    DEFAULT_POOL_RULE,
    Candidate,
    PoolLimit,
    PoolRequest,
    check_pool_rule,
)
from junction.evidence import metrics as catalog
from junction.evidence.losses import loss_cause
from junction.evidence.metrics import (
    LaneRanking,
    lane_ranking_metrics,
    pair_coverage,
    set_precision,
    set_recall,
)
from junction.evidence.traces import CandidateRecord, TaskTraceRecord, ToolCallRecord
from junction.strategies import STRATEGIES, Strategy
from junction.tasks import BenchmarkTask
from junction.verifiers import verify

__all__ = ["evaluate_batch", "scale_budget"]


def scale_budget(task: BenchmarkTask, scale: float) -> BenchmarkTask:
    """The task with its token budget multiplied by ``scale`` (floored); 1.0 returns it as is."""
    if scale == 1.0:
        return task
    return task.model_copy(update={"budget": task.budget.scaled(scale)})


def _matched_ids(candidates: Sequence[Candidate]) -> list[str]:
    """Ids of the lane's matches (``Candidate.matched``), in rank order."""
    return [c.resource_id for c in candidates if c.matched]


def _finite_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))


def _agent_fields(name: str, execution: ExecutionResult, grade: Any) -> dict[str, Any]:
    """The trace's agent columns (deterministic: no wall time, no cache flag)."""
    return {"executor": name, "agent_success": grade.success, "agent_outcome": grade.outcome,
                "agent_error_type": grade.error_type,
                "agent_prompt_tokens": execution.prompt_tokens,
                "agent_generated_tokens": execution.generated_tokens,
                "agent_model_sha256": execution.model_sha256,
                "agent_prompt_sha256": execution.prompt_sha256, "agent_output": execution.text,
                "agent_remote": execution.remote,
                "agent_dropped_context_ids": execution.dropped_context_ids,
                "agent_action_recall": grade.action_recall,
                "agent_wrong_variant_calls": grade.wrong_variant_calls}


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


def evaluate_batch(
    tasks: Sequence[BenchmarkTask],
    strategy: Strategy,
    strategy_name: str,
    run_id: str,
    seed: int,
    budget_scale: float,
    pool_limit: PoolLimit,
    agent: Executor | None = None,
    agent_task_ids: frozenset[str] | set[str] = frozenset(),
    repetition: int | None = None,
    fold: int | None = None,
    pool: str = DEFAULT_POOL_RULE,
) -> tuple[list[TaskTraceRecord], list[dict[str, Any]]]:
    """Run ``strategy`` on each task; return (trace records, timing rows), in task order.

    The toy executor and the suite's verifier give ``success`` (the retrieval proxy on
    BFCL suites) for every task. On the tasks named in ``agent_task_ids`` that a grader of
    ``junction.agent.graders`` grades, ``agent`` (a model ``Executor``) also acts on the
    exposed set and the grader (BFCL's checker, tau2's action check) gives
    ``agent_success``; its calls are the trace's ``tool_calls``. A strategy whose catalog
    record ``reads_task`` (a reference) is given the task, not the router view.
    ``repetition`` and ``fold`` are recorded on every trace (a cross-fitted suite's
    repetition, and the fold of a learned strategy bound to it).
    ``pool`` is the pool rule (``junction.candidates.POOL_RULES``) every selection of the
    batch ranks its candidates by, recorded on every trace (``pool_rule``). A failed
    retrieval proxy gets its ``loss_cause`` (``junction.evidence.losses.loss_cause``, from
    the task's gold, the candidate pools and the exposed set).

    The agent acts once every selection of the batch is made, so an agent with a
    ``concurrency`` attribute above 1 (``junction.agent.remote.RemoteExecutor``) gets that
    many tasks at once.

    Timing rows hold wall-clock milliseconds (``select_ms``, ``execute_ms``: the toy
    executor's plus the agent's own ``agent_ms``, ``total_ms``, and ``agent_cached`` where
    the agent ran).
    Raises ``TraceError``/``ValidationError`` if a strategy produces an inconsistent trace.
    """
    partial: list[dict[str, Any]] = []
    timings: list[dict[str, Any]] = []
    lanes: list[LaneRanking] = []
    info = STRATEGIES.get(strategy_name)
    reads_task = info is not None and info.reads_task
    request = PoolRequest(pool_limit, check_pool_rule(pool))
    steps = []
    for raw_task in tasks:
        task = scale_budget(raw_task, budget_scale)
        t0 = time.perf_counter()
        result = strategy.select(task if reads_task else task.router_view(), request)
        t1 = time.perf_counter()
        sel = result.selection
        execution = execute(task, sel.context_ids, sel.tool_ids)
        outcome = verify(task, execution)
        steps.append((task, result, execution, outcome, (t1 - t0) * 1000,
                      (time.perf_counter() - t1) * 1000))
    acting = [i for i, (task, *_) in enumerate(steps)
              if agent is not None and task.task_id in agent_task_ids and gradable(task)]
    agent_runs: dict[int, ExecutionResult] = {}
    if agent is not None and acting:
        executions = _run_agent(agent, [(steps[i][0], steps[i][1].selection) for i in acting])
        agent_runs = dict(zip(acting, executions, strict=True))
    for i, (task, result, execution, outcome, select_ms, execute_ms) in enumerate(steps):
        sel = result.selection
        agent_fields: dict[str, Any] = {}
        agent_timing: dict[str, Any] = {"agent_ms": None, "agent_cached": None}
        if agent is not None and i in agent_runs:
            execution = agent_runs[i]
            grade = grade_agent(task, execution)
            agent_fields = _agent_fields(agent.name, execution, grade)
            agent_timing = {"agent_ms": execution.wall_ms, "agent_cached": execution.cached}
            execute_ms += execution.wall_ms or 0.0
        costs = ({c.id: c.token_cost for c in task.contexts}
                 | {t.id: t.token_cost for t in task.tools})
        ctx_c = tuple(CandidateRecord(resource_id=c.resource_id, score=c.score, rank=c.rank,
                                      token_cost=costs[c.resource_id])
                      for c in result.pools.contexts)
        tool_c = tuple(CandidateRecord(resource_id=c.resource_id, score=c.score, rank=c.rank,
                                       token_cost=costs[c.resource_id])
                       for c in result.pools.tools)
        context_tokens = sum(costs[r] for r in sel.context_ids)
        tool_tokens = sum(costs[r] for r in sel.tool_ids)
        b = task.budget
        partial.append(dict(
            run_id=run_id, suite=task.suite, strategy=strategy_name, task_id=task.task_id,
            seed=seed, repetition=repetition, fold=fold, pool_rule=pool,
            budget_scale=budget_scale,
            budget_tokens=b.max_tokens, budget_tools=b.max_tools,
            budget_latency_ms=b.max_latency_ms, budget_cost_usd=b.max_cost_usd,
            context_candidates=ctx_c, tool_candidates=tool_c,
            exposed_context_ids=sel.context_ids, exposed_tool_ids=sel.tool_ids,
            context_tokens=context_tokens, tool_tokens=tool_tokens,
            tokens_used=context_tokens + tool_tokens,
            unary=sel.unary, interaction=sel.interaction, objective=sel.objective,
            selector=sel.strategy, selection_status=sel.status, selection_gap=sel.gap,
            tool_calls=tuple(ToolCallRecord(index=c.index, tool_id=c.tool_id,
                                            arguments_json=_finite_json(c.arguments))
                             for c in execution.tool_calls),
            success=outcome.success, failure_reason=outcome.reason,
            loss_cause=loss_cause(task, [c.resource_id for c in result.pools.contexts],
                                  [c.resource_id for c in result.pools.tools],
                                  sel.context_ids, sel.tool_ids, outcome.success),
            **agent_fields,
            gold_context_ids=task.gold_context_ids, gold_tool_ids=task.gold_tool_ids,
            context_recall=set_recall(sel.context_ids, task.gold_context_ids),
            context_precision=set_precision(sel.context_ids, task.gold_context_ids),
            tool_recall=set_recall(sel.tool_ids, task.gold_tool_ids),
            tool_precision=set_precision(sel.tool_ids, task.gold_tool_ids),
            pair_coverage=pair_coverage(sel.context_ids, sel.tool_ids,
                                        task.gold_context_ids, task.gold_tool_ids,
                                        [(p.context_id, p.tool_id) for p in task.gold_pairs]),
            budget_use=(None if not b.max_tokens
                        else (context_tokens + tool_tokens) / b.max_tokens),
            extra_json=_finite_json(result.extra),
        ))
        # lane metrics rank the matches only: a candidate at score 0 is no retrieval
        lanes.append(LaneRanking(f"{len(lanes)}:c", _matched_ids(result.pools.contexts),
                                 task.gold_context_ids))
        lanes.append(LaneRanking(f"{len(lanes)}:t", _matched_ids(result.pools.tools),
                                 task.gold_tool_ids))
        timings.append(dict(
            run_id=run_id, suite=task.suite, strategy=strategy_name, task_id=task.task_id,
            seed=seed, budget_scale=budget_scale, select_ms=select_ms,
            execute_ms=execute_ms, total_ms=select_ms + execute_ms, **agent_timing,
        ))
    ranking = lane_ranking_metrics(lanes)
    records = []
    for i, row in enumerate(partial):
        keys = {"context": f"{2 * i}:c", "tool": f"{2 * i + 1}:t"}
        for m in catalog.METRICS:
            if m.lane is not None and m.measure is not None:
                row[m.name] = ranking[keys[m.lane]][m.measure]
        records.append(TaskTraceRecord(**row))
    return records, timings
