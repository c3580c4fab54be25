"""Grade a single-turn answer on τ-Knowledge (``tau2-banking``) as tau2 matches actions.

The agent is given the exposed documents and tool schemas and the customer's whole
situation at once (the scenario's instructions), and answers with the calls it would make,
in order (``TAU2_LAYOUT``). That is not tau2's conversation: there the agent learns facts
turn by turn and reads the database through tools, and tau2 grades most tasks by the
database state those calls leave; here only the calls are graded, by tau2's action check.

Gold (``gold_actions``, in the task's ``verifier.params["actions"]``, never in the router
view): every action of ``evaluation_criteria.actions`` whose ``requestor`` is the agent
(``assistant``), as ``{"tool", "arguments", "compare_args"}``. The discoverable-tool
handlers name the tool they act for (tau2-bench ``domains/banking_knowledge/tools.py``):
``call_discoverable_agent_tool(agent_tool_name=X, arguments=J)`` is a call of ``X`` with
the JSON object ``J`` as its arguments, and ``unlock_discoverable_agent_tool(
agent_tool_name=X)`` is met by any call of ``X`` (compare_args ``[]``). The agent's own
calls of those handlers are read the same way (``normalise_call``), so calling the named
tool directly and calling it through its handler count alike.

Matching (tau2-bench ``data_model/tasks.py``, ``Action.compare_with_tool_call``): a gold
action is met by a call with the same tool name whose values equal the gold ones on the
action's ``compare_args``; where ``compare_args`` is None, tau2 compares the keys the
*call* gives (so an argument left out is not compared, one given must be right), and so
does this grader. A handler's JSON arguments are compared as parsed values, not as raw
strings. One call may meet several gold actions (tau2 checks each action against the
whole trajectory).

Outcomes (``TAU2_OUTCOMES``): ``correct`` (every gold agent action met: ``agent_success``),
``wrong_variant`` (an action unmet and a look-alike sibling of a gold tool called:
``siblings``, the same name but for its number or one word), ``wrong_args`` (every gold
tool called, an action's values wrong),
``missed_action`` (a gold tool never called), ``answered``/``abstained`` (no call), and
``unparseable``. Measures (``TAU2_MEASURES``, in ``AgentGrade.measures``):
``action_recall``, the share of gold agent actions met, and ``wrong_variant_calls``, the
calls of a sibling that is not itself gold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from junction.agent.execution import ExecutionResult
from junction.agent.grade import AgentGrade, Measure
from junction.agent.prompt import PromptLayout
from junction.tasks import BenchmarkTask

__all__ = [
    "TAU2_LAYOUT",
    "TAU2_MEASURES",
    "TAU2_OUTCOMES",
    "TAU2_REPORT_NOTE",
    "gold_actions",
    "grade_tau2",
    "match",
    "normalise_call",
    "siblings",
    "tau2_gradable",
    "variant_stem",
]

TAU2_LAYOUT = PromptLayout(
    documents_header=("Here are the bank's policy documents. Follow them: they say which "
                      "function to use for a request and with which arguments."),
    question=("A customer of the bank needs help. Their whole situation, as written for "
              "the customer:\n\n{objective}\n\nReply with every function call you would "
              "make for this customer, in order, as one list of calls with their arguments "
              "and nothing else, for example [tool_a(arg=\"value\"), tool_b(other=1)]."))
"""The τ agent's prompt: BFCL's system prompt with the exposed tools, the documents
header above, and the customer's situation asking for every call in order, with an example
of the answer's form (without it the 0.5B model listed bare tool names: parse rate 0.30-0.50
against 0.90 on the coupling pair, ``bench/studies/tau2_agent.py --layouts``,
docs/measurement.md)."""

TAU2_OUTCOMES: dict[str, str] = {
    "correct": "every gold agent action met (tau2's action check)",
    "wrong_variant": "τ: an action unmet and a look-alike sibling of a gold tool called",
    "wrong_args": "τ: every gold tool called, an action's compared values wrong",
    "missed_action": "τ: a gold tool never called (no sibling called instead)",
    "answered": "the agent replied in text, no call",
    "abstained": "the agent answered [] (no call)",
    "unparseable": "call syntax BFCL's decoder cannot parse (never a success)",
}
"""Every ``agent_outcome`` of this grader and what it means."""

TAU2_MEASURES = (
    Measure("action_recall", "share of the task's gold agent actions the agent's calls met "
            "(tau2's action check)", "fraction in [0, 1]", "higher"),
    Measure("wrong_variant_calls", "calls of a look-alike sibling of a gold tool that is not "
            "itself gold (activate_debit_card_8292 for _8291)",
            "calls, >= 0", "lower"),
)
"""The measures every grade of this grader carries (``junction.agent.grade.Measure``)."""

TAU2_REPORT_NOTE = (
    "the agent's calls graded against gold actions: the customer's whole situation given "
    "at once, the calls the agent would make matched as tau2 matches actions; not tau2's "
    "conversation, which grades most tasks by database state "
    "(`junction.agent.tau2_grading`)")
"""What the report says about this grader under its measures."""


def _measures(recall: float, wrong_variant: int) -> dict[str, float]:
    return {"action_recall": recall, "wrong_variant_calls": float(wrong_variant)}

_CALL_HANDLER = "call_discoverable_agent_tool"
_UNLOCK_HANDLER = "unlock_discoverable_agent_tool"
_VARIANT = re.compile(r"_\d+$")


def variant_stem(tool_id: str) -> str:
    """``tool_id`` without its trailing ``_NNNN`` (``activate_debit_card_8291`` ->
    ``activate_debit_card``); the id itself when it has none."""
    return _VARIANT.sub("", tool_id)


def _word_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two word sequences (substitution, insertion, deletion
    of one word cost 1)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def siblings(tool_id: str, tool_ids: Iterable[str]) -> tuple[str, ...]:
    """The look-alike siblings of ``tool_id`` among ``tool_ids``, sorted: other ids whose
    ``variant_stem`` is the same (``activate_debit_card_8291`` / ``_8292``) or differs by
    one word (``_``-separated: ``freeze_debit_card_3892`` / ``unfreeze_debit_card_3893``,
    ``file_credit_card_transaction_dispute_4829`` / ``file_debit_card_...``): the tools
    only a document tells apart."""
    words = variant_stem(tool_id).split("_")
    return tuple(sorted(t for t in set(tool_ids) if t != tool_id
                        and _word_distance(words, variant_stem(t).split("_")) <= 1))


def _json_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def gold_actions(actions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The gold agent actions of a tau2 task's ``evaluation_criteria.actions``, normalised
    (module docstring): ``[{"action_id", "tool", "arguments", "compare_args"}]`` in order;
    ``compare_args`` None means the call's own keys. Customer-side actions (``requestor``
    ``user``) are left out. A handler action whose named tool or JSON arguments cannot be
    read keeps the handler itself as its tool (it can then only be met literally)."""
    out: list[dict[str, Any]] = []
    for action in actions:
        if action.get("requestor", "assistant") != "assistant":
            continue
        name = str(action.get("name", ""))
        arguments = dict(action.get("arguments") or {})
        compare = action.get("compare_args")
        compare = None if compare is None else [str(k) for k in compare]
        target = arguments.get("agent_tool_name")
        if name == _UNLOCK_HANDLER and isinstance(target, str):
            name, arguments, compare = target, {}, []
        elif name == _CALL_HANDLER and isinstance(target, str):
            inner = _json_object(arguments.get("arguments", {}))
            if inner is not None:
                keep_values = compare is None or "arguments" in compare
                name, arguments = target, inner
                compare = None if keep_values else []
        out.append({"action_id": str(action.get("action_id", len(out))), "tool": name,
                    "arguments": arguments, "compare_args": compare})
    return out


