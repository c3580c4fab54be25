"""Run options from one record: ``RunPlan``'s fields are the options of ``junction bench``
and ``junction serve`` (``flows.cli_run.plan_options``), and a scheduled run on a real
Prefect server runs the plan ``bench`` builds from the same options and environment."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from junction.errors import JunctionError

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

DEFAULT_PLAN_HASH = "d89bdb2d86cb5b7a384f1d42501ebccde1be65ab5579d0d0ffb5cc38c1217a5a"
"""``RunPlan.build().params_hash()`` without τ data: what the default plan's
runs record (a resumed run repeats it). It was d2ad0b5b6079… from before the options were
read off the fields until learned_coverage joined the default strategies."""


def _options(command) -> dict[str, object]:
    """A click command's options by their first flag."""
    return {p.opts[0]: p for p in command.params if p.opts[0].startswith("--")}


def test_bench_and_serve_take_every_plan_field_with_its_default_and_help():
    from flows.cli import app
    from flows.cli_run import PLAN_ALIASES, plan_command
    from flows.plan import RunPlan, cli_default, cli_option

    bench, serve = _options(plan_command("bench")), _options(plan_command("serve"))
    flags = {}
    for name, field in RunPlan.model_fields.items():
        cli = cli_option(name)
        assert cli is not None and field.description, name
        flags[cli.flag] = name
        for options in (bench, serve):
            option = options[cli.flag]
            assert option.name == name and option.help == field.description
            assert option.default == cli_default(name), name
            assert option.multiple == isinstance(
                field.get_default(call_default_factory=True), (list, dict)), name
    aliases = {f"--{n.replace('_', '-')}" for n in PLAN_ALIASES}
    assert set(bench) == {*flags, *aliases, "--run-id"}
    assert set(serve) == {*flags, *aliases, "--cron", "--name"}
    for alias in aliases:
        assert bench[alias].help == serve[alias].help
    texts = [CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"})
             for command in ("bench", "serve")]
    for result in texts:  # the help as a user reads it names every option
        assert result.exit_code == 0, result.output
        assert all(flag in result.stdout for flag in [*flags, *aliases])


def test_the_default_plan_keeps_its_params_hash(monkeypatch):
    from junction_datasets import tau2_banking

    from flows.plan import RunPlan

    monkeypatch.delenv(tau2_banking.DATA_ENV, raising=False)
    assert RunPlan.build().params_hash() == DEFAULT_PLAN_HASH


def test_a_constraint_is_one_line_naming_the_field_and_its_option():
    from flows.plan import RunPlan

    for given, line in (
            ({"folds": 1}, "folds (--folds): Input should be greater than or equal to 2 (got 1)"),
            ({"batch_size": 0}, "batch_size (--batch-size): Input should be greater than or "
                                "equal to 1 (got 0)"),
            ({"budget_scales": [float("inf")]}, "budget_scales.0 (--budget-scale): Input "
                                                "should be a finite number (got inf)"),
            ({"runner": "ray"}, "runner (--runner): Input should be 'thread' or 'dask' "
                                "(got 'ray')")):
        with pytest.raises(JunctionError) as err:
            RunPlan.build(suites=["coupling"], strategies=["exact"], **given)
        assert str(err.value) == line


def _plan_of_bench(monkeypatch, args: list[str]):
    """The plan ``junction bench ARGS`` builds (stopped at ``prepare_run``)."""
    import flows.preflight
    from flows.cli import app

    seen = []

    def stop(plan, run_id):
        seen.append(plan)
        raise JunctionError("stopped before the run")

    monkeypatch.setattr(flows.preflight, "prepare_run", stop)
    result = CliRunner().invoke(app, ["bench", *args])
    assert str(result.exception) == "stopped before the run", result.output
    return seen[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, check, timeout_s: float, process: subprocess.Popen | None = None):
    """``check()``'s first true value within ``timeout_s`` (polled); fails naming ``what``
    (and ``process``'s output when it ended first)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what}: the process ended ({process.returncode})")
        time.sleep(0.5)
    pytest.fail(f"{what}: not within {timeout_s:g} s")


def _stop(process: subprocess.Popen) -> None:
    """End ``process`` and its children (its own session, started by this test)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.mark.flow
