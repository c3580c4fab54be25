"""Versioned task traces: one record per (run, suite, strategy, task, seed, budget scale).

``TaskTraceRecord`` validates its own invariants at construction:

- the exposed set lies within the candidate pools;
- ``tokens_used`` equals ``context_tokens + tool_tokens`` and the sum of the exposed
  candidates' ``token_cost``;
- tool-call indexes are contiguous from 0;
- a failure carries a reason, a success none;
- every number is finite (``allow_inf_nan=False``), so the JSON form never holds NaN/inf.

The metric fields (``success``, ``context_recall`` ... ``tool_lane_mrr``) are the columns of
the metric catalog, ``junction.evidence.metrics.METRICS``, which says what each means; they are
spelled out here so the record reads as its Parquet row does, and a test checks that the
catalog, this record and ``TRACE_SCHEMA`` agree (names, types, which may be None).

``SCHEMA_VERSION`` is bumped whenever a field is added, renamed or changes meaning; the
warehouse reads Parquet by column name, so files of older versions stay readable.
Timings are kept out of the trace row (see ``timing_row``) so that the same inputs give
byte-identical trace files.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, model_validator

from junction.agent.execution import ExecutionResult
from junction.agent.grade import AgentGrade
from junction.errors import TraceError
from junction.evidence.losses import LOSS_CAUSES, loss_cause
from junction.evidence.metrics import pair_coverage, set_precision, set_recall
from junction.strategies import StrategyResult
from junction.tasks import BenchmarkTask
from junction.units import UnitSpec
from junction.verifiers import Outcome

__all__ = [
    "SCHEMA_VERSION",
    "TIMING_SCHEMA",
    "TRACE_SCHEMA",
    "AgentOutcome",
    "CandidateRecord",
    "MeasureValue",
    "TaskTraceRecord",
    "ToolCallRecord",
    "records_to_table",
    "timings_to_table",
    "trace_row",
]

SCHEMA_VERSION = 10
"""2: ``selector`` added (the algorithm that produced the selection). 3: the agent outcome
added (``executor``, ``agent_success``, ``agent_outcome``, ``agent_error_type``,
``agent_prompt_tokens``, ``agent_generated_tokens``, ``agent_model_sha256``,
``agent_prompt_sha256``, ``agent_output``); ``success`` stays the retrieval proxy (the
``traces`` view also names it ``retrieval_success``). 4: ``agent_remote`` added (the
server and model id of a ``remote`` agent; ``agent_model_sha256`` is then NULL). 5:
``agent_dropped_context_ids`` added (exposed contexts the agent's prompt left out to fit
its context window). 6: ``repetition`` and ``fold`` added (cross-fitting,
``junction.learned.crossfit``: the repetition, which is the run's seed, on every trace of a
cross-fitted suite; the fold on a learned strategy's traces there). 7: ``pool_rule`` added
(the candidate pools' rule, ``junction.candidates.POOL_RULES``; traces before it are BM25).
8: ``agent_action_recall`` and ``agent_wrong_variant_calls`` added (a grader of gold
actions, ``junction.agent.tau2_grading``; None elsewhere), and ``agent_outcome`` may be
any grader's outcome (``junction.agent.graders.agent_outcomes``). 9: ``loss_cause`` added
(why the retrieval proxy failed, ``junction.evidence.losses.LOSS_CAUSES``; NULL on a
success and where the verifier kind has no cheapest set). 10: ``agent_grader`` (the grader's
record name) and ``agent_measures`` (long format: one ``{name, value}`` per ``Measure``
the grader declares, ``junction.agent.grade``) replace ``agent_action_recall`` and
``agent_wrong_variant_calls``, which are the ``tau2_actions`` grader's ``action_recall``
and ``wrong_variant_calls`` measures now."""


class CandidateRecord(BaseModel):
    """One candidate as a strategy saw it: id, lane score, 0-based rank, token cost."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    resource_id: str
    score: float
    rank: int = Field(ge=0)
    token_cost: int = Field(ge=0)


class ToolCallRecord(BaseModel):
    """One tool call of the executor; ``arguments_json`` is the arguments as JSON text."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    index: int = Field(ge=0)
    tool_id: str
    arguments_json: str = "{}"


class MeasureValue(BaseModel):
    """One measure of the agent's grader on one task: the ``Measure``'s ``name`` and its
    finite ``value`` (in the measure's unit)."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    value: float


class TaskTraceRecord(BaseModel):
    """Everything one strategy decided and achieved on one task (see module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    schema_version: int = SCHEMA_VERSION
    run_id: str
    suite: str
    strategy: str
    task_id: str
    seed: int
    repetition: int | None = None
    """The cross-fitting repetition (= ``seed``) on a cross-fitted suite; None elsewhere."""
    fold: int | None = None
    """The fold whose model (fitted on the other folds) selected, for a learned strategy on
    a cross-fitted suite; None elsewhere (no refit: a fixed split or no learned model)."""
    pool_rule: str = "bm25"
    """The rule that made the candidate pools (``junction.candidates.POOL_RULES``)."""
    budget_scale: float
    budget_tokens: int | None
    budget_tools: int | None
    budget_latency_ms: float | None
    budget_cost_usd: float | None
    context_candidates: tuple[CandidateRecord, ...]
    tool_candidates: tuple[CandidateRecord, ...]
    exposed_context_ids: tuple[str, ...]
    exposed_tool_ids: tuple[str, ...]
    context_tokens: int = Field(ge=0)
    tool_tokens: int = Field(ge=0)
    tokens_used: int = Field(ge=0)
    unary: float
    interaction: float
    objective: float
    selector: str = Field(min_length=1)
    """The algorithm that produced the selection (``Selection.strategy``: enumeration,
    branch_and_bound, branch_and_cut, fixed_split, ...); the strategy stays ``strategy``."""
    selection_status: str
    selection_gap: float | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    success: bool
    """The retrieval proxy (``retrieval_success``): the suite's verifier on the exposed set."""
    failure_reason: str = ""
    loss_cause: str | None = None
    """Why ``success`` failed: a key of ``junction.evidence.losses.LOSS_CAUSES`` (the first
    that holds); None on a success and where the verifier kind has no cheapest set."""
    executor: str = "toy"
    """``toy`` (the scripted executor, or no executor: the outcome depends on the exposed set
    only), ``llm`` (an embedded model acted: the ``agent_*`` fields are set) or ``remote``
    (a model on an OpenAI-compatible server acted: ``agent_remote`` names it)."""
    agent_success: bool | None = None
    """The task's agent grader on the agent's calls or answer (``junction.agent.graders``:
    BFCL's checker, tau2's action check); None where no agent ran."""
    agent_outcome: str | None = None
    """A key of ``junction.agent.graders.agent_outcomes()`` (correct, wrong_call, ...,
    unparseable)."""
    agent_error_type: str = ""
    agent_prompt_tokens: int | None = None
    agent_generated_tokens: int | None = None
    agent_model_sha256: str | None = None
    agent_prompt_sha256: str | None = None
    agent_output: str | None = None
    agent_remote: str | None = None
    """``host[:port]/path model-id`` of a remote agent (no credentials); None otherwise."""
    agent_dropped_context_ids: tuple[str, ...] = ()
    """Exposed contexts the agent did not see: left out, oldest first, so the prompt fits
    the model's context window (``junction.agent.prompt.fit_prompt``); empty where all fit
    or no agent ran."""
    agent_grader: str | None = None
    """The record name of the grader that graded the agent (``junction.agent.graders``:
    ``bfcl``, ``tau2_actions``, ...); None where no agent ran."""
    agent_measures: tuple[MeasureValue, ...] = ()
    """The grader's measures on this task, sorted by name (``GraderInfo.measures``); empty
    where no agent ran or the grader declares none."""
    gold_context_ids: tuple[str, ...] = ()
    gold_tool_ids: tuple[str, ...] = ()
    context_recall: float | None = None
    context_precision: float | None = None
    tool_recall: float | None = None
    tool_precision: float | None = None
    pair_coverage: bool | None = None
    budget_use: float | None = None
    context_lane_recall_at_5: float | None = None
    context_lane_ndcg_at_5: float | None = None
    context_lane_mrr: float | None = None
    tool_lane_recall_at_5: float | None = None
    tool_lane_ndcg_at_5: float | None = None
    tool_lane_mrr: float | None = None
    extra_json: str = "{}"

    @model_validator(mode="after")
    def _invariants(self) -> TaskTraceRecord:
        where = f"trace {self.run_id}/{self.suite}/{self.strategy}/{self.task_id}"
        ctx = {c.resource_id: c for c in self.context_candidates}
        tools = {t.resource_id: t for t in self.tool_candidates}
        for rid in self.exposed_context_ids:
            if rid not in ctx:
                raise ValueError(f"{where}: exposed context {rid!r} is not a context candidate")
        for rid in self.exposed_tool_ids:
            if rid not in tools:
                raise ValueError(f"{where}: exposed tool {rid!r} is not a tool candidate")
        if self.context_tokens + self.tool_tokens != self.tokens_used:
            raise ValueError(
                f"{where}: tokens_used {self.tokens_used} != context_tokens "
                f"{self.context_tokens} + tool_tokens {self.tool_tokens}"
            )
        priced_c = sum(ctx[r].token_cost for r in self.exposed_context_ids)
        priced_t = sum(tools[r].token_cost for r in self.exposed_tool_ids)
        if (priced_c, priced_t) != (self.context_tokens, self.tool_tokens):
            raise ValueError(
                f"{where}: exposed resources cost {priced_c}+{priced_t} tokens, "
                f"record says {self.context_tokens}+{self.tool_tokens}"
            )
        for i, call in enumerate(self.tool_calls):
            if call.index != i:
                raise ValueError(f"{where}: tool call indexes must be 0..n-1, "
                                 f"got {call.index} at {i}")
        if (self.agent_success is None) != (self.agent_outcome is None):
            raise ValueError(f"{where}: agent_success and agent_outcome are set together")
        if (self.agent_success is None) != (self.agent_grader is None):
            raise ValueError(f"{where}: agent_success and agent_grader are set together")
        names = [m.name for m in self.agent_measures]
        if names and (self.agent_grader is None or names != sorted(set(names))):
            raise ValueError(f"{where}: agent_measures {names} need an agent grader and "
                             "distinct names in sorted order")
        if self.success and self.failure_reason:
            raise ValueError(f"{where}: a success carries no failure_reason")
        if not self.success and not self.failure_reason:
            raise ValueError(f"{where}: a failure needs a failure_reason")
        if self.loss_cause is not None and (self.success or self.loss_cause not in LOSS_CAUSES):
            raise ValueError(f"{where}: loss_cause {self.loss_cause!r} needs a failure and one "
                             f"of {', '.join(LOSS_CAUSES)}")
        try:
            json.loads(self.extra_json, parse_constant=_refuse_constant)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where}: extra_json is not finite JSON: {exc}") from None
        return self

    def to_row(self) -> dict[str, Any]:
        """The Parquet row (nested records as lists of dicts)."""
        return self.model_dump(mode="python")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TaskTraceRecord:
        """Rebuild (and re-validate) a record from a Parquet row; ``TraceError`` if invalid."""
        known = {k: v for k, v in row.items() if k in cls.model_fields}
        try:
            return cls.model_validate(known)
        except ValueError as exc:
            raise TraceError(str(exc)) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


_CANDIDATE = pa.struct([("resource_id", pa.string()), ("score", pa.float64()),
                        ("rank", pa.int32()), ("token_cost", pa.int64())])
_CALL = pa.struct([("index", pa.int32()), ("tool_id", pa.string()),
                   ("arguments_json", pa.string())])
_MEASURE = pa.struct([("name", pa.string()), ("value", pa.float64())])

TRACE_SCHEMA = pa.schema([
    ("schema_version", pa.int32()),
    ("run_id", pa.string()),
    ("suite", pa.string()),
    ("strategy", pa.string()),
    ("task_id", pa.string()),
    ("seed", pa.int64()),
    ("repetition", pa.int64()),
    ("fold", pa.int32()),
    ("pool_rule", pa.string()),
    ("budget_scale", pa.float64()),
    ("budget_tokens", pa.int64()),
    ("budget_tools", pa.int64()),
    ("budget_latency_ms", pa.float64()),
    ("budget_cost_usd", pa.float64()),
    ("context_candidates", pa.list_(_CANDIDATE)),
    ("tool_candidates", pa.list_(_CANDIDATE)),
    ("exposed_context_ids", pa.list_(pa.string())),
    ("exposed_tool_ids", pa.list_(pa.string())),
    ("context_tokens", pa.int64()),
    ("tool_tokens", pa.int64()),
    ("tokens_used", pa.int64()),
    ("unary", pa.float64()),
    ("interaction", pa.float64()),
    ("objective", pa.float64()),
    ("selector", pa.string()),
    ("selection_status", pa.string()),
    ("selection_gap", pa.float64()),
    ("tool_calls", pa.list_(_CALL)),
    ("success", pa.bool_()),
    ("failure_reason", pa.string()),
    ("loss_cause", pa.string()),
    ("executor", pa.string()),
    ("agent_success", pa.bool_()),
    ("agent_outcome", pa.string()),
    ("agent_error_type", pa.string()),
    ("agent_prompt_tokens", pa.int64()),
    ("agent_generated_tokens", pa.int64()),
    ("agent_model_sha256", pa.string()),
    ("agent_prompt_sha256", pa.string()),
    ("agent_output", pa.string()),
    ("agent_remote", pa.string()),
    ("agent_dropped_context_ids", pa.list_(pa.string())),
    ("agent_grader", pa.string()),
    ("agent_measures", pa.list_(_MEASURE)),
    ("gold_context_ids", pa.list_(pa.string())),
    ("gold_tool_ids", pa.list_(pa.string())),
    ("context_recall", pa.float64()),
    ("context_precision", pa.float64()),
    ("tool_recall", pa.float64()),
    ("tool_precision", pa.float64()),
    ("pair_coverage", pa.bool_()),
    ("budget_use", pa.float64()),
    ("context_lane_recall_at_5", pa.float64()),
    ("context_lane_ndcg_at_5", pa.float64()),
    ("context_lane_mrr", pa.float64()),
    ("tool_lane_recall_at_5", pa.float64()),
    ("tool_lane_ndcg_at_5", pa.float64()),
    ("tool_lane_mrr", pa.float64()),
    ("extra_json", pa.string()),
])
"""Arrow schema of a trace file; its column order is ``TaskTraceRecord``'s field order."""

assert [f.name for f in TRACE_SCHEMA] == list(TaskTraceRecord.model_fields), "schema drift"

TIMING_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("suite", pa.string()), ("strategy", pa.string()),
    ("task_id", pa.string()), ("seed", pa.int64()), ("budget_scale", pa.float64()),
    ("select_ms", pa.float64()), ("execute_ms", pa.float64()), ("total_ms", pa.float64()),
    ("agent_ms", pa.float64()), ("agent_cached", pa.bool_()),
])
"""Arrow schema of a timing file: wall-clock milliseconds per task and strategy;
``agent_ms`` is the model executor's own time (NULL where no agent ran) and
``agent_cached`` whether its answer came from the generation cache."""


