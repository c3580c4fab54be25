"""Where a bench script's figures go: one JSON file per machine, script and commit.

Every script under ``bench/perf``, ``bench/studies`` and ``bench/checks`` ends with
``write_results(__file__, figures)``: the figures it printed, as one JSON object, written
to ``results/<machine>/<script>/<commit>.json`` beside this module (``<script>`` is the
script's id, ``perf/exact_solver``), so that two commits' figures on one machine can be set
side by side (``bench/compare.py A B``). Results are keyed per machine × commit as asv keys
its own (``results/<machine>/<commit>-<env>.json`` with ``results/<machine>/machine.json``):
a figure measured on a 2-core machine is not comparable with one measured on a 16-core one.
The record::

    {"script": "perf/exact_solver", "commit": "1a2b3c4" or "1a2b3c4-dirty",
     "written_at": ISO time (UTC), "figures": {...},
     "machine": {"name", "cpus", "load_1m", "load_5m", "load_15m", "python", "platform"},
     "argv": [...]}

and beside each machine's folder ``machine.json`` (asv's keys): ``{"machine": name,
"arch", "cpu", "num_cpu", "os", "ram" (bytes), "version": 1}``, rewritten when it changes.

The machine's name is ``$JUNCTION_BENCH_MACHINE`` (letters, digits, ``.``, ``_``, ``-``),
or the host name with the core count (``vm-2cpu``): stable across runs on one host, and
two hosts that share a name but not a core count stay apart. The machine's load and core
count are part of every record because these machines are shared: a figure measured at
load 6 on 2 cores is not comparable with one at load 1. ``commit`` is ``git rev-parse
--short HEAD``, with ``-dirty`` when tracked files differ from it (the figures then
belong to no commit exactly). A second run on the same machine and commit replaces the
first. The file is written to a temporary name and renamed into place, so a reader never
sees half a record. ``$JUNCTION_BENCH_RESULTS`` names another folder (tests use it); the
default folder is ignored by git: results are generated. A figure the docs cite is kept
by copying its record into the committed ``bench/records/`` (same layout) and naming it
as the figure's source in ``bench/figures.json`` (``bench/figures.py``).

Files of the layout before machines (``results/<script name>/<commit>.json``) are still
read (``result_files``), as of an unnamed machine.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS_ENV = "JUNCTION_BENCH_RESULTS"
MACHINE_ENV = "JUNCTION_BENCH_MACHINE"
MACHINE_FILE = "machine.json"
KINDS = ("perf", "studies", "checks")
"""The folders of bench scripts: timings, studies that measure a result, and checks that
something is right."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class MachineNameError(ValueError):
    """``$JUNCTION_BENCH_MACHINE`` that cannot name a folder; the message names it."""


def measured_run(argv: list[str], **kwargs) -> tuple[subprocess.CompletedProcess[str],
                                                      float, float]:
    """``subprocess.run(argv, capture_output=True, text=True, **kwargs)`` with its CPU
    seconds (user + system of the process and of the children it waited for: the change in
    ``resource.getrusage(RUSAGE_CHILDREN)``, so nothing else may end meanwhile) and its wall
    seconds (``time.perf_counter``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kwargs)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, cpu, wall


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


def machine_name() -> str:
    """This machine's name in the results: ``$JUNCTION_BENCH_MACHINE``, else the host
    name (lower case, anything but letters, digits, ``.``, ``-`` as ``-``) and the core
    count, ``vm-2cpu``. Raises ``MachineNameError`` when the variable cannot name a folder
    (empty after stripping, ``/``, spaces, a leading dot)."""
    named = os.environ.get(MACHINE_ENV)
    if named is not None:
        if not _NAME.fullmatch(named):
            raise MachineNameError(f"{MACHINE_ENV}={named!r}: not a machine name (letters, "
                                   "digits, '.', '_', '-', not starting with '.' or '-')")
        return named
    return f"{_slug(platform.node())}-{os.cpu_count() or 0}cpu"


def _slug(text: str) -> str:
    """``text`` in lower case with anything but letters, digits and ``.`` as ``-``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "host"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):
        return None