def normalise_call(tool_id: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An agent's call as the tool it acts for: a handler call naming a tool (and, for
    ``call_discoverable_agent_tool``, JSON-object ``arguments``) becomes a call of that
    tool with those arguments; any other call is itself."""
    target = arguments.get("agent_tool_name")
    if tool_id == _UNLOCK_HANDLER and isinstance(target, str):
        return target, {}
    if tool_id == _CALL_HANDLER and isinstance(target, str):
        inner = _json_object(arguments.get("arguments", {}))
        if inner is not None:
            return target, dict(inner)
    return tool_id, dict(arguments)


def match(action: Mapping[str, Any], tool_id: str, arguments: Mapping[str, Any]) -> bool:
    """Whether the (normalised) call meets the gold ``action`` (tau2's
    ``compare_with_tool_call``: same name, equal values on ``compare_args``, or on the
    call's keys when it is None)."""
    if action["tool"] != tool_id:
        return False
    keys = action["compare_args"] if action["compare_args"] is not None else list(arguments)
    gold = action["arguments"]
    return ({k: arguments[k] for k in keys if k in arguments}
            == {k: gold[k] for k in keys if k in gold})


def tau2_gradable(task: BenchmarkTask) -> bool:
    """Whether the task carries at least one gold agent action to grade."""
    return bool(task.verifier.params.get("actions"))


def grade_tau2(task: BenchmarkTask, result: ExecutionResult) -> AgentGrade:
    """Grade a model executor's result on a τ task (module docstring).

    Raises ``ValueError`` naming the task when it has no gold agent action or the result
    carries no ``output_kind`` (it did not come from a model executor).
    """
    actions = task.verifier.params.get("actions") or []
    if not actions:
        raise ValueError(f"task {task.task_id!r}: no gold agent action to grade")
    if result.output_kind is None:
        raise ValueError(f"task {task.task_id!r}: the result has no model output to grade")
    n = len(actions)
    if result.output_kind == "unparseable":
        return AgentGrade(success=False, outcome="unparseable", error_type="decoder:unparseable",
                          detail=result.decode_error[:300], measures=_measures(0.0, 0))
    calls = [normalise_call(c.tool_id, c.arguments) for c in result.tool_calls]
    if not calls:
        return AgentGrade(success=False,
                          outcome="abstained" if result.output_kind == "empty" else "answered",
                          error_type="agent:no_call", measures=_measures(0.0, 0))
    met = [any(match(a, name, args) for name, args in calls) for a in actions]
    gold_tools = {a["tool"] for a in actions}
    all_tools = [t.id for t in task.tools]
    variants = {s for g in gold_tools for s in siblings(g, all_tools)} - gold_tools
    wrong_variant = sum(name in variants for name, _ in calls)
    recall = sum(met) / n
    if all(met):
        return AgentGrade(success=True, outcome="correct",
                          measures=_measures(1.0, wrong_variant))
    unmet = [a for a, ok in zip(actions, met, strict=True) if not ok]
    called = {name for name, _ in calls}
    if wrong_variant:
        outcome = "wrong_variant"
    elif all(a["tool"] in called for a in unmet):
        outcome = "wrong_args"
    else:
        outcome = "missed_action"
    first = unmet[0]
    return AgentGrade(success=False, outcome=outcome, error_type=f"tau2:{outcome}",
                      detail=f"{len(unmet)} of {n} gold agent actions unmet; first: "
                             f"{first['action_id']} {first['tool']}"[:300],
                      measures=_measures(recall, wrong_variant))