def _revalidated(record: Any) -> TaskTraceRecord:
    """``record`` validated again from its fields, whatever path made it: pydantic's
    ``model_copy(update=...)`` and ``model_construct`` skip validation, so a record changed
    after it was built (an objective turned NaN) is caught here, before any byte is written.
    Raises ``TraceError`` naming the record and the field."""
    if not isinstance(record, TaskTraceRecord):
        raise TraceError(f"a trace row must be a TaskTraceRecord, got {type(record).__name__}")
    try:
        return TaskTraceRecord.model_validate(record.model_dump(mode="python"))
    except ValueError as exc:
        where = (f"trace {record.run_id}/{record.suite}/{record.strategy}/{record.task_id}"
                 if hasattr(record, "task_id") else "trace record")
        errors = getattr(exc, "errors", None)
        if errors is not None:
            first = errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "record"
            raise TraceError(f"{where}: {field}: {first['msg']} (got {first.get('input')!r}); "
                             "nothing was written") from None
        raise TraceError(f"{where}: {exc}; nothing was written") from None


def records_to_table(records: list[TaskTraceRecord]) -> pa.Table:
    """Trace records as an Arrow table with ``TRACE_SCHEMA`` (rows in the given order).

    Every record is validated again first (``TraceError`` naming the record and field of
    the first invalid one: a NaN objective, a broken invariant), however it was made.
    """
    return pa.Table.from_pylist([_revalidated(r).to_row() for r in records],
                                schema=TRACE_SCHEMA)


