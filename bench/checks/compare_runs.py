"""Are two runs the same? metrics.json bytes and trace rows (DuckDB ``EXCEPT ALL`` both ways).

Usage: ``python bench/checks/compare_runs.py WAREHOUSE_A REPORT_A WAREHOUSE_B REPORT_B
[--ignore NAME ...] [--json]`` where REPORT_* is a run's report folder
(``reports/<run_id>``). Used to check that a refactor keeps behaviour: run the same
``junction bench`` command (same ``--run-id``) at two commits into two warehouses, then
compare (docs/measurement.md, "A refactor changes nothing").

The trace rows are compared on the columns both sides have; the columns only one side has
are listed (``columns_only_in_a``/``_b``: a trace schema change). ``--ignore NAME`` leaves
a column out of the row comparison and a key, at any depth, out of a second metrics.json
comparison (``metrics_identical_ignoring``), for a change that renames or moves them
(``schema_version`` where the schema version changed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results


def _without(value: Any, ignore: set[str]) -> Any:
    """``value`` (parsed JSON) with every object key in ``ignore`` removed, at any depth."""
    if isinstance(value, dict):
        return {k: _without(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [_without(v, ignore) for v in value]
    return value


def compare(warehouse_a: Path, report_a: Path, warehouse_b: Path, report_b: Path,
            ignore: tuple[str, ...] = ()) -> dict:
    """``metrics_identical``, row counts and the rows each side has that the other lacks
    (module docstring); with ``ignore``, also ``metrics_identical_ignoring``."""
    con = duckdb.connect()
    scans = [f"read_parquet('{w / 'traces'}/**/*.parquet', union_by_name=true)"
             for w in (warehouse_a, warehouse_b)]
    columns = [{row[0] for row in con.execute(f"describe select * from {s}").fetchall()}
               for s in scans]
    shared = ", ".join(f'"{c}"' for c in sorted((columns[0] & columns[1]) - set(ignore)))
    count = [con.execute(f"select count(*) from {s}").fetchall()[0][0] for s in scans]
    only = [con.execute(f"select count(*) from (select {shared} from {x} except all "
                        f"select {shared} from {y})").fetchall()[0][0]
            for x, y in (scans, scans[::-1])]
    metrics = [(r / "metrics.json").read_bytes() for r in (report_a, report_b)]
    out = {"metrics_identical": metrics[0] == metrics[1],
           "rows_a": count[0], "rows_b": count[1], "only_in_a": only[0], "only_in_b": only[1],
           "columns_only_in_a": sorted(columns[0] - columns[1]),
           "columns_only_in_b": sorted(columns[1] - columns[0])}
    if ignore:
        out["ignored"] = list(ignore)
        out["metrics_identical_ignoring"] = (_without(json.loads(metrics[0]), set(ignore))
                                             == _without(json.loads(metrics[1]), set(ignore)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("warehouse_a", "report_a", "warehouse_b", "report_b"):
        parser.add_argument(name, type=Path)
    parser.add_argument("--ignore", action="append", default=[], metavar="NAME",
                        help="a trace column and metrics.json key left out (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = compare(args.warehouse_a, args.report_a, args.warehouse_b, args.report_b,
                  tuple(args.ignore))
    write_results(__file__, out)
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
