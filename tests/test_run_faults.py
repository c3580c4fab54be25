"""Faults on a run's files, folders and resume, each on real ``junction`` processes started
as a user following the README starts them (``.venv/bin/junction`` from the checkout, that
folder not on ``PATH``), with a temporary warehouse, reports folder, state folder and
Prefect home:

- a resumed run over a unit file that cannot be read runs that unit again, with one
  ``warning:`` line naming the file, and ends ``completed`` (before: the unit counted as
  done and the completed run became ``failed``);
- ``junction diff`` lists the run parameters that differ, the learned fit's search among
  them, above the metric rows; a report says its learned strategies were fitted
  approximately only where one ran;
- ``--reports`` or ``$JUNCTION_REPORTS`` naming a file, a reports folder that cannot be
  written, ``$JUNCTION_STATE_DIR`` or ``$JUNCTION_WAREHOUSE`` naming a file: one line naming
  the option or variable, before Prefect starts, nothing written;
- the resume command and every hint spell the program as it was started, and a resume
  with other parameters names each option that differs with both values.

The real runs are one strategy on the one coupling task; they report to the session's
Prefect server (``tests.helpers.on_session_server``): their subject is not the server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from junction.evidence.store import TraceStore
from tests.helpers import junction_in_process, on_session_server, trace_record

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
JUNCTION = shutil.which("junction", path=str(BIN))
PROGRAM = os.path.relpath(JUNCTION, ROOT) if JUNCTION else "junction"
"""The console script as the README's user types it from the checkout: .venv/bin/junction."""
RUN = ["--suite", "coupling", "--strategy", "exact", "--size", "2", "--budget-scale", "1",
       "--fit-search", "hybrid"]
"""One unit: the coupling task, exact, budget scale 1; an approximate fit search, though no
learned strategy runs."""


