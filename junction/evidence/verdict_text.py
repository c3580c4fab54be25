"""The headline in words: one verdict line per suite, the run in one sentence, the full
comparison table and the agent outcome table (Markdown lines of ``report.md``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from junction.evidence import metrics as catalog
from junction.evidence import verdicts
from junction.strategies.catalog import STRATEGIES, interaction_blind_strategies
from junction.suites import SUITES

__all__ = [
    "agent_sample_notes",
    "agent_table_lines",
    "comparison_lines",
    "first_screen_lines",
    "joint_against_split_lines",
    "passed_over_sentence",
    "percent_text",
    "points_text",
    "primary_scale",
    "run_summary",
    "verdict_lines",
]


def percent_text(rate: float) -> str:
    """A rate as the catalog prints a percent (``metrics.format_value``)."""
    return catalog.format_value("percent", rate)


def points_text(x: float) -> str:
    """A difference of rates in signed whole points (+12)."""
    return f"{100 * x:+.0f}"


def primary_scale(scales: list[float]) -> float:
    """The budget scale a first screen reports: 1 when it ran, else the one nearest to 1
    on a log scale (the smaller on a tie)."""
    if 1.0 in scales:
        return 1.0
    return min(scales, key=lambda x: (abs(math.log(x)) if x > 0 else math.inf, x))


_OUTCOME_WORDS = {"agent_success": "agent success", "success": "verified success"}


def verdict_lines(headline: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per suite at its ``primary_scale``, from ``verdicts.headline``'s rows:
    {suite, budget_scale, outcome, n, status, text}. ``status``: "detected", "none" (no
    detectable difference), "too few" (the first comparison shares fewer than
    ``verdicts.MIN_DECIDING_TASKS`` tasks) or "alone" (nothing to compare with)."""
    by_suite: dict[str, dict[float, dict[str, Any]]] = {}
    for h in headline:
        by_suite.setdefault(h["suite"], {})[h["budget_scale"]] = h
    out = []
    for suite, cells in sorted(by_suite.items()):
        scale = primary_scale(sorted(cells))
        h = cells[scale]
        words = _OUTCOME_WORDS.get(h["outcome"], h["outcome"])
        if not h["comparisons"]:
            rate, n = h["rates"][h["best"][0]]
            out.append({"suite": suite, "budget_scale": scale, "outcome": h["outcome"], "n": n,
                        "status": "alone",
                        "text": f"**{suite}** (budget × {scale:g}, {words}, n = {n}): only "
                                f"{' = '.join(h['best'])} ran ({percent_text(rate)})."})
            continue
        c = h["comparisons"][0]
        cmp = c["comparison"]
        best = h["best"][0]
        points = (f"{points_text(cmp.difference)} points "
                  f"[{points_text(cmp.ci_low)}, {points_text(cmp.ci_high)}]")
        rates = f"{best} {percent_text(cmp.rate_a)} against {c['other']} {percent_text(cmp.rate_b)}"
        if cmp.n < verdicts.MIN_DECIDING_TASKS:
            status, verdict = "too few", f"too few tasks to decide; {rates}, {points}"
        elif cmp.detected and cmp.difference < 0:  # the better one named first
            status, verdict = "detected", (
                f"{c['other']} beats {best} by {points_text(-cmp.difference)} points "
                f"[{points_text(-cmp.ci_high)}, {points_text(-cmp.ci_low)}] ({rates})")
        elif cmp.detected:
            status, verdict = "detected", f"{best} beats {c['other']} by {points} ({rates})"
        else:
            status, verdict = "none", (f"no detectable difference between {best} and "
                                       f"{c['other']}, {points} ({rates})")
        tie = (f" Tied for best: {', '.join(h['best'])}." if len(h["best"]) > 1 else "")
        out.append({"suite": suite, "budget_scale": scale, "outcome": h["outcome"], "n": cmp.n,
                    "status": status, "passed_over": dict(h.get("passed_over", {})),
                    "text": f"**{suite}** (budget × {scale:g}, {words}, n = {cmp.n}): "
                            f"{verdict}{_what(h, c)}.{tie}"})
    return out


