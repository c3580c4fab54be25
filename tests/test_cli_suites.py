"""``junction suites`` and ``junction bench --data SUITE=PATH`` (``--tau2-data`` its alias).

In-process (typer's runner and ``flows.cli.main``), so no Prefect server or subprocess
starts; a bench whose options are refused stops before anything runs, and the one that is
accepted is stopped at ``flows.preflight.prepare_run``, with the plan it was handed kept.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from junction_datasets import SUITES, suite_names
from junction_datasets import tau2_banking as tb
from typer.testing import CliRunner

from flows.cli import app, main
from flows.cli_run import parse_data_folders
from junction.errors import JunctionError, UnknownNameError

FIXTURE = Path(__file__).resolve().parent / "data" / "tau2_fixture"


def _main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``junction ARGS`` through the console script's
    entry point, in this process."""
    monkeypatch.setattr(sys, "argv", ["junction", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    code = done.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err


# ------------------------------------------------------------------ junction suites

def test_suites_lists_every_registered_suite_and_the_tau_data_variable(monkeypatch):
    monkeypatch.delenv(tb.DATA_ENV, raising=False)
    result = CliRunner().invoke(app, ["suites"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    names = {line.split("│")[1].strip() for line in result.stdout.splitlines()
             if line.startswith("│") and line.split("│")[1].strip()}
    assert names == set(suite_names())
    assert f"${tb.DATA_ENV}: not set" in result.stdout
    tau_row = next(line for line in result.stdout.splitlines() if f"│ {tb.SUITE} " in line)
    cells = [c.strip() for c in tau_row.split("│")[1:-1]]
    assert cells[:6] == [tb.SUITE, SUITES[tb.SUITE].family, str(tb.DEFAULT_SIZE), "50/-",
                         "yes", "yes"]
    coupling = next(line for line in result.stdout.splitlines() if "│ coupling " in line)
    assert [c.strip() for c in coupling.split("│")[1:-1]][1:7] == ["-", "-", "8", "yes", "no",
                                                                     "-"]


def test_suites_says_whether_the_named_folder_is_readable(monkeypatch, tmp_path):
    monkeypatch.setenv(tb.DATA_ENV, str(FIXTURE))
    ok = CliRunner().invoke(app, ["suites"], env={"COLUMNS": "400"})
    assert ok.exit_code == 0 and f"${tb.DATA_ENV}: set, available" in ok.stdout, ok.output
    monkeypatch.setenv(tb.DATA_ENV, str(tmp_path / "nowhere"))
    bad = CliRunner().invoke(app, ["suites"], env={"COLUMNS": "400"})
    assert bad.exit_code == 0 and f"${tb.DATA_ENV}: set, unavailable: " in bad.stdout


# ------------------------------------------------------------------ --data parsing

def test_parse_data_folders_resolves_paths_and_takes_the_alias(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_data_folders(None, None) == {}
    assert parse_data_folders([f"{tb.SUITE}=rel"], None) == {tb.SUITE: str(tmp_path / "rel")}
    assert parse_data_folders(None, Path("rel")) == {tb.SUITE: str(tmp_path / "rel")}
    # the same folder twice (however written) is one folder, not a conflict
    assert parse_data_folders([f"{tb.SUITE}=rel", f"{tb.SUITE}={tmp_path / 'rel'}"],
                              Path("./rel")) == {tb.SUITE: str(tmp_path / "rel")}
    # a path may hold '=': only the first one splits
    assert parse_data_folders([f"{tb.SUITE}=a=b"]) == {tb.SUITE: str(tmp_path / "a=b")}


def _readers() -> str:
    """The suites whose record reads a data folder (``SuiteInfo.data_env``), as the line
    lists them: read from the records now, so a plug-in's suite is among them."""
    return ", ".join(n for n in suite_names() if SUITES[n].data_env is not None)


def _no_folder() -> str:
    """A registered suite whose record reads no data folder."""
    return next(n for n in suite_names() if SUITES[n].data_env is None)


@pytest.mark.parametrize(("values", "tau2", "error", "line"), [
    (["nosuch=/x"], None, UnknownNameError,
     "--data names unknown suite 'nosuch'; suites with a data folder: {readers}"),
    (["{no_folder}=/x"], None, JunctionError,
     "--data names suite '{no_folder}', which reads no data folder; suites that do: "
     "{readers}"),
    ([f"{tb.SUITE}"], None, JunctionError, f"--data takes SUITE=PATH, got '{tb.SUITE}'"),
    ([f"{tb.SUITE}="], None, JunctionError, f"--data takes SUITE=PATH, got '{tb.SUITE}='"),
    (["=/x"], None, JunctionError, "--data takes SUITE=PATH, got '=/x'"),
    ([f"{tb.SUITE}=/a"], "/b", JunctionError,
     f"two data folders for suite '{tb.SUITE}': --data {tb.SUITE}=/a and --tau2-data /b; "
     "give one"),
    ([f"{tb.SUITE}=/a", f"{tb.SUITE}=/b"], None, JunctionError,
     f"two data folders for suite '{tb.SUITE}': --data {tb.SUITE}=/a and --data "
     f"{tb.SUITE}=/b; give one"),
])
def test_a_bad_data_value_is_one_line(values, tau2, error, line):
    names = {"readers": _readers(), "no_folder": _no_folder()}
    assert tb.SUITE in names["readers"]
    with pytest.raises(error) as raised:
        parse_data_folders([v.format(**names) for v in values],
                           None if tau2 is None else Path(tau2))
    assert str(raised.value) == line.format(**names)


# ------------------------------------------------------------------ junction bench --data

@pytest.mark.parametrize("args", [
    ["--data", "nosuch=/x"],
    ["--data", "{no_folder}=/x"],
    ["--data", tb.SUITE],
    ["--data", f"{tb.SUITE}="],
    ["--data", f"{tb.SUITE}=/a", "--tau2-data", "/b"],
])
def test_bench_refuses_a_bad_data_value_in_one_line(args, monkeypatch, capsys, tmp_path):
    import flows.preflight

    def no_run(plan, run_id):  # pragma: no cover - reached only if the refusal is missing
        raise AssertionError("the run was prepared")

    monkeypatch.setattr(flows.preflight, "prepare_run", no_run)
    args = [a.format(no_folder=_no_folder()) for a in args]
    bench = ["bench", "--suite", tb.SUITE, "--strategy", "exact", *args,
             "--warehouse", str(tmp_path / "wh"), "--reports", str(tmp_path / "rep")]
    result = CliRunner().invoke(app, bench)
    assert result.exit_code != 0 and isinstance(result.exception, JunctionError)
    assert "\n" not in str(result.exception)
    code, out, err = _main(monkeypatch, capsys, *bench)  # as the console script shows it
    assert code == 1 and out == ""
    assert err.splitlines() == [f"error: {result.exception}"], err
    assert "Traceback" not in err and not (tmp_path / "wh").exists()


@pytest.mark.parametrize("option", ["--data", "--tau2-data"])
def test_bench_puts_the_data_folder_into_the_plan(option, monkeypatch, tmp_path):
    import flows.preflight

    monkeypatch.delenv(tb.DATA_ENV, raising=False)
    seen = []

    def stop(plan, run_id):
        seen.append(plan)
        raise JunctionError("stopped before the run")

    monkeypatch.setattr(flows.preflight, "prepare_run", stop)
    value = f"{tb.SUITE}={FIXTURE}" if option == "--data" else str(FIXTURE)
    result = CliRunner().invoke(app, ["bench", "--suite", tb.SUITE, "--strategy", "exact",
                                      option, value, "--warehouse", str(tmp_path / "wh"),
                                      "--reports", str(tmp_path / "rep")])
    assert str(result.exception) == "stopped before the run", result.output
    assert [p.data_folders for p in seen] == [{tb.SUITE: str(FIXTURE.resolve())}]


def test_bench_help_names_data_and_the_alias():
    result = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--data" in result.stdout and "SUITE=PATH" in result.stdout
    assert f"Alias of --data {tb.SUITE}=PATH" in result.stdout
