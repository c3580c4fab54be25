"""The two catalogs: verifier kinds (``junction.verifiers``) and strategy roles read at call
time (``junction.strategies.catalog``).

A kind or a strategy registered after import (one record, plus one function or factory) is
what the tasks, the executor, the verdicts, the figures and the report then see.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from junction.agent.execution import ExecutionResult, execute
from junction.verifiers import Outcome, verify
from junction.errors import UnknownNameError
from junction.evidence import plots, verdicts
from junction.evidence.report_markdown import ReportSections, render_markdown
from junction.evidence.summary import headline_rows
from junction.evidence.traces import records_to_table
from junction.resources import ContextResource, ToolResource
from junction.strategies import (
    STRATEGIES,
    StrategyInfo,
    interaction_blind_strategies,
    learned_strategies,
    reference_strategies,
    strategies_where,
)
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import (
    VERIFIERS,
    VerifierInfo,
    verifier_info,
    verifier_meaning,
    verifier_names,
)
from tests.helpers import trace_record


def _task(kind: str, params: dict | None = None) -> BenchmarkTask:
    return BenchmarkTask(
        task_id="t", suite="s", objective="o",
        contexts=(ContextResource(id="c1", content="the answer is 42", token_cost=5),),
        tools=(ToolResource(id="t1", description="d", schema_token_cost=3),
               ToolResource(id="t2", description="d", schema_token_cost=3)),
        gold_context_ids=("c1",), gold_tool_ids=("t1",),
        verifier=VerifierSpec(kind=kind, params=params or {}))


# ---------------------------------------------------------------- verifier kinds

def test_every_catalogued_kind_has_a_grader_and_a_meaning():
    # the kinds the suites here use are there; a kind registered later (a plug-in's) is
    # checked the same way
    assert {"context_answer", "contexts_exact", "no_tools", "tools_exposed",
            "tools_with_documents", "toy_calls"} <= set(verifier_names())
    for name in verifier_names():
        info = verifier_info(name)
        assert callable(info.grader()) and info.meaning and info.grades in ("exposure", "calls")
    # only the toy executor's scripted kind grades calls
    assert [n for n in verifier_names() if verifier_info(n).grades == "calls"] == ["toy_calls"]


def test_an_unknown_kind_is_refused_naming_the_valid_ones():
    with pytest.raises(ValidationError, match="unknown verifier kind 'nope'; valid kinds: "
                                              "context_answer, contexts_exact, no_tools"):
        VerifierSpec(kind="nope")
    with pytest.raises(UnknownNameError, match="unknown verifier kind 'nope'"):
        verifier_info("nope")
    assert verifier_meaning("nope") == "nope"  # a kind an older build recorded


@pytest.mark.parametrize(("kind", "params", "contexts", "tools", "success"), [
    # gold: context c1 ("the answer is 42"), tool t1
    ("tools_exposed", {}, (), ("t1",), True),
    ("tools_exposed", {}, ("c1",), ("t2",), False),
    ("no_tools", {}, ("c1",), (), True),
    ("no_tools", {}, (), ("t2",), False),
    ("context_answer", {"answers": ["ANSWER  is 42"]}, ("c1",), (), True),
    ("context_answer", {"answers": ["43"]}, ("c1",), ("t1",), False),
    ("contexts_exact", {}, ("c1",), ("t2",), True),
    ("contexts_exact", {}, (), (), False),
])
def test_verify_grades_through_the_kind_of_the_catalog(kind, params, contexts, tools, success):
    task = _task(kind, params)
    result = execute(task, contexts, tools)
    assert result.tool_calls == ()  # these kinds grade the exposed set alone
    assert verify(task, result).success is success


def test_a_registered_kind_is_one_record_and_one_function(monkeypatch):
    def both_types(task: BenchmarkTask, result: ExecutionResult) -> Outcome:
        ok = bool(result.context_ids) and bool(result.tool_ids)
        return Outcome(success=ok, reason="" if ok else "one type only")

    monkeypatch.setitem(VERIFIERS, "both_types",
                        VerifierInfo("both_types", "a context and a tool are exposed",
                                     both_types))
    task = _task("both_types")
    assert verify(task, execute(task, ("c1",), ("t2",))) == Outcome(success=True)
    assert verify(task, execute(task, ("c1",), ())) == Outcome(success=False,
                                                               reason="one type only")
    # the report's Definitions read its meaning
    md = render_markdown(ReportSections({"run_id": "r"},
                                        suites={"s": {"verifier_kinds": ["both_types"]}}))
    (line,) = [x for x in md.splitlines() if x.startswith("- **s**")]
    assert "`both_types`" in line and "a context and a tool are exposed" in line


def test_the_toy_executor_plays_steps_only_for_a_kind_that_grades_calls(monkeypatch):
    steps = {"steps": [{"tool": "t1", "requires": ["c1"]}]}
    monkeypatch.setitem(VERIFIERS, "steps_seen", VerifierInfo(
        "steps_seen", "steps seen", lambda task, result: Outcome(success=True)))
    assert execute(_task("steps_seen", steps), ("c1",), ("t1",)).tool_calls == ()
    monkeypatch.setitem(VERIFIERS, "steps_seen", VerifierInfo(
        "steps_seen", "steps seen", lambda task, result: Outcome(success=True),
        grades="calls"))
    (call,) = execute(_task("steps_seen", steps), ("c1",), ("t1",)).tool_calls
    assert (call.tool_id, call.arguments) == ("t1", {"informed": True})


# ---------------------------------------------------------------- strategy roles

def test_roles_match_the_records():
    assert reference_strategies() == strategies_where(respects_budget=False)
    assert interaction_blind_strategies() == strategies_where(ranks_apart=True)
    assert learned_strategies() == strategies_where(role="learned")
    assert set(reference_strategies()).isdisjoint(interaction_blind_strategies())


def test_a_strategy_registered_later_takes_its_role_everywhere(monkeypatch):
    # registered after every module imported: roles are read at call time
    monkeypatch.setitem(STRATEGIES, "late_reference", StrategyInfo(
        "late_reference", lambda: None, "reference", "outside the budget",
        respects_budget=False))
    monkeypatch.setitem(STRATEGIES, "late_blind", StrategyInfo(
        "late_blind", lambda: None, "split", "ranks apart", ranks_apart=True))
    assert "late_reference" in reference_strategies()
    assert "late_blind" in interaction_blind_strategies()
    assert plots.strategy_label("late_reference") == "late_reference (reference)"
    assert plots.strategy_style("late_reference").linestyle == "--"

    # 3 tasks: joint_x 3/3, late_blind 1/3, late_reference 3/3 (never compared: a reference)
    outcomes = {"joint_x": [True, True, True], "late_blind": [True, False, False],
                "late_reference": [True, True, True]}
    records = [trace_record(strategy=s, task_id=f"t{i}", success=ok,
                            failure_reason="" if ok else "x")
               for s, oks in outcomes.items() for i, ok in enumerate(oks)]
    (h,) = headline_rows(records_to_table(records))
    assert h["best"] == ["joint_x"]
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [
        ("late_blind", "interaction-blind best")]
    # without the record, late_blind is one more strategy, compared as a reference
    monkeypatch.delitem(STRATEGIES, "late_blind")
    (h,) = verdicts.headline([r.model_dump() for r in records
                              if r.strategy != "late_reference"])
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [("late_blind", "reference")]
