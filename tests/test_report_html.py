"""The report page in a real browser (headless Chromium, 1280 px): nothing overflows
horizontally and every image loads. Skipped when Chromium is not installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from junction.evidence.reports import html_page, write_report
from junction.evidence.traces import records_to_table
from test_traces import _record

_SPEC = importlib.util.spec_from_file_location(
    "check_report_html", Path(__file__).resolve().parents[1] / "bench" / "check_report_html.py")
check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(check)

pytestmark = pytest.mark.skipif(check.find_chromium() is None,
                                reason="chromium is not installed (apt-get install -y chromium)")


def test_report_page_fits_1280_px_and_its_plot_loads(tmp_path):
    # six suites x three budget scales: a wide plot and long table rows
    records = [_record(suite=f"suite-with-a-long-name-{s}", strategy=strategy, task_id=f"t{i}",
                       budget_scale=scale, success=bool((i + s) % 2),
                       failure_reason="" if (i + s) % 2 else "x")
               for s in range(6) for scale in (0.5, 1.0, 2.0)
               for strategy in ("exact", "fixed_split", "adaptive_split") for i in range(4)]
    suites = {f"suite-with-a-long-name-{s}": {"tasks": 4, "note": "n" * 400} for s in range(6)}
    paths = write_report(tmp_path / "r", {"run_id": "r"}, records_to_table(records), suites)
    measured = check.measure(paths["report.html"])
    assert check.problems(measured) == []
    assert len(measured["images"]) == 1


def test_check_fails_on_overflow_and_a_missing_image(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text(html_page("bad", "<div style='width:3000px'>wide</div>"
                                     "<img src='missing.png'>"))
    found = check.problems(check.measure(page))
    assert found[0].startswith("page overflows horizontally: ")
    assert found[1:] == ["image did not load: missing.png"]
