"""The DuckDB warehouse: SQL views (``junction/evidence/views.sql``) over a ``TraceStore``.

The ``strategy_summary`` view aggregates every metric of the catalog
(``junction.evidence.metrics.METRICS``): its ``{metric_aggregates}`` placeholder is filled from it.
The ``agent_measures`` view is the traces' agent-grader measures in long form (one row per
trace row and measure); where no trace file has that column yet it is an empty view.

The database file ``<root>/junction.duckdb`` (local roots only) holds the views, so any
DuckDB client can query them. DuckDB admits one writer per file: ``refresh`` waits for the
lock up to ``lock_timeout_s`` and then fails with a clear message; ``connect_reader`` never
blocks: it builds the same views in an in-memory database, whoever holds the file.

The views name the files that were readable when they were made (a corrupt file is left
out, with a ``CorruptFileWarning``), and ``run_files`` is a snapshot of the run files; so
the database file shows what the last ``refresh`` saw, and ``connect_reader`` what is there
now. ``query`` is read-only: SELECT statements only, on the locked-down reader.
``run_data`` reads what one run's report needs (a ``RunData``) through the same views, in
one reader session.
"""

from __future__ import annotations

import importlib.resources
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from junction.errors import JunctionError, TraceError
from junction.evidence import metrics as catalog
from junction.evidence.store import TraceStore, check_name

__all__ = [
    "VIEWS_SQL",
    "CorruptFileWarning",
    "ReadOnlyError",
    "RunData",
    "Warehouse",
    "WarehouseError",
    "check_read_only",
    "duckdb_error_line",
    "view_statement",
]

VIEWS_SQL = importlib.resources.files("junction.evidence") / "views.sql"
"""The view definitions, shipped inside the package (so a non-editable install has them)."""


class WarehouseError(JunctionError):
    """The warehouse cannot be opened or a query failed; the message says why."""


def duckdb_error_line(exc: BaseException) -> str:
    """DuckDB's error message on one line: its lines up to the first blank one or the
    ``LINE n:`` excerpt, joined by spaces, so the hint that follows the first line
    ("Did you mean "traces"?", "Candidate bindings: ...") is kept."""
    kept = []
    for line in str(exc).splitlines():
        if not line.strip() or line.startswith("LINE "):
            break
        kept.append(line.strip())
    return " ".join(kept) or type(exc).__name__


def _statements(sql: str) -> list[str]:
    """Split a SQL file on ';' at line ends, dropping comment-only chunks."""
    out = []
    for chunk in sql.split(";\n"):
        body = "\n".join(line for line in chunk.splitlines()
                         if not line.strip().startswith("--"))
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
    """The statements of ``junction/evidence/views.sql``, the catalog's aggregates in place."""
    aggregates = _metric_aggregates()
    return [statement.replace("{metric_aggregates}", aggregates)
            for statement in _statements(VIEWS_SQL.read_text())]


def view_statement(name: str) -> str:
    """The ``CREATE OR REPLACE VIEW <name>`` statement of ``junction/evidence/views.sql``."""
    for statement in _view_statements():
        if statement.startswith(f"CREATE OR REPLACE VIEW {name} "):
            return statement
    raise WarehouseError(f"{VIEWS_SQL} defines no view {name!r}")


# A view with the right columns and no rows, for a root with no timing files yet.
_EMPTY_TIMINGS = ("CREATE OR REPLACE VIEW timings AS SELECT NULL::VARCHAR AS run_id, "
                  "NULL::VARCHAR AS suite, NULL::VARCHAR AS strategy, NULL::VARCHAR AS task_id, "
                  "NULL::BIGINT AS seed, NULL::DOUBLE AS budget_scale, NULL::DOUBLE AS select_ms, "
                  "NULL::DOUBLE AS execute_ms, NULL::DOUBLE AS total_ms LIMIT 0")

# The same for agent_measures where no trace file has the column (schema version < 10).
_EMPTY_AGENT_MEASURES = (
    "CREATE OR REPLACE VIEW agent_measures AS SELECT NULL::VARCHAR AS run_id, "
    "NULL::VARCHAR AS suite, NULL::VARCHAR AS strategy, NULL::DOUBLE AS budget_scale, "
    "NULL::BIGINT AS seed, NULL::VARCHAR AS task_id, NULL::VARCHAR AS agent_grader, "
    "NULL::VARCHAR AS measure, NULL::DOUBLE AS value LIMIT 0")

RUN_FILES_SCHEMA = pa.schema([
    ("run_id", pa.string()), ("git_commit", pa.string()), ("git_dirty", pa.bool_()),
    ("started_at", pa.string()), ("finished_at", pa.string()), ("status", pa.string()),
    ("params_hash", pa.string()), ("params_json", pa.string()), ("problem", pa.string()),
])
"""The ``run_files`` table behind the ``runs`` view: one row per run file."""

_READ_ONLY_STATEMENTS = frozenset({duckdb.StatementType.SELECT})
"""Statement kinds ``Warehouse.query`` runs; any other (COPY, ATTACH, CREATE ...) is refused."""

