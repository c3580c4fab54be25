"""The ``judge_admission`` strategy: first stage, yes/no judge, floor admission.

Per task (``RouterView``):

1. first stage (``junction.strategies.base.candidate_pools``, the run's pool rule: BM25 by
   default): the top ``min(pool limit, pool_per_lane)`` contexts and tools;
2. every candidate is judged against ``view.objective`` in one batch (contexts as their
   content, tools as ``Tool <id>: <description>``: ``bench/studies/judge_quality.py
   --tool-rendering`` measured name + description against adding the rendered schema or
   the parameter names, and kept the winner; see ``docs/measurement.md``), through the
   persistent score cache;
3. admission (``junction.pages.admission.admit_above_floor``): candidates scoring at least the
   calibrated floor, best first, each admitted only if the exposed set still fits every
   limit of the task's shared budget (``Budget.check``). A candidate below the floor is
   never exposed, so a task where no tool fits can expose none (abstention).

The floor is calibrated once per process (``calibrate_default_floor``) on calibration
tasks the caller passes in, from a split that the benchmark never runs (the benchmark
flow passes the synthetic suite at seed 1, ``junction_datasets.calibration_tasks``), for
the target precision ``TARGET_PRECISION``. When no floor reaches the target (a weak judge), the
floor with the best precision reached is used instead and an INFO log line says so; the
floor, its target and the precision it reached are recorded in every trace with the judge
scores, the instruction hash and the model hash.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Sequence
from typing import cast

from junction.candidates import Candidate, PoolRequest, candidate_pools
from junction.judge.cache import ScoreCache, judge_documents
from junction.judge.instructions import RETRIEVAL_INSTRUCTION, RerankInstruction
from junction.judge.model import JudgeConfig
from junction.judge.session import judge_session
from junction.pages.admission import (
    AdmissionError,
    FloorCalibration,
    ScoredResource,
    admit_above_floor,
    calibrate_floor,
    reject_degenerate,
    tie_groups,
)
from junction.select.problem import Resource, make_selection
from junction.strategies.base import FunctionStrategy, StrategyResult, joint_problem
from junction.tasks import BenchmarkTask, RouterView

_LOG = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_POOL_PER_LANE",
    "STRATEGY_JUDGE_CONFIG",
    "TARGET_PRECISION",
    "calibrate_default_floor",
    "candidate_text",
    "make_judge_admission_strategy",
]

DEFAULT_POOL_PER_LANE = 4
"""Judged candidates per lane: 8 per task are one ``llama_decode`` group, which keeps the
default benchmark inside its time (docs/measurement.md, "Judge throughput")."""

STRATEGY_JUDGE_CONFIG = JudgeConfig(max_document_tokens=64)
"""Documents cut to 64 tokens in the strategy: the head of a passage or a tool's description
carries most of its topic, and the cut keeps the judge inside the default run's time
without changing its AUC (docs/measurement.md, "Judge quality")."""

TARGET_PRECISION = 0.5
"""Floor calibration target: at least half of what passes the floor is gold."""


def candidate_text(view: RouterView, candidate: Candidate) -> str:
    """The text the judge reads for a candidate (see the module docstring)."""
    if candidate.kind == "context":
        return view.context(candidate.resource_id).content
    tool = view.tool(candidate.resource_id)
    return f"Tool {tool.id}: {tool.description}"


@dataclasses.dataclass(frozen=True)
class _Judged:
    """One task's judged pools: scores of the scored candidates, skipped and cut ones."""

    scores: dict[str, float]
    skipped: dict[str, str]
    truncated: dict[str, list[int]]
    degenerate: bool


def _judge_pools(judge, cache, view: RouterView, pools, instruction,
                 noise: float = 0.0) -> _Judged:
    cands = [*pools.contexts, *pools.tools]
    if not cands:
        return _Judged({}, {}, {}, False)
    texts = [candidate_text(view, c) for c in cands]
    batch = judge_documents(judge, cache, view.objective, texts, instruction, noise)
    ids = [c.resource_id for c in cands]
    return _Judged(
        scores={r: s for r, s in zip(ids, batch.scores, strict=True) if s is not None},
        skipped={r: st for r, st in zip(ids, batch.statuses, strict=True) if st != "scored"},
        truncated={ids[i]: list(cut) for i, cut in sorted(batch.truncations.items())},
        degenerate=batch.degenerate,
    )


def calibrate_default_floor(judge, cache: ScoreCache | None,
                            calibration_tasks: Sequence[BenchmarkTask],
                            instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
                            pool_per_lane: int = DEFAULT_POOL_PER_LANE) -> FloorCalibration:
    """Calibrate the admission floor on ``calibration_tasks`` (module docstring).

    Pools every judged (task, candidate) pair of the tasks; labels are the tasks' gold
    ids. When no floor reaches ``TARGET_PRECISION`` the floor of the best precision reached
    is used (INFO log). Raises ``AdmissionError`` when there is no calibration task or no
    judged pair.
    """
    if not calibration_tasks:
        raise AdmissionError("judge_admission needs calibration tasks (a split the benchmark "
                             "never evaluates) or a fixed floor")
    scores: list[float] = []
    labels: list[bool] = []
    for task in calibration_tasks:
        view = task.router_view()
        pools = candidate_pools(view, pool_per_lane)
        judged = _judge_pools(judge, cache, view, pools, instruction)
        gold = set(task.gold_context_ids) | set(task.gold_tool_ids)
        for rid, score in sorted(judged.scores.items()):
            scores.append(score)
            labels.append(rid in gold)
    try:
        return calibrate_floor(scores, labels, TARGET_PRECISION)
    except AdmissionError as exc:
        best = max(_precisions(scores, labels))
        _LOG.info("judge floor: %s; using the floor of the best precision (%.3f)", exc, best)
        calibration = calibrate_floor(scores, labels, best)
        return dataclasses.replace(calibration, target_precision=TARGET_PRECISION)