def _what(h: dict[str, Any], c: dict[str, Any]) -> str:
    """What a headline comparison is, in words: "; best joint against best split,
    corrected repeated-CV interval (3 × 5 folds)" ("best interaction-blind" where that
    side's record is a joint selector that ignores interactions, not one that ranks each
    type apart); "" for a comparison of no named role."""
    parts = []
    if h.get("best_kind") == "joint" and c["role"] == "interaction-blind best":
        other = STRATEGIES.get(c["other"])  # a joint selector that ignores interactions
        blind = "interaction-blind" if other is not None and not other.ranks_apart else "split"
        parts.append(f"best joint against best {blind}")
    cmp = c["comparison"]
    if cmp.test == "corrected_cv":
        parts.append(f"corrected repeated-CV interval ({cmp.repetitions} × {cmp.folds} folds)")
    return "; " + ", ".join(parts) if parts else ""


def passed_over_sentence(lines: list[dict[str, Any]]) -> str | None:
    """One sentence for every suite whose verdict fell back from an outcome with too few
    shared tasks (``passed_over`` of ``verdict_lines``; the agent's, in practice): which
    suites, how many tasks, and how to get a sample that decides; None when there is none."""
    cells = [(v["suite"], k, n) for v in lines for k, n in v.get("passed_over", {}).items()]
    if not cells:
        return None
    parts = []
    for outcome in sorted({k for _, k, _ in cells}):
        mine = [(suite, n) for suite, k, n in cells if k == outcome]
        counts = sorted({n for _, n in mine})
        n_text = (f"n = {counts[0]}" if len(counts) == 1
                  else f"n = {counts[0]}–{counts[-1]}")
        parts.append(f"{_OUTCOME_WORDS.get(outcome, outcome)} ({n_text}, under "
                     f"{verdicts.MIN_DECIDING_TASKS} shared tasks) on "
                     f"{', '.join(s for s, _ in mine)}")
    text = "; ".join(parts)
    notes = agent_sample_notes(suite for suite, k, _ in cells if k == "agent_success")
    tail = "".join(f" {note}" for note in notes)
    return f"Too few tasks to decide on {text}: the verdicts above use verified success.{tail}"


def agent_sample_notes(suites: Iterable[str]) -> list[str]:
    """Each suite record's own sentence on its larger agent sample
    (``SuiteInfo.agent_sample_note``), once each, in suite order; none for a suite whose
    record has none or that the catalog lacks (a suite file)."""
    notes = (SUITES[s].agent_sample_note for s in sorted(set(suites)) if s in SUITES)
    return list(dict.fromkeys(note for note in notes if note))


def run_summary(lines: list[dict[str, Any]]) -> str:
    """One sentence over ``verdict_lines``: where a difference was detected, where not, and
    which suites are too small to decide."""
    if not lines:
        return "No task was evaluated."
    groups = {status: [v["suite"] for v in lines if v["status"] == status]
              for status in ("detected", "none", "too few", "alone")}
    parts = []
    if groups["detected"]:
        parts.append(f"a difference is detected on {', '.join(groups['detected'])}")
    if groups["none"]:
        parts.append(f"no detectable difference on {', '.join(groups['none'])}")
    if groups["too few"]:
        parts.append(f"too few tasks to decide (under {verdicts.MIN_DECIDING_TASKS} shared) "
                     f"on {', '.join(groups['too few'])}")
    if groups["alone"]:
        parts.append(f"a single strategy on {', '.join(groups['alone'])}")
    text = "; ".join(parts)
    return (f"Of {len(lines)} suite{'s' if len(lines) != 1 else ''} at the primary budget "
            f"scale: {text}.")


