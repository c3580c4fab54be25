"""Are two runs the same? metrics.json bytes and trace rows (DuckDB ``EXCEPT ALL`` both ways).

Usage: ``python bench/checks/compare_runs.py WAREHOUSE_A REPORT_A WAREHOUSE_B REPORT_B [--json]``
where REPORT_* is a run's report folder (``reports/<run_id>``). Used to check that a
refactor keeps behaviour: run the same ``junction bench`` command (same ``--run-id``) at two
commits into two warehouses, then compare (docs/measurement.md, "A refactor changes
nothing").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402


def compare(warehouse_a: Path, report_a: Path, warehouse_b: Path, report_b: Path) -> dict:
    """``metrics_identical``, row counts and the rows each side has that the other lacks."""
    con = duckdb.connect()
    scans = [f"read_parquet('{w / 'traces'}/**/*.parquet', union_by_name=true)"
             for w in (warehouse_a, warehouse_b)]
    count = [con.execute(f"select count(*) from {s}").fetchone()[0] for s in scans]
    only = [con.execute(f"select count(*) from (select * from {x} except all select * from {y})"
                        ).fetchone()[0] for x, y in (scans, scans[::-1])]
    return {"metrics_identical": (report_a / "metrics.json").read_bytes()
            == (report_b / "metrics.json").read_bytes(),
            "rows_a": count[0], "rows_b": count[1], "only_in_a": only[0], "only_in_b": only[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("warehouse_a", "report_a", "warehouse_b", "report_b"):
        parser.add_argument(name, type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = compare(args.warehouse_a, args.report_a, args.warehouse_b, args.report_b)
    write_results(__file__, out)
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