def _env(base: Path) -> dict[str, str]:
    """A user's shell: temporary folders, no Prefect server, the venv's bin not on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and Path(p).resolve() != BIN.resolve())
    env.update(JUNCTION_WAREHOUSE=str(base / "wh"), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "st"), PREFECT_HOME=str(base / "pf"),
               COLUMNS="200")
    return env


def _junction(env: dict[str, str], *args: str, program: str = PROGRAM
              ) -> subprocess.CompletedProcess:
    return subprocess.run([program, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


def _one_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 1, (out.stdout[-2000:], out.stderr[-3000:])
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def finished(prefect_harness, tmp_path_factory):
    """A completed run ``base`` of ``RUN``, started as ``PROGRAM``: its folder and env."""
    if JUNCTION is None:
        pytest.fail("the `junction` console script is not installed beside this Python")
    base = tmp_path_factory.mktemp("run-faults")
    env = on_session_server(_env(base))
    out = _junction(env, "bench", *RUN, "--run-id", "base")
    assert out.returncode == 0, out.stderr[-3000:]
    return base, env


# ------------------------------------------------------------- a corrupt unit file on resume

def test_a_resumed_run_runs_a_unit_whose_file_cannot_be_read_again(finished, tmp_path):
    # before: the truncated file counted as done; the report could not read it and the
    # completed run was marked failed ("no traces under ...")
    base, env = finished
    shutil.copytree(base / "wh", tmp_path / "wh")
    env = {**env, "JUNCTION_WAREHOUSE": str(tmp_path / "wh"),
           "JUNCTION_REPORTS": str(tmp_path / "rep")}
    (trace,) = (tmp_path / "wh").glob("traces/run_id=base/*/*/*.parquet")
    data = trace.read_bytes()
    trace.write_bytes(data[: len(data) // 2])  # truncated: no Parquet footer
    out = _junction(env, "bench", *RUN, "--run-id", "base")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr.splitlines() == [
        f"warning: unit file {trace} of run base cannot be read (corrupt or truncated); its "
        "unit runs again"]
    assert "run base: 1 task evaluations in 1 units (0 already done)" in out.stdout
    meta = json.loads((tmp_path / "wh" / "runs" / "base.json").read_text())
    assert meta["status"] == "completed"
    assert pq.read_table(trace).num_rows == 1  # written again, whole
    assert (tmp_path / "rep" / "base" / "report.md").is_file()


@pytest.mark.parametrize("damaged", ["traces", "timings"])
def test_a_unit_whose_file_cannot_be_read_is_not_done(tmp_path, damaged):
    store = TraceStore(str(tmp_path))
    store.write_unit("r1", "s", "exact", "u0", [trace_record()], [])
    assert store.unit_done("r1", "s", "exact", "u0")
    assert store.unreadable_unit_files("r1") == []
    (path,) = tmp_path.glob(f"{damaged}/run_id=r1/*/*/u0.parquet")
    path.write_bytes(path.read_bytes()[:-20])
    assert not store.unit_done("r1", "s", "exact", "u0")
    assert store.unreadable_unit_files("r1") == [str(path)]


# ------------------------------------------------------------- the fit search in diff/report

def test_a_report_says_approximate_only_where_a_learned_strategy_ran(finished):
    # before: `--fit-search hybrid` with no learned strategy made the report say the
    # learned strategies were fitted by the approximate search
    base, _ = finished
    report = (base / "rep" / "base" / "report.md").read_text()
    assert "approximate" not in report and "- learned fits:" not in report


def _learned_run(store: TraceStore, run_id: str, fit_search: str | None,
                 success: bool) -> None:
    """A hand-made completed run of learned_exact on one task, fitted by ``fit_search``
    (None: the default, left out of params as a run records it)."""
    store.write_unit(run_id, "s", "learned_exact", "u0",
                     [trace_record(run_id=run_id, strategy="learned_exact", success=success,
                                   failure_reason="" if success else "x")], [])
    params: dict[str, Any] = {"suites": ["s"], "strategies": ["learned_exact"], "seeds": [0],
              "budget_scales": [1.0], "size": None, "full": False, "strategy_size": {},
              "strategy_scales": {}, "batch_size": 100, "output_root": store.root,
              **({} if fit_search is None else {"fit_search": fit_search})}
    store.write_run_meta(run_id, {"run_id": run_id, "status": "completed", "params": params,
                                  "params_hash": run_id, "git_commit": "abc",
                                  "git_dirty": False, "started_at": run_id})


def test_diff_lists_the_parameters_that_differ_above_the_metric_rows(tmp_path):
    # before: a diff of an exact-search and a hybrid-search run never named the search
    store = TraceStore(str(tmp_path / "wh"))
    _learned_run(store, "r1", None, True)
    _learned_run(store, "r2", "hybrid", False)
    env = _env(tmp_path)
    out = _junction(env, "diff", "r1", "r2", "--warehouse", store.root)
    assert out.returncode == 0 and out.stderr == "", out.stderr[-3000:]
    lines = out.stdout.splitlines()
    at = lines.index("run parameters that differ:")
    assert lines[at + 1] == "  fit_search: optimal → hybrid"
    assert at > lines.index("task evaluations in both runs: 1")  # after the scope
    assert at < next(i for i, x in enumerate(lines) if "success" in x)  # above the rows
    as_json = json.loads(_junction(env, "diff", "r1", "r2", "--warehouse", store.root,
                                   "--format", "json").stdout)
    assert as_json["params"] == [{"param": "fit_search", "before": "optimal",
                                  "after": "hybrid"}]


def test_diff_leaves_the_fit_search_out_where_no_learned_strategy_ran(finished, tmp_path):
    # the run (exact, --fit-search hybrid) against a copy recorded with the default search
    base, env = finished
    shutil.copytree(base / "wh", tmp_path / "wh")
    shutil.copytree(tmp_path / "wh" / "traces" / "run_id=base",
                    tmp_path / "wh" / "traces" / "run_id=plain")
    store = TraceStore(str(tmp_path / "wh"))
    meta = store.read_run_meta("base")
    assert meta["params"]["fit_search"] == "hybrid"
    params = {k: v for k, v in meta["params"].items() if k != "fit_search"}
    store.write_run_meta("plain", {**meta, "run_id": "plain", "params": params})
    out = _junction(env, "diff", "plain", "base", "--warehouse", str(tmp_path / "wh"))
    assert out.returncode == 0, out.stderr[-3000:]
    assert "run parameters: the same (those that can change a result)" in out.stdout


# ------------------------------------------------------------- folders that are files

def test_reports_naming_a_file_is_refused_before_the_run(tmp_path):
    # before: found after every unit ran: "the run failed: FileExistsError", a run.json
    # marked failed and a lock file left behind
    env = _env(tmp_path)
    file = tmp_path / "a-file"
    file.write_text("x")
    line = _one_line(junction_in_process(env, "bench", *RUN, "--reports", str(file)))
    assert line == f"error: reports {file} is a file, not a folder; pass a folder to --reports"
    line = _one_line(junction_in_process({**env, "JUNCTION_REPORTS": str(file / "inside")},
                                         "bench", *RUN))
    assert line == (f"error: JUNCTION_REPORTS={file / 'inside'} is inside {file}, a file, not "
                    "a folder; set JUNCTION_REPORTS to a folder")
    assert not (tmp_path / "wh").exists() and not (tmp_path / "st").exists()
    assert file.read_text() == "x"


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write in: a read-only one, or, for root (whom file
    modes do not stop), sysfs's /sys/kernel."""
    if os.geteuid() == 0:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("running as root without /sys/kernel: no unwritable folder")
        return Path("/sys/kernel")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def test_report_into_a_folder_that_cannot_be_written_is_one_line(finished, tmp_path):
    # before: a 40-line PermissionError traceback
    _, env = finished
    folder = _unwritable(tmp_path)
    before = sorted(folder.iterdir())
    line = _one_line(junction_in_process(env, "report", "base", "--reports", str(folder)))
    assert line.startswith(f"error: reports {folder} is not a writable folder: ")
    assert sorted(folder.iterdir()) == before


