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

import pyarrow as pa
import pytest

from junction import metrics as catalog
from junction.reports import headline_rows, write_report
from junction.traces import records_to_table
from junction.verdicts import paired_comparison
from test_traces import _record


def _traces(outcomes: dict[str, list[bool]], suite: str = "s", scale: float = 1.0) -> list:
    return [
        _record(suite=suite, strategy=strategy, task_id=f"t{i}", budget_scale=scale,
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
    assert h["sentence"] == ("exact is best on s (budget × 1, success) at 1.00; exact beats "
                             "fixed_split by +60 points [+33, +78] over 20 shared tasks.")


def test_headline_no_detectable_difference_is_never_a_win():
    (h,) = headline_rows(records_to_table(_traces({
        "exact": [True] * 6 + [False] * 2, "fixed_split": [True] * 4 + [False] * 4})))
    assert h["best"] == ["exact"]
    assert "no detectable difference between exact and fixed_split (+25 points [-13, +54])" \
        in h["sentence"]
    assert "beats" not in h["sentence"]


def test_headline_tie_lists_both_and_detects_nothing():
    # adaptive_split and exact tie at 3/4; exact (uses interactions) is listed and compared
    # first, against adaptive_split, the interaction-blind best (fixed_split: 1/4)
    same = [True, False, True, True]
    (h,) = headline_rows(records_to_table(_traces({
        "adaptive_split": same, "exact": same, "fixed_split": [True, False, False, False]})))
    assert h["best"] == ["exact", "adaptive_split"]
    c = h["comparisons"][0]
    assert (c["other"], c["role"]) == ("adaptive_split", "interaction-blind best")
    assert (c["comparison"].difference, c["comparison"].p_value) == (0.0, 1.0)
    assert h["sentence"].startswith("exact and adaptive_split tie for best on s")
    assert "no detectable difference between exact and adaptive_split (+0 points" in h["sentence"]


def test_headline_when_the_best_ignores_interactions_no_comparison_is_the_blind_best():
    (h,) = headline_rows(records_to_table(_traces({
        "fixed_split": [True, True], "adaptive_split": [True, False], "exact": [False, False]})))
    assert h["best"] == ["fixed_split"]
    assert [(c["other"], c["role"]) for c in h["comparisons"]] == [
        ("adaptive_split", "reference"), ("exact", "reference")]


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
    return write_report(tmp_path / name, {"run_id": name}, records_to_table(records), suites,
                        timings=timings)


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
    assert "**s** (verifier `no_tools`): success when no tool is exposed" in definitions
    # 1 of exact's 16 selections stopped at a work limit
    # exact: 4.0 s selection, 0.8 s execution, 4.8 of the 6.4 s total = 75%
    assert "| exact | 16 | 4.00 | 250.0 | 0.80 | 75% | 1 (work_limit 1) |" in md
    assert "| – (heuristic) |" in md[md.index("## Cost"):]


def test_metrics_json_is_byte_identical_and_holds_the_headline(tmp_path):
    a, b = _write(tmp_path, "a"), _write(tmp_path, "b")
    text = a["metrics.json"].read_bytes()
    assert text == b["metrics.json"].read_bytes()
    doc = json.loads(text)
    cmp = doc["headline"]["s"]["budget_scale=1"]["comparisons"]["fixed_split"]
    assert cmp["detected"] is False and cmp["mcnemar_p"] == 0.5
    assert "select_ms" not in text.decode() and "4.00" not in text.decode()  # no timings


def test_page_scales_images_wraps_tables_and_loads_nothing_remote(tmp_path):
    page = _write(tmp_path)["report.html"].read_text()
    assert "img{max-width:100%" in page
    assert page.count("<div class='table-wrap'><table>") == page.count("<table>") > 0
    # a metric definition with literal bars (|exposed ∩ gold|) stays in one cell
    assert "<td>|exposed ∩ gold| / |gold| over contexts</td>" in page
    assert "http://" not in page and "https://" not in page


def test_distinct_exposed_sets_and_identical_sets_on_shared_tasks():
    # t0: both expose (c1, t1): identical; t1: fixed_split exposes no context: different.
    # agent rows: 4 evaluations, 3 distinct (task, exposed set): t0's set is shared
    from junction.reports import distinct_exposed_sets

    def rec(strategy, task, ok, contexts):
        return _record(strategy=strategy, task_id=task, success=True,
                       exposed_context_ids=contexts, context_tokens=10 * len(contexts),
                       tokens_used=10 * len(contexts) + 30, executor="remote",
                       agent_success=ok, agent_outcome="correct" if ok else "wrong_call",
                       selection_status="optimal" if strategy == "exact" else "heuristic")

    table = records_to_table([rec("exact", "t0", True, ("c1",)),
                              rec("fixed_split", "t0", True, ("c1",)),
                              rec("exact", "t1", True, ("c1",)),
                              rec("fixed_split", "t1", False, ())])
    assert distinct_exposed_sets(table) == {
        "s": {"agent_evaluations": 4, "distinct_exposed_sets": 3}}
    (h,) = headline_rows(table)
    (c,) = h["comparisons"]
    assert (h["outcome"], c["comparison"].n, c["identical_sets"]) == ("agent_success", 2, 1)