_TIMING_FLOATS = ("budget_scale", "select_ms", "execute_ms", "total_ms", "agent_ms")
_TIMING_OPTIONAL = ("agent_ms", "agent_cached")  # None (or left out) where no agent ran


def timings_to_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Timing rows (dicts with ``TIMING_SCHEMA``'s keys) as an Arrow table.

    Raises ``TraceError`` naming the task and field of a missing or unknown key, a time
    that is not a finite number >= 0 (an average over the ``timings`` view would turn
    NaN), or a value of the wrong type; ``agent_ms``/``agent_cached`` may be None or left
    out.
    """
    names = TIMING_SCHEMA.names
    for row in rows:
        task = row.get("task_id") if isinstance(row, dict) else None
        keys = set(row) if isinstance(row, dict) else set()
        if not isinstance(row, dict) or not set(names) - set(_TIMING_OPTIONAL) <= keys <= \
                set(names):
            got = sorted(row) if isinstance(row, dict) else type(row).__name__
            raise TraceError(f"timing row of task {task!r} must have the keys "
                             f"{', '.join(names)} (agent_ms, agent_cached may be left out); "
                             f"got {got}")
        for key in _TIMING_FLOATS:
            value = row.get(key)
            if value is None and key in _TIMING_OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TraceError(f"timing {key}={value!r} of task {task!r} is not a number; "
                                 "timings are milliseconds")
            if not math.isfinite(value):
                raise TraceError(f"timing {key}={value!r} of task {task!r} is not finite; "
                                 "timings must be finite milliseconds")
            if value < 0:
                raise TraceError(f"timing {key}={value!r} of task {task!r} is negative; "
                                 "timings are milliseconds >= 0")
        if row.get("agent_cached") is not None and not isinstance(row["agent_cached"], bool):
            raise TraceError(f"timing agent_cached={row['agent_cached']!r} of task {task!r} "
                             "must be true, false or null")
    try:
        return pa.Table.from_pylist(rows, schema=TIMING_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise TraceError(f"timing rows do not fit the timings schema: {exc}") from None


@dataclass(frozen=True)
class AgentOutcome:
    """What the model agent did on one task and how its grader graded it: the executor's
    ``name``, its ``ExecutionResult``, the grader's ``AgentGrade`` and the grader's record
    name (``grader``)."""

    name: str
    execution: ExecutionResult
    grade: AgentGrade
    grader: str


def _finite_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))


def _agent_columns(agent: AgentOutcome) -> dict[str, Any]:
    """The trace's agent columns (deterministic: no wall time, no cache flag)."""
    execution, grade = agent.execution, agent.grade
    return {"executor": agent.name, "agent_success": grade.success,
            "agent_outcome": grade.outcome, "agent_error_type": grade.error_type,
            "agent_prompt_tokens": execution.prompt_tokens,
            "agent_generated_tokens": execution.generated_tokens,
            "agent_model_sha256": execution.model_sha256,
            "agent_prompt_sha256": execution.prompt_sha256, "agent_output": execution.text,
            "agent_remote": execution.remote,
            "agent_dropped_context_ids": execution.dropped_context_ids,
            "agent_grader": agent.grader,
            "agent_measures": tuple(MeasureValue(name=k, value=v)
                                    for k, v in sorted(grade.measures.items()))}


def trace_row(spec: UnitSpec, task: BenchmarkTask, result: StrategyResult,
              execution: ExecutionResult, outcome: Outcome,
              agent: AgentOutcome | None = None) -> dict[str, Any]:
    """The one place a trace row is built: ``TaskTraceRecord``'s fields for ``task``
    (budget-scaled) under unit ``spec``, from the strategy's ``result``, the toy executor's
    ``execution`` and the verifier's ``outcome``; where the agent acted, its columns, and
    its calls as ``tool_calls`` instead of the toy executor's. The lane ranking metrics
    are added by the caller (they rank the whole batch). Token counts in tokens."""
    sel = result.selection
    calls = (agent.execution if agent is not None else execution).tool_calls
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
    return dict(
        run_id=spec.run_id, suite=task.suite, strategy=spec.strategy, task_id=task.task_id,
        seed=spec.seed, repetition=spec.repetition, fold=spec.fold, pool_rule=spec.pool,
        budget_scale=spec.scale,
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
                         for c in calls),
        success=outcome.success, failure_reason=outcome.reason,
        loss_cause=loss_cause(task, [c.resource_id for c in result.pools.contexts],
                              [c.resource_id for c in result.pools.tools],
                              sel.context_ids, sel.tool_ids, outcome.success),
        **(_agent_columns(agent) if agent is not None else {}),
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
    )
