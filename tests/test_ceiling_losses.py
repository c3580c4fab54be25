"""The ceiling reference ``gold_minimal``, where retrieval success is lost, the grading of a
task with nothing to find, and the no-leak properties that keep every budgeted strategy
away from gold.

The hand task (``_task``), worked out here once:

- tools ``t_open`` (30 tokens), ``t_close`` (40), ``t_time`` (10, gold but named by no
  document), ``t_other`` (25, not gold);
- documents ``d_open`` (50) names ``t_open``; ``d_both`` (70 by default) names both;
  ``d_close`` (30) names ``t_close``; ``d_rules`` (5) is gold and names nothing;
  ``d_noise`` (8) is not gold;
- gold tools ``t_close``, ``t_open``, ``t_time``; gold pairs (d_open, t_open),
  (d_both, t_open), (d_both, t_close), (d_close, t_close).

The cheapest accepted set: the three gold tools (30 + 40 + 10 = 80 tokens) and the cheapest
documents naming both paired tools: {d_both} = 70 against {d_open, d_close} = 80, so
{d_both}, 150 tokens in all. With d_both at 80 the two covers tie at 80 and the sorted id
tuple that comes first wins: ("d_both",) < ("d_close", "d_open"); with d_both at 81,
{d_close, d_open} (80) is cheaper.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from junction_datasets import tau2_banking as tb

from junction.agent.execution import ExecutionResult
from junction.budget import Budget
from junction.candidates import POOL_RULES
from junction.errors import JunctionError
from junction.evaluate import evaluate_batch, scale_budget
from junction.evidence.losses import LOSS_CAUSES, loss_breakdown, loss_cause, loss_lines
from junction.evidence.reports import RunData, write_report
from junction.evidence.traces import records_to_table
from junction.resources import ContextResource, ToolResource
from junction.strategies.catalog import STRATEGIES, make_strategy, strategy_names
from junction.tasks import BenchmarkTask, GoldPair, VerifierSpec
from junction.units import UnitSpec
from junction.verifiers import cheapest_success_set, verify
from tests.helpers import trace_record
from tests.report_text import table_rows

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "tau2_fixture"


def _task(both_cost: int = 70, max_tokens: int = 150, gold_tools: tuple[str, ...] | None = None,
          pairs: tuple[tuple[str, str], ...] | None = None) -> BenchmarkTask:
    costs = {"d_open": 50, "d_both": both_cost, "d_close": 30, "d_rules": 5, "d_noise": 8}
    text = {"d_open": "use t_open to open", "d_both": "t_open then t_close",
            "d_close": "t_close closes", "d_rules": "the rules", "d_noise": "weather"}
    contexts = tuple(ContextResource(id=d, content=text[d], token_cost=c)
                     for d, c in costs.items())
    tools = tuple(ToolResource(id=t, description=f"{t} tool", schema_token_cost=c)
                  for t, c in (("t_open", 30), ("t_close", 40), ("t_time", 10),
                               ("t_other", 25)))
    pairs = (("d_open", "t_open"), ("d_both", "t_open"), ("d_both", "t_close"),
             ("d_close", "t_close")) if pairs is None else pairs
    gold_tools = ("t_close", "t_open", "t_time") if gold_tools is None else gold_tools
    return BenchmarkTask(
        task_id="hand", suite="hand", objective="open an account and close a card",
        contexts=contexts, tools=tools, budget=Budget(max_tokens=max_tokens),
        gold_context_ids=tuple(sorted({c for c, _ in pairs} | {"d_rules"})),
        gold_tool_ids=gold_tools,
        gold_pairs=tuple(GoldPair(context_id=c, tool_id=t) for c, t in pairs),
        verifier=VerifierSpec(kind="tools_with_documents"))


GOLD_TOOLS = ("t_close", "t_open", "t_time")


# ---------------------------------------------------------------- the ceiling

@pytest.mark.parametrize("both_cost, documents", [
    (70, ("d_both",)),               # one document names both tools: 70 < 30 + 50
    (80, ("d_both",)),               # a tie at 80: ("d_both",) sorts first
    (81, ("d_close", "d_open")),     # 81 > 80: the two single-tool documents
])
def test_the_cheapest_accepted_set_by_hand(both_cost, documents):
    task = _task(both_cost)
    assert cheapest_success_set(task) == (documents, GOLD_TOOLS)
    # the verifier accepts it, and no cheaper exposed set passes it
    assert verify(task, ExecutionResult(context_ids=documents, tool_ids=GOLD_TOOLS)).success
    assert not verify(task, ExecutionResult(context_ids=documents[:-1] if len(documents) > 1
                                            else (), tool_ids=GOLD_TOOLS)).success


def test_the_cheapest_set_of_other_kinds():
    task = _task()
    exposed = task.model_copy(update={"verifier": VerifierSpec(kind="tools_exposed")})
    assert cheapest_success_set(exposed) == ((), GOLD_TOOLS)
    answer = task.model_copy(update={"verifier": VerifierSpec(kind="context_answer")})
    assert cheapest_success_set(answer) is None
    with pytest.raises(JunctionError, match="task 'hand': gold_minimal needs a verifier"):
        make_strategy("gold_minimal").select(answer, None)
    nothing = _task(gold_tools=(), pairs=())
    assert cheapest_success_set(nothing) == (("d_rules",), ())


@pytest.mark.parametrize("scale, exposed, success", [
    (1.0, (("d_both",), GOLD_TOOLS), True),      # 150 tokens fit a budget of 150
    (0.99, ((), ()), False),                      # floor(148.5) = 148: nothing fits
])
def test_gold_minimal_exposes_the_ceiling_where_it_fits(scale, exposed, success):
    info = STRATEGIES["gold_minimal"]
    assert (info.role, info.respects_budget, info.reads_task) == ("reference", False, True)
    strategy = make_strategy("gold_minimal")
    (record,), _ = evaluate_batch([_task()], strategy, UnitSpec(
        strategy="gold_minimal", run_id="r", seed=0, scale=scale, pool_limit=None))
    assert (record.exposed_context_ids, record.exposed_tool_ids) == exposed
    assert record.tokens_used == (150 if success else 0) and record.success is success
    # the only way the ceiling fails: its set does not fit
    assert record.loss_cause == (None if success else "gold_does_not_fit")
    with pytest.raises(JunctionError, match="reads the task"):
        strategy.select(_task().router_view(), None)


def test_gold_minimal_on_the_fixture_suite():
    # fixture task_001: log_verification (85) + open_bank_account_4821 (84), each named by
    # one required document (doc_verification_001: 17, doc_accounts_opening_001: 29) = 215
    task = tb.banking_suite(split="all", path=FIXTURE).tasks[0]
    strategy = make_strategy("gold_minimal")
    (fits,), _ = evaluate_batch([task], strategy, UnitSpec(strategy="gold_minimal", run_id="r",
                                                           seed=0, scale=1.0, pool_limit=None))
    assert fits.exposed_context_ids == ("doc_accounts_opening_001", "doc_verification_001")
    assert fits.exposed_tool_ids == ("log_verification", "open_bank_account_4821")
    assert fits.tokens_used == 215 and fits.success
    small = 214 / task.budget.max_tokens  # one token short
    (short,), _ = evaluate_batch([task], strategy, UnitSpec(strategy="gold_minimal", run_id="r",
                                                            seed=0, scale=small, pool_limit=None))
    assert short.exposed_tool_ids == () and short.loss_cause == "gold_does_not_fit"


# ---------------------------------------------------------------- tasks with nothing to find

@pytest.mark.parametrize("contexts, tools, success", [
    ((), (), False),                                   # no longer a free pass
    (("doc_cards_rewards_001",), (), True),            # its required document
    ((), ("close_card_7730",), False),                 # tools are not what it needs
])
def test_a_task_without_a_gold_tool_is_graded_on_its_required_documents(contexts, tools,
                                                                         success):
    (task,) = [t for t in tb.banking_suite(split="all", path=FIXTURE).tasks
               if t.metadata["tau2_id"] == "task_003"]
    assert task.gold_tool_ids == () and task.gold_context_ids == ("doc_cards_rewards_001",)
    outcome = verify(task, ExecutionResult(context_ids=contexts, tool_ids=tools))
    assert outcome.success is success
    assert success or "required documents not exposed: ['doc_cards_rewards_001']" in outcome.reason


# ---------------------------------------------------------------- where success is lost

ALL_C = ("d_both", "d_close", "d_noise", "d_open", "d_rules")
ALL_T = ("t_close", "t_open", "t_other", "t_time")


@pytest.mark.parametrize("budget, c_pool, t_pool, c_shown, t_shown, cause", [
    (150, ALL_C, ALL_T, ("d_both",), GOLD_TOOLS, None),                     # success
    (149, ALL_C, ALL_T, (), (), "gold_does_not_fit"),                       # 150 > 149
    (200, ALL_C, ("t_open", "t_close"), ("d_both",), ("t_open", "t_close"),
     "tool_not_in_pool"),                                                   # t_time unpooled
    (200, ALL_C, ALL_T, ("d_both",), ("t_open", "t_close"), "tool_not_selected"),
    (200, ("d_open", "d_noise"), ALL_T, ("d_open",), GOLD_TOOLS,
     "document_not_in_pool"),                                               # t_close: none
    (200, ALL_C, ALL_T, ("d_open", "d_rules"), GOLD_TOOLS,
     "document_not_selected"),                                              # d_both/d_close pooled
    # a gold tool missing and a document missing: the tool is named (tools come first)
    (200, ("d_noise",), ALL_T, (), ("t_open", "t_close"), "tool_not_selected"),
])
def test_loss_causes_on_hand_built_selections(budget, c_pool, t_pool, c_shown, t_shown, cause):
    task = _task(max_tokens=budget)
    success = verify(task, ExecutionResult(context_ids=c_shown, tool_ids=t_shown)).success
    assert success is (cause is None)
    assert loss_cause(task, c_pool, t_pool, c_shown, t_shown, success) == cause


def test_a_task_without_a_gold_tool_loses_on_its_documents():
    task = _task(gold_tools=(), pairs=())
    assert loss_cause(task, ("d_noise",), ALL_T, (), (), False) == "document_not_in_pool"
    assert loss_cause(task, ALL_C, ALL_T, ("d_open",), (), False) == "document_not_selected"
    assert loss_cause(task.model_copy(update={"budget": Budget(max_tokens=4)}),
                      ALL_C, ALL_T, (), (), False) == "gold_does_not_fit"


def test_evaluation_records_the_cause_a_real_strategy_lost_on():
    # fixed_split on the hand task at 100 tokens: gold needs 150, so whatever it picks
    task = _task(max_tokens=100)
    (record,), _ = evaluate_batch([task], make_strategy("fixed_split"),
                                  UnitSpec(strategy="fixed_split", run_id="r", seed=0, scale=1.0,
                                           pool_limit=None))
    assert not record.success and record.loss_cause == "gold_does_not_fit"
    (roomy,), _ = evaluate_batch([_task(max_tokens=1000)], make_strategy("fixed_split"),
                                 UnitSpec(strategy="fixed_split", run_id="r", seed=0, scale=1.0,
                                          pool_limit=None))
    expected = loss_cause(_task(max_tokens=1000),
                          [c.resource_id for c in roomy.context_candidates],
                          [c.resource_id for c in roomy.tool_candidates],
                          roomy.exposed_context_ids, roomy.exposed_tool_ids, roomy.success)
    assert roomy.loss_cause == expected


def test_a_trace_refuses_a_cause_on_a_success_or_an_unknown_cause():
    with pytest.raises(ValueError, match="loss_cause 'tool_not_selected' needs a failure"):
        trace_record(loss_cause="tool_not_selected")
    with pytest.raises(ValueError, match="loss_cause 'bad_luck' needs a failure and one of"):
        trace_record(success=False, failure_reason="x", loss_cause="bad_luck")


def _loss_traces():
    """Hand-built traces, suite s: fixed_split at scale 1 on 6 tasks: 1 success, 3 tool not
    selected, 1 document not in pool, 1 gold does not fit; exact at scale 1 on the same 6:
    2 successes, 2 document not selected, 2 tool not in pool (a tie: the earlier cause
    dominates); gold_minimal (a reference): 5 successes, 1 does not fit."""
    causes = {"fixed_split": [None, "tool_not_selected", "tool_not_selected",
                              "tool_not_selected", "document_not_in_pool", "gold_does_not_fit"],
              "exact": [None, None, "document_not_selected", "document_not_selected",
                        "tool_not_in_pool", "tool_not_in_pool"],
              "gold_minimal": [None] * 5 + ["gold_does_not_fit"]}
    return [trace_record(strategy=s, task_id=f"t{i}", success=c is None,
                         failure_reason="" if c is None else "x", loss_cause=c)
            for s, cs in causes.items() for i, c in enumerate(cs)]


def test_loss_breakdown_counts_each_cause_per_strategy_and_scale(tmp_path):
    rows = records_to_table(_loss_traces()).to_pylist()
    got = {r["strategy"]: r for r in loss_breakdown(rows)}
    fixed, exact = got["fixed_split"], got["exact"]
    assert (fixed["evaluations"], fixed["successes"], fixed["failures"]) == (6, 1, 5)
    assert fixed["causes"] == {"gold_does_not_fit": 1, "tool_not_in_pool": 0,
                               "tool_not_selected": 3, "document_not_in_pool": 1,
                               "document_not_selected": 0, "other": 0}
    assert (fixed["dominant"], fixed["unexplained"]) == ("tool_not_selected", 0)
    assert exact["dominant"] == "tool_not_in_pool"  # 2 and 2: the earlier cause
    assert list(exact["causes"]) == list(LOSS_CAUSES)
    # the report: one row per strategy, the reference last and marked; metrics.json holds
    # the counts; the sentence names the cause that dominates the budgeted strategies
    # (tool not selected 3 of 9 budgeted failures)
    paths = write_report(tmp_path / "r", RunData({"run_id": "r"}, records_to_table(_loss_traces()),
                                                  {"s": {"tasks": 6}}))
    md = paths["report.md"].read_text()
    shown = table_rows(md, "suite", "scale", "strategy", "evaluations")
    assert [r["strategy"] for r in shown] == ["exact", "fixed_split", "gold_minimal (reference)"]
    assert (shown[1]["tool not selected"], shown[1]["dominant"]) == ("3", "tool not selected")
    assert "*tool not selected* dominates: 3 of 9 failed evaluations" in md
    doc = json.loads(paths["metrics.json"].read_text())["loss_breakdown"]
    assert doc["s"]["budget_scale=1"]["fixed_split"]["causes"]["tool_not_selected"] == 3
    assert doc["s"]["budget_scale=1"]["gold_minimal"]["causes"]["gold_does_not_fit"] == 1
    again = write_report(tmp_path / "r2", RunData({"run_id": "r2"},
                                                   records_to_table(_loss_traces()),
                                                   {"s": {"tasks": 6}}))
    assert again["metrics.json"].read_bytes() == paths["metrics.json"].read_bytes()
    assert loss_lines([]) == []


# ---------------------------------------------------------------- no leak

def test_only_references_read_the_task():
    """A strategy that is given the task (and so could read gold) is a reference outside
    the budget and every comparison; every budgeted strategy is given the router view."""
    readers = {n for n in strategy_names() if STRATEGIES[n].reads_task}
    assert "gold_minimal" in readers
    assert all(not STRATEGIES[n].respects_budget for n in readers)


_FIXTURE_TASKS = tb.banking_suite(split="all", path=FIXTURE).tasks
_LEXICAL_POOL_RULES = [r for r in POOL_RULES if r not in ("dense", "hybrid")]
_BUDGETED = [n for n in strategy_names()
             if STRATEGIES[n].respects_budget and not STRATEGIES[n].needs_calibration]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(_FIXTURE_TASKS) - 1), scale=st.sampled_from([0.05, 0.5, 1.0]),
       pool=st.sampled_from(_LEXICAL_POOL_RULES), limit=st.sampled_from([None, (3, None)]),
       data=st.data())
def test_gold_changes_no_budgeted_selection_but_moves_the_ceiling(index, scale, pool, limit,
                                                                   data):
    """Property: redrawing a task's gold tools, documents and pairs (and so its verifier's
    verdict and its cheapest accepted set) leaves every budgeted strategy's selection and
    pools as they were, under every pool rule that runs without the dense model (a short
    context pool, so ``bm25_named`` widens it); gold_minimal, which reads gold by design,
    follows the new gold."""
    task = _FIXTURE_TASKS[index]
    tools = [t.id for t in task.tools]
    docs = [c.id for c in task.contexts]
    gold_t = tuple(data.draw(st.lists(st.sampled_from(tools), min_size=1, max_size=3,
                                      unique=True)))
    gold_c = tuple(data.draw(st.lists(st.sampled_from(docs), min_size=1, max_size=3,
                                      unique=True)))
    pairs = tuple(GoldPair(context_id=c, tool_id=t) for c in gold_c for t in gold_t
                  if data.draw(st.booleans()))
    other = task.model_copy(update={"gold_tool_ids": gold_t, "gold_context_ids": gold_c,
                                    "gold_pairs": pairs})
    for name in _BUDGETED:
        strategy = make_strategy(name)
        spec = UnitSpec(strategy=name, run_id="r", seed=0, scale=scale, pool_limit=limit,
                        pool=pool)
        a, b = (evaluate_batch([t], strategy, spec)[0][0] for t in (task, other))
        assert (a.exposed_context_ids, a.exposed_tool_ids, a.context_candidates,
                a.tool_candidates, a.objective) == (
            b.exposed_context_ids, b.exposed_tool_ids, b.context_candidates,
            b.tool_candidates, b.objective), name
    ceiling = make_strategy("gold_minimal")
    chosen = ceiling.select(scale_budget(other, scale), None).selection
    expected = cheapest_success_set(scale_budget(other, scale))
    fits = scale_budget(other, scale).budget.check(
        [other.context(c) for c in expected[0]], [other.tool(t) for t in expected[1]]).fits
    assert (chosen.context_ids, chosen.tool_ids) == (expected if fits else ((), ()))
