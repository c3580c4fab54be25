"""``junction diff``: what two runs share comes first, nothing comparable is one line and a
non-zero exit, ``--html`` puts changed rows first, binary metrics use the headline's test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from junction.evidence.diff import (
    NothingComparableError,
    changed_verdicts,
    check_comparable,
    diff_page,
    diff_runs,
    format_row,
    run_scope,
)
from junction.evidence.store import TraceStore
from junction.evidence.traces import records_to_table
from junction.evidence.verdicts import paired_comparison
from tests.helpers import trace_record
from tests.report_text import percent, points, read_points

ROOT = Path(__file__).resolve().parents[1]


def _records(run_id: str, outcomes: list[bool], seed: int = 0, strategy: str = "exact"):
    return [trace_record(run_id=run_id, strategy=strategy, task_id=f"t{i}", seed=seed, success=ok,
                         failure_reason="" if ok else "x") for i, ok in enumerate(outcomes)]


def test_binary_metric_is_marked_by_mcnemar_and_newcombe():
    # 20 paired tasks: before 8 successes, after 20 (12 discordant, all one way)
    before = records_to_table(_records("a", [True] * 8 + [False] * 12))
    after = records_to_table(_records("b", [True] * 20))
    (row,) = [r for r in diff_runs(before, after) if r["metric"] == "success"]
    expected = paired_comparison([True] * 20, [True] * 8 + [False] * 12)
    assert (row["ci_low"], row["ci_high"]) == (round(expected.ci_low, 6),
                                               round(expected.ci_high, 6))
    assert row["change"] == 0.6 and row["significant"] is True


def test_scope_names_shared_and_unshared_and_refuses_disjoint_seeds():
    a = records_to_table(_records("a", [True, False], seed=0)
                         + _records("a", [True], seed=0, strategy="fixed_split"))
    b = records_to_table(_records("b", [True, True], seed=1))
    scope = run_scope(a, b)
    assert scope["strategy"] == {"shared": ["exact"], "only_before": ["fixed_split"],
                                 "only_after": []}
    assert scope["seed"] == {"shared": [], "only_before": [0], "only_after": [1]}
    assert scope["tasks"] == 0
    with pytest.raises(NothingComparableError, match=r"^no task is shared, nothing to compare: "
                       r"seeds differ \(before: 0; after: 1\)$"):
        check_comparable(scope)


def test_same_scope_but_no_shared_task_id_says_so():
    a = records_to_table(_records("a", [True]))  # task t0
    b = records_to_table([trace_record(run_id="b", task_id="other")])
    with pytest.raises(NothingComparableError, match="share suites, strategies, seeds and "
                       r"budget scales but no task id \(different samples\?\)$"):
        check_comparable(run_scope(a, b))


def _warehouse(tmp_path: Path, runs: dict[str, list]) -> str:
    store = TraceStore(str(tmp_path / "wh"))
    for run_id, records in runs.items():
        store.write_unit(run_id, "s", "exact", "u0", records, [])
        store.write_run_meta(run_id, {"run_id": run_id, "status": "completed"})
    return str(tmp_path / "wh")


def _diff(root: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", "diff", *args, "--warehouse", root],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_cli_diff_of_disjoint_seeds_is_one_line_and_fails(tmp_path):
    root = _warehouse(tmp_path, {"ra": _records("ra", [True, False], seed=0),
                                 "rb": _records("rb", [True, False], seed=1)})
    result = _diff(root, "ra", "rb")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: no task is shared, nothing to compare: seeds differ (before: 0; after: 1)"]


def test_cli_diff_prints_scope_first_and_writes_html_changed_first(tmp_path):
    root = _warehouse(tmp_path, {"ra": _records("ra", [False, False]),
                                 "rb": _records("rb", [True, False])})
    page = tmp_path / "diff.html"
    result = _diff(root, "ra", "rb", "--html", str(page))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:5] == [
        "suites shared: s", "strategies shared: exact", "seeds shared: 0",
        "budget scales shared: 1", "task evaluations in both runs: 2"]
    text = page.read_text()
    # success changed (0.0 -> 0.5); objective did not: the changed row comes first
    assert text.index("<td>success</td>") < text.index("<td>objective</td>")
    assert "overflow-x:auto" in text and "https://" not in text


def test_diff_page_opens_with_one_line_per_changed_verdict():
    # 20 paired tasks: success 8 -> 20 (detected, as above); objective unchanged
    before = records_to_table(_records("a", [True] * 8 + [False] * 12))
    after = records_to_table(_records("b", [True] * 20))
    rows = diff_runs(before, after)
    (line,) = changed_verdicts(rows)
    (success,) = [r for r in rows if r["metric"] == "success"]
    where, said = line.split(": ", 1)
    assert where.split(" · ") == ["s", "exact", "budget × 1", "success"]
    rates = re.search(r"(\d+)% → (\d+)%", said)
    assert (int(rates[1]), int(rates[2])) == (40, 100) == (percent(success["before"]),
                                                           percent(success["after"]))
    assert read_points(said) == (60, points(success["ci_low"]), points(success["ci_high"]))
    assert points(success["change"]) == 60 and points(success["ci_low"]) > 0  # detected
    assert int(re.search(r"\bover (\d+) shared tasks?\b", said)[1]) == success["tasks"] == 20
    page = diff_page("a", "b", run_scope(before, after), rows)
    assert page.index("<div id='verdicts'>") < page.index("<table>")
    assert "<td>40%</td><td>100%</td><td>+60 points</td>" in page
    (objective,) = [r for r in rows if r["metric"] == "objective"]
    assert format_row(objective) == {"before": "1.50", "after": "1.50", "change": "+0.00",
                                     "ci": "[+0.00, +0.00]"}
