"""Hardening: a read-only SQL surface, one-line errors, one writer per run id, robust run
metadata, concurrent runs on a fresh Prefect home. Each test checks what a user sees (the
exit code, the one line, and for sql that nothing changed on disk)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from junction.errors import TraceError
from junction.evidence.store import TraceStore
from junction.evidence.traces import timings_to_table
from junction.evidence.warehouse import CorruptFileWarning, Warehouse
from tests.helpers import junction_in_process

ROOT = Path(__file__).resolve().parent.parent


def _cli(*args, warehouse, env=None):
    """``junction ARGS`` on ``warehouse``: a query, or a mistake refused before any work,
    run in this process (``tests.helpers.junction_in_process``)."""
    env = {**os.environ, "JUNCTION_WAREHOUSE": str(warehouse), **(env or {})}
    return junction_in_process(env, *args)


def _cli_process(*args, warehouse):
    """Run this checkout's CLI (``python -m flows.cli``) in a subprocess of its own."""
    full_env = {**os.environ, "JUNCTION_WAREHOUSE": str(warehouse)}
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True,
                          text=True, env=full_env, timeout=300, cwd=ROOT)


def _one_line(out) -> str:
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


@pytest.fixture(scope="module")
def warehouse(prefect_harness, tmp_path_factory):
    """One finished run (coupling, exact) with its junction.duckdb."""
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    root = tmp_path_factory.mktemp("hardening") / "wh"
    benchmark(RunPlan.build(suites=["coupling"], strategies=["exact"], budget_scales=[1.0],
                            output_root=str(root), reports_root=str(root.parent / "reports")),
              run_id="base-run")
    return root


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


@pytest.mark.parametrize("statement, kind", [
    ("COPY (select 1) TO '{trace}'", "COPY"),
    ("attach '{db}' as w; drop view w.traces", "ATTACH"),
    ("drop view traces", "DROP"),
    ("create table t (a int)", "CREATE"),
    ("insert into run_files values ('x')", "INSERT"),
    ("install httpfs", "LOAD"),
    ("set enable_external_access = true", "SET"),
])
def test_sql_cannot_change_or_destroy_data(warehouse, statement, kind):
    trace = next(warehouse.glob("traces/**/*.parquet"))
    before = _snapshot(warehouse)
    assert "junction.duckdb" in before
    out = _cli("sql", statement.format(trace=trace, db=warehouse / "junction.duckdb"),
               warehouse=warehouse)
    assert out.returncode == 1
    assert _one_line(out) == (f"error: refused: {kind} statement; `junction sql` is "
                              "read-only and runs SELECT statements only")
    assert _snapshot(warehouse) == before
    ok = _cli("sql", "select count(*) as n from traces", "--format", "csv", warehouse=warehouse)
    assert ok.returncode == 0 and ok.stdout.splitlines() == ['"n"', "1"]


@pytest.mark.parametrize("statement", [
    "COPY (select 1) TO '{trace}'",
    "ATTACH '{db}' AS w",
    "SELECT * FROM read_csv('/etc/hostname')",
    "LOAD httpfs",
    "SET enable_external_access = true",
])
def test_reader_connection_is_locked_by_duckdb_settings(warehouse, statement):
    """Past the statement check, DuckDB's own settings refuse the same statements."""
    trace = next(warehouse.glob("traces/**/*.parquet"))
    before = _snapshot(warehouse)
    con = Warehouse(str(warehouse)).connect_reader()
    try:
        with pytest.raises((duckdb.PermissionException, duckdb.InvalidInputException)):
            con.execute(statement.format(trace=trace, db=warehouse / "junction.duckdb"))
        assert con.sql("select count(*) from traces").fetchall() == [(1,)]
    finally:
        con.close()
    assert _snapshot(warehouse) == before


@pytest.mark.parametrize("fmt", ["csv", "json", "table"])
def test_sql_renders_list_columns_in_every_format(warehouse, fmt):
    out = _cli("sql", "select task_id, exposed_tool_ids, context_candidates from traces",
               "--format", fmt, warehouse=warehouse)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    if fmt == "csv":
        header, row = out.stdout.splitlines()[:2]
        assert header == '"task_id","exposed_tool_ids","context_candidates"'
        tools = json.loads(next(csv.reader([row]))[1])
        assert isinstance(tools, list) and tools


@pytest.mark.parametrize("args, line", [
    (["--warehouse", "/proc/x"],
     "error: warehouse /proc/x is not a writable folder: No such file or directory"),
    (["--warehouse", "{file}"],
     "error: warehouse {file} is a file, not a folder; pass a folder to --warehouse"),
    (["--seed", "99999999999999999999999"],
     "error: seeds.0 (--seed): Input should be less than or equal to 9223372036854775807 "
     "(got 99999999999999999999999)"),
    (["--budget-scale", "0"],
     "error: budget_scales.0 (--budget-scale): Input should be greater than 0 (got 0.0)"),
    (["--run-id", "used-id", "--strategy", "fixed_split"],
     "error: run used-id was started with different parameters; use a new run id or the "
     "same parameters"),
])
def test_bench_mistakes_are_one_line_before_work(tmp_path, args, line):
    file = tmp_path / "a-file"
    file.write_text("x")
    root = tmp_path / "wh"
    TraceStore(str(root)).write_run_meta("used-id", {"run_id": "used-id", "params_hash": "0",
                                                     "status": "completed"})
    args = [a.format(file=file) for a in args]
    out = _cli("bench", "--suite", "coupling", *args, warehouse=root)
    assert out.returncode == 1
    assert _one_line(out) == line.format(file=file)
    assert json.loads((root / "runs" / "used-id.json").read_text())["status"] == "completed"
    assert sorted(p.name for p in (root / "runs").glob("*.json")) == ["used-id.json"]