def first_screen_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The report's first screen: one verdict line per suite (``verdict_lines``) inside
    ``<!-- verdicts -->`` markers (the HTML page turns them into ``<div id="verdicts">``),
    then the one-sentence ``run_summary`` and, once, ``passed_over_sentence``."""
    lines = ["## Headline", ""]
    found = verdict_lines(headline)
    if not found:
        return [*lines, "No task was evaluated.", ""]
    lines += ["<!-- verdicts -->", ""]
    lines += [f"- {v['text']}" for v in found]
    lines += ["", "<!-- /verdicts -->", "", run_summary(found), ""]
    passed = passed_over_sentence(found)
    if passed:
        lines += [passed, ""]
    return lines


def comparison_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The full comparison table: every suite, budget scale and comparison. In the HTML
    page it sits in a closed ``<details>`` block (``<!-- details -->`` markers)."""
    lines = ["## Full comparison", ""]
    if not headline:
        return [*lines, "No task was evaluated.", ""]
    lines.append(
        "Per suite and budget scale: the best joint strategy (one that sees context–tool "
        "interactions; the best of all where none ran) by the primary outcome, compared "
        f"with {_blind_that_ran(headline)}every other "
        "strategy, on the tasks both ran. The primary outcome is agent success where the "
        f"compared strategies share at least {verdicts.MIN_DECIDING_TASKS} tasks with an agent "
        "outcome, else verified success (see Definitions). Differences are in points "
        "(percentage points of success rate). Where either side is cross-fitted (refitted "
        "per fold), the 95% interval and p are the corrected repeated cross-validation "
        "t-test on the fold scores (Nadeau and Bengio 2003; baycomp's correlated t-test), a "
        "side without a refit paired on each fold's tasks (test `corrected_cv`); otherwise "
        "Newcombe's paired-difference 95% score interval (1998, method 10) and the exact "
        "McNemar test (two-sided binomial test on the discordant pairs, scipy's "
        "`binomtest`; test `mcnemar`). A difference counts only if its "
        f"interval excludes 0 and p < {verdicts.ALPHA:g}; otherwise it is \"no detectable "
        f"difference\"; on fewer than {verdicts.MIN_DECIDING_TASKS} shared tasks it is "
        "\"too few tasks to decide\".")
    lines += ["", "<!-- details -->", ""]
    lines.append("| suite | budget scale | outcome | best (rate) | compared with (rate) | tasks | "
                 "difference, points | 95% CI | p (test) | verdict |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for h in headline:
        best = " = ".join(h["best"])
        rate = h["rates"][h["best"][0]][0]
        if not h["comparisons"]:
            n = h["rates"][h["best"][0]][1]
            lines.append(f"| {h['suite']} | {h['budget_scale']:g} | {h['outcome']} | {best} "
                         f"({percent_text(rate)}) | – | {n} | – | – | – | only strategy |")
        for c in h["comparisons"]:
            cmp = c["comparison"]
            tag = " (best interaction-blind)" if c["role"] == "interaction-blind best" else ""
            verdict = ("difference" if cmp.detected else "no detectable difference")
            if cmp.n < verdicts.MIN_DECIDING_TASKS:
                verdict += f"; {verdicts.too_few(cmp.n)}"
            test = (f"corrected_cv, {cmp.repetitions} × {cmp.folds}"
                    if cmp.test == "corrected_cv" else cmp.test)
            # against a strategy it ties with, the row names the one that compares
            shown = h["best"][0] if c["other"] in h["best"] else best
            lines.append(
                f"| {h['suite']} | {h['budget_scale']:g} | {h['outcome']} | {shown} "
                f"({percent_text(cmp.rate_a)}) | {c['other']}{tag} ({percent_text(cmp.rate_b)}) | "
                f"{cmp.n} | {points_text(cmp.difference)} | "
                f"[{points_text(cmp.ci_low)}, {points_text(cmp.ci_high)}] "
                f"| {cmp.p_value:.2g} ({test}) | {verdict} |")
    same = [f"{h['suite']} × {h['budget_scale']:g}, {h['best'][0]} against {c['other']}: "
            f"{c['identical_sets']} of {c['comparison'].n}"
            for h in headline for c in h["comparisons"] if c.get("identical_sets")]
    if same:
        lines.append("")
        lines.append("Shared tasks on which both strategies exposed the identical set (the "
                     "same prompt: concordant by construction, so only the others can "
                     "differ): " + "; ".join(same) + ".")
    lines += ["", "<!-- /details -->", ""]
    return lines


def _blind_that_ran(headline: list[dict[str, Any]]) -> str:
    """"the best strategy that ignores interactions (a, b) and with " naming the
    interaction-blind strategies (catalog ``headline_side``) that ran in ``headline``; ""
    where none ran."""
    ran = {s for h in headline for s in h["rates"]}
    blind = [s for s in interaction_blind_strategies() if s in ran]
    return (f"the best strategy that ignores interactions ({', '.join(blind)}) and with "
            if blind else "")


def joint_against_split_lines(headline: list[dict[str, Any]]) -> list[str]:
    """The best joint strategy against the best interaction-blind one at every suite and
    budget scale where both ran (``verdicts.headline``'s first comparison, role
    "interaction-blind best"): rates, tasks, difference with its 95% interval, p, the
    test and the verdict. Empty where no cell has both."""
    cells = [(h, h["comparisons"][0]) for h in headline
             if h.get("best_kind") == "joint" and h["comparisons"]
             and h["comparisons"][0]["role"] == "interaction-blind best"]
    if not cells:
        return []
    lines = ["## Best joint against best split", "",
             "At each budget scale, whichever joint strategy (one that sees context–tool "
             "interactions) and whichever interaction-blind strategy scored best there; not "
             "a fixed twin (the twins are compared in their own sections). The interval is "
             "the corrected repeated-CV one where either side is cross-fitted "
             "(`corrected_cv`), else Newcombe's with McNemar's p (`mcnemar`); see Full "
             "comparison.", "",
             "| suite | scale | outcome | best joint | rate | best split | rate | tasks | "
             "difference [95% CI] | p | test | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for h, c in cells:
        cmp = c["comparison"]
        best = h["best"][0]
        if cmp.n < verdicts.MIN_DECIDING_TASKS:
            verdict = verdicts.too_few(cmp.n)
        elif cmp.detected:
            verdict = f"{best if cmp.difference > 0 else c['other']} is better"
        else:
            verdict = "no detectable difference"
        test = (f"corrected_cv ({cmp.repetitions} × {cmp.folds})" if cmp.test == "corrected_cv"
                else cmp.test)
        lines.append(
            f"| {h['suite']} | {h['budget_scale']:g} | {h['outcome']} | {best} | "
            f"{percent_text(cmp.rate_a)} | {c['other']} | {percent_text(cmp.rate_b)} | "
            f"{cmp.n} | {points_text(cmp.difference)} [{points_text(cmp.ci_low)}, "
            f"{points_text(cmp.ci_high)}] | {cmp.p_value:.2g} | {test} | {verdict} |")
    lines.append("")
    return lines


def agent_table_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Agent success per suite, scale and strategy (references too): n, rate, Wilson 95%
    interval, and whether n reaches ``verdicts.MIN_DECIDING_TASKS``; below the table, the
    ``agent_sample_notes`` of the suites with a row that does not decide."""
    if not rows:
        return []
    lines = ["## Agent outcome", "",
             "`agent_success` per strategy on the agent sample, with its Wilson 95% interval "
             "(scipy). It decides a headline cell only where the compared strategies share at "
             f"least {verdicts.MIN_DECIDING_TASKS} tasks with an agent outcome; below that "
             "it is shown here only.", "",
             "| suite | budget scale | strategy | n | agent success | 95% CI | decides |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        decides = "yes" if r["decides"] else verdicts.too_few(r["n"])
        lines.append(f"| {r['suite']} | {r['budget_scale']:g} | {r['strategy']} | {r['n']} | "
                     f"{r['successes']}/{r['n']} = {percent_text(r['rate'])} | "
                     f"[{percent_text(r['ci_low'])}, {percent_text(r['ci_high'])}] | {decides} |")
    lines.append("")
    notes = agent_sample_notes(r["suite"] for r in rows if not r["decides"])
    if notes:  # each suite record's sentence on the sample that decides it
        lines += [" ".join(notes), ""]
    return lines
