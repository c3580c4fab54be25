"""SQL over in-memory Arrow tables: one DuckDB connection that several analyses share.

A report's analyses (``junction.evidence.summary.summarise``,
``junction.evidence.cost.cost_lines``, ``junction.evidence.plots.strategy_times``) each
register the tables they read on the connection they are given (``registered``), so one
report opens one connection for all of them; called alone, each opens its own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb
import pyarrow as pa

__all__ = ["registered"]


@contextlib.contextmanager
def registered(con: duckdb.DuckDBPyConnection | None,
               **tables: pa.Table | None) -> Iterator[duckdb.DuckDBPyConnection]:
    """``con`` with each table registered under its keyword's name for the block (a None
    table is left out) and unregistered after; ``con`` None: a fresh in-memory connection,
    closed after. DuckDB scans a registered table in place (no copy)."""
    own = con is None
    db = duckdb.connect(":memory:") if con is None else con
    names = [name for name, table in tables.items() if table is not None]
    try:
        for name in names:
            db.register(name, tables[name])
        yield db
    finally:
        if own:
            db.close()
        else:
            for name in names:
                db.unregister(name)
