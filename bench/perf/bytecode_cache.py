"""What the checkout's bytecode cache saves a process that imports the project: processes
like the ones ``make test`` starts, run with the project's modules compiled from source
(``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__``, as in an environment that sets that
variable) and with the compiled modules read from ``__pycache__`` (the Makefile's
``export PYTHONDONTWRITEBYTECODE :=``), alternating, on one machine in one run.

The commands:

- ``import``: ``python -c "import flows.cli, flows.cli_run, flows.benchmark"``, the modules
  every ``junction`` process imports before it parses its options;
- ``bench``: ``junction bench --suite coupling --strategy exact --size 2 --budget-scale 1``
  with its own state folder, warehouse and reports under a temporary folder: a whole run
  with its temporary Prefect server (started from the home's template when there is one,
  ``flows.server``), as the tests' runs do.

Beside them, ``compile``: the CPU seconds (``time.process_time``, median of the rounds) of
``compile()`` over every ``.py`` file of the three source trees in this process: the most a
process that imports the whole project can save, measured without a process start's noise.

Before a compiled run the project's ``__pycache__`` folders (``junction/``, ``flows/``,
``datasets/``) are moved aside, and put back after it; the cached runs read the ones one
unmeasured bench run wrote first. Each measure is the CPU seconds (user + system) of the
process and of the children it waited for (its Prefect server among them), from
``resource.getrusage(RUSAGE_CHILDREN)`` before and after, and its wall seconds. The
compiled modules that first run wrote are left in place at the end.

Usage: ``.venv/bin/python bench/perf/bytecode_cache.py [--rounds N]`` (default 3).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import measured_run, write_results  # noqa: E402

PACKAGES = ("junction", "flows", "datasets")
"""The checkout's source trees whose ``__pycache__`` folders are removed and written."""

BIN = Path(sys.executable).parent
COMMANDS: dict[str, list[str]] = {
    "import": [sys.executable, "-c", "import flows.cli, flows.cli_run, flows.benchmark"],
    "bench": [str(BIN / "junction"), "bench", "--suite", "coupling", "--strategy", "exact",
              "--size", "2", "--budget-scale", "1"],
}


def _folders() -> list[Path]:
    return [f for package in PACKAGES for f in sorted((ROOT / package).rglob("__pycache__"))]


def _stash(to: Path) -> None:
    """Move the project's ``__pycache__`` folders under ``to`` (same relative paths)."""
    for folder in _folders():
        target = to / folder.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(target)


def _restore(stash: Path) -> None:
    """Put the folders ``_stash`` moved back (after a compiled run wrote none)."""
    for folder in sorted(stash.rglob("__pycache__")):
        target = ROOT / folder.relative_to(stash)
        if not target.exists():
            folder.rename(target)


def _cached_modules() -> int:
    return sum(1 for folder in _folders() for _ in folder.glob("*.pyc"))


def _run(name: str, cached: bool, base: Path, tag: str) -> tuple[float, float]:
    """CPU seconds (the process and the children it waited for) and wall seconds of one
    run of ``COMMANDS[name]``; exits naming the command if it fails."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "" if cached else "1",
           "JUNCTION_STATE_DIR": str(base / "state"),
           "JUNCTION_WAREHOUSE": str(base / "wh"), "JUNCTION_REPORTS": str(base / "rep")}
    env.pop("PREFECT_API_URL", None)
    argv = [*COMMANDS[name], *(["--run-id", tag] if name == "bench" else [])]
    done, cpu, wall = measured_run(argv, cwd=ROOT, env=env)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return cpu, wall


def _compile_seconds() -> tuple[int, int, float]:
    """(files, bytes, CPU seconds) of ``compile()`` over every ``.py`` file of ``PACKAGES``."""
    sources = [(str(path), path.read_text(encoding="utf-8")) for package in PACKAGES
               for path in sorted((ROOT / package).rglob("*.py"))]
    began = time.process_time()
    for name, text in sources:
        compile(text, name, "exec")
    return len(sources), sum(len(t.encode()) for _, t in sources), time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds takes a positive count")
    base = Path(tempfile.mkdtemp(prefix="bytecode-cache-"))
    (base / "state").mkdir()
    models = ROOT / ".state" / "models"
    if models.is_dir():
        (base / "state" / "models").symlink_to(models)
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {
        name: {"compiled": [], "cached": []} for name in COMMANDS}
    stash = base / "stash"
    try:
        for folder in _folders():  # a cache: written again by the next run
            shutil.rmtree(folder)
        _run("bench", True, base, "warm")  # writes the cache; not measured
        modules = _cached_modules()
        print(f"{modules} compiled modules of the project in __pycache__ after one bench run")
        for i in range(args.rounds):
            order = ("compiled", "cached") if i % 2 == 0 else ("cached", "compiled")
            for name in COMMANDS:
                for mode in order:
                    if mode == "compiled":
                        _stash(stash)
                    cpu, wall = _run(name, mode == "cached", base, f"{mode}{i}")
                    if mode == "compiled":
                        _restore(stash)
                        shutil.rmtree(stash)
                    runs[name][mode].append((cpu, wall))
                    print(f"round {i + 1}: {name} {mode}: {cpu:.2f} CPU-s, {wall:.2f} s",
                          flush=True)
    finally:
        if stash.exists():
            _restore(stash)
        shutil.rmtree(base, ignore_errors=True)
    compiles = [_compile_seconds() for _ in range(args.rounds)]
    files, size = compiles[0][:2]
    compile_s = statistics.median(c for _, _, c in compiles)
    print(f"compile() of the project's {files} source files ({size:,} bytes): "
          f"{compile_s:.3f} CPU-s (median of {len(compiles)})")
    print("| command | compiled each time: CPU s (runs) | cached: CPU s (runs) | saved CPU s |"
          "\n|---|---|---|---|")
    figures: dict[str, object] = {"project_modules": modules,
                                  "compile": {"files": files, "bytes": size,
                                              "cpu_s": round(compile_s, 3)}}
    for name, modes in runs.items():
        med = {mode: statistics.median(c for c, _ in values) for mode, values in modes.items()}
        cells = [f"{med[mode]:.2f} ({', '.join(f'{c:.2f}' for c, _ in modes[mode])})"
                 for mode in ("compiled", "cached")]
        print(f"| {name} | {cells[0]} | {cells[1]} | {med['compiled'] - med['cached']:.2f} |")
        figures[name] = {
            **{f"{mode}_cpu_s": {"median": round(med[mode], 2),
                                 "runs": [round(c, 2) for c, _ in modes[mode]]}
               for mode in modes},
            **{f"{mode}_wall_s": {"median": round(statistics.median(w for _, w in v), 2)}
               for mode, v in modes.items()},
            "saved_cpu_s": round(med["compiled"] - med["cached"], 2)}
    write_results(__file__, figures)


if __name__ == "__main__":
    main()
