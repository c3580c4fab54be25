"""The agent's paired comparisons and its window cuts, for the report and metrics.json.

``agent_pairs`` compares each strategy that sees interactions with each interaction-blind
one on ``agent_success`` (roles from the strategy catalog); ``agent_fit`` counts the agent
prompts cut to the agent's context window (``agent_dropped_context_ids``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from junction.evidence import verdicts
from junction.evidence.summary import exposed_set
from junction.evidence.verdict_text import percent_text, points_text
from junction.strategies.catalog import interaction_blind_strategies, strategies_where

__all__ = ["agent_fit", "agent_pair_lines", "agent_pairs", "fit_lines"]


def agent_pairs(traces: pa.Table) -> list[dict[str, Any]]:
    """``agent_success`` of each joint strategy (catalog ``sees_interactions``) against each
    interaction-blind one (``interaction_blind_strategies``) that has agent rows in the same
    suite and budget scale, paired on (seed, task_id): {suite, budget_scale, a, b, n,
    rate_a, rate_b, difference, ci_low, ci_high, p_value, identical_sets}; the interval is
    Newcombe's paired 95% and p the exact McNemar test (``verdicts.paired_comparison``);
    ``identical_sets``: shared tasks where both exposed the same set (concordant by
    construction). [] without agent rows."""
    if traces.num_rows == 0 or "agent_success" not in traces.column_names:
        return []
    values: dict[tuple[str, float, str], dict[tuple, tuple[bool, Any]]] = {}
    for r in traces.select(["suite", "budget_scale", "strategy", "seed", "task_id",
                            "agent_success", "exposed_context_ids",
                            "exposed_tool_ids"]).to_pylist():
        if r["agent_success"] is not None:
            values.setdefault((r["suite"], float(r["budget_scale"]), r["strategy"]), {})[
                (r["seed"], r["task_id"])] = (bool(r["agent_success"]), exposed_set(r))
    joint, blind = strategies_where(sees_interactions=True), interaction_blind_strategies()
    out = []
    for suite, scale in sorted({(s, x) for s, x, _ in values}):
        for a in joint:
            for b in blind:
                va, vb = values.get((suite, scale, a), {}), values.get((suite, scale, b), {})
                shared = sorted(set(va) & set(vb))
                if not shared:
                    continue
                cmp = verdicts.paired_comparison([va[k][0] for k in shared],
                                                 [vb[k][0] for k in shared])
                out.append({"suite": suite, "budget_scale": scale, "a": a, "b": b,
                            "n": cmp.n, "rate_a": cmp.rate_a, "rate_b": cmp.rate_b,
                            "difference": cmp.difference, "ci_low": cmp.ci_low,
                            "ci_high": cmp.ci_high, "p_value": cmp.p_value,
                            "identical_sets": sum(va[k][1] == vb[k][1] for k in shared)})
    return out


def agent_pair_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The agent's joint-against-split table (``agent_pairs``); empty without rows."""
    if not rows:
        return []
    lines = ["Agent success of each joint strategy against each interaction-blind one on "
             "the tasks both ran (difference A − B in points, Newcombe's paired 95% "
             "interval, exact McNemar p; identical: shared tasks where both exposed the "
             "same set, concordant by construction).", "",
             "| suite | budget scale | A − B | n | A | B | difference [95% CI] | McNemar p | "
             "identical sets |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        decides = ("" if r["n"] >= verdicts.MIN_DECIDING_TASKS
                   else f" ({verdicts.too_few(r['n'])})")
        lines.append(
            f"| {r['suite']} | {r['budget_scale']:g} | {r['a']} − {r['b']} | {r['n']} | "
            f"{percent_text(r['rate_a'])} | {percent_text(r['rate_b'])} | "
            f"{points_text(r['difference'])} [{points_text(r['ci_low'])}, "
            f"{points_text(r['ci_high'])}]{decides} | {r['p_value']:.2g} | "
            f"{r['identical_sets']} of {r['n']} |")
    lines.append("")
    return lines


def agent_fit(traces: pa.Table) -> dict[tuple[str, str], dict[str, int]]:
    """Per (suite, strategy) with agent rows whose prompt left contexts out
    (``agent_dropped_context_ids``): ``{"agent_evaluations", "cut", "contexts_exposed",
    "contexts_left_out"}`` (counts summed over the agent rows); {} when none was cut."""
    needed = {"agent_success", "agent_dropped_context_ids", "exposed_context_ids"}
    if traces.num_rows == 0 or not needed <= set(traces.column_names):
        return {}
    out: dict[tuple[str, str], dict[str, int]] = {}
    for r in traces.select(["suite", "strategy", *sorted(needed)]).to_pylist():
        if r["agent_success"] is None:
            continue
        e = out.setdefault((r["suite"], r["strategy"]), {
            "agent_evaluations": 0, "cut": 0, "contexts_exposed": 0, "contexts_left_out": 0})
        dropped = r["agent_dropped_context_ids"] or []
        e["agent_evaluations"] += 1
        e["cut"] += bool(dropped)
        e["contexts_exposed"] += len(r["exposed_context_ids"] or [])
        e["contexts_left_out"] += len(dropped)
    return {k: v for k, v in sorted(out.items()) if v["cut"]}


def fit_lines(fit: dict[tuple[str, str], dict[str, int]], suite: str) -> list[str]:
    """One sentence for ``suite``'s strategies whose agent prompts were cut (``agent_fit``);
    empty when none was."""
    parts = [f"{strategy}: {e['cut']} of {e['agent_evaluations']} agent prompts cut, "
             f"{e['contexts_left_out']} of {e['contexts_exposed']} exposed turns left out "
             f"({percent_text(e['contexts_left_out'] / max(e['contexts_exposed'], 1))})"
             for (s, strategy), e in fit.items() if s == suite]
    return [f"In this run, {'; '.join(parts)}."] if parts else []
