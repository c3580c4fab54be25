"""The DuckDB warehouse: SQL views (``junction/views.sql``) over a ``TraceStore``.

The ``strategy_summary`` view aggregates every metric of the catalog
(``junction.metrics.METRICS``): its ``{metric_aggregates}`` placeholder is filled from it.

The database file ``<root>/junction.duckdb`` (local roots only) holds the views, so any
DuckDB client can query them. DuckDB admits one writer per file: ``refresh`` waits for the
lock up to ``lock_timeout_s`` and then fails with a clear message; ``connect_reader`` never
blocks: it builds the same views in an in-memory database, whoever holds the file.
"""

from __future__ import annotations

import importlib.resources
import time
from pathlib import Path

import duckdb
import pyarrow as pa

from junction import metrics as catalog
from junction.errors import JunctionError, TraceError
from junction.store import TraceStore

__all__ = ["Warehouse", "WarehouseError", "VIEWS_SQL", "view_statement"]

VIEWS_SQL = importlib.resources.files("junction") / "views.sql"
"""The view definitions, shipped inside the package (so a non-editable install has them)."""


class WarehouseError(JunctionError):
    """The warehouse cannot be opened or a query failed; the message says why."""


def _statements(sql: str) -> list[str]:
    """Split a SQL file on ';' at line ends, dropping comment-only chunks."""
    out = []
    for chunk in sql.split(";\n"):
        body = "\n".join(l for l in chunk.splitlines() if not l.strip().startswith("--"))
        if body.strip():
            out.append(body.strip().rstrip(";"))
    return out


_AGGREGATES = {"mean": "avg({name})", "mean_of_bool": "avg(CAST({name} AS DOUBLE))"}
"""SQL of each ``Metric.aggregation`` (DuckDB's avg skips NULLs)."""


def _metric_aggregates() -> str:
    """The ``strategy_summary`` select list of the catalog: ``avg(x) AS column, ...``."""
    return ",\n       ".join(_AGGREGATES[m.aggregation].format(name=m.name) + f" AS {m.column}"
                             for m in catalog.METRICS)


def _view_statements() -> list[str]:
    """The statements of ``junction/views.sql``, the catalog's aggregates in place."""
    aggregates = _metric_aggregates()
    return [statement.replace("{metric_aggregates}", aggregates)
            for statement in _statements(VIEWS_SQL.read_text())]


def view_statement(name: str) -> str:
    """The ``CREATE OR REPLACE VIEW <name>`` statement of ``junction/views.sql``."""
    for statement in _view_statements():
        if statement.startswith(f"CREATE OR REPLACE VIEW {name} "):
            return statement
    raise WarehouseError(f"{VIEWS_SQL} defines no view {name!r}")


# Views with the right columns and no rows, for a root with no timing or run files yet.
_EMPTY_VIEWS = {
    "timings": "CREATE OR REPLACE VIEW timings AS SELECT NULL::VARCHAR AS run_id, "
               "NULL::VARCHAR AS suite, NULL::VARCHAR AS strategy, NULL::VARCHAR AS task_id, "
               "NULL::BIGINT AS seed, NULL::DOUBLE AS budget_scale, NULL::DOUBLE AS select_ms, "
               "NULL::DOUBLE AS execute_ms, NULL::DOUBLE AS total_ms LIMIT 0",
    "runs": "CREATE OR REPLACE VIEW runs AS SELECT NULL::VARCHAR AS run_id, "
            "NULL::VARCHAR AS git_commit, NULL::BOOLEAN AS git_dirty, "
            "NULL::VARCHAR AS started_at, NULL::VARCHAR AS finished_at, NULL::VARCHAR AS status, "
            "NULL::VARCHAR AS params_hash, NULL::VARCHAR AS params_json LIMIT 0",
}


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class Warehouse:
    """Views over the traces under ``root`` (a path or fsspec URL)."""

    def __init__(self, root: str, lock_timeout_s: float = 30.0) -> None:
        self.store = TraceStore(root)
        self.lock_timeout_s = lock_timeout_s

    @property
    def db_path(self) -> Path | None:
        return Path(self.store.base) / "junction.duckdb" if self.store.is_local else None

    def _globs(self) -> dict[str, str]:
        base = self.store.url(self.store.base)
        return {
            "traces": _literal(f"{base}/traces/run_id=*/suite=*/strategy=*/*.parquet"),
            "timings": _literal(f"{base}/timings/run_id=*/suite=*/strategy=*/*.parquet"),
            "runs": _literal(f"{base}/runs/*.json"),
        }

    def _create_views(self, con: duckdb.DuckDBPyConnection) -> None:
        if not self.store.is_local:
            con.register_filesystem(self.store.fs)
        if not self.store.trace_files():
            raise WarehouseError(
                f"no traces under {self.store.root}; run `junction bench` first"
            )
        present = {
            "traces": True,
            "timings": bool(self.store.timing_files()),
            "runs": bool(self.store.run_meta_files()),
        }
        globs = self._globs()
        try:
            for statement in _view_statements():
                needs = [key for key in globs if "{" + key + "}" in statement]
                if needs and not present[needs[0]]:
                    con.execute(_EMPTY_VIEWS[needs[0]])
                    continue
                for key, value in globs.items():
                    statement = statement.replace("{" + key + "}", value)
                con.execute(statement)
        except duckdb.Error as exc:
            self._raise_for_corrupt(exc)

    def _raise_for_corrupt(self, exc: Exception) -> None:
        bad = self.store.find_corrupt_files()
        if bad:
            raise TraceError(f"corrupt Parquet file {bad[0]} ({len(bad)} in all): "
                             "move it away or re-run its unit") from None
        raise WarehouseError(str(exc).splitlines()[0]) from None

    def refresh(self) -> None:
        """(Re)create the views in the database file; waits for DuckDB's writer lock."""
        if self.db_path is None:
            return
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                con = duckdb.connect(str(self.db_path))
                break
            except duckdb.IOException as exc:
                if time.monotonic() > deadline:
                    raise WarehouseError(
                        f"warehouse {self.db_path} is locked by another writer "
                        f"(waited {self.lock_timeout_s:.0f} s): {str(exc).splitlines()[0]}"
                    ) from None
                time.sleep(0.5)
        try:
            self._create_views(con)
        finally:
            con.close()

    def connect_reader(self) -> duckdb.DuckDBPyConnection:
        """An in-memory connection with the views: it never waits for the file's writer."""
        con = duckdb.connect(":memory:")
        self._create_views(con)
        return con

    def query(self, sql: str, params: list | None = None) -> pa.Table:
        """Run ``sql`` against the views; ``WarehouseError`` with DuckDB's first line."""
        con = self.connect_reader()
        try:
            return con.sql(sql, params=params or None).to_arrow_table()
        except duckdb.Error as exc:
            message = str(exc).splitlines()[0]
            if "parquet" in message.lower() or "magic" in message.lower():
                self._raise_for_corrupt(exc)
            raise WarehouseError(f"query failed: {message}") from None
        finally:
            con.close()