@pytest.mark.parametrize("command", [["runs"], ["suites"], ["sql", "select 1"],
                                     ["bench", *RUN]], ids=lambda c: c[0])
@pytest.mark.parametrize("prefect_home", [True, False], ids=["prefect-home", "no-prefect-home"])
def test_a_state_folder_that_is_a_file_is_one_line_on_every_command(tmp_path, command,
                                                                     prefect_home):
    # before: a 10-line traceback at import (Prefect's home under it) on every command
    file = tmp_path / "a-file"
    file.write_text("x")
    env = {**_env(tmp_path), "JUNCTION_STATE_DIR": str(file)}
    if not prefect_home:
        del env["PREFECT_HOME"]
    line = _one_line(_junction(env, *command))
    assert line == (f"error: JUNCTION_STATE_DIR={file} is a file, not a folder; set "
                    "JUNCTION_STATE_DIR to a folder")
    assert file.read_text() == "x" and not (tmp_path / "wh").exists()


@pytest.mark.parametrize("command", [["runs"], ["sql", "select 1"], ["report", "latest"],
                                     ["bench", *RUN]], ids=lambda c: c[0])
def test_a_warehouse_variable_naming_a_file_is_one_line(tmp_path, command):
    # before: "no runs yet" or "no traces under <file>" (the file read as an empty folder)
    file = tmp_path / "a-file"
    file.write_text("x")
    env = {**_env(tmp_path), "JUNCTION_WAREHOUSE": str(file)}
    line = _one_line(junction_in_process(env, *command))
    assert line == (f"error: JUNCTION_WAREHOUSE={file} is a file, not a folder; set "
                    "JUNCTION_WAREHOUSE to a folder")


# ------------------------------------------------------------- the command as it was run

def test_a_run_records_its_resume_command_as_the_program_was_started(finished):
    # before: `junction bench ...`, not on PATH for the README's user: command not found
    base, _ = finished
    meta = json.loads((base / "wh" / "runs" / "base.json").read_text())
    assert meta["resume_command"] == f"{PROGRAM} bench --run-id base {' '.join(RUN)}"


@pytest.mark.parametrize("on_path", [False, True], ids=["venv-path", "on-path"])
def test_a_hint_names_the_program_as_it_was_started(tmp_path, on_path):
    env = _env(tmp_path)
    program = PROGRAM
    if on_path:  # the venv's bin first on PATH, the program run by its bare name
        env["PATH"] = os.pathsep.join([str(BIN), env["PATH"]])
        program = "junction"
    line = _one_line(_junction(env, "runs", program=program))
    assert line == f"error: no runs yet; run `{program} bench` first"
    usage = _junction(env, "bench", "--no-such-option", program=program)  # click's usage
    assert usage.returncode == 2 and f"Try '{program} bench --help' for help." in usage.stderr


def test_a_resume_with_other_parameters_names_each_option_and_both_values(finished):
    # before: "was started with different parameters", no option named
    base, env = finished
    before = (base / "wh" / "runs" / "base.json").read_bytes()
    args = [*RUN[:-4], "--budget-scale", "2", "--fit-search", "local"]
    line = _one_line(junction_in_process(env, "bench", *args, "--run-id", "base"))
    assert line == ("error: run base was started with different parameters: --budget-scale 1 "
                    "(now 2), --fit-search hybrid (now local); use a new run id or the same "
                    "parameters")
    assert (base / "wh" / "runs" / "base.json").read_bytes() == before


@pytest.mark.parametrize("argv0, on_path, shown", [
    (JUNCTION, False, PROGRAM),
    (JUNCTION, True, "junction"),
    ("/nowhere/junction", True, "/nowhere/junction"),
    (str(ROOT / "flows" / "cli.py"), False, "{python} -m flows.cli"),
], ids=["venv-path", "on-path", "elsewhere", "module"])
def test_the_program_is_named_as_it_was_started(monkeypatch, argv0, on_path, shown):
    from flows.cli_run import invoked_as

    monkeypatch.chdir(ROOT)
    path = _env(ROOT)["PATH"]
    monkeypatch.setenv("PATH", os.pathsep.join([str(BIN), path]) if on_path else path)
    python = os.path.relpath(sys.executable, ROOT)
    if not python.startswith(".."):  # a Python inside the checkout (.venv/bin/python)
        python = python if os.sep in python else f".{os.sep}{python}"
    else:
        python = sys.executable
    assert invoked_as(argv0) == shown.format(python=python)
