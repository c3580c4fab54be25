"""Where a bench script's figures go: one JSON file per script and commit.

Every script under ``bench/perf``, ``bench/studies`` and ``bench/checks`` ends with
``write_results(__file__, figures)``: the figures it printed, as one JSON object, written
to ``results/<script>/<commit>.json`` beside this module, so that two commits' figures can
be set side by side (``bench/compare.py A B``). The record::

    {"script": "perf/exact_solver", "commit": "1a2b3c4" or "1a2b3c4-dirty",
     "written_at": ISO time (UTC), "figures": {...},
     "machine": {"cpus", "load_1m", "load_5m", "load_15m", "python", "platform"},
     "argv": [...]}

The machine's load and core count are part of every record because these machines are
shared: a figure measured at load 6 on 2 cores is not comparable with one at load 1.
``commit`` is ``git rev-parse --short HEAD``, with ``-dirty`` when tracked files differ
from it (the figures then belong to no commit exactly). A second run on the same commit
replaces the first. The file is written to a temporary name and renamed into place, so a
reader never sees half a record. ``$JUNCTION_BENCH_RESULTS`` names another folder (tests
use it); the default folder is ignored by git: results are generated, and the latest
figure of each script is kept in the committed ``bench/figures.json``
(``bench/index.py``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS_ENV = "JUNCTION_BENCH_RESULTS"
KINDS = ("perf", "studies", "checks")
"""The folders of bench scripts: timings, studies that measure a result, and checks that
something is right."""


def results_dir() -> Path:
    """``$JUNCTION_BENCH_RESULTS``, or the ``results`` folder beside this module."""
    return Path(os.environ.get(RESULTS_ENV) or BENCH / "results")


def commit(root: Path = ROOT) -> str:
    """The checkout's short commit, ``-dirty`` when tracked files differ from it;
    ``unknown`` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=True, timeout=60).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}-dirty" if dirty else head


def script_id(script: str | os.PathLike) -> str:
    """``perf/exact_solver`` for a script's path (or that id itself, or a bare name)."""
    path = Path(script)
    if path.suffix == ".py":
        path = path.resolve()
        if path.parent.parent == BENCH:
            return f"{path.parent.name}/{path.stem}"
        return path.stem
    return str(script)


def machine() -> dict:
    """Core count, load averages and the Python that ran the script."""
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "load_1m": round(load[0], 2), "load_5m": round(load[1], 2),
            "load_15m": round(load[2], 2), "python": platform.python_version(),
            "platform": platform.platform()}


def _plain(value):
    """JSON for what ``json`` does not know: numpy scalars and arrays, paths, sets."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def write_results(script: str | os.PathLike, figures: dict, argv: list[str] | None = None
                  ) -> Path:
    """Write ``figures`` of ``script`` (its ``__file__``) for the current commit; the path.

    The path is also printed on stderr, so a script's stdout stays what it printed."""
    sid = script_id(script)
    sha = commit()
    record = {"script": sid, "commit": sha,
              "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "figures": figures, "machine": machine(),
              "argv": list(sys.argv[1:] if argv is None else argv)}
    folder = results_dir() / Path(sid).name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sha}.json"
    text = json.dumps(record, indent=1, sort_keys=True, default=_plain) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{sha}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"figures: {path}", file=sys.stderr)
    return path


class ResultFileError(ValueError):
    """A result file that is not a record: truncated, not JSON, or without ``script`` and
    ``figures``; the message names the file."""


def read_results(path: Path) -> dict:
    """One record written by ``write_results``. Raises ``ResultFileError`` naming ``path``
    when it cannot be read, is not JSON (a truncated file) or is not an object with a
    ``script`` string and a ``figures`` object."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError too
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ResultFileError(f"{path}: not a readable result file ({reason})") from None
    if (not isinstance(record, dict) or not isinstance(record.get("script"), str)
            or not isinstance(record.get("figures"), dict)):
        raise ResultFileError(f"{path}: not a result record (expected a JSON object with "
                              "'script' and 'figures')")
    return record


def bench_scripts() -> list[str]:
    """Every bench script's id (``perf/exact_solver``, ...), sorted."""
    return sorted(f"{kind}/{p.stem}" for kind in KINDS for p in (BENCH / kind).glob("*.py"))
