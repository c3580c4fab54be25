"""What runs in a worker: one unit of work, and the per-process caches it draws on.

A worker process (a thread of this one, or a Dask process) keeps one strategy instance
per name (a judge loads its model once) and one agent executor per (model, url), made on
first use and shared by every unit that process runs.
"""

from __future__ import annotations

import threading
from typing import Any

from flows import interrupts, run_log
from junction.candidates import DEFAULT_POOL_RULE
from junction.evaluate import evaluate_batch
from junction.evidence.store import TraceStore
from junction.learned.crossfit import CrossFitFold
from junction.strategies import make_strategy
from junction_datasets import calibration_tasks, training_source

__all__ = ["run_unit_now", "agent_executor", "strategy_instance"]

_STRATEGIES: dict[str, tuple[Any, threading.Lock]] = {}
_LOCK = threading.Lock()
_AGENTS: dict[tuple[str | None, str | None, int | None], Any] = {}


def agent_executor(model: str | None, url: str | None = None, concurrency: int = 1,
                   context_tokens: int | None = None, timeout_s: float | None = None):
    """One agent executor per process and (model, url, context_tokens), loaded on first use,
    sharing the persistent generation cache ``state_dir()/agent_cache.sqlite``: the
    embedded ``llm`` one, or with ``url`` the ``remote`` one (``junction.agent.remote``;
    ``model`` is the server's model id, checked against the server's list when first made,
    and the server's context window learnt then: ``context_tokens``, or what the server
    reports; ``AgentError`` if the model is not listed or no window is known;
    ``timeout_s``: seconds one generation may take, None: ``RemoteAgentConfig``'s)."""
    from junction.agent.llm import LlamaAgent, LLMExecutor
    from junction.agent.generations import AgentCache
    from junction.environment import state_dir
    from junction.models import file_sha256, resolve_model_path

    with _LOCK:
        key = (model, url, context_tokens, timeout_s)
        if key not in _AGENTS:
            if url is not None:
                from junction.agent.remote import (RemoteAgent, RemoteAgentConfig,
                                                   RemoteExecutor, RemoteGenerationCache)

                remote = RemoteAgent(url, model, RemoteAgentConfig(
                    concurrency=concurrency, context_tokens=context_tokens,
                    **({} if timeout_s is None else {"timeout_s": float(timeout_s)})))
                remote.check_model()
                remote.check_window()
                _AGENTS[key] = RemoteExecutor(
                    remote, RemoteGenerationCache(state_dir() / "agent_cache.sqlite"))
            else:
                path = resolve_model_path(model)
                _AGENTS[key] = LLMExecutor(
                    LlamaAgent(path, file_sha256(path)),
                    AgentCache(state_dir() / "agent_cache.sqlite"))
        return _AGENTS[key]


def strategy_instance(name: str):
    """(strategy, call lock): one instance per process and name.

    Strategies that calibrate get the calibration split (``calibration_tasks``) and the
    learned ones each family's training part (``training_source``); no benchmark run
    evaluates either."""
    with _LOCK:
        if name not in _STRATEGIES:
            _STRATEGIES[name] = (make_strategy(name, calibration_tasks=calibration_tasks(),
                                               training=training_source()),
                                 threading.Lock())
        return _STRATEGIES[name]


def run_unit_now(root: str, run_id: str, suite: str, strategy: str, seed: int, scale: float,
                 unit: str, tasks: list, pool_limit: int | None,
                 agent_task_ids: tuple[str, ...] = (),
                 agent_model: str | None = None, agent_url: str | None = None,
                 agent_concurrency: int = 1,
                 agent_context_tokens: int | None = None,
                 repetition: int | None = None, fold: int | None = None,
                 folds: int | None = None, pool: str = DEFAULT_POOL_RULE,
                 agent_timeout: float | None = None) -> dict[str, Any]:
    """Evaluate one unit and write its files, unless its trace file already exists.

    On a cross-fitted suite ``repetition`` is the run's seed; a learned strategy's unit also
    names its ``fold`` of ``folds``, and the strategy is bound to it
    (``LearnedStrategy.for_fold``: its model is fitted on the other folds). ``pool`` is the
    run's pool rule (``junction.candidates.POOL_RULES``).

    The agent (``agent_model``: None = the embedded default; with ``agent_url`` the model
    id on that server, ``agent_concurrency`` requests at once, ``agent_context_tokens`` its
    window, None: as the server reports it) acts on ``agent_task_ids``;
    it is loaded only when one of them is in the unit. Returns {unit, skipped, tasks} and,
    for a unit it ran, successes and the learned-model files it wrote. A unit that starts
    after a stop was asked (``flows.interrupts``), or ends its work once the process has
    begun to exit, writes nothing and returns {unit, cancelled: True}."""
    run_log.route_worker()  # a local Dask worker's records go to the run's log
    store = TraceStore(root)
    if interrupts.stop_requested():
        return {"unit": unit, "cancelled": True}
    if store.unit_done(run_id, suite, strategy, unit):
        return {"unit": unit, "skipped": True, "tasks": len(tasks)}
    strategy_fn, lock = strategy_instance(strategy)
    selecting = strategy_fn
    if fold is not None:
        if repetition is None or folds is None or not hasattr(strategy_fn, "for_fold"):
            raise ValueError(f"unit {unit}: a fold needs a repetition, a fold count and a "
                             f"learned strategy (got {strategy!r})")
        selecting = strategy_fn.for_fold(CrossFitFold(repetition, fold, folds))
    ids = frozenset(agent_task_ids) & {t.task_id for t in tasks}
    agent = agent_executor(agent_model, agent_url, agent_concurrency,
                           agent_context_tokens, agent_timeout) if ids else None
    with lock:
        records, timings = evaluate_batch(tasks, selecting, strategy, run_id, seed, scale,
                                          pool_limit, agent=agent, agent_task_ids=ids,
                                          repetition=repetition, fold=fold, pool=pool)
    with interrupts.unit_write() as allowed:
        if not allowed:
            return {"unit": unit, "cancelled": True}
        store.write_unit(run_id, suite, strategy, unit, records, timings)
        learned = [store.write_learned_model(m.family, m.sha256, m.record())
                   for m in strategy_fn.artifacts()]
    return {"unit": unit, "skipped": False, "tasks": len(tasks),
            "successes": sum(r.success for r in records),
            "learned_models": [p.rsplit("/", 1)[-1] for p in learned]}
