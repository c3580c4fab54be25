"""The agent on τ-Knowledge: the grader catalog, tau2's action check on hand-written
answers, the prompt (nothing from gold or the verifier), the coupling references and the
report's tables. No model here (the remote-against-embedded test is in
tests/test_remote_agent.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.grade import AgentGrade, Measure
from junction.agent.graders import agent_outcomes, gradable, grade_agent, grader_for, prompt_layout
from junction.agent.prompt import BFCL_LAYOUT, parse_output, render_prompt
from junction.agent.tau2_grading import TAU2_LAYOUT, TAU2_OUTCOMES, gold_actions, match, siblings
from junction.evidence.agent_measures import coupling_pairs, measure_lines, measure_tables
from junction.resources import ToolResource
from junction.strategies import make_strategy
from junction.tasks import VerifierSpec
from tests.report_text import points, read_points, table_rows

FIXTURE = Path(__file__).resolve().parent / "data" / "tau2_fixture"


@pytest.fixture(scope="module")
def tau2_tasks():
    from junction_datasets.tau2_banking import banking_suite

    return {t.metadata["tau2_id"]: t for t in banking_suite(split="all", path=FIXTURE).tasks}


@pytest.fixture(scope="module")
def closing(tau2_tasks):
    """task_002 with a look-alike of its gold tool (``close_card_7731``) and one gold
    action with a compared value: ``close_card_7730(card_id="c9")``."""
    task = tau2_tasks["task_002"]
    gold = task.tool("close_card_7730")
    sibling = ToolResource.from_schema("close_card_7731", "Close a business card.",
                                       gold.json_schema)
    return task.model_copy(update={
        "tools": (*task.tools, sibling),
        "verifier": VerifierSpec(kind="tools_with_documents", params={"actions": [
            {"action_id": "a0", "tool": "close_card_7730", "arguments": {"card_id": "c9"},
             "compare_args": None}]})})


def _answer(task, text: str) -> ExecutionResult:
    tools = tuple(sorted(t.id for t in task.tools))
    kind, calls, error = parse_output(text, tools)
    return ExecutionResult(
        context_ids=(), tool_ids=tools, text=text, output_kind=kind, decode_error=error,
        tool_calls=tuple(ToolCall(index=i, tool_id=name, arguments=args)
                         for i, call in enumerate(calls) for name, args in call.items()))


def test_the_catalog_grades_tau2_tasks_with_gold_actions_and_bfcl_rows_by_category(tau2_tasks):
    from junction_datasets.bfcl import multiple_suite
    from junction_datasets.toy import coupling_suite

    assert grader_for(tau2_tasks["task_001"]).name == "tau2_actions"
    assert grader_for(multiple_suite(size=1).tasks[0]).name == "bfcl"
    assert not gradable(tau2_tasks["task_003"])  # only customer-side actions
    assert not any(gradable(t) for t in coupling_suite(size=3))
    assert set(TAU2_OUTCOMES) <= set(agent_outcomes())
    assert prompt_layout("tau2-banking") == TAU2_LAYOUT
    assert prompt_layout("bfcl-multiple") is None


def test_gold_actions_name_the_tool_a_handler_acts_for():
    actions = [
        {"action_id": "0", "name": "log_verification", "arguments": {"user_id": "u"},
         "requestor": "assistant"},
        {"action_id": "1", "name": "unlock_discoverable_agent_tool",
         "arguments": {"agent_tool_name": "open_bank_account_4821"}},
        {"action_id": "2", "name": "call_discoverable_agent_tool",
         "arguments": {"agent_tool_name": "open_bank_account_4821",
                       "arguments": '{"user_id": "u", "deposit": 50.0}'}},
        {"action_id": "3", "name": "call_discoverable_agent_tool",
         "arguments": {"agent_tool_name": "close_card_7730", "arguments": "{}"},
         "compare_args": ["agent_tool_name"]},
        {"action_id": "4", "name": "apply_for_credit_card", "arguments": {"card_type": "Gold"},
         "requestor": "user"},
    ]
    assert gold_actions(actions) == [
        {"action_id": "0", "tool": "log_verification", "arguments": {"user_id": "u"},
         "compare_args": None},
        {"action_id": "1", "tool": "open_bank_account_4821", "arguments": {},
         "compare_args": []},
        {"action_id": "2", "tool": "open_bank_account_4821",
         "arguments": {"user_id": "u", "deposit": 50.0}, "compare_args": None},
        {"action_id": "3", "tool": "close_card_7730", "arguments": {}, "compare_args": []},
    ]


@pytest.mark.parametrize("text, outcome, success, recall, variants", [
    ('[close_card_7730(card_id="c9")]', "correct", True, 1.0, 0),
    # through the handler, JSON arguments compared as values
    ('[call_discoverable_agent_tool(agent_tool_name="close_card_7730", '
     'arguments={"card_id": "c9"})]', "correct", True, 1.0, 0),
    ('[close_card_7731(card_id="c9")]', "wrong_variant", False, 0.0, 1),
    ('[close_card_7730(card_id="c1")]', "wrong_args", False, 0.0, 0),
    ('[log_verification(user_id="u1", method="dob")]', "missed_action", False, 0.0, 0),
    ("I have closed your card.", "answered", False, 0.0, 0),
    ("[]", "abstained", False, 0.0, 0),
    ('[close_card_7730(card_id="c9"', "unparseable", False, 0.0, 0),
    # tau2 compares the keys the call gives when compare_args is None: one left out passes
    ("[close_card_7730()]", "correct", True, 1.0, 0),
])
def test_hand_written_answers_grade_as_tau2_matches_actions(closing, text, outcome, success,
                                                           recall, variants):
    grade = grade_agent(closing, _answer(closing, text))
    assert (grade.outcome, grade.success, grade.measures) == (
        outcome, success, {"action_recall": recall, "wrong_variant_calls": variants})
    assert grade.outcome in TAU2_OUTCOMES


def test_a_grade_carries_exactly_the_measures_its_grader_declares(closing):
    info = grader_for(closing)
    assert [m.name for m in info.measures] == ["action_recall", "wrong_variant_calls"]
    assert info.decoder() is parse_output  # BFCL's decoder, named by the record
    answer = _answer(closing, '[close_card_7730(card_id="c9")]')
    short = replace(info, check=lambda task, result: AgentGrade(
        success=True, outcome="correct", measures={"action_recall": 1.0}))
    with pytest.raises(ValueError, match=r"'tau2_actions' on task .*: the grade's measures "
                                         r"\['action_recall'\] are not the declared"):
        short.grade(closing, answer)
    with pytest.raises(ValueError, match="finite"):
        AgentGrade(success=True, outcome="correct", measures={"action_recall": float("nan")})
    with pytest.raises(ValueError, match="lower-case identifier"):
        Measure("Action recall", "share met", "fraction")
    with pytest.raises(ValueError, match="direction 'up'"):
        Measure("recall", "share met", "fraction", "up")
    with pytest.raises(ValueError, match="repeat a name"):
        replace(info, measures=info.measures * 2)


def test_compare_args_named_must_be_given():
    action = {"tool": "t", "arguments": {"a": 1, "b": 2}, "compare_args": ["a"]}
    assert match(action, "t", {"a": 1, "b": 99})
    assert not match(action, "t", {"b": 2})
    assert not match(action, "u", {"a": 1})
    assert match({"tool": "t", "arguments": {"a": 1.0}, "compare_args": None}, "t", {"a": 1})


def test_partial_recall_counts_the_actions_met(tau2_tasks):
    task = tau2_tasks["task_001"]  # log_verification(u1, dob), unlock + call open_bank_account
    grade = grade_agent(task, _answer(task, '[log_verification(user_id="u1", method="dob")]'))
    assert grade.outcome == "missed_action"
    assert grade.measures["action_recall"] == pytest.approx(1 / 3)


def test_siblings_differ_by_number_or_one_word():
    ids = ["activate_debit_card_8291", "activate_debit_card_8292", "freeze_debit_card_3892",
           "open_bank_account_4821", "close_bank_account_7392", "get_current_time"]
    assert siblings("activate_debit_card_8291", ids) == (
        "activate_debit_card_8292", "freeze_debit_card_3892")
    assert siblings("open_bank_account_4821", ids) == ("close_bank_account_7392",)
    assert siblings("get_current_time", ids) == ()


_SENTINEL = "GOLD-SENTINEL-7c1e"


@settings(max_examples=25, deadline=None)
@given(index=st.integers(0, 4), n_contexts=st.integers(0, 5), n_tools=st.integers(1, 6))
def test_the_agents_prompt_holds_nothing_from_gold_or_the_verifier(tau2_tasks, index,
                                                                   n_contexts, n_tools):
    task = sorted(tau2_tasks.values(), key=lambda t: t.task_id)[index]
    contexts = [c.id for c in task.contexts][:n_contexts]
    tools = [t.id for t in task.tools][:n_tools]
    layout = prompt_layout(task.suite)
    before = render_prompt(task.router_view(), contexts, tools, layout=layout)
    altered = task.model_copy(update={
        "verifier": VerifierSpec(kind="tools_with_documents", params={"actions": [
            {"action_id": _SENTINEL, "tool": _SENTINEL, "arguments": {"x": _SENTINEL},
             "compare_args": None}]}),
        "gold_context_ids": (), "gold_tool_ids": (), "gold_pairs": (),
        "metadata": {"tau2_id": _SENTINEL}})
    after = render_prompt(altered.router_view(), contexts, tools, layout=layout)
    assert before.sha256 == after.sha256
    assert _SENTINEL not in " ".join(m["content"] for m in after.messages)
    assert layout.question.split("{objective}")[0] in before.messages[1]["content"]


def test_the_bfcl_prompt_is_unchanged_by_the_layouts():
    from junction_datasets.bfcl import multiple_suite

    task = multiple_suite(size=1).tasks[0]
    tools = [t.id for t in task.tools][:2]
    assert (render_prompt(task.router_view(), (), tools).sha256
            == render_prompt(task.router_view(), (), tools, layout=BFCL_LAYOUT).sha256)
    assert render_prompt(task.router_view(), (), tools).messages[1]["content"] == task.objective


def test_the_coupling_pair_exposes_the_same_tools_with_and_without_naming_documents(closing):
    without = make_strategy("gold_tools_only").select(closing, None).selection
    with_docs = make_strategy("gold_tools_documents").select(closing, None).selection
    assert without.tool_ids == with_docs.tool_ids == ("close_card_7730", "close_card_7731")
    assert without.context_ids == ()
    assert with_docs.context_ids == tuple(sorted({p.context_id for p in closing.gold_pairs}))
    assert with_docs.context_ids  # the closing policy names close_card_7730
    assert ("gold_tools_documents", "gold_tools_only") in coupling_pairs()


def _row(strategy: str, task: str, success: bool, recall: float, outcome: str,
         tools: list[str], variants: int = 0) -> dict:
    return {"suite": "tau2-banking", "budget_scale": 1.0, "strategy": strategy, "seed": 0,
            "task_id": task, "agent_success": success, "agent_outcome": outcome,
            "agent_grader": "tau2_actions",
            "agent_measures": [{"name": "action_recall", "value": recall},
                               {"name": "wrong_variant_calls", "value": float(variants)}],
            "exposed_context_ids": [], "exposed_tool_ids": tools}


def test_the_report_tables_pair_the_coupling_references_and_the_twins():
    rows = []
    for i in range(4):
        t = f"t{i}"
        rows += [_row("gold_tools_documents", t, True, 1.0, "correct", ["a"]),
                 _row("gold_tools_only", t, i == 0, 1.0 if i == 0 else 0.5,
                      "correct" if i == 0 else "wrong_variant", ["a"], variants=int(i > 0)),
                 _row("exact", t, i < 2, 0.5, "wrong_args", ["a"]),
                 _row("adaptive_split", t, i < 1, 0.5, "unparseable", ["a"] if i else ["b"])]
    rows.append({**_row("exact", "bfcl-row", True, 0.0, "correct", ["a"]),
                 "suite": "bfcl-multiple", "agent_grader": "bfcl", "agent_measures": []})
    tables = measure_tables(pa.Table.from_pylist(rows))
    (coupling,) = tables["coupling"]
    assert (coupling["a"], coupling["b"], coupling["n"]) == ("gold_tools_documents",
                                                             "gold_tools_only", 4)
    assert coupling["difference"] == pytest.approx(0.75)
    assert coupling["action_recall_difference"] == pytest.approx(0.375)
    (verdict,) = tables["verdicts"]
    assert (verdict["a"], verdict["b"], verdict["n"], verdict["identical_sets"]) == (
        "exact", "adaptive_split", 4, 3)
    assert verdict["difference"] == pytest.approx(0.25)
    by = {r["strategy"]: r for r in tables["strategies"]}
    assert set(by) == {"adaptive_split", "exact", "gold_tools_documents", "gold_tools_only"}
    assert by["gold_tools_only"]["mean_wrong_variant_calls"] == pytest.approx(0.75)
    assert by["adaptive_split"]["unparseable"] == 4
    assert by["gold_tools_only"]["grader"] == "tau2_actions"
    text = "\n".join(measure_lines(tables))
    # the generic per-strategy table: one column per measure, named with the grader's words
    per = {r["strategy"]: r for r in table_rows(text, "suite", "scale", "strategy", "grader")}
    assert per["gold_tools_only"]["mean wrong_variant_calls"] == "0.750"
    assert per["exact"]["mean action_recall"] == "0.500"
    assert ("- `action_recall` (fraction in [0, 1]; higher is better): share of the task's "
            "gold agent actions") in text
    assert "- grader `tau2_actions`: the agent's calls graded against gold actions" in text
    # two pair tables: the coupling references (no identical-set column) and the twins
    shown = {r["A − B"]: r for r in table_rows(text, "suite", "scale", "A − B")}
    assert set(shown) == {"gold_tools_documents − gold_tools_only", "exact − adaptive_split"}
    documents = shown["gold_tools_documents − gold_tools_only"]
    twins = shown["exact − adaptive_split"]
    assert "identical sets" not in documents and twins["identical sets"] == "3 of 4"
    for row, pair in ((documents, coupling), (twins, verdict)):
        assert (row["suite"], row["scale"], row["n"]) == ("tau2-banking", "1", "4")
        assert read_points(row["difference [95% CI]"]) == (
            points(pair["difference"]), points(pair["ci_low"]), points(pair["ci_high"]))
    assert read_points(documents["difference [95% CI]"])[0] == 75
    assert documents["Δ action_recall"] == "+0.375"