def test_corrupt_file_of_another_run_is_one_warning(warehouse, tmp_path):
    import shutil

    root = tmp_path / "wh"
    shutil.copytree(warehouse, root)
    bad = root / "traces" / "run_id=other" / "suite=coupling" / "strategy=exact" / "u.parquet"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"PAR1 truncated")
    with pytest.warns(CorruptFileWarning) as caught:
        Warehouse(str(root)).refresh()
    assert [str(w.message) for w in caught] == [
        f"corrupt Parquet file {bad} left out of the views: move it away or re-run its unit"]
    out = _cli("sql", "select count(*) as n from traces", "--format", "csv", warehouse=root)
    assert out.returncode == 0 and out.stdout.splitlines() == ['"n"', "1"]
    assert _one_line(out) == (f"warning: corrupt Parquet file {bad} left out of the views: "
                              "move it away or re-run its unit")


def test_same_run_id_twice_fails_at_once_naming_the_holder(tmp_path):
    root = tmp_path / "wh"
    with TraceStore(str(root)).run_lock("busy-run"):  # held by this process: the CLI in another
        out = _cli_process("bench", "--suite", "coupling", "--strategy", "exact", "--run-id",
                   "busy-run", warehouse=root)
    assert out.returncode == 1
    line = _one_line(out)
    assert line.startswith(f"error: run busy-run is being written by PID {os.getpid()} "
                           "(started 20")
    assert line.endswith("); wait for it to finish or use another --run-id")
    assert not (root / "traces").exists()


def test_one_bad_run_file_never_breaks_the_views(warehouse, tmp_path):
    import shutil

    root = tmp_path / "wh"
    shutil.copytree(warehouse, root)
    meta = json.loads((root / "runs" / "base-run.json").read_text())
    del meta["git_commit"]
    (root / "runs" / "no-commit.json").write_text(json.dumps({**meta, "run_id": "no-commit"}))
    (root / "runs" / "broken.json").write_text("{not json")
    rows = Warehouse(str(root)).query(
        "select run_id, status, problem from runs order by run_id").to_pylist()
    assert rows[0]["run_id"] == "base-run" and rows[0]["problem"] is None
    assert rows[1]["run_id"] == "broken" and rows[1]["status"] == "unreadable"
    assert rows[1]["problem"].startswith(f"corrupt run file {root / 'runs' / 'broken.json'}")
    assert rows[2] == {"run_id": "no-commit", "status": "completed",
                       "problem": "missing git_commit"}
    assert Warehouse(str(root)).query("select count(*) as n from traces").to_pylist() == [
        {"n": 1}]


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_timings_are_refused_at_write(value):
    row = {"run_id": "r", "suite": "s", "strategy": "x", "task_id": "t-1", "seed": 0,
           "budget_scale": 1.0, "select_ms": value, "execute_ms": 1.0, "total_ms": 2.0}
    with pytest.raises(TraceError, match=f"timing select_ms={value} of task 't-1' is not "
                                         "finite"):
        timings_to_table([row])


_FLOW = ("from flows.runners import run_benchmark; "
         "run_benchmark(suites=['coupling'], strategies=['exact'], budget_scales=[1.0], "
         "output_root={root!r}, "
         "write_reports=False)")


@pytest.mark.flow
def test_two_runs_at_once_on_a_fresh_prefect_home(tmp_path):
    """Two processes, one fresh PREFECT_HOME: both start their temporary server cleanly."""
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    procs = [subprocess.Popen([sys.executable, "-c", _FLOW.format(root=str(tmp_path / f"wh{i}"))],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert "already exists" not in err and "Traceback" not in err
    for i in range(2):
        assert len(TraceStore(str(tmp_path / f"wh{i}")).trace_files()) == 1


_START = ("import json, os, sys, psutil; from flows import server; "
          "from prefect import flow; from prefect.settings import PREFECT_API_URL; "
          "server.start(); url = PREFECT_API_URL.value(); ran = flow(lambda: 1)(); "
          "env = psutil.Process(server.server_pid()).environ(); server.stop(); "
          "print(json.dumps({'pid': os.getpid(), "
          "'blocks': env.get('PREFECT_SERVER_REGISTER_BLOCKS_ON_START'), "
          "'url': url, 'api_url': server.api_url(), 'ran': ran, "
          "'after': [os.environ.get('PREFECT_API_URL'), PREFECT_API_URL.value()], "
          "'server_imported': sorted(m for m in sys.modules if m.startswith('prefect.server.api'))"
          "}))")
"""Start the temporary server, run a flow on it, stop it; print what the process saw:
the server's own environment (block registration), the API URL while it ran and after, and
which of Prefect's server-API modules this process imported (none: only the child runs
the server)."""


def _waits_on_a_flock(pid: int) -> bool:
    """Whether process ``pid`` is blocked in ``flock`` (a waiter line of /proc/locks)."""
    return any(line.split()[1:3] == ["->", "FLOCK"] and line.split()[5] == str(pid)
               for line in Path("/proc/locks").read_text().splitlines())


def _tables_with_rows(path) -> set[str]:
    import contextlib
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n for n in names if con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]}


