"""The catalogs: every record of the suites, strategies, verifier kinds and agent graders
checked as a record (with docs/extending.md's example plug-in installed beside the built-in
ones: ``tests/plugins/policy_desk``), the verifier kinds (``junction.verifiers``), and the
strategy roles read at call time (``junction.strategies.catalog``).

A kind or a strategy registered after import (one record, plus one function or factory) is
what the tasks, the executor, the verdicts, the figures and the report then see. No check
here names a record where it could read the catalog: a plug-in's records pass the same ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from junction.agent.execution import ExecutionResult, execute
from junction.agent.graders import AGENT_GRADERS
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
from junction.suites import SUITES
from junction.tasks import BenchmarkTask, VerifierSpec
from junction.verifiers import (
    VERIFIERS,
    Outcome,
    VerifierInfo,
    verifier_info,
    verifier_meaning,
    verifier_names,
    verify,
)
from tests.helpers import trace_record
from tests.plugins import POLICY_DESK_RECORDS, policy_desk_site, present


def _task(kind: str, params: dict | None = None) -> BenchmarkTask:
    return BenchmarkTask(
        task_id="t", suite="s", objective="o",
        contexts=(ContextResource(id="c1", content="the answer is 42", token_cost=5),),
        tools=(ToolResource(id="t1", description="d", schema_token_cost=3),
               ToolResource(id="t2", description="d", schema_token_cost=3)),
        gold_context_ids=("c1",), gold_tool_ids=("t1",),
        verifier=VerifierSpec(kind=kind, params=params or {}))


# ---------------------------------------------------------------- every record, a plug-in's too

def _check_suite(info: Any) -> None:
    from junction.agent.graders import prompt_layout
    from junction.agent.prompt import PromptLayout
    from junction.registry import load

    assert callable(load(info.build)) and info.description
    assert info.default_size is None or info.default_size > 0
    limit = info.pool_limit
    assert limit is None or (isinstance(limit, int) and limit > 0) or (
        isinstance(limit, tuple) and len(limit) == 2 and all(x is None or x > 0 for x in limit))
    assert info.default_split() in ("eval", "all")
    if info.data_env is not None:  # a folder the user names: the line says how
        assert info.data_env.isupper() and info.unavailable is not None
        reason = info.unavailable_reason({info.name: "/no/such/folder"})
        assert reason and "\n" not in reason
    if info.reference_set is not None:  # some reference runs on it
        assert strategies_where(reference_set=info.reference_set, reads_task=True)
    layout = prompt_layout(info.name)
    assert layout is None or isinstance(layout, PromptLayout)
    for sentence in (info.agent_sample_note, info.reference_note):
        assert "\n" not in sentence


def _check_strategy(info: Any) -> None:
    from junction.strategies.catalog import ROLES

    assert info.role in ROLES and info.description
    assert info.headline_side in ("joint", "interaction-blind", None)
    assert not (info.sees_interactions and info.ranks_apart)
    assert info.respects_budget or info.role == "reference"
    assert not info.reads_task or info.reference_set is not None
    for twin in (info.split_twin, info.documents_twin):
        assert twin is None or twin in STRATEGIES
    style = plots.strategy_style(info.name)  # its own colours, or stable spare ones
    assert style.colour and style.marker and style.linestyle == (
        "-" if info.respects_budget else "--")
    assert info.default_size is None or info.default_size > 0


def _check_verifier(info: Any) -> None:
    assert callable(info.grader()) and info.meaning and info.grades in ("exposure", "calls")
    assert verifier_meaning(info.name) == info.meaning


def _check_grader(info: Any) -> None:
    from junction.registry import load

    assert info.kinds and set(info.kinds) <= set(verifier_names())
    assert info.outcomes and all(info.outcomes.values())
    assert callable(load(info.applies)) and callable(info.grader())
    assert callable(info.decoder())
    for measure in info.measures:
        assert measure.meaning and measure.unit and measure.direction in ("higher", "lower")


CHECKS: dict[str, tuple[Any, Callable[[Any], None]]] = {
    "suite": (SUITES, _check_suite),
    "strategy": (STRATEGIES, _check_strategy),
    "verifier kind": (VERIFIERS, _check_verifier),
    "agent grader": (AGENT_GRADERS, _check_grader),
}


@pytest.fixture(scope="module")
def with_plugin(tmp_path_factory):
    """docs/extending.md's example plug-in, pip-installed and present in this process."""
    with present(policy_desk_site(tmp_path_factory)) as module:
        yield module


@pytest.mark.parametrize("kind", sorted(CHECKS))
def test_every_record_of_every_catalog_is_whole(kind, with_plugin):
    catalog, check = CHECKS[kind]
    names = catalog.names()
    assert POLICY_DESK_RECORDS[kind] in names  # the plug-in's record is checked too
    failed = {}
    for name in names:
        info = catalog[name]
        assert info.name == name
        try:
            check(info)
        except Exception as exc:  # every failing record named at once
            failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
    assert not failed, f"{kind} records that fail their checks: {failed}"


# ---------------------------------------------------------------- verifier kinds

def test_every_catalogued_kind_has_a_grader_and_a_meaning():
    # the kinds the suites here use are there; a kind registered later (a plug-in's) is
    # checked the same way (test_every_record_of_every_catalog_is_whole)
    assert {"context_answer", "contexts_exact", "no_tools", "tools_exposed",
            "tools_with_documents", "toy_calls"} <= set(verifier_names())
    for name in verifier_names():
        info = verifier_info(name)
        assert callable(info.grader()) and info.meaning and info.grades in ("exposure", "calls")
    # of the built-in kinds, only the toy executor's scripted kind grades calls
    assert verifier_info("toy_calls").grades == "calls"
    assert {verifier_info(n).grades for n in ("context_answer", "contexts_exact", "no_tools",
                                              "tools_exposed", "tools_with_documents")} \
        == {"exposure"}


def test_an_unknown_kind_is_refused_naming_the_valid_ones():
    valid = ", ".join(verifier_names())  # every registered kind, a plug-in's among them
    with pytest.raises(ValidationError, match=re.escape(f"unknown verifier kind 'nope'; "
                                                        f"valid kinds: {valid}")):
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
    assert interaction_blind_strategies() == tuple(
        n for n in STRATEGIES.names() if STRATEGIES[n].headline_side == "interaction-blind")
    assert set(strategies_where(ranks_apart=True)) <= set(interaction_blind_strategies())
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


def test_a_joint_strategy_that_ignores_interactions_is_on_the_blind_side(monkeypatch):
    # its side comes from its record: the joint role without interaction terms
    monkeypatch.setitem(STRATEGIES, "late_joint", StrategyInfo(
        "late_joint", lambda: None, "joint", "joint, interactions ignored"))
    assert STRATEGIES["late_joint"].headline_side == "interaction-blind"
    assert "late_joint" in interaction_blind_strategies()
    outcomes = {"exact": [True, True, True], "late_joint": [True, False, False]}
    records = [trace_record(strategy=s, task_id=f"t{i}", success=ok,
                            failure_reason="" if ok else "x")
               for s, oks in outcomes.items() for i, ok in enumerate(oks)]
    (h,) = headline_rows(records_to_table(records))
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [
        ("late_joint", "interaction-blind best")]
    # the prose names the interaction-blind strategies that ran, and no other
    from junction.evidence.verdict_text import comparison_lines, verdict_lines

    text = "\n".join(comparison_lines([h]))
    assert "ignores interactions (late_joint)" in text
    assert not any(s in text for s in strategies_where(ranks_apart=True))
    assert "best joint against best interaction-blind" in verdict_lines([h])[0]["text"]
