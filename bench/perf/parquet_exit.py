"""How often a process aborts at exit after reading a trace file, by read options.

A threaded ``pyarrow.parquet.read_table`` of a Python file object (what ``TraceStore`` gets
from fsspec) can leave work on Arrow's thread pools after it returns; a process that exits
soon after then sometimes dies in the pools' teardown with SIGABRT ("terminate called
without an active exception", apache/arrow#33975). This script writes one small trace
file, then runs ``--runs`` child processes per variant, each reading it, writing it back
to memory as ``TraceStore`` does, and exiting at once, with ``--hogs`` busy loops beside
them (the abort needs a loaded machine), and prints the abort count per variant.

    python bench/perf/parquet_exit.py [--runs 100] [--hogs 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results

VARIANTS = {
    "threaded read (main before)": "pq.read_table(f)",
    "use_threads=False": "pq.read_table(f, use_threads=False)",
    "use_threads=False, pre_buffer=False (TraceStore)":
        "pq.read_table(f, use_threads=False, pre_buffer=False)",
}

CHILD = """
import io, sys
import pyarrow.parquet as pq
with open(sys.argv[1], "rb") as f:
    t = {read}
pq.write_table(t, io.BytesIO(), compression="zstd")
sys.exit(1)
"""


def _hog() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--hogs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "unit.parquet"
        table = pa.table({"task_id": [f"t{i}" for i in range(200)],
                          "success": [i % 3 == 0 for i in range(200)]})
        pq.write_table(table, path, compression="zstd")
        hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
        for hog in hogs:
            hog.start()
        try:
            print(f"{'variant':<52} aborts (SIGABRT) of {args.runs}")
            aborted = {}
            for name, read in VARIANTS.items():
                code = CHILD.format(read=read)
                aborts = sum(subprocess.run([sys.executable, "-c", code, str(path)],
                                            capture_output=True).returncode == -6
                             for _ in range(args.runs))
                print(f"{name:<52} {aborts}")
                aborted[name] = aborts
        finally:
            for hog in hogs:
                hog.terminate()
    write_results(__file__, {"runs": args.runs, "hogs": args.hogs, "aborts": aborted})


if __name__ == "__main__":
    main()