@pytest.mark.flow
def test_temporary_server_start_waits_for_the_home_lock_then_later_starts_copy_its_template(
        tmp_path, monkeypatch):
    """The mechanism behind the test above: while another process holds the start lock, no
    server starts and no database is created in the fresh home; once released, it starts,
    and leaves the home's template (migrated, block types in, no run). The next start is
    on a copy, without migrating or registering block types; a template that is not an
    SQLite database is not used, and is replaced (and another Prefect version's removed)."""
    import fcntl
    import time

    from flows import server
    from flows.server import _BLOCKS_SETTING_NAMES

    home = tmp_path / "prefect-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k != "PREFECT_API_URL" and k not in _BLOCKS_SETTING_NAMES}
    env["PREFECT_HOME"] = str(home)
    with open(home / ".junction-server-start.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        proc = subprocess.Popen([sys.executable, "-c", _START], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the child waits on the lock (a blocked flock is listed "-> FLOCK ... PID" in
        # /proc/locks, proc(5)); while it waits, no server may have started
        while not _waits_on_a_flock(proc.pid):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.05)
        assert proc.poll() is None
        assert not list(home.rglob("*.db"))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    first = json.loads(out.strip().splitlines()[-1])
    # the server's database is the process's own file, and the home's template its copy
    assert sorted(p.name for p in home.rglob("*.db") if not p.name.startswith("template-")) \
        == [f"{proc.pid}.db"]
    [template] = home.rglob("template-*.db")
    assert first["blocks"] is None  # a new file: the server registered its block types
    # the process reported to its own server by URL, without importing Prefect's server
    assert first["url"].startswith("http://127.0.0.1:") and first["ran"] == 1
    assert first["api_url"] is None and first["after"] == [None, None]
    assert first["server_imported"] == []
    assert _tables_with_rows(template) == {"alembic_version", "block_type", "block_schema",
                                           "block_schema_reference"}

    def start() -> dict:
        done = subprocess.run([sys.executable, "-c", _START], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    second = start()
    assert second["blocks"] == "False"
    copy = home / "ephemeral" / f"{second['pid']}.db"
    assert {"alembic_version", "block_type"} <= _tables_with_rows(copy)
    # a template that is not a database is not copied (a start then migrates a file of its
    # own, as the first one did) and is replaced by the next migrated database saved, which
    # removes another Prefect version's template; checked here without a third server
    template.write_bytes(b"not a database")
    other = template.with_name("template-0000000000000000.db")  # another Prefect's
    other.write_bytes(b"")
    monkeypatch.setenv("PREFECT_HOME", str(home))
    assert server.copy_template(tmp_path / "third.db") is None
    assert not (tmp_path / "third.db").exists()
    assert server.save_template(copy)  # the second server's: migrated, block types in, no run
    assert {"alembic_version", "block_type"} <= _tables_with_rows(template)
    assert not other.exists()  # writing the template removed the other version's


@pytest.mark.flow
def test_a_template_is_saved_from_a_running_server_and_copied_with_block_registration_off(
        prefect_harness, tmp_path, monkeypatch):
    """What the session's harness uses (tests/conftest.py): ``copy_template`` finds nothing
    in a fresh home; ``save_template`` keeps a migrated database (the harness's own, its
    server running) as the home's template; the next ``copy_template`` copies it and turns
    block registration off, unless the user set that."""
    from prefect.settings import (
        PREFECT_API_BLOCKS_REGISTER_ON_START,
        PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION,
        PREFECT_SERVER_DATABASE_CONNECTION_URL,
    )

    from flows import server
    from flows.server import _BLOCKS_SETTING_NAMES, _MEMO_SETTING_NAMES

    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    for name in _BLOCKS_SETTING_NAMES | _MEMO_SETTING_NAMES:
        monkeypatch.delenv(name, raising=False)
    assert server.copy_template(tmp_path / "first.db") is None
    assert not (tmp_path / "first.db").exists()
    running = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split(":///", 1)[1])
    assert server.save_template(running)
    assert server.copy_template(tmp_path / "copy.db") == {
        PREFECT_API_BLOCKS_REGISTER_ON_START: False, PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION: False}
    assert {"alembic_version", "block_type"} <= _tables_with_rows(tmp_path / "copy.db")
    monkeypatch.setenv("PREFECT_SERVER_REGISTER_BLOCKS_ON_START", "true")
    monkeypatch.setenv("PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION", "true")
    assert server.copy_template(tmp_path / "user.db") == {}  # the user's values stand
