"""docs/extending.md's examples, run as written: the example plug-in is the real package
``tests/plugins/policy_desk`` (the doc shows its files as they are), installed with pip into
a temporary folder (``tests.plugins.install``); its records (a suite reading a data folder,
its own verifier kind and agent grader, and a strategy) are checked in this process, and
the doc's own ``junction bench`` line runs it as a subprocess with the package first on
PYTHONPATH, as an installed plug-in, on the session's Prefect server. Also: a suite file
that leaves its token costs out is priced by the project's counter."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.graders import agent_measures, grade_agent, grader_for
from junction.resources import ContextResource, ToolResource
from junction.strategies import STRATEGIES
from junction.suites import SUITES
from tests.helpers import on_session_server
from tests.plugins import POLICY_DESK, POLICY_DESK_DATA, policy_desk_site, present

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "extending.md"
FOREIGN = re.compile(r"BFCL|bfcl|τ|tau2|bench-agent")
"""Words of the built-in suites and graders: none belongs in a report of the plug-in's suite."""


def _example(name: str) -> str:
    """The fenced code block right after ``<!-- example: name -->`` in the doc."""
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w*\n(.*?)\n```",
                      DOC.read_text(), re.S)
    assert found, f"docs/extending.md has no example {name!r}"
    return found.group(1) + "\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example plug-in, pip-installed into a temporary folder."""
    return policy_desk_site(tmp_path_factory)


def test_the_doc_shows_the_package_files_as_they_are():
    shown = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```", DOC.read_text(), re.S)
    assert {path for path, _ in shown} == {"tests/plugins/policy_desk/pyproject.toml",
                                           "tests/plugins/policy_desk/policy_desk.py"}
    for path, text in shown:
        assert (ROOT / path).read_text() == text + "\n", f"docs/extending.md's {path} is stale"
    # the run block installs that package and names its data folder
    run = _example("run")
    assert f"pip install -e {POLICY_DESK.relative_to(ROOT)}" in run
    assert f"--data policy-desk={POLICY_DESK_DATA.relative_to(ROOT)}" in run


def test_the_plugin_registers_one_record_of_each_kind(site):
    with present(site) as policy_desk:
        assert "policy-desk" in SUITES and "cheapest" in STRATEGIES
        assert Path(policy_desk.__file__).parent == site  # the installed copy
        info = SUITES["policy-desk"]
        assert info.data_env == "POLICY_DESK_DATA"
        assert info.unavailable_reason({"policy-desk": str(POLICY_DESK_DATA)}) is None
        assert "--data policy-desk=PATH" in info.unavailable_reason({"policy-desk": ""})
        tasks = policy_desk.build(path=str(POLICY_DESK_DATA))
        assert [t.task_id for t in tasks] == ["desk-refund", "desk-address", "desk-password"]
        task = tasks[0]
        # the grader the catalog picks for the suite's tasks, and both of its outcomes
        assert grader_for(task).name == "called_tool"
        answer = {"context_ids": ("page-refund",), "tool_ids": ("refund_order",),
                  "output_kind": "calls"}
        called = ExecutionResult(**answer, tool_calls=(ToolCall(index=0, tool_id="refund_order"),))
        missed = ExecutionResult(**answer,
                                 tool_calls=(ToolCall(index=0, tool_id="reset_password"),))
        assert grade_agent(task, called).outcome == "called" and grade_agent(task, called).success
        assert grade_agent(task, missed).outcome == "missed"
        # its decoder and its measure, as the record declares them
        assert grader_for(task).decoder()("[reset_password()]", ("reset_password",))[0] == "calls"
        assert grade_agent(task, called).measures == {"other_calls": 0.0}
        assert grade_agent(task, missed).measures == {"other_calls": 1.0}
        assert agent_measures()["other_calls"].direction == "lower"
        # the strategy builds its selection itself and claims no optimality
        result = STRATEGIES["cheapest"].build().select(task.router_view(), None)
        assert result.selection.status == "heuristic"
        assert result.selection.tokens_used <= task.budget.max_tokens
    assert "policy-desk" not in SUITES and "cheapest" not in STRATEGIES


