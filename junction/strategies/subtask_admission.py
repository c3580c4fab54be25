"""The ``subtask_admission`` strategy: proposed sub-tasks admitted when they follow from the
task and do not echo it (``junction.pages.admission.admit_subtasks``).

Per task (``RouterView``): the contexts are proposed sub-tasks (``bfcl-subtasks``) and the
objective is the original task, also the proposals' only ancestor. Each proposal is judged
twice through the persistent score cache:

- follows: the objective as query, the proposals as documents, under
  ``FOLLOWS_INSTRUCTION`` ("is the document a step that helps carry out the task?");
- echo: each proposal as query, the objective as document, under ``ECHO_INSTRUCTION``
  ("does the document ask for exactly the same thing?").

A proposal is admitted when follows >= ``FOLLOW_FLOOR`` and echo < ``ECHO_FLOOR``; no
tool is exposed. Both floors are 0 logits, the judge's own yes/no boundary
(logit("yes") = logit("no")): nothing is calibrated yet (calibrating them on a training
split is left to a later change).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from junction.candidates import CandidatePools, PoolRequest, candidate_pools
from junction.pages.admission import admit_subtasks
from junction.select.problem import make_selection
from junction.strategies.base import FunctionStrategy, StrategyResult, joint_problem
from junction.tasks import BenchmarkTask, RouterView

__all__ = ["ECHO_FLOOR", "FOLLOW_FLOOR", "make_subtask_admission_strategy"]

FOLLOW_FLOOR = 0.0
"""Least follows score admitted (logits): the judge's yes/no boundary, not calibrated."""
ECHO_FLOOR = 0.0
"""Echo score from which a proposal is an echo (logits): the judge's yes/no boundary."""


def make_subtask_admission_strategy(
    calibration_tasks: Sequence[BenchmarkTask] = (),
    config=None,
    use_cache: bool = True,
) -> FunctionStrategy:
    """A ready ``subtask_admission`` strategy (module docstring).

    Loads the judge once per process (``config`` default ``STRATEGY_JUDGE_CONFIG``), runs
    the smoke gates for both instructions (``SmokeTestError`` naming the failed gate) and
    opens the score cache (``state_dir()/judge_scores.sqlite``). ``calibration_tasks`` are
    ignored (the floors are fixed). ``extra`` holds, per proposal id, its follows and echo
    scores (logits) and the decision's reason (``admitted``, ``does_not_follow``, ``echo``).
    """
    from junction.judge.cache import judge_documents
    from junction.judge.instructions import ECHO_INSTRUCTION, FOLLOWS_INSTRUCTION
    from junction.judge.session import judge_session
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG

    session = judge_session(config or STRATEGY_JUDGE_CONFIG,
                            (FOLLOWS_INSTRUCTION, ECHO_INSTRUCTION), use_cache)
    judge, cache = session.judge, session.cache

    # ``admit_subtasks`` compares every score with a floor: the proposals and the objective
    # are taken to be non-empty text, so the judge scores each (no ``None``)
    def follows(query: str, documents: Sequence[str]) -> list[float]:
        return cast(list[float],
                    judge_documents(judge, cache, query, documents, FOLLOWS_INSTRUCTION).scores)

    def echo(query: str, documents: Sequence[str]) -> list[float]:
        return cast(list[float],
                    judge_documents(judge, cache, query, documents, ECHO_INSTRUCTION).scores)

    def strategy(view: RouterView, pool: PoolRequest) -> StrategyResult:
        pools = candidate_pools(view, pool)
        pools = CandidatePools(contexts=pools.contexts, tools=[])
        contexts = [view.context(c.resource_id) for c in pools.contexts]
        decisions = admit_subtasks([c.content for c in contexts], view.objective,
                                   [view.objective], follows, echo, FOLLOW_FLOOR, ECHO_FLOOR)
        admitted = [c.id for c, d in zip(contexts, decisions, strict=True) if d.admitted]
        selection = make_selection("subtask_admission", joint_problem(view, pools), admitted,
                                   [], status="heuristic")
        return StrategyResult(selection=selection, pools=pools, extra={
            "subtask_decisions": {c.id: {"follows": round(d.follows, 6),
                                         "echo": round(d.echo, 6), "reason": d.reason}
                                  for c, d in sorted(zip(contexts, decisions, strict=True),
                                                     key=lambda p: p[0].id)},
            "follow_floor": FOLLOW_FLOOR, "echo_floor": ECHO_FLOOR,
            "model_hash": judge.model_hash,
            "follows_instruction_hash": judge.instruction_hash(FOLLOWS_INSTRUCTION),
            "echo_instruction_hash": judge.instruction_hash(ECHO_INSTRUCTION),
        })

    return FunctionStrategy(strategy)