def test_a_served_run_runs_the_plan_bench_builds(tmp_path, monkeypatch):
    """``prefect server start`` on a free port and a home of its own; ``junction serve``
    with a plan's options and ``$JUNCTION_WAREHOUSE``/``$JUNCTION_REPORTS`` set; one run of
    the deployment (asked for now rather than waited for on its cron schedule: the same
    deployment and parameters) records the plan ``junction bench`` builds for the same
    options and environment, its warehouse included."""
    from flows import server
    from junction.evidence.store import TraceStore

    warehouse, reports = tmp_path / "warehouse", tmp_path / "reports"
    args = ["--suite", "coupling", "--strategy", "exact", "--strategy", "fixed_split",
            "--budget-scale", "1", "--seed", "3", "--batch-size", "7", "--folds", "3"]
    monkeypatch.setenv("JUNCTION_WAREHOUSE", str(warehouse))
    monkeypatch.setenv("JUNCTION_REPORTS", str(reports))
    expected = _plan_of_bench(monkeypatch, args)

    port, home = _free_port(), tmp_path / "prefect-home"
    api = f"http://127.0.0.1:{port}/api"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    database = tmp_path / "prefect.db"
    copied = server.copy_template(database)  # the home's migrated template: a quicker start
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_API_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{database}",
               PREFECT_RUNNER_POLL_FREQUENCY="1",
               **({"PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false"} if copied else {}))
    processes = []
    try:
        processes.append(subprocess.Popen(
            [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
             str(port)], env=env, cwd=tmp_path, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _wait("prefect server start", lambda: _healthy(api), 240, processes[0])
        env["PREFECT_API_URL"] = api
        serve_log = tmp_path / "serve.log"
        with open(serve_log, "wb") as log:
            processes.append(subprocess.Popen(
                [str(BIN / "junction"), "serve", "--cron", "0 3 * * *", "--name", "t", *args],
                env=env, cwd=ROOT, start_new_session=True, stdout=log,
                stderr=subprocess.STDOUT))

        def asked() -> bool:
            if processes[1].poll() is not None:
                pytest.fail(f"junction serve ended: {serve_log.read_text()[-2000:]}")
            out = subprocess.run([str(BIN / "prefect"), "deployment", "run", "benchmark/t"],
                                 env=env, capture_output=True, text=True, timeout=60)
            return out.returncode == 0

        _wait("the deployment benchmark/t", asked, 180)

        def finished() -> dict | None:
            metas = TraceStore(str(warehouse)).run_metas() if warehouse.exists() else []
            return next((m for m in metas if m.get("status") == "completed"), None)

        meta = _wait("the served run", finished, 240, processes[1])
    finally:
        for process in reversed(processes):
            _stop(process)
    assert meta["params"] == json.loads(json.dumps(expected.params()))
    assert meta["params"]["output_root"] == str(warehouse)
    assert meta["params_hash"] == expected.params_hash()
    assert (reports / meta["run_id"] / "report.md").is_file()
    shutil.rmtree(home, ignore_errors=True)


def _make_variables() -> dict[str, str]:
    """The Makefile's ``NAME ?= value`` defaults."""
    found = re.findall(r"(?m)^(\w+) \?= (.*)$", (ROOT / "Makefile").read_text())
    return dict(found)


def _recipe_args(target: str) -> list[str]:
    """The options of the ``junction bench`` line of Makefile target ``target`` but its run
    id, its variables at their defaults (a data folder left to ``$JUNCTION_TAU2_DATA``)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    found = re.search(rf"(?m)^{re.escape(target)}:.*\n\t(.*)$", text)
    assert found is not None, f"no Makefile target {target}"
    line = found.group(1)
    line = re.sub(r"\$\(if \$\(TAU2_DATA\),[^)]*\),\)|--run-id \$\(\w+\)", "", line)
    line = line.split(" bench ", 1)[1]
    return shlex.split(re.sub(r"\$\((\w+)\)", lambda m: _make_variables()[m.group(1)], line))


def _docs_serve_args() -> list[str]:
    """The options of docs/usage.md's ``junction serve`` line that schedules the τ study."""
    text = (ROOT / "docs" / "usage.md").read_text().replace("\\\n", " ")
    line = next(x for x in text.splitlines() if "junction serve" in x and "tau2-banking" in x)
    return shlex.split(line.split(" serve ", 1)[1])


def _without(args: list[str], *options: str) -> list[str]:
    """``args`` without each of ``options`` and its value."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        else:
            kept.append(arg)
    return kept


def test_the_tau2_study_is_scheduled_as_the_docs_type_it(monkeypatch, tmp_path):
    """docs/usage.md's ``junction serve`` line for the τ study takes the plan of ``make
    bench-tau2`` (both built by ``bench``'s options, the τ fixture as the data folder)."""
    from junction_datasets import tau2_banking

    monkeypatch.setenv(tau2_banking.DATA_ENV, str(ROOT / "tests" / "data" / "tau2_fixture"))
    monkeypatch.setenv("JUNCTION_WAREHOUSE", str(tmp_path / "wh"))
    monkeypatch.setenv("JUNCTION_REPORTS", str(tmp_path / "rep"))
    scheduled = _without(_docs_serve_args(), "--cron", "--name")
    made = _recipe_args("bench-tau2")
    assert "--tau2-data" not in made and "--run-id" not in made
    assert _plan_of_bench(monkeypatch, scheduled) == _plan_of_bench(monkeypatch, made)


@pytest.mark.flow
def test_a_run_checks_once_and_reads_its_suite_file_once(prefect_harness, tmp_path,
                                                         monkeypatch):
    """``run_benchmark`` prepares the run (``flows.preflight.prepare_run``) and hands it to
    the flow, which neither checks again nor reads the suite file again; the flow called
    directly (a scheduled run) checks and reads it itself, once."""
    import junction_datasets.jsonl as jsonl
    from junction_datasets.toy import coupling_task

    import flows.benchmark
    import flows.preflight
    from flows.plan import RunPlan
    from flows.runners import run_benchmark

    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps({**coupling_task().model_dump(mode="json"), "suite": "mine"})
                    + "\n")
    reads, checks = [], []
    read, check = jsonl.load_suite_file, flows.preflight.check_resume

    def counted_read(*args, **kwargs):  # the real reader, counted
        reads.append(args[0])
        return read(*args, **kwargs)

    def counted_check(plan, run_id):  # the real check, counted
        checks.append(run_id)
        return check(plan, run_id)

    for module in (jsonl, flows.benchmark):
        monkeypatch.setattr(module, "load_suite_file", counted_read)
    for module in (flows.preflight, flows.benchmark):
        monkeypatch.setattr(module, "check_resume", counted_check)
    given = {"suite_files": [str(path)], "strategies": ["exact"], "budget_scales": [1.0],
             "output_root": str(tmp_path / "wh"), "reports_root": str(tmp_path / "rep")}
    result = run_benchmark(**given, write_reports=False)
    assert result["tasks"] == 1
    assert reads == [str(path)] and checks == [result["run_id"]]
    reads.clear(), checks.clear()
    direct = flows.benchmark.benchmark(RunPlan.build(**given), write_reports=False)
    assert reads == [str(path)] and checks == [direct["run_id"]]
