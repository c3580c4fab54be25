"""Where retrieval success is lost: one cause per failed task, and the breakdown per
strategy and budget scale.

A task whose verifier grades gold exposure (``junction.verifiers.cheapest_success_set``:
``tools_exposed``, ``tools_with_documents``) and whose retrieval proxy failed gets the
first cause of ``LOSS_CAUSES`` that holds, in this order:

1. ``gold_does_not_fit``: the cheapest set the verifier accepts exceeds the task's budget
   (no selection could succeed);
2. ``tool_not_in_pool``: a gold tool is not in the tool candidate pool;
3. ``tool_not_selected``: every gold tool is in the pool, one is not exposed;
4. ``document_not_in_pool``: for some gold-pair tool, no document naming it is in the
   context candidate pool (on a task without a gold tool: a gold document is not);
5. ``document_not_selected``: such a document is in the pool, none is exposed (on a task
   without a gold tool: a pooled gold document is not exposed);
6. ``other``: none of these (a verifier with a condition beyond gold exposure).

Tools come first because the verifier asks for them first. A success, or a task whose
verifier kind has no cheapest set, has no cause (None). ``loss_cause`` reads gold: it runs
on the evaluation side (``junction.evaluate``), which records the cause on the trace
(``loss_cause``), never inside a strategy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from junction.tasks import BenchmarkTask
from junction.verifiers import cheapest_success_set

__all__ = ["LOSS_CAUSES", "loss_breakdown", "loss_cause", "loss_document", "loss_lines"]

LOSS_CAUSES: dict[str, str] = {
    "gold_does_not_fit": "the cheapest set the verifier accepts exceeds the budget",
    "tool_not_in_pool": "a gold tool is not in the tool candidate pool",
    "tool_not_selected": "every gold tool is pooled, one is not exposed",
    "document_not_in_pool": "a gold tool has no naming document in the context pool",
    "document_not_selected": "a naming document is pooled, none is exposed",
    "other": "none of the above (the verifier asks for more than gold exposure)",
}
"""Cause -> what it means, in the order the first that holds is taken (module docstring)."""


def loss_cause(task: BenchmarkTask, context_pool: Iterable[str], tool_pool: Iterable[str],
               exposed_contexts: Iterable[str], exposed_tools: Iterable[str],
               success: bool) -> str | None:
    """The first of ``LOSS_CAUSES`` that holds for a failed selection on ``task`` (a
    ``junction.tasks.BenchmarkTask`` with its budget as evaluated), given the candidate
    pools' ids and the exposed ids; None on a success or when the task's verifier kind has
    no cheapest set (``junction.verifiers.cheapest_success_set``)."""
    cheapest = None if success else cheapest_success_set(task)
    if cheapest is None:
        return None
    contexts, tools = cheapest
    if not task.budget.check([task.context(c) for c in contexts],
                             [task.tool(t) for t in tools]).fits:
        return "gold_does_not_fit"
    c_pool, t_pool = set(context_pool), set(tool_pool)
    c_shown, t_shown = set(exposed_contexts), set(exposed_tools)
    gold_tools = set(task.gold_tool_ids)
    if gold_tools - t_pool:
        return "tool_not_in_pool"
    if gold_tools - t_shown:
        return "tool_not_selected"
    if gold_tools:  # one naming document needed per paired tool
        naming: dict[str, set[str]] = {}
        for p in task.gold_pairs:
            naming.setdefault(p.tool_id, set()).add(p.context_id)
        if any(not docs & c_pool for docs in naming.values()):
            return "document_not_in_pool"
        if any(not docs & c_shown for docs in naming.values()):
            return "document_not_selected"
    elif task.verifier.kind == "tools_with_documents":  # every gold document needed
        needed = set(task.gold_context_ids)
        if needed - c_pool:
            return "document_not_in_pool"
        if needed - c_shown:
            return "document_not_selected"
    return "other"


def loss_breakdown(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per suite, budget scale and strategy with a cause on some row: {suite,
    budget_scale, strategy, evaluations, successes, failures, causes ({cause: count} over
    every cause of ``LOSS_CAUSES``, in its order), unexplained (failures without a cause),
    dominant (the cause with the most failures; the earlier one on a tie)}, sorted.

    ``rows``: trace rows with suite, budget_scale, strategy, success and loss_cause. Every
    evaluation counts: a cross-fitted strategy's R repetitions give R rows per task."""
    cells: dict[tuple[str, float, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        cells.setdefault((row["suite"], float(row["budget_scale"]), row["strategy"]),
                         []).append(row)
    out = []
    for (suite, scale, strategy), group in sorted(cells.items()):
        if not any(r.get("loss_cause") for r in group):
            continue
        causes = dict.fromkeys(LOSS_CAUSES, 0)
        for r in group:
            if r.get("loss_cause"):
                causes[r["loss_cause"]] += 1
        successes = sum(bool(r["success"]) for r in group)
        failures = len(group) - successes
        top = max(causes, key=lambda c: (causes[c], -list(LOSS_CAUSES).index(c)))
        out.append({"suite": suite, "budget_scale": scale, "strategy": strategy,
                    "evaluations": len(group), "successes": successes, "failures": failures,
                    "causes": causes, "unexplained": failures - sum(causes.values()),
                    "dominant": top})
    return out


def loss_document(breakdown: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``loss_breakdown`` as ``metrics.json`` holds it: suite -> ``budget_scale=x`` ->
    strategy -> {evaluations, successes, failures, causes, unexplained, dominant}."""
    out: dict[str, Any] = {}
    for r in breakdown:
        out.setdefault(r["suite"], {}).setdefault(f"budget_scale={r['budget_scale']:g}", {})[
            r["strategy"]] = {k: v for k, v in r.items()
                              if k not in ("suite", "budget_scale", "strategy")}
    return out


_HEADERS = {"gold_does_not_fit": "gold does not fit", "tool_not_in_pool": "tool not in pool",
            "tool_not_selected": "tool not selected",
            "document_not_in_pool": "document not in pool",
            "document_not_selected": "document not selected", "other": "other"}


def loss_lines(breakdown: Sequence[Mapping[str, Any]],
               references: Iterable[str] = ()) -> list[str]:
    """The report's loss section: one table row per ``loss_breakdown`` row (references
    after the strategies, marked), each cause as a count of failed evaluations, then one
    sentence per suite naming the cause that dominates over its budgeted strategies.
    Empty when there is no row."""
    if not breakdown:
        return []
    refs = set(references)
    lines = ["## Where retrieval success is lost", "",
             "Each failed evaluation under its first cause, in this order (the first that "
             "holds; `junction.evidence.losses`): " + "; ".join(
                 f"*{_HEADERS[c]}*: {text}" for c, text in LOSS_CAUSES.items())
             + ". Counts are evaluations (a cross-fitted strategy evaluates every task once "
               "per repetition).", "",
             "| suite | scale | strategy | evaluations | successes | "
             + " | ".join(_HEADERS[c] for c in LOSS_CAUSES) + " | dominant |",
             "|---|---|---|---|---|" + "---|" * len(LOSS_CAUSES) + "---|"]
    ordered = sorted(breakdown, key=lambda r: (r["suite"], r["strategy"] in refs,
                                               r["budget_scale"], r["strategy"]))
    for r in ordered:
        name = f"{r['strategy']} (reference)" if r["strategy"] in refs else r["strategy"]
        lines.append(f"| {r['suite']} | {r['budget_scale']:g} | {name} | {r['evaluations']} | "
                     f"{r['successes']} | "
                     + " | ".join(str(r["causes"][c]) for c in LOSS_CAUSES)
                     + f" | {_HEADERS[r['dominant']]} |")
    lines.append("")
    for suite in sorted({r["suite"] for r in breakdown}):
        totals = dict.fromkeys(LOSS_CAUSES, 0)
        for r in breakdown:
            if r["suite"] == suite and r["strategy"] not in refs:
                for c, n in r["causes"].items():
                    totals[c] += n
        failed = sum(totals.values())
        if not failed:
            continue
        top = max(totals, key=lambda c: (totals[c], -list(LOSS_CAUSES).index(c)))
        lines.append(f"On {suite}, over every budgeted strategy and scale, *{_HEADERS[top]}* "
                     f"dominates: {totals[top]} of {failed} failed evaluations "
                     f"({100 * totals[top] / failed:.0f}%).")
        lines.append("")
    return lines
