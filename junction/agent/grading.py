"""Grade what an agent did on a BFCL task with BFCL's own checkers: ``agent_success``.

The ``bfcl`` record of the agent grader catalog (``junction.agent.graders``, which chooses
a task's grader; call ``junction.agent.graders.grade_agent`` to grade any task).

``grade_bfcl(task, result)`` reads the task's BFCL category and gold calls
(``task.metadata``: ``bfcl_category``, ``gold_calls``; ``verifier.params.answers`` for
memory) and the executor's decoded calls and text. Outcomes (``AGENT_OUTCOMES``):

- tool categories (simple, multiple, parallel, parallel_multiple and their ``live_``
  forms): BFCL's ``ast_checker`` with the category; ``correct`` when valid, else
  ``wrong_call`` (the set of called function names is not the gold set), ``wrong_count``
  (right names, another number of calls) or ``wrong_args`` (right calls, an argument the
  checker refuses); a text reply is ``answered`` and ``[]`` is ``abstained`` (failures);
- ``irrelevance``: success when the agent makes no call (``answered`` or ``abstained``);
  any call is ``wrong_call``;
- ``memory``: BFCL's ``agentic_checker`` on the text: ``correct`` when an accepted answer
  occurs, else ``wrong_call`` (it called a tool, which a single-turn agent cannot run) or
  ``wrong_answer``;
- everywhere: output with call syntax that BFCL's decoder cannot parse is ``unparseable``,
  a failure (BFCL's own irrelevance scorer counts a decode error as a pass; here it never
  is).

The checker gets the gold functions' docs in BFCL's type names, converted back from the
tools' JSON Schema (``bfcl_doc``: object -> dict, number -> float, no type -> any; BFCL's
tuple became array, which the checker treats alike).
"""

from __future__ import annotations

import json
import math
from typing import Any

from junction.agent.bfcl_checker import check_answer, check_calls
from junction.agent.execution import ExecutionResult
from junction.agent.grade import AgentGrade
from junction.resources import ToolResource
from junction.tasks import BenchmarkTask

__all__ = ["AGENT_OUTCOMES", "bfcl_doc", "bfcl_gradable", "grade_bfcl",
           "json_safe"]

AGENT_OUTCOMES: dict[str, str] = {
    "correct": "BFCL's checker accepts the calls (or, on memory, the answer)",
    "abstained": "the agent answered [] (no call); a success on irrelevance only",
    "answered": "the agent replied in text, no call; a success on irrelevance only",
    "wrong_call": "the called function names are not the gold ones (any call on irrelevance)",
    "wrong_count": "the gold functions, called another number of times",
    "wrong_args": "the gold calls with an argument BFCL's checker refuses",
    "wrong_answer": "memory: no accepted answer in the agent's text",
    "unparseable": "call syntax BFCL's decoder cannot parse (never a success)",
}
"""Every ``agent_outcome`` and what it means (the report's definitions read it)."""

_TOOL_CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")


def _category(task: BenchmarkTask) -> str | None:
    category = task.metadata.get("bfcl_category")
    return category if isinstance(category, str) else None


def bfcl_gradable(task: BenchmarkTask) -> bool:
    """Whether ``grade_bfcl`` can grade the task (a BFCL category it knows)."""
    category = _category(task)
    if category is None:
        return False
    base = category.removeprefix("live_")
    return base in _TOOL_CATEGORIES or base in ("irrelevance", "memory")


_BACK = {"object": "dict", "number": "float"}


def _back(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    out: dict[Any, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            out[key] = _BACK.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _back_param(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _back_param(value)
        else:
            out[key] = value
    return out


def _back_param(schema: Any) -> Any:
    out = _back(schema)
    if isinstance(out, dict) and "type" not in out:
        out = {**out, "type": "any"}
    return out


def bfcl_doc(tool: ToolResource) -> dict[str, Any]:
    """The tool as a BFCL function doc (``{"name", "description", "parameters"}``, BFCL
    type names; ``required`` defaults to ``[]``)."""
    params = _back(tool.json_schema or {"type": "object", "properties": {}})
    params = {"type": "dict", "properties": {}, "required": [], **params}
    return {"name": tool.id, "description": tool.description, "parameters": params}


def json_safe(value: Any) -> Any:
    """``value`` with tuples as lists and non-finite floats and other non-JSON values as
    their ``repr`` (decoded arguments go into JSON trace fields)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _first_error(result: dict[str, Any]) -> str:
    errors = result.get("error") or result.get("error_message") or ""
    if isinstance(errors, list):
        errors = errors[0] if errors else ""
    text = errors if isinstance(errors, str) else json.dumps(json_safe(errors), sort_keys=True)
    return text[:300]


def _calls(result: ExecutionResult) -> list[dict[str, dict[str, Any]]]:
    return [{c.tool_id: dict(c.arguments)} for c in result.tool_calls]


def _no_call(result: ExecutionResult) -> str:
    return "abstained" if result.output_kind == "empty" else "answered"


def grade_bfcl(task: BenchmarkTask, result: ExecutionResult) -> AgentGrade:
    """Grade a model executor's result on a BFCL task (rules in the module docstring).

    Raises ``ValueError`` when the task is not ``bfcl_gradable`` or the result carries no
    ``output_kind`` (it did not come from a model executor).
    """
    if not bfcl_gradable(task):
        raise ValueError(f"task {task.task_id!r}: no BFCL category to grade the agent by")
    if result.output_kind is None:
        raise ValueError(f"task {task.task_id!r}: the result has no model output to grade")
    category = _category(task) or ""
    base = category.removeprefix("live_")
    kind = result.output_kind
    if kind == "unparseable":
        return AgentGrade(success=False, outcome="unparseable",
                          error_type="decoder:unparseable", detail=result.decode_error[:300])
    calls = _calls(result)
    if base == "irrelevance":
        if calls:
            return AgentGrade(success=False, outcome="wrong_call",
                              error_type="irrelevance:called",
                              detail=f"called {[next(iter(c)) for c in calls]}")
        return AgentGrade(success=True, outcome=_no_call(result))
    if base == "memory":
        answers = [a for a in task.verifier.params.get("answers", []) if isinstance(a, str)]
        checked = check_answer(result.text or "", answers)
        if checked["valid"]:
            return AgentGrade(success=True, outcome="correct")
        return AgentGrade(success=False, outcome="wrong_call" if calls else "wrong_answer",
                          error_type=str(checked.get("error_type", "")),
                          detail=_first_error(checked))
    if not calls:
        return AgentGrade(success=False, outcome=_no_call(result),
                          error_type="agent:no_call")
    gold = task.metadata.get("gold_calls") or []
    gold_names = {next(iter(g)) for g in gold}
    docs = [bfcl_doc(t) for t in task.tools if t.id in gold_names]
    checked = check_calls(docs, calls, gold, category)
    if checked["valid"]:
        return AgentGrade(success=True, outcome="correct")
    called = {next(iter(c)) for c in calls}
    if called != gold_names:
        outcome = "wrong_call"
    elif len(calls) != len(gold):
        outcome = "wrong_count"
    else:
        outcome = "wrong_args"
    return AgentGrade(success=False, outcome=outcome,
                      error_type=str(checked.get("error_type", "")),
                      detail=_first_error(checked))
