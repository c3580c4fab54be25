"""Reference strategies: BFCL's own setting, the whole pool and τ's coupling pair, outside
the budget.

They give agent success a scale; neither respects the task's budget (``respects_budget``
is False; the report shows them apart and the headline never names one best):

- ``bfcl_listed``: what BFCL's own setting gives the model: the row's own listed
  functions (``task.metadata["listed_tool_ids"]``, set by the BFCL suite builders), where
  the listing itself tells the agent which few functions matter, and on a memory row
  (``metadata["bfcl_category"] == "memory"``) also every context of the task: the
  scenario's whole prior conversation, which BFCL's memory run replays to the model
  before it asks the question (``listed_context_ids``);
- ``all_tools``: every tool of the task's pool (the row's functions and the distractors),
  no context;
- ``gold_minimal``, the ceiling on τ-Knowledge: the cheapest set the task's verifier
  accepts (``junction.verifiers.cheapest_success_set``: the gold tools and the cheapest
  required documents naming them) where it fits the task's budget, and nothing where it
  does not; so its retrieval success is the share of tasks a budgeted selector could win,
  at every budget scale;
- ``gold_tools_only`` and ``gold_tools_documents``, the coupling pair on τ-Knowledge: the
  same tools (the task's gold tools and their look-alike siblings,
  ``junction.agent.tau2_grading.siblings``), without and with the documents that name
  them (the contexts of the task's ``gold_pairs``). The agent's paired difference between
  the two is what a document is worth to that model, whatever a selector does.

A reference reads the task (the listing is not in the router view), so it is called as
``select(task, pool)``; its candidate pools are the whole lanes ranked by ``pool``'s rule
(its limit is ignored), so every exposed resource is a candidate. A whole prior
conversation can exceed the agent's context window; the agent, not the reference, then
keeps the most recent turns that fit (``junction.agent.prompt.fit_prompt``), so the exposed
set stays BFCL's.
"""

from __future__ import annotations

from collections.abc import Callable

from junction.candidates import PoolLimit, PoolRequest, candidate_pools
from junction.errors import JunctionError
from junction.select import Selection
from junction.strategies.base import StrategyResult
from junction.tasks import BenchmarkTask
from junction.verifiers import cheapest_success_set

__all__ = ["ReferenceStrategy", "gold_minimal_set", "gold_tools_and_siblings",
           "listed_context_ids", "listed_tool_ids", "naming_documents"]


def listed_tool_ids(task: BenchmarkTask) -> tuple[str, ...]:
    """The row's own listed functions; ``JunctionError`` naming the task if it has none."""
    listed = task.metadata.get("listed_tool_ids")
    if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
        raise JunctionError(f"task {task.task_id!r} has no metadata['listed_tool_ids']: "
                            "bfcl_listed runs on BFCL suites only")
    return tuple(sorted(listed))


def listed_context_ids(task: BenchmarkTask) -> tuple[str, ...]:
    """The contexts BFCL's setting shows the model: on a memory row every context of the
    task (its scenario's prior conversation, task order), elsewhere none."""
    if task.metadata.get("bfcl_category") == "memory":
        return tuple(c.id for c in task.contexts)
    return ()


def _none(task: BenchmarkTask) -> tuple[str, ...]:
    return ()


class ReferenceStrategy:
    """A reference: ``select(task, pool) -> StrategyResult`` (module docstring)."""

    respects_budget = False

    def __init__(self, name: str, choose: Callable[[BenchmarkTask], tuple[str, ...]],
                 choose_contexts: Callable[[BenchmarkTask], tuple[str, ...]] = _none) -> None:
        self.name = name
        self._choose = choose
        self._choose_contexts = choose_contexts

    def select(self, task: BenchmarkTask, pool: PoolRequest | PoolLimit) -> StrategyResult:
        """The reference's exposed set for ``task`` (not its router view: the catalog's
        ``reads_task``), with whole-lane candidate pools; ``JunctionError`` when given a
        router view."""
        if not isinstance(task, BenchmarkTask):
            raise JunctionError(f"{self.name} is a reference strategy: it reads the task, "
                                "call select(task, pool)")
        tool_ids = tuple(sorted(self._choose(task)))
        context_ids = tuple(sorted(self._choose_contexts(task)))
        pools = candidate_pools(task.router_view(), PoolRequest(None, PoolRequest.of(pool).rule))
        tokens = (sum(task.tool(t).token_cost for t in tool_ids)
                  + sum(task.context(c).token_cost for c in context_ids))
        selection = Selection(strategy=self.name, context_ids=context_ids, tool_ids=tool_ids,
                              tokens_used=tokens, unary=0.0, interaction=0.0, objective=0.0,
                              status="reference")
        return StrategyResult(selection=selection, pools=pools,
                              extra={"reference": True, "respects_budget": False})

    def artifacts(self) -> list:
        """Nothing: a reference fits nothing."""
        return []


def make_bfcl_listed() -> ReferenceStrategy:
    """``bfcl_listed``: the row's own listed functions, and on a memory row its prior
    conversation (module docstring)."""
    return ReferenceStrategy("bfcl_listed", listed_tool_ids, listed_context_ids)


def make_all_tools() -> ReferenceStrategy:
    """``all_tools``: every tool of the task's pool."""
    return ReferenceStrategy("all_tools", lambda task: tuple(t.id for t in task.tools))


def gold_tools_and_siblings(task: BenchmarkTask) -> tuple[str, ...]:
    """The task's gold tools and every look-alike sibling of one of them among its tools
    (``junction.agent.tau2_grading.siblings``); none for a task without a gold tool."""
    from junction.agent.tau2_grading import siblings

    ids = [t.id for t in task.tools]
    return tuple(sorted({*task.gold_tool_ids,
                         *(s for g in task.gold_tool_ids for s in siblings(g, ids))}))


def naming_documents(task: BenchmarkTask) -> tuple[str, ...]:
    """The contexts of the task's ``gold_pairs``: its required documents that name one of
    its gold tools."""
    return tuple(sorted({p.context_id for p in task.gold_pairs}))


def make_gold_tools_only() -> ReferenceStrategy:
    """``gold_tools_only``: the gold tools and their siblings, no document."""
    return ReferenceStrategy("gold_tools_only", gold_tools_and_siblings)


def make_gold_tools_documents() -> ReferenceStrategy:
    """``gold_tools_documents``: the same tools and the documents naming them."""
    return ReferenceStrategy("gold_tools_documents", gold_tools_and_siblings, naming_documents)


def gold_minimal_set(task: BenchmarkTask) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(context ids, tool ids) of ``gold_minimal`` on ``task`` (its budget as evaluated):
    the cheapest set its verifier accepts where that set fits the budget, else nothing.
    Raises ``JunctionError`` naming the task when its verifier kind has no cheapest set
    (``junction.verifiers.cheapest_success_set``)."""
    cheapest = cheapest_success_set(task)
    if cheapest is None:
        raise JunctionError(f"task {task.task_id!r}: gold_minimal needs a verifier graded on "
                            f"gold exposure, not {task.verifier.kind!r}")
    contexts, tools = cheapest
    fits = task.budget.check([task.context(c) for c in contexts],
                             [task.tool(t) for t in tools]).fits
    return (contexts, tools) if fits else ((), ())


def make_gold_minimal() -> ReferenceStrategy:
    """``gold_minimal``: the cheapest accepted set where it fits the budget (the ceiling)."""
    return ReferenceStrategy("gold_minimal", lambda task: gold_minimal_set(task)[1],
                             lambda task: gold_minimal_set(task)[0])
