"""The shared budget: hard limits on what one exposed set may cost.

Visible tokens count contexts and tool schemas together; tool count, summed estimated
latency (ms) and summed estimated cost (USD) count tools only. ``None`` means unbounded.

This module holds the one definition of "does this set fit?" (``Budget.usage`` then
``Budget.check_usage``; ``Budget.check`` does both). Every selector and solver decides
feasibility through it (``junction.select.problem.exceeded_limit`` for a candidate set;
``junction.select.exact.reduction.BudgetArrays`` for the vectorised form, which screens with
numpy sums and hands every set near a limit to this definition). Summation rule: token
and tool counts are exact integer sums; latency and cost are summed with ``math.fsum``
(``float_total``): correctly rounded, so the answer depends on the set, never on the
order its members are listed or searched in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from junction.resources import ContextResource, ToolResource

__all__ = ["Budget", "BudgetCheck", "BudgetUsage", "float_total"]


def float_total(values: Iterable[float]) -> float:
    """The one float-summation rule of the budget arithmetic (latency ms, cost USD):
    ``math.fsum``, the correctly rounded sum, independent of the order of ``values``."""
    return math.fsum(values)


class BudgetUsage(BaseModel):
    """What a set of resources uses: tokens, tools, latency (ms), cost (USD)."""

    model_config = ConfigDict(frozen=True)

    tokens: int = 0
    context_tokens: int = 0
    tool_tokens: int = 0
    tools: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0


class BudgetCheck(BaseModel):
    """Answer to "does this set fit?": ``fits`` and the names of the limits that failed."""

    model_config = ConfigDict(frozen=True)

    fits: bool
    failed: tuple[str, ...] = ()
    usage: BudgetUsage


class Budget(BaseModel):
    """Hard limits; any may be ``None`` (unbounded).

    - ``max_tokens``: visible tokens, contexts + tool schemas together (int >= 0)
    - ``max_tools``: number of exposed tools (int >= 0)
    - ``max_latency_ms``: summed estimated tool latency, milliseconds (>= 0)
    - ``max_cost_usd``: summed estimated tool cost, US dollars (>= 0)
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_tokens: int | None = Field(default=None, ge=0)
    max_tools: int | None = Field(default=None, ge=0)
    max_latency_ms: float | None = Field(default=None, ge=0.0)
    max_cost_usd: float | None = Field(default=None, ge=0.0)

    @staticmethod
    def usage(contexts: Iterable[ContextResource], tools: Iterable[ToolResource]) -> BudgetUsage:
        """Sum the costs of ``contexts`` and ``tools``: tokens over both, tool count, latency
        (ms) and cost (USD) over tools; float sums by ``float_total`` (order-free)."""
        contexts = list(contexts)
        tools = list(tools)
        context_tokens = sum(c.token_cost for c in contexts)
        tool_tokens = sum(t.token_cost for t in tools)
        return BudgetUsage(
            tokens=context_tokens + tool_tokens,
            context_tokens=context_tokens,
            tool_tokens=tool_tokens,
            tools=len(tools),
            latency_ms=float_total(t.estimated_latency_ms for t in tools),
            cost_usd=float_total(t.estimated_cost_usd for t in tools),
        )

    def check_usage(self, usage: BudgetUsage) -> BudgetCheck:
        """Compare a precomputed usage with every limit (a limit holds when usage <= it;
        ``None`` always holds). ``failed`` lists the broken limits in the order tokens,
        tools, latency, cost."""
        failed = []
        if self.max_tokens is not None and usage.tokens > self.max_tokens:
            failed.append("max_tokens")
        if self.max_tools is not None and usage.tools > self.max_tools:
            failed.append("max_tools")
        if self.max_latency_ms is not None and usage.latency_ms > self.max_latency_ms:
            failed.append("max_latency_ms")
        if self.max_cost_usd is not None and usage.cost_usd > self.max_cost_usd:
            failed.append("max_cost_usd")
        return BudgetCheck(fits=not failed, failed=tuple(failed), usage=usage)

    def check(
        self, contexts: Iterable[ContextResource], tools: Iterable[ToolResource]
    ) -> BudgetCheck:
        """Does this set fit? Returns a ``BudgetCheck`` naming every limit that failed."""
        return self.check_usage(self.usage(contexts, tools))

    def scaled(self, factor: float) -> Budget:
        """This budget with ``max_tokens`` multiplied by ``factor`` (floored), other limits kept."""
        if self.max_tokens is None:
            return self
        return self.model_copy(update={"max_tokens": math.floor(self.max_tokens * factor)})