def machine_info(name: str | None = None) -> dict:
    """This machine's ``machine.json``, asv's keys: ``machine`` (``name``, default
    ``machine_name()``), ``arch``, ``cpu`` (model), ``num_cpu``, ``os``, ``ram`` (bytes),
    ``version`` 1."""
    return {"machine": name or machine_name(), "arch": platform.machine(), "cpu": _cpu_model(),
            "num_cpu": os.cpu_count(), "os": f"{platform.system()} {platform.release()}",
            "ram": _ram_bytes(), "version": 1}


def machine(name: str | None = None) -> dict:
    """The machine's name (``name``, default ``machine_name()``), core count, load
    averages and the Python that ran the script."""
    load = os.getloadavg()
    return {"name": name or machine_name(), "cpus": os.cpu_count(), "load_1m": round(load[0], 2),
            "load_5m": round(load[1], 2), "load_15m": round(load[2], 2),
            "python": platform.python_version(), "platform": platform.platform()}


def _plain(value):
    """JSON for what ``json`` does not know: numpy scalars and arrays, paths, sets."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def write_json(path: Path, value: dict) -> None:
    """``value`` as indented JSON (sorted keys) at ``path``: written to a temporary name in
    the same folder, then renamed into place, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(value, indent=1, sort_keys=True, default=_plain) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def result_path(folder: Path, machine_id: str, script: str, sha: str) -> Path:
    """``folder/<machine>/<script>/<commit>.json``."""
    return folder / machine_id / script / f"{sha}.json"


def write_results(script: str | os.PathLike, figures: dict, argv: list[str] | None = None
                  ) -> Path:
    """Write ``figures`` of ``script`` (its ``__file__``) for this machine and the current
    commit; the path. The machine's ``machine.json`` is written beside when it is missing
    or differs.

    The path is also printed on stderr, so a script's stdout stays what it printed. A
    ``$JUNCTION_BENCH_MACHINE`` that cannot name a folder does not lose the figures: one
    ``warning:`` line names it and the record goes under that name made safe."""
    sid = script_id(script)
    sha = commit()
    try:
        name = machine_name()
    except MachineNameError as exc:
        name = _slug(os.environ.get(MACHINE_ENV, ""))
        print(f"warning: {exc}; written as machine {name!r}", file=sys.stderr)
    info = machine_info(name)
    record = {"script": sid, "commit": sha,
              "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "figures": figures, "machine": machine(name),
              "argv": list(sys.argv[1:] if argv is None else argv)}
    path = result_path(results_dir(), info["machine"], sid, sha)
    described = path.parents[len(Path(sid).parts)] / MACHINE_FILE
    try:
        current = json.loads(described.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        current = None
    if current != info:
        write_json(described, info)
    write_json(path, record)
    print(f"figures: {path}", file=sys.stderr)
    return path


class ResultFile(NamedTuple):
    """Where one result file lies: ``machine`` (None for the layout before machines),
    ``script`` (the id its folders give: ``perf/scale``, or ``scale`` in the old layout),
    ``commit`` (the file's stem) and ``path``. Read from the path alone, not the file."""

    machine: str | None
    script: str
    commit: str
    path: Path


def result_files(folder: Path) -> list[ResultFile]:
    """Every result file under ``folder``, sorted by path, without reading one:
    ``<machine>/<kind>/<script>/<commit>.json`` (and ``<machine>/<script>/<commit>.json``
    for a script outside the bench folders), and ``<script>/<commit>.json`` of the layout
    before machines. ``machine.json`` and hidden (temporary) files are not results."""
    found = []
    for path in sorted(folder.rglob("*.json")) if folder.is_dir() else ():
        parts = path.relative_to(folder).parts
        if path.name == MACHINE_FILE or any(p.startswith(".") for p in parts):
            continue
        if len(parts) == 2:
            found.append(ResultFile(None, parts[0], path.stem, path))
        elif len(parts) >= 3:
            found.append(ResultFile(parts[0], "/".join(parts[1:-1]), path.stem, path))
    return found


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
