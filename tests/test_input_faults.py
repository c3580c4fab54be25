"""Input faults a user meets on the newest surfaces (issue 63, items 2, 10, 11), each on a
real process: ``junction bench`` (``.venv/bin/junction``) with its own temporary warehouse,
reports, state and Prefect home (as ``bench/checks/fault_lines.py``'s ``_env``), or
``bench/compare.py``. Each test asserts the one line and the state left behind.

- a τ-Knowledge task with nothing to find (no gold agent tool, no required document) is
  left out with one ``warning:`` line, never a free success; a folder of only such tasks
  is refused before the run;
- a suite file named like a registered suite, a JSON boolean as a token cost, a
  pretty-printed JSON array: one ``error:`` line before Prefect starts, nothing written
  (no ``runs/.<id>.lock``);
- a truncated bench result file: one ``warning:`` line naming it, the rest compared.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.helpers import junction_in_process

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")
FIXTURE = ROOT / "tests" / "data" / "tau2_fixture"


def _env(base: Path) -> dict[str, str]:
    """A user's shell: this test's warehouse, reports, state and Prefect home."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "wh"), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "st"), PREFECT_HOME=str(base / "pf"),
               COLUMNS="200")
    return env


def _junction(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([JUNCTION, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def _written(base: Path) -> list[str]:
    """Every file under the test's warehouse, reports and state folders."""
    return sorted(str(p.relative_to(base)) for d in ("wh", "rep", "st")
                  for p in (base / d).rglob("*") if p.is_file())


def _refused(result: subprocess.CompletedProcess, base: Path, *parts: str) -> str:
    """The one ``error:`` line of ``result``, which holds every one of ``parts``; the
    run wrote nothing (no warehouse, no lock, no report, no state)."""
    assert result.returncode == 1, (result.stdout, result.stderr[-2000:])
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    assert _written(base) == []
    assert not (base / "wh").exists()  # runs/.<id>.lock included
    return lines[0]


def _emptied(folder: Path, ids: list[int]) -> Path:
    """A copy of the τ fixture in ``folder`` whose tasks ``ids`` have neither a required
    document nor a gold action."""
    shutil.copytree(FIXTURE, folder)
    for i in ids:
        path = folder / "tasks" / f"task_{i:03d}.json"
        raw = json.loads(path.read_text())
        raw["required_documents"] = []
        raw["evaluation_criteria"]["actions"] = []
        path.write_text(json.dumps(raw, indent=2))
    return folder


# ------------------------------------------------------------- τ tasks with nothing to find

def test_a_tau2_task_with_nothing_to_find_is_left_out_not_a_free_success(tmp_path,
                                                                        prefect_harness):
    from tests.helpers import on_session_server

    folder = _emptied(tmp_path / "tau2", [1, 3])
    env = on_session_server(_env(tmp_path))
    # the suite is built many times in the process (checks, 2 seeds, the learned folds):
    # one line all the same
    result = _junction(env, "bench", "--suite", "tau2-banking", "--tau2-data", str(folder),
                       "--strategy", "learned_exact", "--strategy", "gold_minimal",
                       "--folds", "3", "--seed", "0", "--seed", "1", "--budget-scale", "1",
                       "--agent-size", "0", "--run-id", "empty")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("warning: tau2-banking: 2 task(s) left out, nothing to find")
    assert "task_001, task_003" in lines[0] and str(folder / "tasks") in lines[0]
    traces = str(tmp_path / "wh" / "traces" / "**" / "*.parquet")
    rows = duckdb.sql(f"select strategy, task_id, success, tokens_used from "
                      f"read_parquet('{traces}') order by 1, 2").fetchall()
    ids = {r[1] for r in rows}
    assert ids == {"tau2-banking-task_002", "tau2-banking-task_004", "tau2-banking-task_005"}
    # gold_minimal scores only where it exposes something: no free success
    assert all(tokens > 0 for strategy, _, ok, tokens in rows if strategy == "gold_minimal")
    run = json.loads((tmp_path / "rep" / "empty" / "run.json").read_text())
    text = json.dumps(run)
    assert "2 task(s) with neither a gold agent tool nor a required document left out" in text
    assert '"nothing_to_find": 2' in text
    assert "2 task(s) with neither a gold agent tool" in (
        tmp_path / "rep" / "empty" / "report.md").read_text()


def test_a_tau2_folder_of_tasks_with_nothing_to_find_is_refused_before_the_run(tmp_path):
    folder = _emptied(tmp_path / "tau2", [1, 2, 3, 4, 5])  # task_006: no instructions
    result = junction_in_process(_env(tmp_path), "bench", "--suite", "tau2-banking", "--tau2-data",
                                 str(folder), "--strategy", "gold_minimal", "--run-id", "none")
    _refused(result, tmp_path, f"{folder / 'tasks'}: no task could be loaded",
             "nothing_to_find 5")


def test_the_suite_builder_names_tasks_with_nothing_to_find(tmp_path):
    # the builder itself (in process): skip reason, one warning, the note's count
    import warnings

    from junction_datasets import tau2_banking as tb

    folder = _emptied(tmp_path / "tau2", [3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = tb.banking_suite(split="all", path=folder)
    assert built.rows_skipped == {"no_instructions": 1, "nothing_to_find": 1}
    assert [t.metadata["tau2_id"] for t in built.tasks] == ["task_001", "task_002",
                                                            "task_004", "task_005"]
    assert [str(w.message) for w in caught] == [
        "tau2-banking: 1 task(s) left out, nothing to find (no gold agent tool, no required "
        f"document: any selection would pass): task_003 in {folder / 'tasks'}"]
    assert "1 task(s) with neither a gold agent tool nor a required document left out" \
        in built.note
    # every task kept has something a selection must expose
    assert all(t.gold_tool_ids or t.gold_context_ids for t in built.tasks)


# ------------------------------------------------------------------------- suite files

TASK = {"task_id": "t1", "suite": "mine", "objective": "close my card",
        "contexts": [{"id": "doc", "content": "To close a card use close_card.",
                      "token_cost": 8}],
        "tools": [{"id": "close_card", "description": "Close a card.",
                   "schema_token_cost": 12}],
        "budget": {"max_tokens": 100}, "gold_context_ids": ["doc"],
        "gold_tool_ids": ["close_card"], "verifier": {"kind": "tools_exposed"}}


def test_a_suite_file_named_like_a_registered_suite_is_refused_before_the_run(tmp_path):
    path = tmp_path / "taken.jsonl"
    path.write_text(json.dumps({**TASK, "suite": "coupling"}) + "\n")
    result = junction_in_process(_env(tmp_path), "bench", "--suite-file", str(path), "--strategy",
                                 "exact", "--run-id", "taken")
    _refused(result, tmp_path, f"{path}: suite name 'coupling' is taken by a registered suite")
    assert not (tmp_path / "wh" / "runs" / ".taken.lock").exists()


def test_two_suite_files_of_one_suite_name_are_refused_before_the_run(tmp_path):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(TASK) + "\n")
    second.write_text(json.dumps({**TASK, "task_id": "t2"}) + "\n")
    result = junction_in_process(_env(tmp_path), "bench", "--suite-file", str(first),
                                 "--suite-file", str(second), "--strategy", "exact",
                                 "--run-id", "twice")
    _refused(result, tmp_path, f"{second}: suite name 'mine' is also the suite of {first}")


@pytest.mark.parametrize("field, change", [
    ("contexts.0.token_cost", lambda t: t["contexts"][0].update(token_cost=True)),
    ("tools.0.schema_token_cost", lambda t: t["tools"][0].update(schema_token_cost=False)),
    ("budget.max_tokens", lambda t: t["budget"].update(max_tokens=True)),
], ids=["token_cost", "schema_token_cost", "max_tokens"])
def test_a_json_boolean_as_a_number_is_refused_naming_the_field(tmp_path, field, change):
    bad = json.loads(json.dumps({**TASK, "task_id": "t2"}))
    change(bad)
    path = tmp_path / "bool.jsonl"
    path.write_text(json.dumps(TASK) + "\n" + json.dumps(bad) + "\n")
    result = junction_in_process(_env(tmp_path), "bench", "--suite-file", str(path), "--strategy",
                                 "exact", "--run-id", "bools")
    _refused(result, tmp_path, f"{path}:2: task 't2': {field}: a number is needed, got the "
                               "JSON boolean")


def test_a_pretty_printed_json_array_is_refused_with_the_json_lines_hint(tmp_path):
    path = tmp_path / "pretty.jsonl"
    path.write_text(json.dumps([TASK, {**TASK, "task_id": "t2"}], indent=2) + "\n")
    result = junction_in_process(_env(tmp_path), "bench", "--suite-file", str(path), "--strategy",
                                 "exact", "--run-id", "pretty")
    _refused(result, tmp_path, f"{path}:1: not JSON Lines: the JSON array opened on this line",
             "one task object per line")


# ------------------------------------------------------------------------- bench compare

def _record(folder: Path, script: str, commit: str, value: float) -> Path:
    path = folder / script.split("/")[1] / f"{commit}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"script": script, "commit": commit, "figures": {"x": value},
                                "written_at": "2026-12-06T10:00:00+00:00", "argv": [],
                                "machine": {"cpus": 2, "load_1m": 1.0}}, indent=1))
    return path


def _compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "compare.py"), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_compare_leaves_out_a_truncated_result_file_with_one_warning(tmp_path):
    for script, (a, b) in (("perf/scale", (1.0, 1.1)), ("perf/exact_work", (5, 6))):
        _record(tmp_path, script, "aaaaaaa", a)
        _record(tmp_path, script, "bbbbbbb", b)
    cut = tmp_path / "scale" / "bbbbbbb.json"
    cut.write_text(cut.read_text()[:60])
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.json")}

    every = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb")
    assert every.returncode == 0, every.stderr
    lines = every.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"warning: {cut}: not a readable result "
                                                   "file"), every.stderr
    assert "perf/exact_work" in every.stdout and "1.20  x" in every.stdout
    assert "perf/scale" in every.stdout and "B: not measured" in every.stdout

    other = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb", "--script",
                     "perf/exact_work")  # never reads the damaged script's files
    assert other.returncode == 0 and other.stderr == "", other.stderr
    assert "perf/exact_work" in other.stdout and "perf/scale" not in other.stdout

    named = _compare(str(tmp_path / "scale" / "aaaaaaa.json"), str(cut))
    assert named.returncode == 2 and named.stdout == ""
    assert named.stderr.count("\n") == 1, named.stderr
    assert named.stderr.startswith(f"compare: {cut}: not a readable result file (Expecting")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.json")} == before  # nothing written
