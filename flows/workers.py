"""What runs in a worker: one unit of work, and the per-process caches it draws on.

A worker process (a thread of this one, or a Dask process) keeps one strategy instance
per name and data folders (a judge loads its model once) and one agent executor per
``AgentSpec``, made on first use and shared by every unit that process runs. A unit
arrives as one typed ``junction.units.UnitSpec`` and its tasks.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any, cast

from junction_datasets import calibration_tasks, training_source

from flows import interrupts, run_log
from junction.evaluate import evaluate_batch
from junction.evidence.store import TraceStore
from junction.learned.crossfit import CrossFitFold
from junction.learned.grid import OPTIMAL_SEARCH
from junction.strategies import make_strategy, strategy_info
from junction.units import AgentSpec, UnitSpec

__all__ = ["agent_executor", "run_unit_now", "strategy_instance"]

_STRATEGIES: dict[tuple[str, tuple[tuple[str, str], ...], str], tuple[Any, threading.Lock]] = {}
_LOCK = threading.Lock()
_AGENTS: dict[AgentSpec, Any] = {}


def agent_executor(spec: AgentSpec):
    """One agent executor per process and ``spec`` (``junction.units.AgentSpec``), loaded on
    first use, sharing the persistent generation cache ``state_dir()/agent_cache.sqlite``:
    the embedded ``llm`` one, or with ``spec.url`` the ``remote`` one
    (``junction.agent.remote``; ``spec.model`` is the server's model id, checked against
    the server's list when first made, and the server's context window learnt then:
    ``spec.context_tokens``, or what the server reports; ``AgentError`` if the model is not
    listed or no window is known; ``spec.timeout_s``: seconds one generation may take,
    ``spec.check_timeout_s``: each of those checks, None: ``RemoteAgentConfig``'s;
    ``spec.threads``: the embedded agent's llama.cpp threads)."""
    from junction.agent.generations import AgentCache
    from junction.agent.llm import AgentConfig, LlamaAgent, LLMExecutor
    from junction.environment import state_dir
    from junction.models import file_sha256, resolve_model_path

    with _LOCK:
        if spec not in _AGENTS:
            if spec.url is not None:
                from junction.agent.remote import (
                    RemoteAgent,
                    RemoteAgentConfig,
                    RemoteExecutor,
                    RemoteGenerationCache,
                )

                limits: dict[str, Any] = {name: float(value) for name, value in (
                    ("timeout_s", spec.timeout_s), ("check_timeout_s", spec.check_timeout_s))
                    if value is not None}
                # a plan refuses --agent-url without --agent-model (RunPlan's checks)
                remote = RemoteAgent(spec.url, cast(str, spec.model), RemoteAgentConfig(
                    concurrency=spec.concurrency, context_tokens=spec.context_tokens,
                    **limits))
                remote.check_model()
                remote.check_window()
                _AGENTS[spec] = RemoteExecutor(
                    remote, RemoteGenerationCache(state_dir() / "agent_cache.sqlite"))
            else:
                path = resolve_model_path(spec.model)
                config = AgentConfig() if spec.threads is None else AgentConfig(
                    n_threads=spec.threads)
                _AGENTS[spec] = LLMExecutor(
                    LlamaAgent(path, file_sha256(path), config),
                    AgentCache(state_dir() / "agent_cache.sqlite"))
        return _AGENTS[spec]


def strategy_instance(name: str, data_folders: Mapping[str, str] | None = None,
                      fit_search: str = OPTIMAL_SEARCH):
    """(strategy, call lock): one instance per process, name, data folders and fit search.

    Strategies that calibrate get the calibration split (``calibration_tasks``) and the
    learned ones each family's training part (``training_source``, reading a suite's data
    from ``data_folders``: suite name -> folder, ``flows.plan.RunPlan.data_folders``; its
    fits searching by ``fit_search``, ``RunPlan.fit_search``); no benchmark run evaluates
    either."""
    key = (name, tuple(sorted((data_folders or {}).items())), fit_search)
    with _LOCK:
        if key not in _STRATEGIES:
            _STRATEGIES[key] = (make_strategy(name, calibration_tasks=calibration_tasks(),
                                              training=training_source(data_folders,
                                                                       fit_search)),
                                threading.Lock())
        return _STRATEGIES[key]


def run_unit_now(spec: UnitSpec, tasks: list) -> dict[str, Any]:
    """Evaluate the unit ``spec`` (``junction.units.UnitSpec``) on ``tasks`` and write its
    files, unless its trace file already exists.

    On a cross-fitted suite ``spec.repetition`` is the run's seed; a learned strategy's
    unit also names its ``fold`` of ``folds``, and the strategy is bound to it
    (``LearnedStrategy.for_fold``: its model is fitted on the other folds; ``ValueError``
    for a fold without a repetition, a fold count or a learned strategy). The agent
    (``spec.agent``) acts on ``spec.agent_task_ids``; it is loaded only when one of them is
    in the unit. Returns {unit, skipped, tasks} and, for a unit it ran, successes and the
    learned-model files it wrote. A unit that starts after a stop was asked
    (``flows.interrupts``), or ends its work once the process has begun to exit, writes
    nothing and returns {unit, cancelled: True}. A learned strategy's work (its model fit,
    then its selections) is ``interrupts.abandonable``: a Ctrl-C meanwhile ends the run at
    once rather than waiting for the fit."""
    run_log.route_worker()  # a local Dask worker's records go to the run's log
    store = TraceStore(spec.root)
    if interrupts.stop_requested():
        return {"unit": spec.unit, "cancelled": True}
    if store.unit_done(spec.run_id, spec.suite, spec.strategy, spec.unit):
        return {"unit": spec.unit, "skipped": True, "tasks": len(tasks)}
    strategy_fn, lock = strategy_instance(spec.strategy, spec.data_folders, spec.fit_search)
    selecting = strategy_fn
    if spec.fold is not None:
        if spec.repetition is None or spec.folds is None or not hasattr(strategy_fn,
                                                                         "for_fold"):
            raise ValueError(f"unit {spec.unit}: a fold needs a repetition, a fold count "
                             f"and a learned strategy (got {spec.strategy!r})")
        selecting = strategy_fn.for_fold(CrossFitFold(spec.repetition, spec.fold, spec.folds))
    ids = frozenset(spec.agent_task_ids) & {t.task_id for t in tasks}
    agent = agent_executor(spec.agent) if ids else None
    learned = strategy_info(spec.strategy).role == "learned"
    with interrupts.abandonable() if learned else contextlib.nullcontext(), lock:
        records, timings = evaluate_batch(tasks, selecting, spec, agent)
    with interrupts.unit_write() as allowed:
        if not allowed:
            return {"unit": spec.unit, "cancelled": True}
        store.write_unit(spec.run_id, spec.suite, spec.strategy, spec.unit, records, timings)
        learned_files = [store.write_learned_model(m.family, m.sha256, m.record())
                         for m in strategy_fn.artifacts()]
    return {"unit": spec.unit, "skipped": False, "tasks": len(tasks),
            "successes": sum(r.success for r in records),
            "learned_models": [p.rsplit("/", 1)[-1] for p in learned_files]}