@pytest.mark.flow
def test_the_docs_run_block_runs_the_installed_plugin(site, prefect_harness, tmp_path):
    """The doc's ``junction bench`` line as written (the pip line is the fixture's
    install), then ``junction suites``: the plug-in is found through its entry point."""
    (command,) = [line for line in _example("run").splitlines() if " bench " in line]
    argv = shlex.split(command)
    assert argv[0] == ".venv/bin/junction"
    junction = str(Path(sys.executable).parent / "junction")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUNCTION_", "POLICY_"))}
    env.update(PYTHONPATH=str(site), JUNCTION_WAREHOUSE=str(tmp_path / "warehouse"),
               JUNCTION_REPORTS=str(tmp_path / "reports"),
               JUNCTION_STATE_DIR=str(tmp_path / "state"), COLUMNS="200")
    done = subprocess.run([junction, *argv[1:], "--run-id", "policy-desk"], cwd=ROOT,
                          env=on_session_server(env), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    reports = tmp_path / "reports" / "policy-desk"
    metrics = json.loads((reports / "metrics.json").read_text())
    rows = metrics["results"]["policy-desk"]["budget_scale=1"]
    assert set(rows) == {"cheapest", "exact"}
    assert rows["exact"]["tasks"] == rows["cheapest"]["tasks"] == 3
    # exact finds the page and the tool on every task: BM25 ranks the named ones first
    assert rows["exact"]["success_rate"] == 1.0
    meta = json.loads((tmp_path / "warehouse" / "runs" / "policy-desk.json").read_text())
    assert [(p["entry_point"], p["distribution"], p["replaces"]) for p in meta["plugins"]] \
        == [("policy_desk", "policy-desk", [])]
    assert meta["params"]["data_folders"] == {"policy-desk": str(POLICY_DESK_DATA)}
    report = (reports / "report.md").read_text()
    assert "the gold page and its tool are exposed" in report  # the verifier's meaning
    assert "- plug-ins: `policy_desk` (policy-desk 0.1.0" in report
    # the headline places the joint strategy that ignores interactions by its record: the
    # interaction-blind side, named as the strategy that ran
    full = report.split("## Full comparison", 1)[1].split("\n## ", 1)[0]
    assert "(cheapest)" in full and "adaptive_split" not in full
    assert "| cheapest (best interaction-blind) (" in full
    assert "best joint against best interaction-blind" in report
    # and nothing of the built-in suites' or graders' prose
    assert not FOREIGN.findall(report), sorted(
        {line for line in report.splitlines() if FOREIGN.search(line)})
    listed = subprocess.run([junction, "suites"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert "policy-desk" in listed.stdout and "$POLICY_DESK_DATA: not set" in listed.stdout
    # the report written again once the plug-in is gone says so, in one warning line
    gone = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    again = subprocess.run([junction, "report", "policy-desk"], cwd=ROOT, env=gone,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr == ("warning: run policy-desk was made with other plug-ins "
                            "(policy_desk (policy-desk) 0.1.0 → not installed): their "
                            "strategies and suites are reported without their catalog "
                            "records\n")


def test_a_suite_file_without_token_costs_is_priced_by_the_counter(tmp_path):
    from junction_datasets.jsonl import load_suite_file

    line = {"task_id": "t1", "suite": "mine", "objective": "open an account",
            "contexts": [{"id": "c1", "content": "Use open_account to open an account."}],
            "tools": [{"id": "open_account", "description": "Open an account.",
                       "json_schema": {"type": "object"}}],
            "budget": {"max_tokens": 500}, "gold_tool_ids": ["open_account"],
            "verifier": {"kind": "tools_exposed"}}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (task,) = load_suite_file(path).tasks
    assert task.contexts[0] == ContextResource.from_text("c1", line["contexts"][0]["content"])
    assert task.tools[0] == ToolResource.from_schema("open_account", "Open an account.",
                                                     {"type": "object"})
    # a cost given is kept
    line["contexts"][0]["token_cost"] = 999
    path.write_text(json.dumps(line) + "\n")
    assert load_suite_file(path).tasks[0].contexts[0].token_cost == 999


def test_a_suite_file_declares_its_reference_set(tmp_path):
    from junction_datasets.jsonl import check_suite_files, load_suite_file

    from junction.errors import DatasetError

    line = {"task_id": "t1", "suite": "mine", "objective": "open an account",
            "contexts": [], "tools": [{"id": "open_account", "description": "Open one."}],
            "budget": {"max_tokens": 500}, "gold_tool_ids": ["open_account"],
            "verifier": {"kind": "tools_exposed"}}
    path = tmp_path / "mine.jsonl"

    def write(*sets):
        path.write_text("".join(json.dumps({**line, "task_id": f"t{i}", **(
            {} if s is None else {"reference_set": s})}) + "\n" for i, s in enumerate(sets)))
        return path

    assert load_suite_file(write(None, None)).reference_set is None  # no references
    (built,) = check_suite_files([write("bfcl", "bfcl")])
    assert built.reference_set == "bfcl" and len(built.tasks) == 2
    # the one rule: every line the same set, or none
    with pytest.raises(DatasetError, match=r"mine.jsonl:2: task 't1': reference_set None "
                                           r"differs from 'bfcl' on line 1"):
        load_suite_file(write("bfcl", None))
    with pytest.raises(DatasetError, match=r"mine.jsonl:1: task 't0': reference_set: a "
                                           r"reference set's name is needed, got 3"):
        load_suite_file(write(3))
    # a set no strategy record has is refused before anything runs, naming those there are
    known = sorted({i.reference_set for i in STRATEGIES.values() if i.reference_set})
    with pytest.raises(DatasetError, match=re.escape(
            f"reference_set 'nope' is no strategy's; reference sets: {', '.join(known)}")):
        check_suite_files([write("nope")])


def _agent_run_report(tmp_path, suite: str, grader: str, outcomes: tuple[str, str],
                      kind: str) -> str:
    """report.md of a hand-made run on ``suite``: exact and cheapest on 3 tasks, the agent
    graded by ``grader`` on one of them (too few to decide)."""
    from junction.evidence.reports import RunData, write_report
    from junction.evidence.traces import records_to_table
    from tests.helpers import trace_record

    records = [trace_record(suite=suite, strategy=s, task_id=f"t{i}", success=True,
                            **({"agent_success": s == "exact", "executor": "llm",
                                "agent_outcome": outcomes[s != "exact"],
                                "agent_grader": grader} if i == 0 else {}))
               for s in ("exact", "cheapest") for i in range(3)]
    run = {"run_id": "r", "params": {"strategies": ["cheapest", "exact"], "agent_size": 1,
                                     "seeds": [0], "budget_scales": [1.0]}}
    paths = write_report(tmp_path / suite, RunData(run, records_to_table(records), {
        suite: {"tasks": 3, "verifier_kinds": [kind], "agent_tasks": 1}}))
    return paths["report.md"].read_text()


def test_a_report_says_of_a_suite_and_its_grader_only_what_their_records_say(site, tmp_path):
    from junction_datasets import BFCL_AGENT_NOTE

    with present(site):
        # the plug-in's suite with its agent: its grader described by its own record, and
        # no sentence of the built-in suites or graders (the agent sample, the checkers)
        md = _agent_run_report(tmp_path, "policy-desk", "called_tool", ("called", "missed"),
                               "page_and_tool")
        assert "## Agent outcome" in md and "- **policy-desk**: `called_tool`." in md
        assert "(best interaction-blind)" in md and "(cheapest)" in md
        assert not FOREIGN.findall(md), sorted(
            {line for line in md.splitlines() if FOREIGN.search(line)})
        # a BFCL suite on the same run: its record's sentences, and its grader's
        md = _agent_run_report(tmp_path, "bfcl-multiple", "bfcl", ("correct", "wrong_call"),
                               "tools_exposed")
        assert md.count(BFCL_AGENT_NOTE) == 2  # first screen, below the agent table
        assert "- **bfcl-multiple**: `bfcl`, BFCL's own checker" in md


def test_building_a_selection_takes_its_status_as_the_doc_says():
    from junction.budget import Budget
    from junction.select import JointProblem, Selection, exceeded_limit, make_selection

    page = ContextResource(id="c1", content="use t1", token_cost=30)
    tool = ToolResource(id="t1", description="d", schema_token_cost=20)
    problem = JointProblem((page,), (tool,), Budget(max_tokens=40), {"c1": 1.0, "t1": 0.5},
                           {("c1", "t1"): 0.25})
    assert exceeded_limit(problem.budget, [page]) is None
    assert exceeded_limit(problem.budget, [page, tool]) == "max_tokens"
    assert exceeded_limit(problem.budget, [page, tool], max_size=1) == "max_size"
    with pytest.raises(TypeError, match="status"):
        make_selection("mine", problem, ["c1"], [])  # no default: a heuristic says so
    chosen = make_selection("mine", problem, ["c1"], [], status="heuristic")
    assert (chosen.status, chosen.tokens_used, chosen.objective) == ("heuristic", 30, 1.0)
    both = make_selection("mine", problem, ["c1"], ["t1"], status="heuristic")
    assert (both.interaction, both.objective) == (0.25, 1.75)
    assert Selection.model_fields["status"].is_required()
