"""``report.md``: a run's Markdown report, section by section (``render_markdown``), from
its ``ReportSections`` (every analysis of the run, computed once by
``junction.evidence.reports.report_sections``).

The headline's sections (first screen, full comparison, agent outcome) are
``junction.evidence.verdict_text``'s; the cost section is ``junction.evidence.cost``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from junction.agent.graders import AGENT_GRADERS
from junction.candidates import DEFAULT_POOL_RULE, POOL_RULES
from junction.evidence import metrics as catalog
from junction.evidence import verdicts
from junction.evidence.agent_measures import measure_lines
from junction.evidence.agent_tables import agent_pair_lines, fit_lines
from junction.evidence.crossfit import cross_fitted_lines
from junction.evidence.joint_split import joint_split_lines
from junction.evidence.losses import loss_lines
from junction.evidence.verdict_text import (
    agent_table_lines,
    comparison_lines,
    first_screen_lines,
    joint_against_split_lines,
)
from junction.learned.grid import OPTIMAL_SEARCH
from junction.strategies.catalog import STRATEGIES, reference_strategies
from junction.suites import SUITES, finding_suite
from junction.verifiers import verifier_meaning

__all__ = ["REFERENCE_NOTE", "ReportSections", "finding_absent_sentence", "plan_sentence",
           "plugin_lines", "reference_sentence", "render_markdown"]

def finding_absent_sentence(run: dict[str, Any]) -> str | None:
    """One sentence for the first screen when the run left the finding's suite
    (``junction.suites.finding_suite``: the record that says ``finding``; on τ-Knowledge,
    the only suite whose gold couples documents with tools, docs/suites.md) out because its
    data is absent or unreadable (run.json's ``suites_skipped``: the reason, which says how
    to get the data or which file failed); None when the run did not skip it."""
    suite = finding_suite()
    reason = (run.get("suites_skipped") or {}).get(suite) if suite else None
    if not reason:
        return None
    reason = reason.removeprefix(f"{suite}: ")
    return (f"The study's finding, joint against split selection where documents and tools "
            f"really belong together, is on suite `{suite}`, which this run left "
            f"out: {reason.rstrip('.')}.")


@dataclass(frozen=True)
class ReportSections:
    """A run's report, every analysis computed once: what ``render_markdown`` renders,
    ``metrics.json`` holds and the figures draw (``junction.evidence.reports.report_sections``
    computes it from a ``RunData``; a test builds one by hand, leaving out what it does not
    read).

    Each field holds its analysis' own rows (the function named below); empty leaves its
    section out, except ``headline``: None leaves out the headline and the full comparison,
    [] says there that no task was evaluated.
    """

    run: dict[str, Any]
    """run.json: the run's metadata with the report's counts (``rows_stopped_by_clock``,
    ``agent_exposed_sets``)."""
    suites: dict[str, Any] = field(default_factory=dict)
    """Suite key -> the suite's summary (the Suites table and Definitions)."""
    summary: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.summary.summarise``: per suite, strategy and budget scale, the
    tasks and each metric's mean."""
    headline: list[dict[str, Any]] | None = None
    """``junction.evidence.summary.headline_rows``."""
    plot_name: str | None = None
    """The success-against-budget image beside report.md (None: no plot)."""
    plot_note: str = ""
    """What that plot cannot show; "" says every budget scale that ran is shown."""
    time_plot_name: str | None = None
    """The time-per-strategy image beside report.md (None: none)."""
    times: list[tuple[str, float, float]] = field(default_factory=list)
    """``junction.evidence.plots.strategy_times``: that image's bars (seconds); empty: the
    run has no timing rows, and no image."""
    cost: list[str] | None = None
    """The cost section's Markdown lines (``junction.evidence.cost.cost_lines``)."""
    calibration: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.calibration.learned_calibration``."""
    agent: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.summary.agent_rows``."""
    joint_split: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.joint_split.joint_split_verdicts``."""
    agent_pairs: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.agent_tables.agent_pairs``."""
    fit: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    """``junction.evidence.agent_tables.agent_fit``."""
    cross_fitted: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.crossfit.cross_fitted_verdicts``."""
    measures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """``junction.evidence.agent_measures.measure_tables``."""
    losses: list[dict[str, Any]] = field(default_factory=list)
    """``junction.evidence.losses.loss_breakdown``."""
    graders: dict[str, list[str]] = field(default_factory=dict)
    """Suite -> the agent graders that graded its rows (the traces' ``agent_grader``)."""


def _calibration_lines(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    lines = ["## Learned utility calibration", "",
             "p(gold) of the learned model over every pool candidate of the run's tasks "
             "(evaluation rows only: the model was fitted on the training part). Brier: mean "
             "squared difference of p and the gold label (0 is perfect; a model that knew "
             "only the gold rate r scores r(1 − r)).", "",
             "| suite | budget scale | from | candidates | gold | mean p | gold rate | Brier "
             "| model |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | "
                     f"{r['candidates']} | {r['gold']} | {_fmt(r['mean_p'])} | "
                     f"{_fmt(r['gold_rate'])} | {_fmt(r['brier'])} | "
                     f"{', '.join(m[:12] for m in r['models'])} |")
    lines.append("")
    return lines


def _fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table_cell(column: str, value: Any) -> str:
    """A per-suite table cell, printed as the catalog's ``display`` for that column says."""
    display = {m.column: m.display for m in catalog.METRICS}.get(column)
    if display is None:
        return _fmt(value)
    return catalog.format_value(display, value)


def _table_columns() -> tuple[str, ...]:
    """The per-suite table's columns: task count, then the catalog's ``report_table`` metrics."""
    return ("tasks", *(m.column for m in catalog.METRICS if m.report_table))


def _cell(text: str) -> str:
    """A Markdown table cell: a literal ``|`` escaped so it does not split the cell."""
    return text.replace("|", "\\|")


_DISPLAY_WORDS = {"percent": "percent, no decimals", "integer": "whole number",
                  "decimals2": "2 decimals"}


def _grader_text(name: str) -> str:
    """A grader named with its record's description (``GraderInfo.description``)."""
    info = AGENT_GRADERS.get(name)
    return f"`{name}`" + (f", {info.description}" if info is not None and info.description
                          else "")


def _definitions_lines(suites: dict[str, Any],
                       graders: dict[str, list[str]] | None = None) -> list[str]:
    """Every catalog metric (``junction.evidence.metrics.METRICS``), per suite what
    success means and (``graders``: suite -> the agent graders of its rows) who graded the
    agent."""
    lines = ["## Definitions", "",
             "Every metric of the catalog (`junction.evidence.metrics.METRICS`); the per-suite "
             "tables show those marked *table*, as the mean over tasks where the metric is "
             "defined.",
             "", "| metric | summary column | definition | undefined when | unit and range | "
             "better | shown in | source | printed as |", "|---|---|---|---|---|---|---|---|---|"]
    for m in catalog.METRICS:
        shown = ", ".join(w for w, on in (("table", m.report_table), ("diff", m.diff)) if on)
        cells = (m.name, m.column, m.definition, m.undefined_when or "–", m.unit, m.direction,
                 shown or "metrics.json", m.source, _DISPLAY_WORDS[m.display])
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    lines.append("The lane metrics (`*_lane_*`) rank the first-stage candidate lanes (the "
                 "run's pool rule, in the Run section), before any strategy selects, not a "
                 "strategy's selection.")
    lines.append("")
    lines.append(f"Which outcome decides a verdict: agent success decides a (suite, budget "
                 f"scale) cell only when two of its compared strategies share at least "
                 f"{verdicts.MIN_DECIDING_TASKS} tasks with an agent outcome "
                 f"(`junction.evidence.verdicts.MIN_DECIDING_TASKS`); otherwise the cell is "
                 "decided on verified success and the agent numbers appear in the Agent outcome "
                 "table only. Below that many shared tasks a verdict reads \"too few tasks to "
                 "decide (n = …)\": at 20 tasks a Wilson 95% interval of a 50% rate is already "
                 "[30%, 70%], and the exact McNemar test needs 6 discordant pairs all one way "
                 "to reach p < 0.05.")
    lines.append("")
    lines.append("What verified success (`success`) means per suite:")
    lines.append("")
    for name in sorted(suites):
        info = suites[name]
        kinds = info.get("verifier_kinds")
        if kinds:
            meaning = "; or ".join(verifier_meaning(k) for k in kinds)
            kind_text = ", ".join(f"`{k}`" for k in kinds)
            lines.append(f"- **{name}** (verifier {kind_text}): success when {meaning}.")
        else:
            lines.append(f"- **{name}**: verifier kind not recorded for this run; "
                         f"{info.get('note') or 'no note'}.")
    lines.append("")
    if graders:  # each grader that graded the run's rows, as its record describes it
        lines += ["Who graded agent success (`agent_success`) per suite (the traces' "
                  "`agent_grader`; `junction.agent.graders`):", ""]
        for name, names in sorted(graders.items()):
            lines.append(f"- **{name}**: " + "; ".join(_grader_text(g) for g in names) + ".")
        lines.append("")
    return lines


def plan_sentence(strategy: str, max_tasks: int | None, scales: list[float] | None) -> str:
    """One strategy's limits in words: "judge_admission: 8 tasks per suite at scale 1 only"."""
    parts = []
    if max_tasks is not None:
        parts.append(f"{max_tasks} tasks per suite (fewer where the suite has fewer)")
    if scales is not None:
        parts.append(f"at scale{'s' if len(scales) > 1 else ''} "
                     f"{', '.join(f'{x:g}' for x in scales)} only")
    return f"{strategy}: " + " ".join(parts)


def _plan_lines(params: dict[str, Any]) -> list[str]:
    """The run's per-strategy limits (``strategy_size``, ``strategy_scales``), if any."""
    sizes = params.get("strategy_size") or {}
    scales = params.get("strategy_scales") or {}
    limited = sorted(set(sizes) | set(scales))
    if not limited:
        return []
    others = [s for s in params.get("strategies", []) if s not in limited]
    text = "; ".join(plan_sentence(s, sizes.get(s), scales.get(s)) for s in limited)
    tail = (f"; {', '.join(others)}: every task in the Suites table at every budget scale"
            if others else "")
    return [f"- per-strategy plan: {text}{tail}. The headline pairs strategies on the tasks "
            "both ran, so a smaller sample is compared on its own tasks only."]


def _agent_left_out(params: dict[str, Any], names: list[str]) -> list[str]:
    """Those of ``names`` the run's agent did not act for (``agent_strategies`` is recorded
    in ``params`` only when it leaves a strategy out), in the order given."""
    acted = params.get("agent_strategies")
    return [] if acted is None else [s for s in names if s not in acted]


def _agent_lines(params: dict[str, Any],
                 distinct: dict[str, dict[str, int]] | None = None,
                 suites: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The run's agent sample (``agent_size``; absent in runs before the agent), the
    strategies it acted for (``agent_strategies``, recorded when some were left out), where it
    ran (``agent_url``: the server, never a key) and, per suite, its distinct exposed sets
    (``distinct_exposed_sets``); for each suite where it acted on fewer tasks than asked,
    the suite summary's ``agent_short`` line."""
    if "agent_size" not in params or params["agent_size"] == 0:
        return []
    n = params["agent_size"]
    sample = "every task" if n is None else f"{n} task{'s' if n != 1 else ''}"
    where = ("the model's sha256 is in the traces" if not params.get("agent_url") else
             f"model `{params.get('agent_model')}` on the OpenAI-compatible server "
             f"{params['agent_url']}, named in the traces' `agent_remote`")
    acted = params.get("agent_strategies")  # recorded only when it leaves one out
    left_out = _agent_left_out(params, params.get("strategies", []))
    # left_out is empty unless agent_strategies is recorded (``_agent_left_out``)
    whom = ("for every strategy and reference" if not left_out else
            f"for {', '.join(cast('list[str]', acted)) or 'no strategy'} "
            f"(not for {', '.join(left_out)})")
    lines = [f"- agent: a language-model agent acted on {sample} of each suite it can be "
             f"graded on (the suite's own sample; gradable tasks only, so a suite with fewer "
             f"gives fewer: Suites, `agent`), {whom}, at budget scale 1 "
             f"(`agent_success`, graded by each suite's agent grader, named in Definitions; "
             f"{where})."]
    if distinct:
        lines.append("- agent cost: it generates once per distinct (task, exposed set); "
                     "strategies that expose the same set share that generation. "
                     + "; ".join(f"{s}: {d['distinct_exposed_sets']} distinct of "
                                 f"{d['agent_evaluations']} evaluations"
                                 for s, d in distinct.items()) + ".")
    for _, info in sorted((suites or {}).items()):
        if info.get("agent_short"):
            lines.append(f"- agent sample short: {info['agent_short']}.")
    return lines


REFERENCE_NOTE = ("are built from "
                  "the task, not a strategy's view, and sit outside every comparison: they "
                  "frame the strategies and are never named best. In each suite's table they "
                  "follow the strategies, below the *references* row.")
"""What the references are, said once per report after the references that ran, each with
its record's description (``reference_sentence``)."""


def reference_sentence(names: list[str]) -> str:
    """"References (name: its record's description; ...) " + ``REFERENCE_NOTE``, for the
    references ``names`` that ran (a name the catalog lacks is named alone)."""
    described = "; ".join(f"{n}: {STRATEGIES[n].description}" if n in STRATEGIES else n
                          for n in names)
    return f"References ({described}) {REFERENCE_NOTE}"


def plugin_lines(plugins: Any) -> list[str]:
    """The Run section's ``plug-ins:`` line: every plug-in the run loaded (run.json's
    ``plugins``, ``junction.registry.Plugin.record``) with its distribution, version and
    entry point, and the registered names it replaced; none for a run that loaded none (or
    was recorded before plug-ins were)."""
    if not plugins:
        return []
    named = []
    for p in plugins:
        replaced = p.get("replaces") or []
        named.append(f"`{p.get('entry_point')}` ({p.get('distribution')} {p.get('version')}, "
                     f"entry point `{p.get('entry_point')} = {p.get('value')}`"
                     + (f"; replaces {', '.join(replaced)}" if replaced else "") + ")")
    return [f"- plug-ins: {'; '.join(named)}"]


def _approximate_search(params: dict[str, Any]) -> str | None:
    """The run's fit search (``RunPlan.fit_search``) where it is an approximate one, not
    ``OPTIMAL_SEARCH``, and only where a learned strategy ran (the search fits nothing
    else); None otherwise."""
    search = params.get("fit_search", OPTIMAL_SEARCH)
    learned = any(s in STRATEGIES and STRATEGIES[s].role == "learned"
                  for s in params.get("strategies", []))
    return None if search == OPTIMAL_SEARCH or not learned else search


def render_markdown(sections: ReportSections) -> str:
    """The Markdown report. First screen: the verdict line per suite, the run in one
    sentence and the success-against-budget plot; then the run header, the best joint
    against the best split per scale, the full comparison table, the agent outcome table,
    joint versus split, where retrieval success is lost, suites, one table per suite
    (strategies, then references), learned calibration, cost and definitions."""
    run, summary, suites, headline = (sections.run, sections.summary, sections.suites,
                                      sections.headline)
    lines = [f"# Junction benchmark report: run `{run['run_id']}`", ""]
    if headline is not None:
        lines.extend(first_screen_lines(headline))
    absent = finding_absent_sentence(run)
    if absent:  # the skip line itself stands further down, above the Suites section
        lines += [absent, ""]
    search = _approximate_search(run.get("params", {}))
    if search:
        lines += [f"The learned strategies were fitted by the approximate {search} search of "
                  f"λ × τ (`--fit-search {search}`): their verdicts here are for iterating; "
                  "confirm one on the exact search (`--fit-search optimal`), the default "
                  "(docs/measurement.md, \"Learned fit time\").", ""]
    if sections.plot_name:
        lines.append(f"![success against budget]({sections.plot_name})")
        lines.append("")
        lines.append("Verified success rate per strategy against the token-budget scale, one "
                     "panel per suite; bars are Wilson 95% intervals (scipy); references "
                     "dashed. " + (sections.plot_note or "Every budget scale that ran is shown."))
        lines.append("")
    lines.append("## Run")
    lines.append("")
    lines.append(f"- commit: `{run.get('git_commit') or 'unknown'}`"
                 + (" (dirty working tree)" if run.get("git_dirty") else ""))
    lines.extend(plugin_lines(run.get("plugins")))
    params = run.get("params", {})
    lines.append(f"- strategies: {', '.join(params.get('strategies', []))}")
    lines.append(f"- seeds: {params.get('seeds')}; budget scales: {params.get('budget_scales')}")
    rule = params.get("pool", DEFAULT_POOL_RULE)
    known = POOL_RULES.get(rule)
    # a strategy whose record gives it a pool rule of its own ranks by that, not the run's
    own = [(s, dict(STRATEGIES[s].options).get("pool")) for s in params.get("strategies", [])
           if s in STRATEGIES]
    own_text = "".join(f"; {s} ranks by its own rule, {r}" for s, r in own if r and r != rule)
    lines.append(f"- candidate pools: {rule} "
                 f"({known.description if known is not None else 'unknown rule'}){own_text}")
    if search:
        lines.append(f"- learned fits: λ × τ searched by {search} (approximate: the fitted "
                     "models may differ from the exact search's; docs/measurement.md, "
                     "\"Learned fit time\")")
    lines.extend(_plan_lines(params))
    lines.extend(_agent_lines(params, run.get("agent_exposed_sets"), suites))
    lines.append(f"- started {run.get('started_at')}, finished {run.get('finished_at')}")
    lines.append("")
    if headline is not None:
        lines.extend(joint_against_split_lines(headline))
        lines.extend(comparison_lines(headline))
    lines.extend(agent_table_lines(sections.agent))
    lines.extend(agent_pair_lines(sections.agent_pairs))
    lines.extend(cross_fitted_lines(sections.cross_fitted))
    lines.extend(measure_lines(sections.measures))
    lines.extend(joint_split_lines(sections.joint_split))
    lines.extend(loss_lines(sections.losses, reference_strategies()))
    for name, reason in sorted((run.get("suites_skipped") or {}).items()):
        lines.append(f"- suite {name} was skipped: {reason}")
    if run.get("suites_skipped"):
        lines.append("")
    lines.append("Every strategy ran on the same tasks under the same budget. "
                 "Means skip tasks where a metric is undefined (–); see Definitions. "
                 "`success_rate` is the retrieval proxy (`retrieval_success`); "
                 "`agent_success_rate` is a language-model agent acting on the exposed set, "
                 "graded by the suite's agent grader (Definitions), "
                 "on each suite's agent sample only (Suites: `agent`) at budget scale 1. Rates "
                 "and fractions are in percent, tokens whole, objectives and ranking scores to 2 "
                 "decimals (each metric's `display` in the catalog); `metrics.json` keeps full "
                 "precision.")
    lines.append("")
    lines.append("## Suites")
    lines.append("")
    lines.append("| suite | tasks run | rows loaded | rows skipped | sampling | note |")
    lines.append("|---|---|---|---|---|---|")
    for name in sorted(suites):
        info = suites[name]
        skipped = ", ".join(f"{k}: {v}" for k, v in sorted(info.get("rows_skipped", {}).items()))
        fewer = dict(info.get("strategy_tasks") or {})
        if info.get("agent_tasks"):
            fewer["agent"] = info["agent_tasks"]
        tasks = str(info.get("tasks")) + (
            " (" + ", ".join(f"{k}: {v}" for k, v in sorted(fewer.items())) + ")" if fewer else "")
        lines.append(f"| {name} | {tasks} | {info.get('rows_loaded')} | "
                     f"{skipped or '0'} | {info.get('sampling', '')} | "
                     f"{info.get('note', '')} |")
    lines.append("")
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for row in summary:
        by_suite.setdefault(row["suite"], []).append(row)
    columns = _table_columns()
    reference_names = reference_strategies()
    ran_references = sorted({r["strategy"] for r in summary if r["strategy"] in reference_names})
    if ran_references:
        lines.append(reference_sentence(ran_references))
        lines.append("")
    for suite in sorted(by_suite):
        lines.append(f"## {suite}")
        lines.append("")
        lines.append("| strategy | budget scale | " + " | ".join(columns) + " |")
        lines.append("|---|---|" + "---|" * len(columns))
        rows = by_suite[suite]
        strategies = [r for r in rows if r["strategy"] not in reference_names]
        references = [r for r in rows if r["strategy"] in reference_names]
        for row in strategies:
            cells = " | ".join(_table_cell(c, row[c]) for c in columns)
            lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
        if references:
            lines.append("| *references* | |" + " |" * len(columns))
            for row in references:
                cells = " | ".join(_table_cell(c, row[c]) for c in columns)
                lines.append(f"| {row['strategy']} | {row['budget_scale']:g} | {cells} |")
            info = SUITES.get(suite)
            if info is not None and info.reference_note:
                lines.append("")
                left = _agent_left_out(params, sorted({r["strategy"] for r in references}))
                unmeasured = ([f"In this run the agent did not act for {', '.join(left)}.",
                               info.agent_sample_note] if left else [])
                lines.append(" ".join([info.reference_note, *fit_lines(sections.fit, suite),
                                       *filter(None, unmeasured)]))
        lines.append("")
    lines.extend(_calibration_lines(sections.calibration))
    if sections.cost:
        lines.extend(sections.cost)
    if sections.time_plot_name:
        lines.append("Selection and execution time per strategy (seconds summed over the run's "
                     "tasks, log scale; from `timings`, never in `metrics.json`):")
        lines.append("")
        lines.append(f"![selection and execution time per strategy]({sections.time_plot_name})")
        lines.append("")
    lines.extend(_definitions_lines(suites, sections.graders))
    return "\n".join(lines)