_LOCKDOWN = ("SET enable_external_access = false", "SET lock_configuration = true")
"""Run after the views exist: no file, extension or ATTACH beyond ``allowed_paths``."""

_READER_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoload_known_extensions": False, "autoinstall_known_extensions": False,
    "allow_community_extensions": False}


_RUN_TRACES = "SELECT * EXCLUDE (retrieval_success) FROM traces WHERE run_id = ?"
"""One run's trace rows: the ``traces`` view without its ``retrieval_success`` alias. The
columns are every trace file's, by name (``union_by_name``): the run's own files' where the
warehouse holds one schema version (``junction.evidence.traces.TRACE_SCHEMA``); a column a
run's older files lack reads NULL when another run has it. No ORDER BY: a SELECT with a
WHERE over one ``read_parquet`` keeps the rows' order (DuckDB, "Order Preservation",
https://duckdb.org/docs/stable/sql/dialect/order_preservation), and the view's file list
is sorted, so the rows come in ``TraceStore.read_traces``'s order: files by path (suite,
strategy, unit), rows within a file as written."""

_RUN_TIMINGS = ("SELECT suite, strategy, select_ms, execute_ms, total_ms FROM timings "
                "WHERE run_id = ?")
"""One run's rows of the ``timings`` view, the columns the report reads (milliseconds)."""


@dataclass(frozen=True)
class RunData:
    """One run's report inputs (``junction.evidence.reports.write_report``), read once
    through the warehouse's views by ``Warehouse.run_data``; a test builds one from
    hand-made tables.

    ``run``: the run's ``runs/<run_id>.json`` (``TraceStore.read_run_meta``), at least
    ``{"run_id": ...}``. ``traces``: one row per task and strategy (``_RUN_TRACES`` says
    which columns, in which order). ``suites``: suite key -> that suite's summary (tasks, rows
    loaded and skipped, sampling, note ...; a several-seed run keys them ``name@seed=N``).
    ``timings``: wall-clock rows (``suite``, ``strategy``, ``select_ms``, ``execute_ms``,
    ``total_ms``, in milliseconds), shown in the report's cost table and time.png only,
    never in metrics.json; None when the run has none.
    """

    run: dict[str, Any]
    traces: pa.Table
    suites: dict[str, Any] = field(default_factory=dict)
    timings: pa.Table | None = None


class CorruptFileWarning(UserWarning):
    """A trace or timing file cannot be read and is left out of the views."""


class ReadOnlyError(WarehouseError):
    """A statement would write or reach outside the warehouse; the message names its kind."""


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> set[str]:
    """The column names of ``view`` in ``con``."""
    return {row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()}


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _file_list(paths: list[str]) -> str:
    return "[" + ", ".join(_literal(p) for p in paths) + "]"


def _cell(meta: dict, key: str, kind: type):
    value = meta.get(key)
    return value if isinstance(value, kind) else None


def _run_files_table(metas: list[dict]) -> pa.Table:
    """The ``run_files`` rows of ``TraceStore.run_metas()`` (a mistyped field reads NULL)."""
    rows = [{"run_id": m["run_id"], "git_commit": _cell(m, "git_commit", str),
             "git_dirty": _cell(m, "git_dirty", bool), "started_at": _cell(m, "started_at", str),
             "finished_at": _cell(m, "finished_at", str), "status": _cell(m, "status", str),
             "params_hash": _cell(m, "params_hash", str),
             "params_json": (json.dumps(m["params"], sort_keys=True)
                             if isinstance(m.get("params"), dict) else None),
             "problem": m.get("problem")} for m in metas]
    return pa.Table.from_pylist(rows, schema=RUN_FILES_SCHEMA)


