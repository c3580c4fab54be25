"""The report page in a real browser (headless Chromium, 1280 × 800): nothing overflows
horizontally, every image loads at half its natural size or more, the verdict lines are in
the first 800 px, and the plot's legend names only strategies with a line. Skipped when
Chromium is not installed (Debian: ``apt-get install -y chromium``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from junction.evidence.page import html_page
from junction.evidence.reports import RunData, write_report
from junction.evidence.traces import records_to_table
from tests.helpers import trace_record

_SPEC = importlib.util.spec_from_file_location(
    "check_report_html",
    Path(__file__).resolve().parents[1] / "bench" / "checks" / "check_report_html.py")
assert _SPEC is not None and _SPEC.loader is not None
check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check)

pytestmark = pytest.mark.skipif(check.find_chromium() is None,
                                reason="chromium is not installed (apt-get install -y chromium)")


def test_report_page_fits_1280_px_and_its_plot_loads(tmp_path):
    # six suites x three budget scales: a wide plot and long table rows
    records = [trace_record(suite=f"suite-with-a-long-name-{s}", strategy=strategy, task_id=f"t{i}",
                            budget_scale=scale, success=bool((i + s) % 2),
                            failure_reason="" if (i + s) % 2 else "x")
               for s in range(6) for scale in (0.5, 1.0, 2.0)
               for strategy in ("exact", "fixed_split", "adaptive_split") for i in range(4)]
    suites = {f"suite-with-a-long-name-{s}": {"tasks": 4, "note": "n" * 400} for s in range(6)}
    paths = write_report(tmp_path / "r", RunData({"run_id": "r"}, records_to_table(records),
                                                 suites))
    measured = check.measure(paths["report.html"])
    assert check.problems(measured) == []
    assert check.legend_problems(paths["report.html"]) == []
    assert len(measured["images"]) == 1
    # one verdict line per suite, all above the fold, and the plot starts there too
    assert measured["verdicts"]["lines"] == 6
    assert measured["images"][0]["top"] < check.FIRST_SCREEN_PX
    shot = check.screenshot(paths["report.html"], tmp_path / "first.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_fails_on_overflow_a_missing_image_and_no_verdicts(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text(html_page("bad", "<div style='width:3000px'>wide</div>"
                                     "<img src='missing.png'>"))
    found = check.problems(check.measure(page))
    assert found[0] == 'no verdict lines: the page has no <div id="verdicts">'
    assert found[1].startswith("page overflows horizontally: ")
    assert found[2:] == ["image did not load: missing.png"]


def test_check_fails_on_verdicts_below_the_fold_and_a_shrunk_image(tmp_path):
    # a 400 x 40 image drawn 100 px wide (a quarter), verdicts after 900 px of space
    from junction.evidence.plots import success_plot

    success_plot([{"suite": "s", "strategy": "exact", "budget_scale": 1.0, "tasks": 4,
                   "success_rate": 0.5}], tmp_path / "plot.png")
    page = tmp_path / "late.html"
    page.write_text(html_page("late", "<img src='plot.png' style='width:100px'>"
                                      "<div style='height:900px'></div>"
                                      "<div id='verdicts'><ul><li>v</li></ul></div>"))
    found = check.problems(check.measure(page))
    assert found[0].startswith("verdict lines end at ") and "below the first 800 px" in found[0]
    assert found[1].startswith("image drawn at under half its size: plot.png is 100 px wide")
    assert len(found) == 2  # the image is above the fold


def test_legend_check_reads_the_plot_sidecar(tmp_path):
    (tmp_path / "plot.json").write_text(json.dumps(
        {"legend": ["exact", "fixed_split"], "lines": [{"label": "exact"}]}))
    page = tmp_path / "p.html"
    page.write_text(html_page("p", '<img alt="x" src="plot.png" />'))
    assert check.legend_problems(page) == [
        "legend of plot.png names 'fixed_split', which has no line"]