def _precisions(scores: list[float], labels: list[bool]) -> list[float]:
    """Precision of {score >= t} for every observed threshold t."""
    return [sum(y for s, y in zip(scores, labels, strict=True) if s >= t)
            / sum(1 for s in scores if s >= t) for t in set(scores)]


_FLOORS: dict[tuple, FloorCalibration] = {}
_FLOORS_LOCK = threading.Lock()


def make_judge_admission_strategy(
    calibration_tasks: Sequence[BenchmarkTask] = (),
    config: JudgeConfig | None = None,
    instruction: RerankInstruction = RETRIEVAL_INSTRUCTION,
    pool_per_lane: int = DEFAULT_POOL_PER_LANE,
    floor: float | None = None,
    use_cache: bool = True,
) -> FunctionStrategy:
    """A ready ``judge_admission`` strategy ``(view, pool) -> StrategyResult``.

    Loads the judge once per process (``load_judge``), runs the smoke test (raises
    ``SmokeTestError`` naming the failed gate), opens the score cache
    (``state_dir()/judge_scores.sqlite``) and calibrates the floor on ``calibration_tasks``
    unless ``floor`` (logits) is given (``AdmissionError`` when neither is). ``extra`` of
    each result holds ``judge_scores`` (resource id -> logit gap), ``instruction_hash``,
    ``model_hash``, ``judge_floor`` and the rejected ids.
    """
    config = config or STRATEGY_JUDGE_CONFIG
    session = judge_session(config, (instruction,), use_cache)
    judge, cache, noise = session.judge, session.cache, session.noise
    instruction_hash = judge.instruction_hash(instruction)
    provenance = session.provenance(instruction)
    if floor is None:
        key = (config, instruction_hash, pool_per_lane,
               tuple((t.suite, t.task_id) for t in calibration_tasks))
        with _FLOORS_LOCK:
            if key not in _FLOORS:
                _FLOORS[key] = calibrate_default_floor(judge, cache, calibration_tasks,
                                                       instruction, pool_per_lane)
            calibration = _FLOORS[key]
        floor_value = calibration.floor
        floor_info = {"judge_floor_target_precision": calibration.target_precision,
                      "judge_floor_calibration_precision": round(calibration.precision, 4),
                      "judge_floor_calibration_recall": round(calibration.recall, 4)}
    else:
        floor_value = float(floor)
        floor_info = {}

    def strategy(view: RouterView, pool: PoolRequest) -> StrategyResult:
        limit = pool.limit
        lanes = limit if isinstance(limit, (tuple, list)) else (limit, limit)
        n = cast(tuple[int, int],  # one limit per lane, as ``lanes`` has
                 tuple(pool_per_lane if k is None else min(k, pool_per_lane) for k in lanes))
        pools = candidate_pools(view, n, pool.rule)
        problem = joint_problem(view, pools)
        judged = _judge_pools(judge, cache, view, pools, instruction, noise.floor)
        resources: tuple[Resource, ...] = (*problem.contexts, *problem.tools)
        items = [ScoredResource(r, judged.scores[r.id]) for r in resources
                 if r.id in judged.scores]
        if judged.degenerate:  # scores that tell nothing apart admit nothing
            result = reject_degenerate(items, noise.floor)
        else:
            result = admit_above_floor(items, floor_value, view.budget, tie_logits=noise.floor)
        admitted = set(result.admitted_ids)
        selection = make_selection(
            "judge_admission", problem,
            [c.id for c in problem.contexts if c.id in admitted],
            [t.id for t in problem.tools if t.id in admitted],
            status="heuristic",
        )
        ties = [[s.resource_id for s in g] for g in tie_groups(items, noise.floor) if len(g) > 1]
        return StrategyResult(selection=selection, pools=pools, extra={
            "judge_scores": {rid: round(s, 6) for rid, s in sorted(judged.scores.items())},
            "instruction_hash": instruction_hash,
            "model_hash": judge.model_hash,
            "judge_provenance": provenance,
            "judge_floor": round(floor_value, 6),
            "judge_rejected": {r.item.resource_id: r.reason for r in result.rejected},
            "judge_best_rejected": [s.resource_id for s in result.best_rejected],
            "judge_ties": ties,
            "judge_skipped": judged.skipped,
            "judge_truncated": judged.truncated,
            "judge_degenerate": judged.degenerate,
            **floor_info,
        })

    return FunctionStrategy(strategy)
