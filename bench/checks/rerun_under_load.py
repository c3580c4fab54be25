"""Identical reruns under load: the same benchmark twice, once with every core busy.

Runs ``junction bench --suite synthetic-200 --suite synthetic --seed 0`` (defaults
otherwise) twice in fresh warehouses, the second time with one CPU burner per core that
this script starts before and stops after, and prints whether the two ``metrics.json``
are byte-identical, with the wall time of each run (figures, not assertions: the timing
only shows that the load slowed the second run). Exits 1 if the files differ.

    python bench/checks/rerun_under_load.py [--suite S ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402


def _burn() -> None:
    while True:
        pass


def _bench(folder: Path, suites: list[str]) -> tuple[bytes, float]:
    """Run the CLI's bench into ``folder``; (metrics.json bytes, wall seconds)."""
    args = [sys.executable, "-c", "from flows.cli import main; main()", "bench",
            "--seed", "0", "--warehouse", str(folder / "warehouse"),
            "--reports", str(folder / "reports")]
    for s in suites:
        args += ["--suite", s]
    t0 = time.perf_counter()
    subprocess.run(args, cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t0
    (metrics,) = (folder / "reports").glob("*/metrics.json")
    return metrics.read_bytes(), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    suites = args.suite or ["synthetic-200", "synthetic"]
    with tempfile.TemporaryDirectory() as tmp:
        quiet, quiet_s = _bench(Path(tmp) / "quiet", suites)
        burners = [mp.Process(target=_burn, daemon=True) for _ in range(os.cpu_count() or 2)]
        for b in burners:
            b.start()
        try:
            loaded, loaded_s = _bench(Path(tmp) / "loaded", suites)
        finally:
            for b in burners:
                b.terminate()
                b.join()
    out = {"suites": suites, "identical": quiet == loaded, "burners": len(burners),
           "quiet_s": round(quiet_s, 1), "loaded_s": round(loaded_s, 1),
           "metrics_bytes": len(quiet)}
    write_results(__file__, out)
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        print(f"metrics.json byte-identical: {out['identical']} ({len(quiet)} bytes); "
              f"quiet {out['quiet_s']} s, with {len(burners)} CPU burners "
              f"{out['loaded_s']} s")
    sys.exit(0 if out["identical"] else 1)


if __name__ == "__main__":
    main()
