"""The commands of the README and its docs pages (``docs/*.md``), run as a user types them:
the installed console script in a subprocess, with a temporary warehouse and reports folder
(``JUNCTION_WAREHOUSE``, ``JUNCTION_REPORTS``). Each test asserts the exit code and one
fact of the output.

``test_every_readme_command_has_a_test`` reads the command lines of the README and the
docs pages and fails when a command has no test here, so the documentation and this file
stay in step.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import junction_in_process

pytestmark = pytest.mark.flow

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")

# README command -> the test below that runs it (keys: sub-command, or "group sub-command")
COVERED = {
    "bench": "test_bench_thread_and_dask_give_identical_metrics",
    "runs": "test_runs_lists_both_runs",
    "report": "test_report_latest_rewrites_the_report",
    "diff": "test_diff_latest_previous_and_by_commit",
    "sql": "test_sql_csv",
    "demo coupling": "test_demo_coupling_json",
    "judge smoke": "test_judge_smoke",
    "judge score": "test_judge_score_json",
    "judge noise": "test_judge_noise_measures_and_stores",
    "models list": "test_models_list_and_assemble",
    "models assemble": "test_models_list_and_assemble",
    "models check": "test_models_check_dense_and_a_bad_pool_rule_or_fit_search_is_one_line",
    "serve": "test_serve_without_a_server_is_one_line",
    "admit": "test_admit_page_json_and_stdin",
    "suites": "test_suites_lists_every_suite_record",
}


def _readme_commands() -> set[str]:
    """Sub-commands of every ``junction`` command line in the code blocks of the README and
    the documentation pages it links (``docs/*.md``)."""
    blocks = [block for page in (ROOT / "README.md", *sorted(ROOT.glob("docs/*.md")))
              for block in re.findall(r"```(?:bash)?\n(.*?)```", page.read_text(), flags=re.S)]
    found = set()
    for block in blocks:
        for line in block.splitlines():
            m = re.search(r"(?:^|\s)(?:\.venv/bin/)?junction\s+([a-z]+)(?:\s+([a-z]+))?", line)
            if m:
                group, sub = m.group(1), m.group(2)
                found.add(f"{group} {sub}" if group in ("demo", "judge", "models") else group)
    return found


def test_every_readme_command_has_a_test():
    commands = _readme_commands()
    assert {"bench", "runs", "report", "diff", "sql"} <= commands  # the parser reads them
    missing = sorted(commands - set(COVERED))
    assert not missing, f"README commands without a test in tests/test_cli.py: {missing}"
    for name in COVERED.values():
        assert callable(globals().get(name)), name


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    """Environment of a user's shell: temporary warehouse and reports, no Prefect server."""
    if JUNCTION is None:
        pytest.fail("the `junction` console script is not installed beside this Python")
    base = tmp_path_factory.mktemp("cli")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "warehouse"), JUNCTION_REPORTS=str(base / "reports"),
               COLUMNS="200")
    return env


def run(env, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``junction ARGS`` as typed in a shell (cwd: the checkout)."""
    return subprocess.run([JUNCTION, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _report_dir(out: str, env) -> Path:
    m = re.search(r"^run (\S+): ", out, flags=re.M)
    assert m, out
    return Path(env["JUNCTION_REPORTS"]) / m.group(1)


@pytest.fixture(scope="module")
def two_runs(cli_env, prefect_harness):
    """A thread run, then a Dask run (one worker process; tests/test_scale.py runs two, in
    process), of the same suites and seed: every default strategy, a small sample (the
    judge on 2 tasks) at two scales, several units.

    The thread run reports to the session's Prefect server (``PREFECT_API_URL``, as a user
    with a configured server), sparing a server start of its own; the Dask run starts its
    own temporary server, as typed in a shell, which its workers report to."""
    from tests.helpers import on_session_server

    args = ("bench", "--suite", "synthetic", "--suite", "coupling", "--size", "12",
            "--budget-scale", "0.5", "--budget-scale", "1", "--batch-size", "6",
            "--strategy-size", "judge_admission=2", "--strategy-scale", "judge_admission=1")
    thread = run(on_session_server(cli_env), *args)
    dask = run(cli_env, *args, "--runner", "dask", "--workers", "1")
    return thread, dask


def test_bench_thread_and_dask_give_identical_metrics(two_runs, cli_env):
    thread, dask = two_runs
    assert thread.returncode == 0, thread.stderr[-3000:]
    assert dask.returncode == 0, dask.stderr[-3000:]
    assert "report: " in dask.stdout
    # the workers report to the parent's server and log to the run's log: before, each
    # task run printed three "EventsWorker failed" lines
    assert dask.stderr == "", dask.stderr[-3000:]
    a = (_report_dir(thread.stdout, cli_env) / "metrics.json").read_bytes()
    b = (_report_dir(dask.stdout, cli_env) / "metrics.json").read_bytes()
    assert a == b


def test_runs_lists_both_runs(two_runs, cli_env):
    result = junction_in_process(cli_env, "runs")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("completed") == 2


def test_report_latest_rewrites_the_report(two_runs, cli_env):
    report_md = _report_dir(two_runs[1].stdout, cli_env) / "report.md"
    report_md.unlink()
    result = junction_in_process(cli_env, "report", "latest")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"report: {report_md}"
    assert report_md.exists()


def test_diff_latest_previous_and_by_commit(two_runs, cli_env):
    result = junction_in_process(cli_env, "diff", "latest", "previous")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^0 of [1-9]\d* metric rows changed", result.stdout, flags=re.M), \
        result.stdout
    # a git commit means: the latest run made at it (both runs were made at this one)
    run_json = _report_dir(two_runs[1].stdout, cli_env) / "run.json"
    commit = json.loads(run_json.read_text())["git_commit"]
    by_commit = junction_in_process(cli_env, "diff", commit[:7], "previous", "--format", "json")
    assert by_commit.returncode == 0, by_commit.stderr
    payload = json.loads(by_commit.stdout)
    assert payload["after"] != payload["before"] and payload["rows"]


def test_sql_csv(two_runs, cli_env):
    result = junction_in_process(cli_env, "sql", "select strategy, avg(success::int) from "
                                 "traces group by 1 order by 1", "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    from junction.strategies.catalog import default_strategies, strategy_info

    # every default strategy but the references (BFCL's listed functions: no BFCL suite ran)
    assert [r[0] for r in rows[1:]] == [s for s in default_strategies()
                                        if strategy_info(s).role != "reference"]


def test_suites_lists_every_suite_record(cli_env):
    from junction.suites import suite_names

    env = {k: v for k, v in cli_env.items() if k != "JUNCTION_TAU2_DATA"}
    result = junction_in_process(env, "suites")
    assert result.returncode == 0, result.stderr
    assert all(name in result.stdout for name in suite_names())
    assert "$JUNCTION_TAU2_DATA: not set" in result.stdout


def test_demo_coupling_json(cli_env):
    result = junction_in_process(cli_env, "demo", "coupling", "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["strategies"]["exact"]["verified"] is True


@pytest.mark.model
def test_judge_smoke(judge):
    # in-process (typer's runner), so the session's loaded judge is reused
    from typer.testing import CliRunner

    from flows.cli import app

    result = CliRunner().invoke(app, ["judge", "smoke", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["passed"] is True and payload["model_hash"] == judge.model_hash


def test_judge_score_json(cli_env):
    docs = ["The capital of China is Beijing.", "", "The capital of China is Nanjing.",
            "Photosynthesis converts light energy into chemical energy in plants."]
    result = run(cli_env, "judge", "score", "What is the capital of China?", *docs, "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    rows = payload["scores"]
    assert [r["document"] for r in rows] == docs  # input order
    assert rows[1]["status"] == "empty" and rows[1]["score"] is None and rows[1]["rank"] is None
    assert rows[0]["rank"] == 1 and rows[3]["rank"] == 3
    assert len(payload["model_hash"]) == 64 and len(payload["instruction_hash"]) == 64
    assert payload["noise_floor"] > 0 and payload["degenerate"] is False
    for r in rows:  # ties are symmetric and within the floor
        for j in r["tied_with"]:
            assert r["index"] in rows[j]["tied_with"]
            assert abs(r["score"] - rows[j]["score"]) <= payload["noise_floor"]
    bad = junction_in_process(cli_env, "judge", "score", "q", "d", "--instruction", " ")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "--instruction" in bad.stderr


@pytest.mark.model
def test_judge_noise_measures_and_stores(judge, tmp_path, monkeypatch):
    # in-process, so the session's loaded judge is reused; the state folder is a temporary
    # one. The probe is cut to two documents of its last group: the command's path (slot
    # spread, batch and one-pair-at-a-time scores, the floor, storing) is the same, and the
    # one-pair path, a whole prompt decoded per document, was most of the cost for all 20
    from typer.testing import CliRunner

    import junction.judge.noise as noise
    from flows.cli_judge import judge_app
    from junction.judge.noise import noise_floor, stored_noise_floor

    monkeypatch.setenv("JUNCTION_STATE_DIR", str(tmp_path))
    query, documents = noise.PROBE_GROUPS[-1]
    monkeypatch.setattr(noise, "PROBE_GROUPS", ((query, documents[:2]),))
    assert stored_noise_floor(judge) is None
    result = CliRunner().invoke(judge_app, ["noise", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["model_hash"] == judge.model_hash and payload["n_documents"] == 2
    assert payload["floor"] >= max(payload["slot_spread"], payload["batch_naive_gap"])
    assert noise_floor(judge).floor == payload["floor"]  # stored, and used from now on
    assert noise_floor(judge).source == "measured"


def test_models_list_and_assemble(cli_env):
    listed = junction_in_process(cli_env, "models", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["qwen2.5-coder-0.5b-instruct"]["default"] is True
    assert rows["qwen2.5-coder-0.5b-instruct"]["parts_installed"] is True
    assembled = junction_in_process(cli_env, "models", "assemble")
    assert assembled.returncode == 0, assembled.stderr
    assert "491400064 bytes" in assembled.stdout and "sha256 1d9614638d18" in assembled.stdout
    unknown = junction_in_process(cli_env, "models", "assemble", "no-such-model")
    assert unknown.returncode == 1 and "unknown embedded model" in unknown.stderr


def test_models_check_dense_and_a_bad_pool_rule_or_fit_search_is_one_line(cli_env):
    checked = run(cli_env, "models", "check-dense")
    assert checked.returncode == 0, checked.stderr
    assert "90868376 bytes" in checked.stdout and "sha256 53aa51172d14" in checked.stdout
    bad = junction_in_process(cli_env, "bench", "--suite", "coupling", "--pool", "sparse")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    from junction.candidates import POOL_RULES

    rules = ", ".join(POOL_RULES.names())
    assert f"unknown pool rule 'sparse'; valid pool rules: {rules}" in bad.stderr
    assert "bm25_named" in POOL_RULES
    search = junction_in_process(cli_env, "bench", "--suite", "coupling", "--fit-search",
                                 "fast")
    assert search.returncode == 1 and search.stderr.count("\n") == 1
    assert "unknown fit search 'fast'; valid searches: optimal, hybrid, local" in search.stderr


def test_serve_without_a_server_is_one_line(cli_env):
    result = run(cli_env, "serve", "--cron", "0 3 * * *")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "need a Prefect server" in result.stderr


ADMIT_PAGE = """<html><head><title>Contractor guide</title></head><body>
<p>This guide covers what contractors may claim and how.</p>
<h1>Expenses</h1><h2>Mileage</h2>
<p>Mileage is reimbursed at 0.50 USD per km driven for client work, with a logbook.</p>
<h2>Meals</h2><p>Meals are reimbursed up to 30 USD per day with an itemised receipt.</p>
<h1>Leave</h1><p>Contractors take unpaid leave by telling the project lead a week ahead.</p>
<table><tr><th>Month</th><th>Days</th></tr><tr><td>August</td><td>10</td></tr></table>
</body></html>"""


@pytest.mark.model
def test_admit_page_json_and_stdin(judge, tmp_path):
    # in-process (typer's runner), so the session's loaded judge is reused
    from typer.testing import CliRunner

    from flows.cli import app
    from junction.pages.chunking import chunk_page

    page = tmp_path / "guide.html"
    page.write_text(ADMIT_PAGE, encoding="utf-8")
    # 22 tokens: each h2 heading stays with its paragraph under the Qwen2.5-fitted counter
    # (digits are a token each, so the mileage paragraph alone is 19 tokens)
    text = chunk_page(ADMIT_PAGE, max_tokens=22).text
    args = ["--query", "How much is mileage reimbursed per km?", "--budget", "40", "--top-k",
            "2", "--chunk-tokens", "22", "--json"]
    result = CliRunner().invoke(app, ["admit", str(page), *args])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["mode"] == "explore" and payload["chunks"] >= 4
    admitted = payload["admitted"]
    assert 1 <= len(admitted) <= 2 and payload["admitted_tokens"] <= 40
    # verbatim: every admitted text is a slice of the page text, where the chunk says
    assert all(text[a["start"]:a["end"]] == a["text"] for a in admitted)
    assert [a["rank"] for a in admitted] == list(range(1, len(admitted) + 1))
    assert admitted[0]["heading_path"] == "Expenses > Mileage"
    scores = [a["score"] for a in admitted] + [r["score"] for r in payload["rejected"]]
    assert scores == sorted(scores, reverse=True)
    # standard input gives the same answer; exploit mode keeps the minimum of both sides
    piped = CliRunner().invoke(app, ["admit", "-", *args], input=ADMIT_PAGE)
    assert piped.exit_code == 0 and json.loads(piped.stdout)["admitted"] == admitted
    exploit = CliRunner().invoke(app, ["admit", str(page), *args, "--exploit", "--original",
                                       "Plan the client visit next week and its costs."])
    assert exploit.exit_code == 0, exploit.output
    for row in json.loads(exploit.stdout)["admitted"]:
        assert row["score"] == min(row["query_score"], row["original_score"])
    table = CliRunner().invoke(app, ["admit", str(page), *args[:-1]])
    assert table.exit_code == 0 and "[1] score" in table.stdout
    assert "Expenses > Mileage" in table.stdout and "best rejected:" in table.stdout


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/page.html", "--query", "q"], "error: /nonexistent/page.html: no such file"),
    (["PAGE", "--query", "q", "--exploit"], "error: --exploit needs --original TASK"),
    (["PAGE", "--query", "q", "--original", "x"], "error: --original is used in exploit mode"),
    (["PAGE", "--query", " "], "error: --query must not be empty"),
    (["PAGE", "--query", "q", "--top-k", "-1"], "error: --top-k must be >= 0, got -1"),
    (["EMPTY", "--query", "q"], "the page has no visible text"),
])
def test_admit_mistakes_are_one_line(cli_env, tmp_path, args, message):
    (tmp_path / "p.html").write_text(ADMIT_PAGE, encoding="utf-8")
    (tmp_path / "e.html").write_text("<html><!-- nothing --></html>", encoding="utf-8")
    paths = {"PAGE": str(tmp_path / "p.html"), "EMPTY": str(tmp_path / "e.html")}
    result = junction_in_process(cli_env, "admit", *[paths.get(a, a) for a in args])
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert message in result.stderr
