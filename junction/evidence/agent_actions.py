"""The agent's actions where a grader matches gold actions (τ-Knowledge): what a document
is worth to the model, and whether joint selection changes what it does.

On a suite whose agent rows carry ``agent_action_recall`` (``junction.agent.tau2_grading``):

- ``coupling``: the coupling pairs (``coupling_pairs``: a reference and its catalog
  ``documents_twin``, the same tools, the gold ones and their look-alike siblings, with
  and without the documents naming them) compared on agent success,
  paired on (seed, task): the difference is what those documents are worth to this model,
  whatever a selector does; beside it the mean paired difference in action recall;
- ``verdicts``: each (joint, split twin) pair of the catalog (``joint_split_pairs()``:
  learned_exact − learned_split, exact − adaptive_split) on agent success, paired on
  (seed, task), with the count of shared tasks where both exposed the same set;
- ``strategies``: per strategy n, agent success with its Wilson 95% interval, mean action
  recall, wrong-variant calls and unparseable answers.

Intervals: Newcombe's paired 95% interval and the exact McNemar p
(``verdicts.paired_comparison``); Wilson for one rate (``verdicts.wilson_interval``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from junction.evidence import verdicts
from junction.evidence.joint_split import joint_split_pairs
from junction.evidence.summary import exposed_set
from junction.evidence.verdict_text import percent_text, points_text
from junction.strategies.catalog import STRATEGIES

__all__ = ["action_lines", "action_tables", "coupling_pairs"]


def coupling_pairs() -> tuple[tuple[str, str], ...]:
    """(with documents, without) reference pairs from the strategy catalog's
    ``documents_twin``: the pairs whose agent difference is the coupling value."""
    return tuple((name, info.documents_twin) for name, info in sorted(STRATEGIES.items())
                 if info.documents_twin)

_COLUMNS = ("suite", "budget_scale", "strategy", "seed", "task_id", "agent_success",
            "agent_outcome", "agent_action_recall", "agent_wrong_variant_calls",
            "exposed_context_ids", "exposed_tool_ids")


def _cells(traces: pa.Table) -> dict[tuple[str, float, str], dict[tuple, dict[str, Any]]]:
    if traces.num_rows == 0 or not set(_COLUMNS) <= set(traces.column_names):
        return {}
    cells: dict[tuple[str, float, str], dict[tuple, dict[str, Any]]] = {}
    for r in traces.select(list(_COLUMNS)).to_pylist():
        if r["agent_success"] is None or r["agent_action_recall"] is None:
            continue
        cells.setdefault((r["suite"], float(r["budget_scale"]), r["strategy"]), {})[
            (r["seed"], r["task_id"])] = {**r, "set": exposed_set(r)}
    return cells


def _paired(va: Mapping[tuple, dict[str, Any]], vb: Mapping[tuple, dict[str, Any]],
            ) -> dict[str, Any] | None:
    shared = sorted(set(va) & set(vb))
    if not shared:
        return None
    cmp = verdicts.paired_comparison([bool(va[k]["agent_success"]) for k in shared],
                                     [bool(vb[k]["agent_success"]) for k in shared])
    recall = sum(va[k]["agent_action_recall"] - vb[k]["agent_action_recall"]
                 for k in shared) / len(shared)
    return {"n": cmp.n, "rate_a": cmp.rate_a, "rate_b": cmp.rate_b,
            "difference": cmp.difference, "ci_low": cmp.ci_low, "ci_high": cmp.ci_high,
            "p_value": cmp.p_value, "recall_difference": recall,
            "identical_sets": sum(va[k]["set"] == vb[k]["set"] for k in shared)}


def action_tables(traces: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """``{"coupling", "verdicts", "strategies"}`` (module docstring), each a list of dicts
    with suite and budget_scale, sorted; all empty without agent rows carrying an action
    recall."""
    cells = _cells(traces)
    out: dict[str, list[dict[str, Any]]] = {"coupling": [], "verdicts": [], "strategies": []}
    for suite, scale in sorted({(s, x) for s, x, _ in cells}):
        pairs = ([("coupling", a, b) for a, b in coupling_pairs()]
                 + [("verdicts", a, b) for a, b in joint_split_pairs()])
        for table, a, b in pairs:
            got = _paired(cells.get((suite, scale, a), {}), cells.get((suite, scale, b), {}))
            if got is not None:
                out[table].append({"suite": suite, "budget_scale": scale, "a": a, "b": b,
                                   **got})
        for strategy in sorted(s for su, x, s in cells if (su, x) == (suite, scale)):
            rows = list(cells[(suite, scale, strategy)].values())
            n = len(rows)
            wins = sum(bool(r["agent_success"]) for r in rows)
            low, high = verdicts.wilson_interval(wins, n)
            out["strategies"].append({
                "suite": suite, "budget_scale": scale, "strategy": strategy, "n": n,
                "agent_success": wins / n, "ci_low": low, "ci_high": high,
                "action_recall": sum(r["agent_action_recall"] for r in rows) / n,
                "wrong_variant_calls": sum(r["agent_wrong_variant_calls"] or 0 for r in rows),
                "unparseable": sum(r["agent_outcome"] == "unparseable" for r in rows)})
    return out


def _pair_row(r: Mapping[str, Any], identical: bool) -> str:
    decides = "" if r["n"] >= verdicts.MIN_DECIDING_TASKS else f" ({verdicts.too_few(r['n'])})"
    return (f"| {r['suite']} | {r['budget_scale']:g} | {r['a']} − {r['b']} | {r['n']} | "
            f"{percent_text(r['rate_a'])} | {percent_text(r['rate_b'])} | "
            f"{points_text(r['difference'])} [{points_text(r['ci_low'])}, "
            f"{points_text(r['ci_high'])}]{decides} | {r['p_value']:.2g} | "
            f"{r['recall_difference']:+.3f} |"
            + (f" {r['identical_sets']} of {r['n']} |" if identical else ""))


def action_lines(tables: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The report's section on the agent's actions (``action_tables``); empty without
    rows."""
    if not any(tables.get(k) for k in ("coupling", "verdicts", "strategies")):
        return []
    lines = ["## The agent's actions (tau2's action check)", "",
             "Where the agent's calls are graded against gold actions (τ-Knowledge: the "
             "customer's whole situation given at once, the calls the agent would make "
             "matched as tau2 matches actions; not tau2's conversation, which grades most "
             "tasks by database state; `junction.agent.tau2_grading`). Differences A − B in "
             "points on agent success, Newcombe's paired 95% interval, exact McNemar p; Δ "
             "recall: the mean paired difference in the share of gold agent actions met.", ""]
    intros = {
        "coupling": ("**What a document is worth to the model.** The same tools (the gold "
                     "ones and their look-alike siblings) with and without the documents "
                     "that name them:"),
        "verdicts": ("**Joint against split, acted on.** Each joint selector against its "
                     "split twin (identical: shared tasks where both exposed the same set):")}
    for table, intro in intros.items():
        if not tables.get(table):
            continue
        identical = table == "verdicts"
        columns = ["suite", "scale", "A − B", "n", "A", "B", "difference [95% CI]",
                   "McNemar p", "Δ recall"] + (["identical sets"] if identical else [])
        lines += [intro, "", "| " + " | ".join(columns) + " |",
                  "|" + "---|" * len(columns)]
        lines += [_pair_row(r, identical=identical) for r in tables[table]]
        lines.append("")
    if tables.get("strategies"):
        lines += ["**Per strategy.** Agent success with its Wilson 95% interval, the mean share "
                  "of gold agent actions met, calls of a look-alike sibling, unparseable "
                  "answers:", "",
                  "| suite | scale | strategy | n | agent success [Wilson 95%] | action recall "
                  "| wrong-variant calls | unparseable |", "|---|---|---|---|---|---|---|---|"]
        for r in tables["strategies"]:
            lines.append(
                f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | {r['n']} | "
                f"{percent_text(r['agent_success'])} [{percent_text(r['ci_low'])}, "
                f"{percent_text(r['ci_high'])}] | {r['action_recall']:.3f} | "
                f"{r['wrong_variant_calls']} | {r['unparseable']} |")
        lines.append("")
    return lines
