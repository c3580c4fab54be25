"""One unit of work, one record from plan to trace: ``UnitSpec`` (every parameter of a
unit but its tasks) and the agent it uses (``AgentSpec``).

``flows.plan.RunPlan.unit_spec`` makes them, ``flows.benchmark.plan_units`` lists them,
``flows.workers.run_unit_now`` takes them and ``junction.evaluate.evaluate_batch`` runs
one: no step unpacks a unit into positional arguments again.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict

from junction.candidates import DEFAULT_POOL_RULE

__all__ = ["AgentSpec", "StrictInt", "UnitSpec"]

StrictInt = Annotated[int, Strict()]
"""An int field that refuses a bool, a float or a numeric string (pydantic strict mode)."""


class AgentSpec(BaseModel):
    """Which language-model agent acts on a unit's agent tasks: the key of the worker's
    executor (``flows.workers.agent_executor``).

    ``model``: a GGUF path or embedded model name (None: the default), or with ``url`` (an
    OpenAI-compatible base URL) the server's model id; ``concurrency``: requests in flight
    to that server; ``context_tokens``: its window in tokens (None: as it reports it);
    ``timeout_s``: seconds one generation may take (None:
    ``junction.agent.remote.RemoteAgentConfig.timeout_s``); ``check_timeout_s``: seconds
    each check of the server before the run may take (None: ``RemoteAgentConfig``'s);
    ``threads``: llama.cpp threads of the embedded agent (None: ``AgentConfig``'s)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    url: str | None = None
    concurrency: StrictInt = 1
    context_tokens: StrictInt | None = None
    timeout_s: float | None = None
    check_timeout_s: float | None = None
    threads: StrictInt | None = None


class UnitSpec(BaseModel):
    """One unit of work as the worker receives it (``flows.workers.run_unit_now``): every
    parameter but its tasks, which travel beside it unwalked (``flows.benchmark.TaskBatch``).

    ``root``: the traces root (the worker writes there; "" for a batch evaluated without a
    warehouse); ``run_id``; ``suite``/``strategy``: names; ``seed``: the suite's seed;
    ``scale``: the budget scale (× each task's own budget, tokens); ``unit``: the unit's
    name (its trace file's stem; "" likewise); ``pool_limit``: candidates per lane
    (``SuiteInfo.pool_limit``); ``agent_task_ids``: the tasks of the unit the agent acts on,
    with ``agent``; on a cross-fitted suite ``repetition`` (the run's seed) and, for a
    learned strategy, ``fold`` of ``folds``; ``pool``: the pool rule
    (``junction.candidates.POOL_RULES``); ``data_folders``: ``RunPlan.data_folders``, for
    the learned strategies' training rows; ``fit_search``: how their fits search λ × τ
    (``RunPlan.fit_search``). Built by the flow from the ``RunPlan``
    (``flows.plan.RunPlan.unit_spec``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    strategy: str
    seed: StrictInt
    scale: float
    pool_limit: int | tuple[int | None, int | None] | None
    root: str = ""
    suite: str = ""
    unit: str = ""
    agent_task_ids: tuple[str, ...] = ()
    agent: AgentSpec = AgentSpec()
    repetition: StrictInt | None = None
    fold: StrictInt | None = None
    folds: StrictInt | None = None
    pool: str = DEFAULT_POOL_RULE
    data_folders: dict[str, str] = Field(default_factory=dict)
    fit_search: str = "optimal"  # junction.learned.grid.OPTIMAL_SEARCH
