"""The report's headline (paired comparisons), definitions, cost table and page.

Worked numbers (z = 1.959964, Wilson score intervals, Newcombe 1998 method 10):

- *winner*: 20 tasks, exact succeeds on all, fixed_split on 8 (b = 12 only exact, c = 0).
  Difference 1.0 − 0.4 = 0.60. Wilson(20/20) = [0.8389, 1]; Wilson(8/20) = [0.2188, 0.6134].
  A margin (tasks where exact fails) is empty, so phi = 0:
  low = 0.60 − sqrt((1 − 0.8389)² + (0.6134 − 0.4)²) = 0.60 − 0.2674 = 0.3326,
  high = 0.60 + sqrt((0.4 − 0.2188)² + 0²) = 0.7812. McNemar: 2 · 0.5¹² = 0.000488.
- *no detectable difference*: 8 tasks, exact 6, fixed_split 4 (a = 4, b = 2, c = 0, d = 2):
  +0.25. Wilson(6/8) = [0.4093, 0.9285], Wilson(4/8) = [0.2152, 0.7848]; ad − bc = 8 > n/2,
  so phi = (8 − 4) / sqrt(6 · 2 · 4 · 4) = 0.2887;
  low = 0.25 − sqrt(0.3407² − 2 · 0.2887 · 0.3407 · 0.2848 + 0.2848²) = −0.1257,
  high = 0.25 + sqrt(0.2848² − 2 · 0.2887 · 0.2848 · 0.1785 + 0.1785²) = 0.5392:
  the interval contains 0; McNemar p = 2 · 0.5² = 0.5.
- *tie*: identical outcomes: difference 0, no discordant pair, p = 1; both tied names listed.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa
import pytest

from junction.evidence import metrics as catalog
from junction.evidence import verdict_text, verdicts
from junction.evidence.report_markdown import REFERENCE_NOTE
from junction.evidence.reports import RunData, write_report
from junction.evidence.summary import headline_rows
from junction.evidence.traces import records_to_table
from junction.evidence.verdicts import paired_comparison
from junction.verifiers import verifier_meaning
from tests.helpers import trace_record
from tests.report_text import (
    first_screen_paragraphs,
    points,
    read_points,
    read_summary,
    read_verdict,
    table_rows,
    verdict_bullets,
)


def _traces(outcomes: dict[str, list[bool]], suite: str = "s", scale: float = 1.0) -> list:
    return [
        trace_record(suite=suite, strategy=strategy, task_id=f"t{i}", budget_scale=scale,
                     success=ok, failure_reason="" if ok else "x",
                     selection_status="optimal" if strategy == "exact" else "heuristic")
        for strategy, values in outcomes.items() for i, ok in enumerate(values)
    ]


@pytest.mark.parametrize(("a", "b", "diff", "low", "high", "p", "detected"), [
    ([True] * 20, [True] * 8 + [False] * 12, 0.60, 0.3326, 0.7812, 1 / 2048, True),
    ([True] * 6 + [False] * 2, [True] * 4 + [False] * 4, 0.25, -0.1257, 0.5392, 0.5, False),
    ([True, False, True], [True, False, True], 0.0, None, None, 1.0, False),
])
def test_paired_comparison_worked_examples(a, b, diff, low, high, p, detected):
    cmp = paired_comparison(a, b)
    assert cmp.difference == pytest.approx(diff)
    if low is not None:
        assert (cmp.ci_low, cmp.ci_high) == pytest.approx((low, high), abs=1e-3)
    assert cmp.ci_low <= cmp.difference <= cmp.ci_high
    assert cmp.p_value == pytest.approx(p)
    assert cmp.detected is detected


def test_paired_comparison_refuses_unpaired_input():
    with pytest.raises(ValueError, match="equal, non-zero lengths, got 2 and 1"):
        paired_comparison([True, False], [True])


def test_headline_winner_against_the_interaction_blind_best():
    # adaptive_split 4/20 and fixed_split 8/20: fixed_split is the interaction-blind best
    rows = headline_rows(records_to_table(_traces({
        "exact": [True] * 20, "fixed_split": [True] * 8 + [False] * 12,
        "adaptive_split": [True] * 4 + [False] * 16,
    })))
    (h,) = rows
    assert h["best"] == ["exact"] and h["outcome"] == "success"
    first = h["comparisons"][0]
    assert (first["other"], first["role"]) == ("fixed_split", "interaction-blind best")
    assert first["comparison"].ci_low == pytest.approx(0.3326, abs=1e-3)
    assert [c["role"] for c in h["comparisons"][1:]] == ["reference"]
    said = read_verdict(h["sentence"])
    assert (said.status, said.pair, said.points, said.n, said.suite, said.budget_scale) == (
        "detected", ("exact", "fixed_split"), (60, 33, 78), 20, "s", 1.0)
    cmp = first["comparison"]
    assert said.points == (points(cmp.difference), points(cmp.ci_low), points(cmp.ci_high))


def test_headline_no_detectable_difference_is_never_a_win():
    (h,) = headline_rows(records_to_table(_traces({
        "exact": [True] * 6 + [False] * 2, "fixed_split": [True] * 4 + [False] * 4})))
    assert h["best"] == ["exact"]
    said = read_verdict(h["sentence"])
    assert (said.status, said.pair, said.points, said.n) == (
        "none", ("exact", "fixed_split"), (25, -13, 54), 8)
    assert "beats" not in h["sentence"]


def test_headline_tie_lists_both_and_detects_nothing():
    # exact and learned_exact (both joint) tie at 3/4: both listed, exact compared first,
    # against adaptive_split, the interaction-blind best (2/4; fixed_split: 1/4)
    same = [True, False, True, True]
    (h,) = headline_rows(records_to_table(_traces({
        "learned_exact": same, "exact": same, "adaptive_split": [True, False, True, False],
        "fixed_split": [True, False, False, False]})))
    assert h["best"] == ["exact", "learned_exact"] and h["best_kind"] == "joint"
    c = h["comparisons"][0]
    assert (c["other"], c["role"]) == ("adaptive_split", "interaction-blind best")
    said = read_verdict(h["sentence"])
    assert (said.tied, said.suite, said.status, said.pair, said.n) == (
        ("exact", "learned_exact"), "s", "none", ("exact", "adaptive_split"), 4)
    cmp = c["comparison"]
    assert said.points == (points(cmp.difference), points(cmp.ci_low), points(cmp.ci_high))


def test_a_split_tied_with_the_best_joint_is_its_comparison_not_a_co_winner():
    same = [True, False, True, True]
    (h,) = headline_rows(records_to_table(_traces({
        "adaptive_split": same, "exact": same, "fixed_split": [True, False, False, False]})))
    assert h["best"] == ["exact"]
    c = h["comparisons"][0]
    assert (c["other"], c["role"]) == ("adaptive_split", "interaction-blind best")
    assert (c["comparison"].difference, c["comparison"].p_value) == (0.0, 1.0)
    assert read_verdict(h["sentence"]).status == "none"


@pytest.mark.parametrize(("fixed", "adaptive", "blind_best"), [
    (16, 4, "fixed_split"),      # fixed_split is the stronger split at this scale
    (4, 16, "adaptive_split"),   # adaptive_split is: the headline follows it
])
def test_headline_compares_the_best_joint_with_the_best_split_of_each_scale(
        fixed, adaptive, blind_best):
    # exact 20/20 at scale 1 against the best split's 16/20 (4 discordant pairs, McNemar
    # 2 · 0.5⁴ = 0.125: no detectable difference); at scale 0.5 exact 8/20 and the best
    # split 16/20, so there the split beats the joint strategy: 8 discordant pairs, all the
    # split's (b = 0, c = 8):
    # McNemar 2 · 0.5⁸ = 0.0078; the verdict names the better one first
    records = (_traces({"exact": [True] * 20,
                        "fixed_split": [True] * fixed + [False] * (20 - fixed),
                        "adaptive_split": [True] * adaptive + [False] * (20 - adaptive)})
               + _traces({"exact": [True] * 8 + [False] * 12,
                          "fixed_split": [True] * fixed + [False] * (20 - fixed),
                          "adaptive_split": [True] * adaptive + [False] * (20 - adaptive)},
                         scale=0.5))
    by_scale = {h["budget_scale"]: h for h in headline_rows(records_to_table(records))}
    for _scale, h in by_scale.items():
        first = h["comparisons"][0]
        assert h["best"] == ["exact"]
        assert (first["other"], first["role"]) == (blind_best, "interaction-blind best")
        assert first["comparison"].test == "mcnemar"
    low = by_scale[0.5]["comparisons"][0]["comparison"]
    assert (low.difference, low.only_b, low.p_value) == (pytest.approx(-0.4), 8,
                                                         pytest.approx(2 * 0.5 ** 8))
    said = read_verdict(by_scale[0.5]["sentence"])
    assert (said.status, said.pair) == ("detected", (blind_best, "exact"))
    assert said.points == (40, -points(low.ci_high), -points(low.ci_low))
    lines = verdict_text.joint_against_split_lines(list(by_scale.values()))
    rows = table_rows("\n".join(lines), "suite", "scale")
    assert [(r["scale"], r["best joint"], r["best split"], r["verdict"]) for r in rows] == [
        ("0.5", "exact", blind_best, f"{blind_best} is better"),
        ("1", "exact", blind_best, "no detectable difference")]  # 4 discordant: p = 0.125


def test_headline_names_the_best_joint_even_where_a_split_does_better():
    (h,) = headline_rows(records_to_table(_traces({
        "fixed_split": [True, True], "adaptive_split": [True, False], "exact": [False, False]})))
    assert h["best"] == ["exact"]
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [
        ("fixed_split", "interaction-blind best"), ("adaptive_split", "reference")]


def test_headline_without_a_joint_strategy_names_the_best_of_all():
    (h,) = headline_rows(records_to_table(_traces({
        "fixed_split": [True, True], "adaptive_split": [True, False]})))
    assert (h["best"], h["best_kind"]) == (["fixed_split"], "any")
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [
        ("adaptive_split", "reference")]


def test_headline_pairs_only_shared_tasks():
    # fixed_split ran on t0, t1 only: the comparison has 2 tasks
    records = _traces({"exact": [True, True, False]}) + _traces({"fixed_split": [False, True]})
    (h,) = headline_rows(records_to_table(records))
    assert h["comparisons"][0]["comparison"].n == 2


def _write(tmp_path, name="r"):
    records = (_traces({"exact": [True] * 6 + [False] * 2,
                        "fixed_split": [True] * 4 + [False] * 4}, scale=1.0)
               + _traces({"exact": [True] * 3 + [False] * 5,
                          "fixed_split": [True] * 2 + [False] * 6}, scale=0.5))
    records[0] = records[0].model_copy(update={"selection_status": "work_limit"})
    suites = {"s": {"tasks": 8, "note": "hand-made", "verifier_kinds": ["no_tools"]}}
    # exact: 16 tasks at 250 ms selection + 50 ms execution; fixed_split: 16 at 0 + 100 ms
    timings = pa.table({"suite": ["s"] * 32, "strategy": ["exact"] * 16 + ["fixed_split"] * 16,
                        "select_ms": [250.0] * 16 + [0.0] * 16,
                        "execute_ms": [50.0] * 16 + [100.0] * 16,
                        "total_ms": [300.0] * 16 + [100.0] * 16})
    return write_report(tmp_path / name, RunData({"run_id": name}, records_to_table(records),
                                                 suites, timings))


def test_report_opens_with_the_headline_and_defines_every_catalog_metric(tmp_path):
    paths = _write(tmp_path)
    md = paths["report.md"].read_text()
    assert md.index("## Headline") < md.index("## Suites")
    assert "Every budget scale that ran is shown." in md  # 0.5 and 1 both ran
    assert "Newcombe" in md and "McNemar" in md
    definitions = md[md.index("## Definitions"):]
    for m in catalog.METRICS:
        definition = m.definition.replace("|", "\\|")
        assert f"| {m.name} | {m.column} | {definition} |" in definitions
    # the suite's line names its verifier kind and says that kind's registered meaning
    (suite_line,) = [x for x in definitions.splitlines() if x.startswith("- **s**")]
    assert "`no_tools`" in suite_line and verifier_meaning("no_tools") in suite_line
    # 1 of exact's 16 selections stopped at a work limit
    # exact: 4.0 s selection, 0.8 s execution, 4.8 of the 6.4 s total = 75%; times with
    # three significant digits, in ms below 1 s
    cost = {r["strategy"]: r for r in table_rows(md[md.index("## Cost"):], "strategy", "tasks")}
    expected = {"tasks": "16", "selection": "4.00 s", "selection per task": "250 ms",
                "execution": "800 ms", "share of run time": "75%",
                "not proven optimal": "1 (work_limit 1)"}
    assert {k: cost["exact"][k] for k in expected} == expected
    assert "| – (heuristic) |" in md[md.index("## Cost"):]


def test_metrics_json_is_byte_identical_and_holds_the_headline(tmp_path):
    a, b = _write(tmp_path, "a"), _write(tmp_path, "b")
    text = a["metrics.json"].read_bytes()
    assert text == b["metrics.json"].read_bytes()
    doc = json.loads(text)
    cmp = doc["headline"]["s"]["budget_scale=1"]["comparisons"]["fixed_split"]
    assert cmp["detected"] is False and (cmp["p_value"], cmp["test"]) == (0.5, "mcnemar")
    assert "select_ms" not in text.decode() and "4.00" not in text.decode()  # no timings


def test_page_scales_images_wraps_tables_and_loads_nothing_remote(tmp_path):
    page = _write(tmp_path)["report.html"].read_text()
    assert "img{max-width:100%" in page
    assert page.count("<div class='table-wrap'><table>") == page.count("<table>") > 0
    # a metric definition with literal bars (|exposed ∩ gold|) stays in one cell
    assert "<td>|exposed ∩ gold| / |gold| over contexts</td>" in page
    assert "http://" not in page and "https://" not in page


# --- which outcome decides, the first screen, references and display precision ---------

def _rows(outcomes: dict[str, list[bool | None]], agent: dict[str, list[bool | None]]):
    """Plain trace rows for ``verdicts.headline``: verified success and agent success."""
    return [{"suite": "s", "budget_scale": 1.0, "strategy": strategy, "seed": 0,
             "task_id": f"t{i}", "success": ok, "agent_success": agent[strategy][i]}
            for strategy, values in outcomes.items() for i, ok in enumerate(values)]


@pytest.mark.parametrize(("agent_tasks", "outcome", "passed_over"), [
    (1, "success", {"agent_success": 1}),     # the default run: 1 agent task per suite
    (19, "success", {"agent_success": 19}),   # one short of MIN_DECIDING_TASKS
    (20, "agent_success", {}),                # enough: the agent decides
])
def test_agent_success_decides_only_on_enough_shared_tasks(agent_tasks, outcome, passed_over):
    n = 25
    agent = [True] * agent_tasks + [None] * (n - agent_tasks)
    rows = _rows({"exact": [True] * n, "fixed_split": [False] * n},
                 {"exact": agent, "fixed_split": [a if a is None else False for a in agent]})
    assert verdicts.MIN_DECIDING_TASKS == 20
    (h,) = verdicts.headline(rows)
    assert (h["outcome"], h["passed_over"]) == (outcome, passed_over)
    assert h["comparisons"][0]["comparison"].n == (agent_tasks if outcome == "agent_success"
                                                   else n)


def test_outcome_tasks_counts_the_best_shared_pair():
    # exact and fixed_split share t0, t1; judge_admission has t0 only
    rows = _rows({"exact": [True, True, True], "fixed_split": [True, True, True],
                  "judge_admission": [True, True, True]},
                 {"exact": [True, True, None], "fixed_split": [False, True, None],
                  "judge_admission": [True, None, None]})
    assert verdicts.outcome_tasks(rows, "agent_success") == 2
    assert verdicts.outcome_tasks(rows, "success") == 3


def test_outcome_table_has_n_wilson_and_too_few():
    rows = _rows({"exact": [True], "bfcl_listed": [True]},
                 {"exact": [True], "bfcl_listed": [False]})
    table = verdicts.outcome_table(rows, "agent_success")
    assert [(r["strategy"], r["n"], r["successes"], r["decides"]) for r in table] == [
        ("bfcl_listed", 1, 0, False), ("exact", 1, 1, False)]
    # Wilson(1/1) = [0.2065, 1], Wilson(0/1) = [0, 0.7935]
    assert (table[1]["ci_low"], table[1]["ci_high"]) == pytest.approx((0.2065, 1.0), abs=1e-4)
    assert verdicts.too_few(1) == "too few tasks to decide (n = 1)"


def _agent_records(n: int) -> list:
    """n tasks of suite "b": exact right on all (verified and agent), fixed_split on none;
    bfcl_listed (a reference) right on all; the agent ran on the first task only."""
    out = []
    for strategy, ok in (("exact", True), ("fixed_split", False), ("bfcl_listed", True)):
        for i in range(n):
            agent = {"agent_success": ok, "agent_outcome": "correct" if ok else "wrong_call",
                     "agent_grader": "bfcl", "executor": "llm"} if i == 0 else {}
            out.append(trace_record(suite="b", strategy=strategy, task_id=f"t{i}", success=ok,
                                    failure_reason="" if ok else "x", **agent))
    return out


def test_first_screen_verdicts_summary_then_plot_and_a_closed_full_table(tmp_path, monkeypatch):
    from junction.suites import SUITES, SuiteInfo

    # suite b's record names its larger agent sample (as the BFCL suites' records do)
    monkeypatch.setitem(SUITES, "b", SuiteInfo(
        "b", list, None, agent_sample_note="`make bench-agent` runs an agent sample."))
    paths = write_report(tmp_path / "r", RunData(
        {"run_id": "r"}, records_to_table(_agent_records(24) + _traces(
            {"exact": [True] * 3, "fixed_split": [False] * 3})),
        {"b": {"tasks": 24}, "s": {"tasks": 3}}))
    md = paths["report.md"].read_text()
    # b: 24 verified tasks, all discordant one way: Wilson(24/24) = [24 / (24 + z²), 1] =
    # [0.862, 1], Wilson(0/24) = [0, 0.138], phi = 0: low = 1 − √2 · 0.138 = 0.805;
    # McNemar 2 · 0.5²⁴: detected. 1 agent task: passed over.
    # s: 3 tasks: Wilson(3/3) low 3 / (3 + z²) = 0.439, low = 1 − √2 · 0.561 = 0.206.
    headline = json.loads(paths["metrics.json"].read_text())["headline"]
    line_b, line_s = verdict_bullets(md)
    verdict_b, verdict_s = read_verdict(line_b), read_verdict(line_s)
    for v, suite, status, n, interval in ((verdict_b, "b", "detected", 24, (100, 80, 100)),
                                          (verdict_s, "s", "too few", 3, (100, 21, 100))):
        assert (v.suite, v.budget_scale, v.outcome, v.status, v.n, v.pair, v.points, v.rates) == (
            suite, 1.0, "verified success", status, n, ("exact", "fixed_split"), interval,
            {"exact": 100, "fixed_split": 0})
        cmp = headline[suite]["budget_scale=1"]["comparisons"]["fixed_split"]
        assert (v.n, v.points) == (cmp["tasks"], (points(cmp["difference"]),
                                                  points(cmp["ci_low"]), points(cmp["ci_high"])))
    summary, passed = first_screen_paragraphs(md)
    assert read_summary(summary) == (2, {"detected": ["b"], "too few": ["s"]})
    # the agent sample's size is said once, after the summary, not on each verdict line:
    # agent success passed over on b, its n, the threshold, and the target that decides
    assert "agent" not in line_b and "agent" not in line_s
    assert "agent success" in passed and re.search(r"\bn = 1\b", passed)
    assert f"under {verdicts.MIN_DECIDING_TASKS} shared" in passed
    assert re.search(r"\bon b\b", passed) and "`make bench-agent`" in passed
    assert md.count(passed) == 1
    # the suite record's note: after the summary, and once below the agent table
    assert md.count(SUITES["b"].agent_sample_note) == 2
    order = [md.index(x) for x in ("## Headline", line_b, line_s, summary, passed,
                                   "![success against budget](plot.png)", "## Run",
                                   "## Full comparison", "## Agent outcome", "## Suites")]
    assert order == sorted(order)
    assert "<details>" not in md  # printed open in the Markdown
    # the agent table: n, rate, Wilson interval, too few
    agent = {(r["suite"], r["strategy"]): r
             for r in table_rows(md, "suite", "budget scale", "strategy", "n", "agent success")}
    listed = agent[("b", "bfcl_listed")]
    assert (listed["budget scale"], listed["n"], listed["agent success"], listed["95% CI"]) == (
        "1", "1", "1/1 = 100%", "[21%, 100%]")
    assert listed["decides"] == verdicts.too_few(1)
    assert "`junction.evidence.verdicts.MIN_DECIDING_TASKS`" in md[md.index("## Definitions"):]
    page = paths["report.html"].read_text()
    assert page.index("<div id='verdicts'>") < page.index("<img") < page.index("<details>")
    assert re.search(r"<details><summary>[^<]*comparison[^<]*</summary>", page)  # closed
    assert "<details open" not in page
    head = json.loads(paths["metrics.json"].read_text())["headline"]["b"]["budget_scale=1"]
    assert (head["outcome"], head["passed_over"]) == ("success", {"agent_success": 1})
    assert head["comparisons"]["fixed_split"]["decides"] is True


def test_references_follow_the_strategies_in_one_table_said_once(tmp_path):
    paths = write_report(tmp_path / "r", RunData({"run_id": "r"},
                                                 records_to_table(_agent_records(2)),
                                                 {"b": {"tasks": 2}}))
    md = paths["report.md"].read_text()
    table = md[md.index("## b\n"):].split("\n\n")[1].splitlines()
    assert [line.split(" | ")[0] for line in table[2:]] == [
        "| exact", "| fixed_split", "| *references*", "| bfcl_listed"]
    assert md.count(REFERENCE_NOTE) == 1 and "References, outside the budget" not in md


def test_suite_tables_print_each_metric_at_its_display_precision(tmp_path):
    # exact at scale 1: 6 of 8 succeed -> "75%", tokens_used 40 (whole), objective 1.5 -> "1.50"
    md = _write(tmp_path)["report.md"].read_text()
    header = next(line for line in md.splitlines() if line.startswith("| strategy | budget"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    row = next(line for line in md.splitlines() if line.startswith("| exact | 1 |"))
    cells = dict(zip(columns, (c.strip() for c in row.strip("|").split("|")), strict=False))
    assert (cells["tasks"], cells["success_rate"], cells["tokens_used"],
            cells["objective"]) == ("8", "75%", "40", "1.50")


def test_verdict_lines_name_ties_pick_scale_one_and_summarise_the_run():
    from junction.evidence.verdict_text import primary_scale, run_summary, verdict_lines

    n = 20
    rows = headline_rows(records_to_table(
        _traces({"exact": [True] * n, "fixed_split": [True] * 8 + [False] * 12}, suite="a")
        + _traces({"exact": [True] * n, "learned_exact": [True] * n,
                   "adaptive_split": [True] * n}, suite="b")
        + _traces({"exact": [True] * n, "fixed_split": [False] * n}, suite="b", scale=2.0)
        + _traces({"exact": [True]}, suite="c", scale=0.5)))
    lines = verdict_lines(rows)
    assert [(v["suite"], v["budget_scale"], v["status"], v["n"]) for v in lines] == [
        ("a", 1.0, "detected", 20), ("b", 1.0, "none", 20), ("c", 0.5, "alone", 1)]
    b, c = read_verdict(lines[1]["text"]), read_verdict(lines[2]["text"])
    assert (b.suite, b.budget_scale, b.outcome, b.n, b.status, b.pair, b.points, b.rates,
            b.tied) == ("b", 1.0, "verified success", 20, "none", ("exact", "adaptive_split"),
                        (0, -16, 16), {"exact": 100, "adaptive_split": 100},
                        ("exact", "learned_exact"))
    assert (c.suite, c.budget_scale, c.outcome, c.n, c.status, c.rates, c.tied) == (
        "c", 0.5, "verified success", 1, "alone", {"exact": 100}, ())
    assert read_verdict(lines[0]["text"]).tied == ()  # a tie is said only where there is one
    groups: dict[str, list[str]] = {}
    for v in lines:
        groups.setdefault(v["status"], []).append(v["suite"])
    assert read_summary(run_summary(lines)) == (3, groups)
    assert (primary_scale([0.5, 2.0]), primary_scale([0.25, 2.0]), primary_scale([2.0, 0.5, 1.0])
            ) == (0.5, 2.0, 1.0)

def test_distinct_exposed_sets_and_identical_sets_on_shared_tasks():
    # t0: both expose (c1, t1): identical; t1: fixed_split exposes no context: different.
    # agent rows: 4 evaluations, 3 distinct (task, exposed set): t0's set is shared
    from junction.evidence.summary import distinct_exposed_sets

    def rec(strategy, task, ok, contexts):
        return trace_record(strategy=strategy, task_id=task, success=True,
                            exposed_context_ids=contexts, context_tokens=10 * len(contexts),
                            tokens_used=10 * len(contexts) + 30, executor="remote",
                            agent_success=ok, agent_outcome="correct" if ok else "wrong_call",
                            agent_grader="bfcl",
                            selection_status="optimal" if strategy == "exact" else "heuristic")

    table = records_to_table([rec("exact", "t0", True, ("c1",)),
                              rec("fixed_split", "t0", True, ("c1",)),
                              rec("exact", "t1", True, ("c1",)),
                              rec("fixed_split", "t1", False, ())])
    assert distinct_exposed_sets(table) == {
        "s": {"agent_evaluations": 4, "distinct_exposed_sets": 3}}
    (h,) = headline_rows(table)
    (c,) = h["comparisons"]
    # 2 shared agent tasks are under MIN_DECIDING_TASKS: the cell is decided on verified
    # success, and the identical-set count is the same on its shared tasks
    assert (h["outcome"], c["comparison"].n, c["identical_sets"]) == ("success", 2, 1)


def test_agent_pairs_compare_each_joint_with_each_blind_strategy_and_count_identical_sets(
        tmp_path):
    # 20 agent tasks. exact succeeds on all; fixed_split on t0-t7 (b = 12, c = 0: the
    # "winner" worked example, +60 [+33, +78], p = 1/2048); adaptive_split on all (a tie,
    # p = 1). exact and adaptive_split expose the same set (c1) on every task; fixed_split
    # exposes no context on t10-t19, so 10 of its 20 shared tasks are identical to exact's.
    from junction.evidence.reports import agent_fit, agent_pairs

    def rec(strategy, i, ok, contexts, dropped=()):
        cost = {"c1": 10, "c2": 20}  # the _record candidates' token costs
        tokens = sum(cost[c] for c in contexts)
        return trace_record(strategy=strategy, task_id=f"t{i}", success=True,
                       exposed_context_ids=contexts, context_tokens=tokens,
                       tokens_used=tokens + 30, executor="llm",
                       agent_success=ok, agent_outcome="correct" if ok else "wrong_call",
                       agent_grader="bfcl", agent_dropped_context_ids=dropped,
                       selection_status="optimal" if strategy == "exact" else "heuristic")

    records = ([rec("exact", i, True, ("c1",)) for i in range(20)]
               + [rec("adaptive_split", i, True, ("c1",)) for i in range(20)]
               + [rec("fixed_split", i, i < 8, ("c1",) if i < 10 else ()) for i in range(20)]
               + [rec("bfcl_listed", i, True, ("c1", "c2"), ("c1",) if i < 3 else ())
                  for i in range(20)])
    table = records_to_table(records)
    rows = {r["b"]: r for r in agent_pairs(table)}
    assert set(rows) == {"adaptive_split", "fixed_split"}
    assert {r["a"] for r in rows.values()} == {"exact"}
    fixed, adaptive = rows["fixed_split"], rows["adaptive_split"]
    assert (fixed["n"], fixed["identical_sets"]) == (20, 10)
    assert (fixed["difference"], fixed["ci_low"], fixed["ci_high"]) == pytest.approx(
        (0.60, 0.3326, 0.7812), abs=1e-3)
    assert fixed["p_value"] == pytest.approx(1 / 2048)
    assert (adaptive["difference"], adaptive["p_value"], adaptive["identical_sets"]) == (
        0.0, 1.0, 20)
    assert agent_fit(table) == {("s", "bfcl_listed"): {
        "agent_evaluations": 20, "cut": 3, "contexts_exposed": 40, "contexts_left_out": 3}}
    paths = write_report(tmp_path, RunData({"run_id": "r1", "params": {}}, table, {}))
    md = paths["report.md"].read_text()
    shown = {r["A − B"]: r for r in table_rows(md, "suite", "budget scale", "A − B")}
    row = shown["exact − fixed_split"]
    assert (row["suite"], row["budget scale"], row["n"], row["A"], row["B"]) == (
        "s", "1", "20", "100%", "40%")
    assert read_points(row["difference [95% CI]"]) == (60, 33, 78) == (
        points(fixed["difference"]), points(fixed["ci_low"]), points(fixed["ci_high"]))
    assert float(row["McNemar p"]) == pytest.approx(fixed["p_value"], rel=0.01)
    assert row["identical sets"] == "10 of 20"
    assert json.loads(paths["metrics.json"].read_text())["agent_pairs"][1]["b"] == "fixed_split"


def test_a_row_against_a_strategy_tied_for_best_names_the_one_compared():
    """Where two joint strategies tie for best, the Full comparison's row against the
    second names the first alone (not "exact = learned_coverage" against
    learned_coverage); the rows against the others name the tie."""
    records = _traces({"exact": [True, True, False], "learned_coverage": [True, False, True],
                       "fixed_split": [False, False, False]})
    (h,) = headline_rows(records_to_table(records))
    assert h["best"] == ["exact", "learned_coverage"]
    rows = table_rows("\n".join(verdict_text.comparison_lines([h])), "suite", "budget scale")
    assert [(r["best (rate)"], r["compared with (rate)"]) for r in rows] == [
        ("exact = learned_coverage (67%)", "fixed_split (best interaction-blind) (0%)"),
        ("exact (67%)", "learned_coverage (67%)")]


@pytest.mark.parametrize(("outcomes", "said"), [
    ({"exact": [True, False], "learned_coverage": [True, True]},
     "by the primary outcome, compared with every other strategy, on the tasks both ran"),
    ({"exact": [True, False], "fixed_split": [True, True]},
     "by the primary outcome, compared with the best strategy that ignores interactions "
     "(fixed_split) and with every other strategy, on the tasks both ran"),
])
def test_the_full_comparison_names_what_the_best_is_compared_with(outcomes, said):
    """Where no interaction-blind strategy ran, the sentence names none (it read
    "compared with and with every other strategy")."""
    headline = headline_rows(records_to_table(_traces(outcomes)))
    assert said in " ".join(verdict_text.comparison_lines(headline))
