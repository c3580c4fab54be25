"""Trace storage on a local folder or any fsspec URL (``memory://``, ``s3://`` ...).

Layout under the root (hive-style folders, so other tools can prune by partition)::

    traces/run_id=<run>/suite=<suite>/strategy=<strategy>/<unit>.parquet
    timings/run_id=<run>/suite=<suite>/strategy=<strategy>/<unit>.parquet
    runs/<run>.json

Every file is written under a hidden temporary name in its final folder and then moved
into place, so a crash never leaves a half-written file that a query would read. A unit's
trace file is written last: its presence means the unit is complete (resumable runs),
unless it or the unit's timing file cannot be read (a disk fault, a truncated copy): then
the unit counts as missing and a resumed run writes it again (``unit_done``).
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from junction.errors import JunctionError, TraceError
from junction.evidence.locks import RunLockedError, check_name, run_lock
from junction.evidence.traces import (
    TRACE_SCHEMA,
    TaskTraceRecord,
    records_to_table,
    timings_to_table,
)

__all__ = ["RUN_FIELDS", "RunLockedError", "TraceStore", "check_name"]

RUN_FIELDS: dict[str, type] = {"run_id": str, "git_commit": str, "git_dirty": bool,
                               "started_at": str, "status": str, "params_hash": str,
                               "params": dict}
"""The fields every ``runs/<run_id>.json`` holds, and their JSON types (None allowed)."""


class TraceStore:
    """Read and write traces, timings and run metadata under ``root`` (path or fsspec URL)."""

    def __init__(self, root: str) -> None:
        self.root = str(root)
        try:
            self.fs, self.base = fsspec.core.url_to_fs(self.root)
        except (ImportError, ValueError) as exc:  # unknown protocol or its package missing
            raise JunctionError(f"cannot open traces root {self.root!r}: {exc}") from None
        self.base = self.base.rstrip("/")
        self.protocol = (self.fs.protocol if isinstance(self.fs.protocol, str)
                         else self.fs.protocol[0])

    @property
    def is_local(self) -> bool:
        return self.protocol in ("file", "local")

    def url(self, path: str) -> str:
        """A path of this filesystem as a URL DuckDB and fsspec both understand."""
        return path if self.is_local else f"{self.protocol}://{path.lstrip('/')}"

    def _unit_path(self, kind: str, run_id: str, suite: str, strategy: str, unit: str) -> str:
        check_name(run_id, "run_id")
        check_name(suite, "suite")
        check_name(strategy, "strategy")
        check_name(unit, "unit")
        return (f"{self.base}/{kind}/run_id={run_id}/suite={suite}/strategy={strategy}/"
                f"{unit}.parquet")

    def trace_path(self, run_id: str, suite: str, strategy: str, unit: str) -> str:
        return self._unit_path("traces", run_id, suite, strategy, unit)

    def _atomic_write(self, path: str, data: bytes) -> None:
        folder, name = path.rsplit("/", 1)
        self.fs.makedirs(folder, exist_ok=True)
        tmp = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        try:
            with self.fs.open(tmp, "wb") as handle:
                handle.write(data)
            self.fs.mv(tmp, path)
        finally:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)

    @staticmethod
    def _parquet_bytes(table: pa.Table) -> bytes:
        sink = io.BytesIO()
        # no statistics timestamps or writer version strings vary run to run; bytes are stable
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()

    def unit_done(self, run_id: str, suite: str, strategy: str, unit: str) -> bool:
        """Whether the unit's trace file exists (written atomically, so it is complete) and
        both its files' Parquet footers can be read: a corrupt or truncated one counts as
        missing, so the unit runs again and replaces it (``unreadable_unit_files`` names
        them)."""
        trace = self.trace_path(run_id, suite, strategy, unit)
        if not self.fs.exists(trace):
            return False
        timing = self._unit_path("timings", run_id, suite, strategy, unit)
        return self._readable(trace) and (not self.fs.exists(timing) or self._readable(timing))

    def _readable(self, path: str) -> bool:
        """Whether the Parquet footer of ``path`` can be read."""
        try:
            with self.fs.open(path, "rb") as handle:
                pq.read_metadata(handle)
        except (OSError, pa.ArrowException):
            return False
        return True

    def write_unit(
        self,
        run_id: str,
        suite: str,
        strategy: str,
        unit: str,
        records: list[TaskTraceRecord],
        timings: list[dict[str, Any]],
    ) -> str:
        """Write one unit's timings, then its traces; return the trace file's path.

        Every record and timing row is validated first, however it was made
        (``records_to_table``, ``timings_to_table``), and each must name this unit's run,
        suite and strategy: ``TraceError`` naming the first bad one, and then neither file
        is written. Re-writing a unit replaces its files (same deterministic name): no
        duplicate rows.
        """
        traces, timing_table = records_to_table(records), timings_to_table(timings)
        for kind, table in (("trace", traces), ("timing", timing_table)):
            for column, expected in (("run_id", run_id), ("suite", suite),
                                     ("strategy", strategy)):
                found = set(table.column(column).to_pylist()) - {expected}
                if found:
                    raise TraceError(f"a {kind} row of unit {run_id}/{suite}/{strategy}/{unit} "
                                     f"names {column} {sorted(found)[0]!r}; nothing was written")
        timing_path = self._unit_path("timings", run_id, suite, strategy, unit)
        self._atomic_write(timing_path, self._parquet_bytes(timing_table))
        path = self.trace_path(run_id, suite, strategy, unit)
        self._atomic_write(path, self._parquet_bytes(traces))
        return path

    def learned_model_path(self, family: str, sha256: str) -> str:
        """``learned/<family>-<sha256>.json``: a learned model's record (content-addressed,
        shared by every run that used it; traces name it by ``learned_model``)."""
        return (f"{self.base}/learned/{check_name(family, 'family')}-"
                f"{check_name(sha256, 'sha256')}.json")

    def write_learned_model(self, family: str, sha256: str, record: dict[str, Any]) -> str:
        """Write a learned model's record once (atomic; an existing file is kept: same
        name, same content). Returns its path."""
        path = self.learned_model_path(family, sha256)
        if not self.fs.exists(path):
            text = json.dumps(record, sort_keys=True, indent=1, allow_nan=False)
            self._atomic_write(path, text.encode())
        return path

    def trace_files(self, run_id: str | None = None) -> list[str]:
        """Every trace file (sorted), optionally of one run."""
        run = check_name(run_id, "run_id") if run_id else "*"
        return sorted(self.fs.glob(f"{self.base}/traces/run_id={run}/suite=*/strategy=*/*.parquet"))

    def remove_partial_files(self, run_id: str) -> int:
        """Remove the run's half-written unit files (``_atomic_write``'s hidden ``.*.tmp``
        names, left by a process that ended mid-write) under traces and timings; returns
        how many. Call it only while holding the run's lock (nobody else writes them)."""
        run = check_name(run_id, "run_id")
        removed = 0
        for kind in ("traces", "timings"):
            for path in self.fs.glob(f"{self.base}/{kind}/run_id={run}/suite=*/strategy=*/.*.tmp"):
                with contextlib.suppress(OSError):
                    self.fs.rm(path)
                    removed += 1
        return removed

    def timing_files(self) -> list[str]:
        return sorted(self.fs.glob(f"{self.base}/timings/run_id=*/suite=*/strategy=*/*.parquet"))

    def read_traces(self, run_id: str | None = None) -> pa.Table:
        """All trace rows (of one run, or all) as one table; ``TraceError`` names a bad file."""
        tables = []
        for path in self.trace_files(run_id):
            try:
                with self.fs.open(path, "rb") as handle:
                    # no thread pool and no pre-buffering: either leaves work on Arrow's pools
                    # after a read of a Python file object returns, and a process exiting soon
                    # after can abort in their teardown (SIGABRT, "terminate called without
                    # an active exception"; apache/arrow#33975; docs/measurement.md, "Parquet
                    # reads and exit")
                    table = pq.read_table(handle, use_threads=False, pre_buffer=False)
            except (OSError, pa.ArrowException) as exc:
                raise TraceError(f"corrupt trace file {self.url(path)}: {exc}") from None
            tables.append(table)
        if not tables:
            return TRACE_SCHEMA.empty_table()
        return pa.concat_tables(tables, promote_options="default")

    def find_corrupt_files(self) -> list[str]:
        """Trace or timing files whose Parquet footer cannot be read."""
        return [self.url(p) for p in [*self.trace_files(), *self.timing_files()]
                if not self._readable(p)]

    def unreadable_unit_files(self, run_id: str) -> list[str]:
        """The run's trace and timing files (URLs, sorted) whose Parquet footer cannot be
        read: the units a resumed run writes again (``unit_done``)."""
        run = check_name(run_id, "run_id")
        paths = [p for kind in ("traces", "timings")
                 for p in self.fs.glob(f"{self.base}/{kind}/run_id={run}/suite=*/strategy=*/"
                                       "*.parquet")]
        return [self.url(p) for p in sorted(paths) if not self._readable(p)]

    # ------------------------------------------------------------ run metadata

    def run_meta_path(self, run_id: str) -> str:
        return f"{self.base}/runs/{check_name(run_id, 'run_id')}.json"

    def write_run_meta(self, run_id: str, meta: dict[str, Any]) -> None:
        """Write ``runs/<run_id>.json`` atomically (sorted keys, finite numbers only)."""
        text = json.dumps(meta, sort_keys=True, indent=2, allow_nan=False)
        self._atomic_write(self.run_meta_path(run_id), text.encode())

    def read_run_meta(self, run_id: str) -> dict[str, Any] | None:
        """``runs/<run_id>.json``, or None if absent; ``TraceError`` names a malformed file."""
        path = self.run_meta_path(run_id)
        if not self.fs.exists(path):
            return None
        meta, problem = self._load_run_file(path)
        if meta is None:
            raise TraceError(problem)
        return meta

    def _load_run_file(self, path: str) -> tuple[dict[str, Any] | None, str | None]:
        """(metadata, None), (metadata, what is missing or mistyped) or (None, why unreadable)."""
        try:
            with self.fs.open(path, "rb") as handle:
                meta = json.loads(handle.read())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return None, f"corrupt run file {self.url(path)}: {exc}"
        if not isinstance(meta, dict):
            return None, f"corrupt run file {self.url(path)}: not a JSON object"
        problems = [f"missing {key}" for key in RUN_FIELDS if key not in meta]
        problems += [f"{key} is not {kind.__name__}" for key, kind in RUN_FIELDS.items()
                     if meta.get(key) is not None and not isinstance(meta[key], kind)]
        return meta, "; ".join(problems) or None

    def run_meta_files(self) -> list[str]:
        """Every ``runs/<run_id>.json`` (sorted)."""
        return sorted(self.fs.glob(f"{self.base}/runs/*.json"))

    def run_metas(self) -> list[dict[str, Any]]:
        """Every run's metadata, oldest first (by ``started_at``, then run id).

        A run file with a missing or mistyped field (``RUN_FIELDS``) keeps its row with
        ``problem`` saying what; an unreadable one becomes ``{"run_id": <file stem>,
        "status": "unreadable", "problem": ...}``. One bad file never hides the others.
        """
        metas = []
        for path in self.run_meta_files():
            meta, problem = self._load_run_file(path)
            stem = path.rsplit("/", 1)[-1][: -len(".json")]
            if meta is None:
                meta = {"run_id": stem, "status": "unreadable"}
            else:
                meta = {**meta, "run_id": meta.get("run_id") if isinstance(meta.get("run_id"), str)
                        else stem}
            if problem:
                meta["problem"] = problem
            metas.append(meta)
        return sorted(metas, key=lambda m: (str(m.get("started_at") or ""), m["run_id"]))

    # ------------------------------------------------------------ one writer per run

    @contextlib.contextmanager
    def run_lock(self, run_id: str) -> Iterator[None]:
        """Hold ``runs/.<run_id>.lock`` (an OS file lock) while a process writes the run.

        A second holder fails at once with ``RunLockedError`` naming the holder's PID and
        start time. The OS drops the lock when its process dies, so a crash never leaves a
        stale lock. Local roots only: on an object store nothing is locked
        (``junction.evidence.locks``).
        """
        if not self.is_local:
            yield
            return
        with run_lock(Path(self.base), run_id):
            yield
