"""The split baselines: rank contexts and tools alone, split the token budget.

``fixed_split`` reserves half the tokens for contexts; ``adaptive_split`` tries every
split on a 0.1 grid and keeps the best unary total. Neither sees interactions.
"""

from __future__ import annotations

from junction.select import AdaptiveSplitBaseline, FixedSplitBaseline
from junction.strategies.base import Strategy, selector_strategy

__all__ = ["make_adaptive_split_strategy", "make_fixed_split_strategy"]


def make_fixed_split_strategy() -> Strategy:
    """A ready ``fixed_split`` strategy (``FixedSplitBaseline`` with its defaults)."""
    return selector_strategy(FixedSplitBaseline())


def make_adaptive_split_strategy() -> Strategy:
    """A ready ``adaptive_split`` strategy (``AdaptiveSplitBaseline`` with its defaults)."""
    return selector_strategy(AdaptiveSplitBaseline())