def check_read_only(sql: str) -> None:
    """Refuse ``sql`` unless every statement is a SELECT (DuckDB's own parser says which).

    Raises ``ReadOnlyError`` naming the first other statement kind, ``WarehouseError`` for
    SQL that does not parse or holds no statement (empty, only comments).
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise WarehouseError(f"query failed: {str(exc).splitlines()[0]}") from None
    if not statements:
        raise WarehouseError("the query holds no SQL statement; give one SELECT statement")
    for statement in statements:
        if statement.type not in _READ_ONLY_STATEMENTS:
            raise ReadOnlyError(f"refused: {statement.type.name} statement; `junction sql` "
                                "is read-only and runs SELECT statements only")


class Warehouse:
    """Views over the traces under ``root`` (a path or fsspec URL)."""

    def __init__(self, root: str, lock_timeout_s: float = 30.0) -> None:
        self.store = TraceStore(root)
        self.lock_timeout_s = lock_timeout_s

    @property
    def db_path(self) -> Path | None:
        return Path(self.store.base) / "junction.duckdb" if self.store.is_local else None

    def _readable_files(self) -> tuple[list[str], list[str]]:
        """(trace files, timing files) as URLs, corrupt ones left out with one warning each."""
        bad = set(self.store.find_corrupt_files())
        for url in sorted(bad):
            warnings.warn(f"corrupt Parquet file {url} left out of the views: move it away "
                          "or re-run its unit", CorruptFileWarning, stacklevel=3)
        traces = [u for u in map(self.store.url, self.store.trace_files()) if u not in bad]
        timings = [u for u in map(self.store.url, self.store.timing_files()) if u not in bad]
        return traces, timings

    def _create_views(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Create the views in ``con``; return the files they read."""
        if not self.store.is_local:
            con.register_filesystem(self.store.fs)
        traces, timings = self._readable_files()
        if not traces:
            raise WarehouseError(
                f"no traces under {self.store.root}; run `junction bench` first"
            )
        con.register("run_files_input", _run_files_table(self.store.run_metas()))
        con.execute("CREATE OR REPLACE TABLE run_files AS SELECT * FROM run_files_input")
        con.unregister("run_files_input")
        lists = {"traces": _file_list(traces), "timings": _file_list(timings)}
        try:
            for statement in _view_statements():
                if "{timings}" in statement and not timings:
                    con.execute(_EMPTY_TIMINGS)
                    continue
                if statement.startswith("CREATE OR REPLACE VIEW agent_measures ") and (
                        "agent_measures" not in _columns(con, "traces")):
                    con.execute(_EMPTY_AGENT_MEASURES)
                    continue
                for key, value in lists.items():
                    statement = statement.replace("{" + key + "}", value)
                con.execute(statement)
        except duckdb.Error as exc:
            raise WarehouseError(str(exc).splitlines()[0]) from None
        return traces + timings

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
        """An in-memory connection with the views, locked down; it never waits for the file's
        writer.

        After the views exist, DuckDB's own settings shut everything else out: external
        access off (no other file, no COPY, no ATTACH, no extension install or load; only the
        views' files stay readable through ``allowed_paths``), extension autoloading off and
        the configuration locked, so no statement can turn any of it back on.
        """
        return self._open_reader()[0]

    def _open_reader(self) -> tuple[duckdb.DuckDBPyConnection, list[str]]:
        """``connect_reader``'s connection and the files its views read (URLs)."""
        con = duckdb.connect(":memory:", config=_READER_CONFIG)
        try:
            files = self._create_views(con)
            allowed = files
            if not self.store.is_local:  # DuckDB checks both spellings of an fsspec URL
                allowed = files + [f.replace("://", ":///", 1) for f in files]
            con.execute("SET allowed_paths = ?", [allowed])
            for statement in _LOCKDOWN:
                con.execute(statement)
        except BaseException:
            con.close()
            raise
        return con, files

    def run_data(self, run_id: str, run: dict[str, Any] | None = None,
                 suites: dict[str, Any] | None = None) -> RunData:
        """What the report of ``run_id`` reads, through the views in one reader session:
        its ``traces`` rows and its ``timings`` rows (None when it has none).

        ``run``: its run.json dict (None: the stored ``runs/<run_id>.json``, or just
        ``{"run_id": run_id}`` where there is none); ``suites``: the suites' summaries
        (None: ``run``'s ``suites``, or none). Raises ``TraceError`` naming a trace file of
        this run that the views left out as corrupt (a report without that unit's rows
        would be wrong; another run's corrupt file is only a ``CorruptFileWarning``),
        ``WarehouseError`` when the root holds no traces or a query fails.
        """
        check_name(run_id, "run_id")
        run = run or self.store.read_run_meta(run_id) or {"run_id": run_id}
        expected = [self.store.url(p) for p in self.store.trace_files(run_id)]
        con, files = self._open_reader()
        try:
            left_out = sorted(set(expected) - set(files))
            if left_out:
                raise TraceError(f"corrupt trace file {left_out[0]} of run {run_id}: move it "
                                 "away or re-run its unit, then write the report again")
            traces = con.sql(_RUN_TRACES, params=[run_id]).to_arrow_table()
            timings = con.sql(_RUN_TIMINGS, params=[run_id]).to_arrow_table()
        except duckdb.Error as exc:
            raise WarehouseError(f"query failed: {duckdb_error_line(exc)}") from None
        finally:
            con.close()
        return RunData(run, traces, run.get("suites", {}) if suites is None else suites,
                       timings if timings.num_rows else None)

    def query(self, sql: str, params: list | None = None) -> pa.Table:
        """Run read-only ``sql`` against the views (``check_read_only``, ``connect_reader``).

        Raises ``ReadOnlyError`` for a statement other than SELECT, ``WarehouseError`` with
        DuckDB's message on one line when the query fails (``duckdb_error_line``: its hint,
        "Did you mean ..." or the candidate columns, kept).
        """
        check_read_only(sql)
        con = self.connect_reader()
        try:
            return con.sql(sql, params=params or None).to_arrow_table()
        except duckdb.Error as exc:
            raise WarehouseError(f"query failed: {duckdb_error_line(exc)}") from None
        finally:
            con.close()
