"""The agent graders' measures in a run: per strategy, and paired where it tells something.

On the agent rows whose grader declares measures (``junction.agent.grade.Measure``, held
in the trace's ``agent_measures``; the ``tau2_actions`` grader's ``action_recall`` and
``wrong_variant_calls``, say), whatever the grader:

- ``strategies``: per suite, budget scale and strategy: the grader, n graded tasks, agent
  success with its Wilson 95% interval, unparseable answers, and ``mean_<measure>``, the
  mean of each measure over those tasks;
- ``coupling``: the coupling pairs (``coupling_pairs``: a reference and its catalog
  ``documents_twin``, the same tools with and without the documents naming them) on agent
  success, paired on (seed, task): the difference is what those documents are worth to
  this model, whatever a selector does; beside it ``<measure>_difference``, the mean
  paired difference of each measure both sides carry;
- ``verdicts``: each (joint, split twin) pair of the catalog (``joint_split_pairs()``) the
  same way, with the count of shared tasks where both exposed the same set.

The report's section (``measure_lines``) names each measure with its grader's words
(``junction.agent.graders.agent_measures``) and prints each grader's ``report_note``.
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

__all__ = ["coupling_pairs", "measure_lines", "measure_tables"]


def coupling_pairs() -> tuple[tuple[str, str], ...]:
    """(with documents, without) reference pairs from the strategy catalog's
    ``documents_twin``: the pairs whose agent difference is the coupling value."""
    return tuple((name, info.documents_twin) for name, info in sorted(STRATEGIES.items())
                 if info.documents_twin)


_COLUMNS = ("suite", "budget_scale", "strategy", "seed", "task_id", "agent_success",
            "agent_outcome", "agent_grader", "agent_measures", "exposed_context_ids",
            "exposed_tool_ids")

Cells = dict[tuple[str, float, str], dict[tuple, dict[str, Any]]]


def _cells(traces: pa.Table) -> Cells:
    """(suite, scale, strategy) -> (seed, task) -> the agent row, its ``measures`` as a
    dict and its exposed ``set``; rows without an agent grade or without measures are
    left out."""
    if traces.num_rows == 0 or not set(_COLUMNS) <= set(traces.column_names):
        return {}
    cells: Cells = {}
    for r in traces.select(list(_COLUMNS)).to_pylist():
        if r["agent_success"] is None or not r["agent_measures"]:
            continue
        measures = {m["name"]: m["value"] for m in r["agent_measures"]}
        cells.setdefault((r["suite"], float(r["budget_scale"]), r["strategy"]), {})[
            (r["seed"], r["task_id"])] = {**r, "measures": measures, "set": exposed_set(r)}
    return cells


def _paired(va: Mapping[tuple, dict[str, Any]], vb: Mapping[tuple, dict[str, Any]],
            ) -> dict[str, Any] | None:
    shared = sorted(set(va) & set(vb))
    if not shared:
        return None
    cmp = verdicts.paired_comparison([bool(va[k]["agent_success"]) for k in shared],
                                     [bool(vb[k]["agent_success"]) for k in shared])
    names = sorted(set.intersection(*(set(va[k]["measures"]) & set(vb[k]["measures"])
                                      for k in shared)))
    differences = {f"{name}_difference": sum(va[k]["measures"][name] - vb[k]["measures"][name]
                                             for k in shared) / len(shared)
                   for name in names}
    return {"n": cmp.n, "rate_a": cmp.rate_a, "rate_b": cmp.rate_b,
            "difference": cmp.difference, "ci_low": cmp.ci_low, "ci_high": cmp.ci_high,
            "p_value": cmp.p_value, **differences,
            "identical_sets": sum(va[k]["set"] == vb[k]["set"] for k in shared)}


def _strategy_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    wins = sum(bool(r["agent_success"]) for r in rows)
    low, high = verdicts.wilson_interval(wins, n)
    names = sorted({name for r in rows for name in r["measures"]})
    return {"grader": ", ".join(sorted({r["agent_grader"] for r in rows})), "n": n,
            "agent_success": wins / n, "ci_low": low, "ci_high": high,
            "unparseable": sum(r["agent_outcome"] == "unparseable" for r in rows),
            **{f"mean_{name}": sum(r["measures"][name] for r in rows if name in r["measures"])
               / sum(name in r["measures"] for r in rows) for name in names}}


def measure_tables(traces: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """``{"coupling", "verdicts", "strategies"}`` (module docstring), each a list of dicts
    with suite and budget_scale, sorted; all empty without agent rows carrying measures."""
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
            out["strategies"].append({
                "suite": suite, "budget_scale": scale, "strategy": strategy,
                **_strategy_row(list(cells[(suite, scale, strategy)].values()))})
    return out


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _pair_row(r: Mapping[str, Any], names: list[str], identical: bool) -> str:
    decides = "" if r["n"] >= verdicts.MIN_DECIDING_TASKS else f" ({verdicts.too_few(r['n'])})"
    deltas = "".join(f" {_signed(r.get(f'{name}_difference'))} |" for name in names)
    return (f"| {r['suite']} | {r['budget_scale']:g} | {r['a']} − {r['b']} | {r['n']} | "
            f"{percent_text(r['rate_a'])} | {percent_text(r['rate_b'])} | "
            f"{points_text(r['difference'])} [{points_text(r['ci_low'])}, "
            f"{points_text(r['ci_high'])}]{decides} | {r['p_value']:.2g} |" + deltas
            + (f" {r['identical_sets']} of {r['n']} |" if identical else ""))


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _definitions(names: list[str], graders: list[str]) -> list[str]:
    from junction.agent.graders import AGENT_GRADERS, agent_measures

    known = agent_measures()
    lines = []
    for name in names:
        m = known.get(name)
        lines.append(f"- `{name}` " + (f"({m.unit}; {m.direction} is better): {m.meaning}"
                                       if m is not None else ": a measure no grader of this "
                                       "catalog declares"))
    for grader in graders:
        info = AGENT_GRADERS.get(grader)
        if info is not None and info.report_note:
            lines.append(f"- grader `{grader}`: {info.report_note}")
    return [*lines, ""] if lines else []


def measure_lines(tables: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The report's section on the agent graders' measures (``measure_tables``); empty
    without rows."""
    if not any(tables.get(k) for k in ("coupling", "verdicts", "strategies")):
        return []
    strategies = tables.get("strategies", [])
    names = sorted({k.removeprefix("mean_") for r in strategies for k in r
                    if k.startswith("mean_")})
    graders = sorted({g for r in strategies for g in r["grader"].split(", ")})
    lines = ["## The agent graders' measures", "",
             "Where the agent's grader gives measures beside success (each defined below, "
             "with its grader's note). Differences A − B in points on agent success, "
             "Newcombe's paired 95% interval, exact McNemar p; Δ of a measure: its mean "
             "paired difference.", "", *_definitions(names, graders)]
    intros = {
        "coupling": ("**What a document is worth to the model.** The same tools (the gold "
                     "ones and their look-alike siblings) with and without the documents "
                     "that name them:"),
        "verdicts": ("**Joint against split, acted on.** Each joint selector against its "
                     "split twin (identical: shared tasks where both exposed the same set):")}
    for table, intro in intros.items():
        rows = tables.get(table) or []
        if not rows:
            continue
        identical = table == "verdicts"
        deltas = sorted({k.removesuffix("_difference") for r in rows for k in r
                         if k.endswith("_difference")})
        columns = (["suite", "scale", "A − B", "n", "A", "B", "difference [95% CI]",
                    "McNemar p"] + [f"Δ {name}" for name in deltas]
                   + (["identical sets"] if identical else []))
        lines += [intro, "", "| " + " | ".join(columns) + " |",
                  "|" + "---|" * len(columns)]
        lines += [_pair_row(r, deltas, identical=identical) for r in rows]
        lines.append("")
    if strategies:
        columns = ["suite", "scale", "strategy", "grader", "n", "agent success [Wilson 95%]",
                   "unparseable", *(f"mean {name}" for name in names)]
        lines += ["**Per strategy.** Agent success with its Wilson 95% interval, unparseable "
                  "answers and the mean of each measure over the graded tasks:", "",
                  "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for r in strategies:
            lines.append(
                f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | {r['grader']} | "
                f"{r['n']} | {percent_text(r['agent_success'])} [{percent_text(r['ci_low'])}, "
                f"{percent_text(r['ci_high'])}] | {r['unparseable']} |"
                + "".join(f" {_number(r.get(f'mean_{name}'))} |" for name in names))
        lines.append("")
    return lines
