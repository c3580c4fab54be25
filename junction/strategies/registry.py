"""The strategy registry: name -> factory of a ready strategy.

A factory is called once per worker process as ``factory(calibration_tasks=...,
training=...)``; ``calibration_tasks`` are tasks of a split the benchmark never evaluates
and ``training`` a ``TrainingSource`` of each suite family's training part (the caller
builds both: the library holds no suite builders). Strategies that learn nothing ignore
them; ``judge_admission`` calibrates its admission floor on the first, ``learned_exact``
and ``learned_split`` fit their models on the second.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from junction.errors import UnknownNameError
from junction.strategies.base import Strategy
from junction.tasks import BenchmarkTask

__all__ = [
    "STRATEGY_FACTORIES",
    "StrategyFactory",
    "make_strategy",
    "register_strategy",
    "strategy_factory",
    "strategy_names",
]

StrategyFactory = Callable[..., Strategy]
"""``factory(calibration_tasks: Sequence[BenchmarkTask], training: TrainingSource | None)
-> Strategy``."""

STRATEGY_FACTORIES: dict[str, StrategyFactory] = {}


def register_strategy(name: str, factory: StrategyFactory) -> None:
    """Register a strategy factory (called once per worker; may load a model)."""
    STRATEGY_FACTORIES[name] = factory


def strategy_names() -> list[str]:
    """Registered strategy names, sorted."""
    return sorted(STRATEGY_FACTORIES)


def strategy_factory(name: str) -> StrategyFactory:
    """The registered factory for ``name``; ``UnknownNameError`` listing the valid names."""
    try:
        return STRATEGY_FACTORIES[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown strategy {name!r}; valid strategies: {', '.join(strategy_names())}"
        ) from None


def make_strategy(name: str, calibration_tasks: Sequence[BenchmarkTask] = (),
                  training: Any = None) -> Strategy:
    """A ready strategy callable ``(view, pool_limit) -> StrategyResult``.

    ``calibration_tasks`` and ``training`` (a ``junction.strategies.learned.TrainingSource``
    or None): see the module docstring (``judge_admission`` raises ``AdmissionError``
    without calibration tasks unless built with a fixed floor; the learned strategies keep
    the tasks' own utilities without a training source). Raises ``UnknownNameError``
    listing the valid names.
    """
    return strategy_factory(name)(calibration_tasks=tuple(calibration_tasks), training=training)


def _exact(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.exact import make_exact_strategy

    return make_exact_strategy()


def _fixed_split(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.splits import make_fixed_split_strategy

    return make_fixed_split_strategy()


def _adaptive_split(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.splits import make_adaptive_split_strategy

    return make_adaptive_split_strategy()


def _judge_admission(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    # Imported on first use: it loads a language model (once per worker process).
    from junction.strategies.judge_admission import make_judge_admission_strategy

    return make_judge_admission_strategy(calibration_tasks=calibration_tasks)


def _judge_top_k(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    # Imported on first use: it loads a language model (once per worker process).
    from junction.strategies.page_admission import make_judge_top_k_strategy

    return make_judge_top_k_strategy(calibration_tasks=calibration_tasks)


def _bm25_top_k(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.page_admission import make_bm25_top_k_strategy

    return make_bm25_top_k_strategy()


def _subtask_admission(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    # Imported on first use: it loads a language model (once per worker process).
    from junction.strategies.subtask_admission import make_subtask_admission_strategy

    return make_subtask_admission_strategy(calibration_tasks=calibration_tasks)


def _bfcl_listed(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.references import make_bfcl_listed

    return make_bfcl_listed()


def _all_tools(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.references import make_all_tools

    return make_all_tools()


def _learned_exact(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.learned import make_learned_strategy

    return make_learned_strategy(joint=True, training=training)


def _learned_split(calibration_tasks: Sequence[BenchmarkTask] = (), training: Any = None) -> Strategy:
    from junction.strategies.learned import make_learned_strategy

    return make_learned_strategy(joint=False, training=training)


register_strategy("exact", _exact)
register_strategy("fixed_split", _fixed_split)
register_strategy("adaptive_split", _adaptive_split)
register_strategy("judge_admission", _judge_admission)
register_strategy("judge_top_k", _judge_top_k)
register_strategy("bm25_top_k", _bm25_top_k)
register_strategy("subtask_admission", _subtask_admission)
register_strategy("bfcl_listed", _bfcl_listed)
register_strategy("all_tools", _all_tools)
register_strategy("learned_exact", _learned_exact)
register_strategy("learned_split", _learned_split)
