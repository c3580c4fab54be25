"""The joint objective, selection problems, the ``Selection`` record and feasibility.

For a subset S = C ∪ T (contexts C, tools T) that fits the budget:

    objective(S) = Σ_{r∈S} u(r) + Σ_{c∈C, t∈T} [w(c,t) + w(t,c)]

u is unary utility (absent = 0), w interaction scores keyed by ordered pairs (absent = 0).
Sums are taken with ``math.fsum`` so the value does not depend on input order.

Tie-breaking rule (shared by every exact selector): among feasible subsets whose objective
is within ``OBJECTIVE_TOLERANCE`` of the best, prefer (1) fewer tokens used, (2) fewer
resources, (3) the lexicographically smallest sorted context-id tuple, (4) the
lexicographically smallest sorted tool-id tuple.

Feasibility: a set fits when ``exceeded_limit`` returns None: the size cap, then
``Budget.check`` (junction/budget.py, the one definition of the budget arithmetic).
Searches that keep running latency and cost sums decide with ``FloatBand`` and ask
``exceeded_limit`` whenever a running sum is too close to a limit to tell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from junction.budget import Budget, float_total
from junction.errors import SelectionError
from junction.resources import ContextResource, ToolResource

__all__ = [
    "OBJECTIVE_TOLERANCE",
    "FloatBand",
    "JointProblem",
    "Selection",
    "Selector",
    "check_pool",
    "check_selector_options",
    "exceeded_limit",
    "make_selection",
    "objective_terms",
    "tie_break_key",
]

Resource = ContextResource | ToolResource

OBJECTIVE_TOLERANCE = 1e-9
"""Objectives closer than this are ties (absolute, unitless)."""


def check_pool(contexts: Sequence[ContextResource], tools: Sequence[ToolResource],
               max_size: int | None) -> None:
    """A problem's candidate pool and size cap, as every problem type checks them.

    Raises ``SelectionError`` for an id used twice across ``contexts`` and ``tools`` or a
    ``max_size`` below 0."""
    seen: set[str] = set()
    pool: tuple[Resource, ...] = (*contexts, *tools)
    for r in pool:
        if r.id in seen:
            raise SelectionError(f"duplicate resource id {r.id!r} in candidate pool")
        seen.add(r.id)
    if max_size is not None and max_size < 0:
        raise SelectionError(f"max_size must be >= 0, got {max_size}")


@dataclass(frozen=True)
class JointProblem:
    """One selection problem: candidate pool, utilities and the shared budget.

    - ``contexts`` / ``tools``: the candidate pool (ids unique across both)
    - ``unary``: resource id -> unary utility u (absent = 0)
    - ``interactions``: (id_a, id_b) -> w (ordered pair; absent = 0)
    - ``max_size``: optional cap on |S|

    Raises ``SelectionError`` on duplicate ids or a non-finite score.
    """

    contexts: tuple[ContextResource, ...]
    tools: tuple[ToolResource, ...]
    budget: Budget
    unary: Mapping[str, float] = field(default_factory=dict)
    interactions: Mapping[tuple[str, str], float] = field(default_factory=dict)
    max_size: int | None = None

    def __post_init__(self) -> None:
        check_pool(self.contexts, self.tools, self.max_size)
        for rid, value in self.unary.items():
            if not math.isfinite(value):
                raise SelectionError(f"unary[{rid!r}] must be finite, got {value!r}")
        for pair, value in self.interactions.items():
            if not math.isfinite(value):
                raise SelectionError(f"interactions[{pair!r}] must be finite, got {value!r}")

    def u(self, resource_id: str) -> float:
        return self.unary.get(resource_id, 0.0)

    def pair(self, context_id: str, tool_id: str) -> float:
        """w(c,t) + w(t,c) for one context and one tool."""
        return self.interactions.get((context_id, tool_id), 0.0) + self.interactions.get(
            (tool_id, context_id), 0.0
        )


def objective_terms(
    problem: JointProblem, context_ids: Iterable[str], tool_ids: Iterable[str]
) -> tuple[float, float]:
    """(unary total, interaction total) of a subset; the objective is their sum."""
    cs = sorted(context_ids)
    ts = sorted(tool_ids)
    unary = math.fsum(problem.u(r) for r in (*cs, *ts))
    interaction = math.fsum(problem.pair(c, t) for c in cs for t in ts)
    return unary, interaction


def tie_break_key(
    tokens_used: int, context_ids: Sequence[str], tool_ids: Sequence[str]
) -> tuple:
    """Secondary key among objective ties (smaller wins); see the module docstring."""
    return (tokens_used, len(context_ids) + len(tool_ids), tuple(sorted(context_ids)),
            tuple(sorted(tool_ids)))


class Selection(BaseModel):
    """A strategy's chosen exposed set and its objective.

    ``tokens_used`` in tokens; ``unary``, ``interaction`` and ``objective`` unitless.
    ``status``: ``optimal`` (proven), ``heuristic`` (no optimality claim), ``work_limit``
    (best found when the deterministic work limit hit; see ``gap``), ``stopped_by_clock``
    (best found when a wall-clock safety net hit: depends on the machine's speed),
    ``time_limit`` (the MILP reference's clock), ``infeasible`` (nothing fits; empty set).
    ``lp_iterations``: simplex iterations the branch and cut spent (its work limit counts
    them; 0 for searches without LPs). ``status`` has no default: a selector says what it
    claims (a heuristic that forgot it would otherwise claim optimality in its traces).
    """

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    strategy: str
    context_ids: tuple[str, ...]
    tool_ids: tuple[str, ...]
    tokens_used: int
    unary: float
    interaction: float
    objective: float
    subsets_examined: int = 0
    subsets_feasible: int = 0
    lp_iterations: int = 0
    status: str
    gap: float | None = None
    solve_time_ms: float | None = None

    @property
    def exposed_ids(self) -> tuple[str, ...]:
        return (*self.context_ids, *self.tool_ids)


def check_selector_options(max_size: object = None, time_limit_s: object = None,
                           work_limit: object = None) -> None:
    """Validate the options the exact selectors share; raises ``ValueError`` naming the
    option: ``max_size`` and ``work_limit`` (simplex iterations) must be integers >= 0 or
    None, ``time_limit_s`` (seconds) a number >= 0 or None."""
    if work_limit is not None and (isinstance(work_limit, bool)
                                   or not isinstance(work_limit, int) or work_limit < 0):
        raise ValueError(f"work_limit must be an integer >= 0 or None, got {work_limit!r}")
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                 or max_size < 0):
        raise ValueError(f"max_size must be an integer >= 0 or None, got {max_size!r}")
    if time_limit_s is not None and (isinstance(time_limit_s, bool)
                                     or not isinstance(time_limit_s, (int, float))
                                     or not time_limit_s >= 0):
        raise ValueError(f"time_limit_s must be >= 0 or None, got {time_limit_s!r}")


def make_selection(
    strategy: str,
    problem: JointProblem,
    context_ids: Iterable[str],
    tool_ids: Iterable[str],
    *,
    status: str,
    **extra: Any,
) -> Selection:
    """The ``Selection`` of the chosen ids on ``problem``: ids sorted, ``tokens_used`` the
    sum of their token costs, ``unary``/``interaction``/``objective`` the problem's terms
    (``objective_terms``). ``status`` (required: ``"optimal"`` only for a proven optimum,
    ``"heuristic"`` for a set chosen without that claim; see ``Selection``) and ``extra``
    (``gap``, ``subsets_examined``, ``solve_time_ms`` ...) are the ``Selection``'s fields.
    Raises ``KeyError`` for an id the problem's pools lack, ``ValidationError`` for a bad
    field. The set is not checked against the budget: ``exceeded_limit`` says which limit
    a set breaks."""
    cs = tuple(sorted(context_ids))
    ts = tuple(sorted(tool_ids))
    pool: tuple[Resource, ...] = (*problem.contexts, *problem.tools)
    by_id = {r.id: r for r in pool}
    unary, interaction = objective_terms(problem, cs, ts)
    return Selection(
        strategy=strategy,
        context_ids=cs,
        tool_ids=ts,
        tokens_used=sum(by_id[r].token_cost for r in (*cs, *ts)),
        unary=unary,
        interaction=interaction,
        objective=unary + interaction,
        status=status,
        **extra,
    )


def exceeded_limit(budget: Budget, resources: Iterable[Resource],
                   max_size: float | None = None) -> str | None:
    """The first limit the set ``resources`` breaks, or None if it fits.

    Checks ``max_size`` (|S| <= it; None: no cap) first, then ``budget.check`` (tokens
    over all resources, tool count, latency ms and cost USD over tools, in that order);
    returns ``"max_size"`` or the name of the ``Budget`` field broken."""
    resources = list(resources)
    if max_size is not None and len(resources) > max_size:
        return "max_size"
    check = budget.check([r for r in resources if not isinstance(r, ToolResource)],
                         [r for r in resources if isinstance(r, ToolResource)])
    return None if check.fits else check.failed[0]


@dataclass(frozen=True)
class FloatBand:
    """Latency and cost limits for searches that keep running sums (in any order).

    A running sum of k values >= 0 differs from their ``math.fsum`` by at most
    (k + 1) · 2^-53 · Σ (Higham 2002, §4.2), below ``slack`` = 1e-12 × the pool's total for
    any pool under 9,000 tools; so a running sum further than ``slack`` from a limit
    decides it as ``Budget.check`` would. ``decide`` returns None inside the band: the
    caller then asks ``exceeded_limit``. Limits in ms and USD (inf: none)."""

    max_latency_ms: float
    max_cost_usd: float
    latency_slack: float
    cost_slack: float

    @classmethod
    def of(cls, budget: Budget, tools: Iterable[ToolResource]) -> FloatBand:
        tools = list(tools)
        return cls(
            math.inf if budget.max_latency_ms is None else budget.max_latency_ms,
            math.inf if budget.max_cost_usd is None else budget.max_cost_usd,
            1e-12 * float_total(t.estimated_latency_ms for t in tools),
            1e-12 * float_total(t.estimated_cost_usd for t in tools),
        )

    def decide(self, latency_ms: float, cost_usd: float) -> bool | None:
        """True: both running sums fit; False: one is over; None: too close to tell."""
        if latency_ms > self.max_latency_ms + self.latency_slack or (
                cost_usd > self.max_cost_usd + self.cost_slack):
            return False
        if latency_ms <= self.max_latency_ms - self.latency_slack and (
                cost_usd <= self.max_cost_usd - self.cost_slack):
            return True
        return None


class Selector(Protocol):
    """Anything that turns a ``JointProblem`` into a ``Selection``."""

    name: str

    def select(self, problem: JointProblem) -> Selection: ...
