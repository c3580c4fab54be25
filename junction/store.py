"""Trace storage on a local folder or any fsspec URL (``memory://``, ``s3://`` ...).

Layout under the root (hive-style folders, so other tools can prune by partition)::

    traces/run_id=<run>/suite=<suite>/strategy=<strategy>/<unit>.parquet
    timings/run_id=<run>/suite=<suite>/strategy=<strategy>/<unit>.parquet
    runs/<run>.json

Every file is written under a hidden temporary name in its final folder and then moved
into place, so a crash never leaves a half-written file that a query would read. A unit's
trace file is written last: its presence means the unit is complete (resumable runs).
"""

from __future__ import annotations

import io
import json
import re
import uuid
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from junction.errors import JunctionError, TraceError
from junction.traces import TRACE_SCHEMA, TaskTraceRecord, records_to_table, timings_to_table

__all__ = ["TraceStore", "check_name"]

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def check_name(value: str, field: str) -> str:
    """Refuse a path component that is empty or holds characters unsafe in a folder name."""
    if not _SAFE.match(value or ""):
        raise TraceError(
            f"{field} {value!r} must start with a letter or digit and use only "
            "letters, digits, '.', '_', '+' and '-'"
        )
    return value


class TraceStore:
    """Read and write traces, timings and run metadata under ``root`` (path or fsspec URL)."""

    def __init__(self, root: str) -> None:
        self.root = str(root)
        try:
            self.fs, self.base = fsspec.core.url_to_fs(self.root)
        except (ImportError, ValueError) as exc:  # unknown protocol or its package missing
            raise JunctionError(f"cannot open traces root {self.root!r}: {exc}") from None
        self.base = self.base.rstrip("/")
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]

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
        """Whether the unit's trace file exists (written atomically, so it is complete)."""
        return self.fs.exists(self.trace_path(run_id, suite, strategy, unit))

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

        Re-writing a unit replaces its files (same deterministic name): no duplicate rows.
        """
        timing_path = self._unit_path("timings", run_id, suite, strategy, unit)
        self._atomic_write(timing_path, self._parquet_bytes(timings_to_table(timings)))
        path = self.trace_path(run_id, suite, strategy, unit)
        self._atomic_write(path, self._parquet_bytes(records_to_table(records)))
        return path

    def trace_files(self, run_id: str | None = None) -> list[str]:
        """Every trace file (sorted), optionally of one run."""
        run = check_name(run_id, "run_id") if run_id else "*"
        return sorted(self.fs.glob(f"{self.base}/traces/run_id={run}/suite=*/strategy=*/*.parquet"))

    def timing_files(self) -> list[str]:
        return sorted(self.fs.glob(f"{self.base}/timings/run_id=*/suite=*/strategy=*/*.parquet"))

    def read_traces(self, run_id: str | None = None) -> pa.Table:
        """All trace rows (of one run, or all) as one table; ``TraceError`` names a bad file."""
        tables = []
        for path in self.trace_files(run_id):
            try:
                with self.fs.open(path, "rb") as handle:
                    table = pq.read_table(handle)
            except (OSError, pa.ArrowException) as exc:
                raise TraceError(f"corrupt trace file {self.url(path)}: {exc}") from None
            tables.append(table)
        if not tables:
            return TRACE_SCHEMA.empty_table()
        return pa.concat_tables(tables, promote_options="default")

    def find_corrupt_files(self) -> list[str]:
        """Trace or timing files whose Parquet footer cannot be read."""
        bad = []
        for path in [*self.trace_files(), *self.timing_files()]:
            try:
                with self.fs.open(path, "rb") as handle:
                    pq.read_metadata(handle)
            except (OSError, pa.ArrowException):
                bad.append(self.url(path))
        return bad

    # ------------------------------------------------------------ run metadata

    def run_meta_path(self, run_id: str) -> str:
        return f"{self.base}/runs/{check_name(run_id, 'run_id')}.json"

    def write_run_meta(self, run_id: str, meta: dict[str, Any]) -> None:
        """Write ``runs/<run_id>.json`` atomically (sorted keys, finite numbers only)."""
        text = json.dumps(meta, sort_keys=True, indent=2, allow_nan=False)
        self._atomic_write(self.run_meta_path(run_id), text.encode())

    def read_run_meta(self, run_id: str) -> dict[str, Any] | None:
        path = self.run_meta_path(run_id)
        if not self.fs.exists(path):
            return None
        with self.fs.open(path, "rb") as handle:
            return json.loads(handle.read())

    def run_meta_files(self) -> list[str]:
        """Every ``runs/<run_id>.json`` (sorted)."""
        return sorted(self.fs.glob(f"{self.base}/runs/*.json"))

    def run_metas(self) -> list[dict[str, Any]]:
        """Every run's metadata, oldest first (by ``started_at``, then run id)."""
        metas = []
        for path in self.run_meta_files():
            with self.fs.open(path, "rb") as handle:
                try:
                    metas.append(json.loads(handle.read()))
                except json.JSONDecodeError as exc:
                    raise TraceError(f"corrupt run file {self.url(path)}: {exc}") from None
        return sorted(metas, key=lambda m: (m.get("started_at", ""), m.get("run_id", "")))
