"""The strategy catalog: one record per strategy, as the metric catalog is for metrics.

A ``StrategyInfo`` says what a strategy *is*: its name, the factory that builds it, its
role, whether it sees interaction terms, whether it respects the budget, whether it claims
an optimal selection, and its place in the default benchmark (in it or not, its per-suite
task cap and budget scales). Verdicts, reports, the default plan and the CLI read roles
from here (``strategies_where``, ``reference_strategies`` ...; at call time, so a record
registered later counts); none of them names a strategy.

Adding a strategy is one module (its factory returns a ``Strategy``:
``junction.strategies.base``) plus one ``register_strategy(StrategyInfo(...))`` record;
docs/strategies.md, "Adding a strategy", shows one.

A factory is called once per worker process; it is imported on first use, since some load
a language model. ``calibration_tasks`` (tasks of a split the benchmark never evaluates)
reach the factories with ``needs_calibration``; a ``TrainingSource`` of each suite
family's training part reaches those with ``needs_training`` (the caller builds both: the
library holds no suite builders).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from typing_extensions import TypeIs

from junction.registry import PLUGINS, Catalog, load
from junction.strategies.base import AnyStrategy, TaskStrategy

if TYPE_CHECKING:  # the learned strategies' module is built from the catalog's records
    from junction.strategies.learned import TrainingSource
from junction.tasks import BenchmarkTask

__all__ = [
    "ROLES",
    "STRATEGIES",
    "Role",
    "StrategyInfo",
    "default_strategies",
    "interaction_blind_strategies",
    "learned_strategies",
    "make_strategy",
    "reads_task",
    "reference_strategies",
    "register_strategy",
    "strategies_where",
    "strategy_info",
    "strategy_names",
]

Role = Literal["joint", "split", "judge", "learned", "reference", "page"]
ROLES: dict[str, str] = {
    "joint": "chooses contexts and tools together on the objective with interaction terms",
    "split": "ranks contexts and tools each alone and splits the token budget between them",
    "judge": "admits candidates a language-model judge says yes to",
    "learned": "selects on utilities (and pairs) learned from a suite family's training rows",
    "reference": "a fixed exposed set outside the budget that gives agent success a scale",
    "page": "admits a page's best chunks verbatim, top-K inside the token budget",
}
"""What each role means, in one line (reports read it)."""


@dataclass(frozen=True)
class StrategyInfo:
    """One strategy: what it is, how it is built, and its place in the default run.

    ``factory``: ``"module:function"`` (imported on first use) or a callable; called with
    ``calibration_tasks=`` when ``needs_calibration``, ``training=`` when ``needs_training``,
    and ``options`` as keywords; returns a ``Strategy``.
    ``sees_interactions``: its objective has context–tool interaction terms.
    ``ranks_apart``: it ranks each type alone. The headline's sides come from these flags
    (``headline_side``): ``sees_interactions`` is the joint side; ``ranks_apart``, or the
    ``joint`` role without ``sees_interactions`` (a joint selector that ignores
    interactions), the interaction-blind side.
    ``claims_optimal``: its selections carry a solver status (the report counts those not
    proven optimal). ``reads_task``: it is given the ``BenchmarkTask`` (a reference reads
    the row's listing), not the router view; such strategies run on the suites whose
    record (``junction.suites.SuiteInfo``) has the same ``reference_set``.
    ``default_size``: its cap on tasks per suite in the default run (None: the suite's);
    ``default_scales``: its budget scales in the default run (None: the run's grid).
    ``colour`` and ``marker``: how every figure draws it (a matplotlib colour name and
    marker; a reference is drawn dashed), the same in every panel.
    ``split_twin``: for a joint strategy, the split strategy on the same unary utilities
    that the joint-versus-split verdict compares it with (``junction.evidence.joint_split``).
    ``documents_twin``: for a reference that adds documents to a tool set, the reference
    with the same tools and no document; their agent difference is the coupling value
    (``junction.evidence.agent_measures``).
    """

    name: str
    factory: str | Callable[..., AnyStrategy]
    role: Role
    description: str
    sees_interactions: bool = False
    respects_budget: bool = True
    ranks_apart: bool = False
    claims_optimal: bool = False
    reads_task: bool = False
    reference_set: str | None = None
    needs_calibration: bool = False
    needs_training: bool = False
    options: tuple[tuple[str, Any], ...] = ()
    in_default_run: bool = False
    default_size: int | None = None
    default_scales: tuple[float, ...] | None = None
    colour: str | None = None
    marker: str | None = None
    split_twin: str | None = None
    documents_twin: str | None = None

    @property
    def headline_side(self) -> Literal["joint", "interaction-blind"] | None:
        """The strategy's side in the headline (``junction.evidence.verdicts.headline``):
        ``"joint"`` when it sees interactions; ``"interaction-blind"`` when it respects the
        budget and either ranks each type alone or is a joint selector without interaction
        terms; None for the rest (judges, pages, references), compared one by one."""
        if self.sees_interactions:
            return "joint"
        if self.respects_budget and (self.ranks_apart or self.role == "joint"):
            return "interaction-blind"
        return None

    def build(self, calibration_tasks: Sequence[BenchmarkTask] = (),
              training: TrainingSource | None = None) -> AnyStrategy:
        """A ready ``Strategy`` (a ``TaskStrategy`` when ``reads_task``; see the class
        docstring for what the factory is given)."""
        factory = load(self.factory)
        kwargs: dict[str, Any] = dict(self.options)
        if self.needs_calibration:
            kwargs["calibration_tasks"] = tuple(calibration_tasks)
        if self.needs_training:
            kwargs["training"] = training
        return factory(**kwargs)


STRATEGIES: Catalog[StrategyInfo] = Catalog("strategy", "strategies", entry_points=PLUGINS)
"""The strategy catalog (``junction.registry.Catalog``)."""


def register_strategy(info: StrategyInfo, *, replace: bool = False) -> None:
    """Add a strategy to the catalog under ``info.name``. A name already registered is replaced
    only with ``replace=True`` (a plug-in's replacement is recorded in the run);
    ``junction.registry.PluginError`` or ``ValueError`` otherwise
    (``junction.registry.Catalog.register``)."""
    STRATEGIES.register(info.name, info, replace=replace)


def strategy_names() -> list[str]:
    """Catalogued strategy names, sorted."""
    return sorted(STRATEGIES)


def strategy_info(name: str) -> StrategyInfo:
    """The record for ``name``; ``UnknownNameError`` listing the valid names otherwise."""
    return STRATEGIES.get_record(name)


def strategies_where(**fields: Any) -> tuple[str, ...]:
    """Sorted names of the strategies whose record has every given field value
    (``strategies_where(role="reference")``); ``TypeError`` for a field no record has."""
    for key in fields:
        if key not in StrategyInfo.__dataclass_fields__:
            raise TypeError(f"StrategyInfo has no field {key!r}")
    return tuple(n for n in strategy_names()
                 if all(getattr(STRATEGIES[n], k) == v for k, v in fields.items()))


def default_strategies() -> tuple[str, ...]:
    """The default benchmark's strategies (``in_default_run``), sorted."""
    return strategies_where(in_default_run=True)


def reference_strategies() -> tuple[str, ...]:
    """Strategies outside the budget (``respects_budget=False``), sorted: reports show them
    apart, never name them best, and figures draw them dashed."""
    return strategies_where(respects_budget=False)


def interaction_blind_strategies() -> tuple[str, ...]:
    """Strategies that ignore context–tool interactions inside the budget, sorted: the
    headline's interaction-blind side (``StrategyInfo.headline_side``: those that rank
    each type alone, ``ranks_apart``, and joint selectors without interaction terms)."""
    return tuple(n for n in strategy_names()
                 if STRATEGIES[n].headline_side == "interaction-blind")


def reads_task(strategy: AnyStrategy, name: str) -> TypeIs[TaskStrategy]:
    """Whether ``strategy``, built from the record ``name``, is given the ``BenchmarkTask``
    (its record's ``reads_task``: a reference) rather than the router view; an unregistered
    name reads the view."""
    info = STRATEGIES.get(name)
    return info is not None and info.reads_task


def learned_strategies() -> tuple[str, ...]:
    """Strategies of the ``learned`` role, sorted: their traces carry ``learned_p``."""
    return strategies_where(role="learned")


def make_strategy(name: str, calibration_tasks: Sequence[BenchmarkTask] = (),
                  training: TrainingSource | None = None) -> AnyStrategy:
    """A ready ``Strategy`` (or ``TaskStrategy``) for ``name`` (``StrategyInfo.build``).

    ``training``: a ``junction.strategies.learned.TrainingSource`` or None
    (``judge_admission`` raises ``AdmissionError`` without calibration tasks unless built
    with a fixed floor; the learned strategies keep the tasks' own utilities without a
    training source). Raises ``UnknownNameError`` listing the valid names.
    """
    return strategy_info(name).build(calibration_tasks=calibration_tasks, training=training)


_M = "junction.strategies."
for _info in (
    StrategyInfo("exact", _M + "exact:make_exact_strategy", "joint",
                 "the joint objective with context–tool interaction terms, solved exactly",
                 sees_interactions=True, claims_optimal=True, in_default_run=True,
                 colour="tab:blue", marker="o", split_twin="adaptive_split"),
    StrategyInfo("fixed_split", _M + "splits:make_fixed_split_strategy", "split",
                 "first-stage rank per type, a fixed share of the budget each",
                 ranks_apart=True, in_default_run=True,
                 colour="tab:orange", marker="s"),
    StrategyInfo("adaptive_split", _M + "splits:make_adaptive_split_strategy", "split",
                 "first-stage rank per type, the budget split where the ranked utilities say",
                 ranks_apart=True, in_default_run=True,
                 colour="tab:green", marker="^"),
    # The judge scores every candidate with a llama.cpp model: a few tasks per suite at one
    # scale keep the default run inside its time (docs/measurement.md, "The default
    # benchmark (`make bench`)").
    StrategyInfo("judge_admission", _M + "judge_admission:make_judge_admission_strategy",
                 "judge", "first stage, then a yes/no judge on llama.cpp",
                 needs_calibration=True, in_default_run=True, default_size=4,
                 default_scales=(1.0,),
                 colour="tab:red", marker="D"),
    StrategyInfo("judge_top_k", _M + "page_admission:make_judge_top_k_strategy", "page",
                 "a page's chunks the judge scores best, top-K inside the budget",
                 needs_calibration=True,
                 colour="tab:pink", marker=">"),
    StrategyInfo("bm25_top_k", _M + "page_admission:make_bm25_top_k_strategy", "page",
                 "a page's chunks BM25 scores best, top-K inside the budget",
                 options=(("pool", "bm25"),),
                 colour="tab:olive", marker="p"),
    StrategyInfo("subtask_admission", _M + "subtask_admission:make_subtask_admission_strategy",
                 "judge", "proposed sub-tasks the judge says follow from the task and do "
                 "not echo it", needs_calibration=True,
                 colour="tab:cyan", marker="h"),
    # References ignore the budget, so one scale says all they can.
    StrategyInfo("bfcl_listed", _M + "references:make_bfcl_listed", "reference",
                 "the row's own listed functions: BFCL's setting",
                 respects_budget=False, reads_task=True, reference_set="bfcl",
                 in_default_run=True, default_scales=(1.0,),
                 colour="black", marker="x"),
    # Not in the default run: its agent sample alone took half of the default run's agent
    # time (docs/measurement.md, "The default benchmark (`make bench`)"); make
    # bench-nightly runs it.
    StrategyInfo("all_tools", _M + "references:make_all_tools", "reference",
                 "every tool of the task's pool", respects_budget=False, reads_task=True,
                 reference_set="bfcl", default_scales=(1.0,),
                 colour="tab:gray", marker="+"),
    # τ-Knowledge's coupling pair: the same tools without and with the documents
    # naming them; make bench-tau2-agent runs them.
    StrategyInfo("gold_tools_only", _M + "references:make_gold_tools_only", "reference",
                 "τ: the gold tools and their look-alike siblings, no document",
                 respects_budget=False, reads_task=True, reference_set="tau2",
                 default_scales=(1.0,), colour="darkgray", marker="1"),
    StrategyInfo("gold_tools_documents", _M + "references:make_gold_tools_documents",
                 "reference", "τ: the same tools and the required documents naming them",
                 respects_budget=False, reads_task=True, reference_set="tau2",
                 default_scales=(1.0,), colour="darkgoldenrod", marker="2",
                 documents_twin="gold_tools_only"),
    # τ-Knowledge's ceiling: the cheapest set the verifier accepts where it fits the budget,
    # at every scale of the run; make bench-tau2 runs it.
    StrategyInfo("gold_minimal", _M + "references:make_gold_minimal", "reference",
                 "τ: the gold tools and the cheapest documents naming them, where they fit "
                 "the budget (the ceiling)",
                 respects_budget=False, reads_task=True, reference_set="tau2",
                 colour="goldenrod", marker="*"),
    StrategyInfo("learned_exact", _M + "learned:make_learned_strategy", "learned",
                 "the exact joint selector on learned unaries and learned pairs",
                 sees_interactions=True, claims_optimal=True, needs_training=True,
                 options=(("joint", True),), split_twin="learned_split",
                 colour="tab:purple", marker="v"),
    StrategyInfo("learned_named", _M + "learned:make_learned_strategy", "learned",
                 "the exact joint selector on learned unaries and learned pairs, over its "
                 "own pools: BM25 with every document naming a pooled tool added (pool rule "
                 "bm25_named, whatever the run's)",
                 sees_interactions=True, claims_optimal=True, needs_training=True,
                 options=(("joint", True), ("pool", "bm25_named")),
                 colour="magenta", marker="X"),
    # In the default run: its relevance fit takes seconds, not the λ × τ grid's minutes
    # (docs/measurement.md, "The default benchmark (`make bench`)").
    StrategyInfo("learned_coverage", _M + "coverage:make_coverage_strategy", "learned",
                 "each likely tool exposed with a document naming it, on learned p(gold): "
                 "the log-probability that no needed tool is left unusable, solved exactly "
                 "(HiGHS), over its own pools (pool rule bm25_named, whatever the run's)",
                 sees_interactions=True, claims_optimal=True, needs_training=True,
                 options=(("pool", "bm25_named"),), in_default_run=True,
                 colour="teal", marker="P"),
    StrategyInfo("learned_split", _M + "learned:make_learned_strategy", "learned",
                 "the adaptive split on the same learned unaries",
                 ranks_apart=True, needs_training=True, options=(("joint", False),),
                 colour="tab:brown", marker="<"),
):
    register_strategy(_info)
