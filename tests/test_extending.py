"""docs/extending.md's examples, run as written: the plug-in module (a suite with its own
verifier kind and agent grader, and a strategy) is written to a folder of its own, imported,
and run through ``run_benchmark`` by the doc's own run block; nothing outside that module
is edited. Also: a suite file that leaves its token costs out is priced by the project's
counter."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from junction.agent.execution import ExecutionResult, ToolCall
from junction.agent.graders import AGENT_GRADERS, agent_measures, grade_agent, grader_for
from junction.resources import ContextResource, ToolResource
from junction.strategies import STRATEGIES
from junction.suites import SUITES
from junction.verifiers import VERIFIERS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "extending.md"


def _example(name: str) -> str:
    """The fenced code block right after ``<!-- example: name -->`` in the doc."""
    found = re.search(rf"<!-- example: {re.escape(name)} -->\n```\w*\n(.*?)\n```",
                      DOC.read_text(), re.S)
    assert found, f"docs/extending.md has no example {name!r}"
    return found.group(1) + "\n"


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The doc's my_plugin.py in a folder of its own, importable; its records removed after."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "my_plugin.py").write_text(_example("my_plugin.py"))
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("my_plugin", None)
    for catalog, name in ((SUITES, "policy-desk"), (STRATEGIES, "cheapest"),
                          (VERIFIERS, "page_and_tool"), (AGENT_GRADERS, "called_tool")):
        catalog.pop(name, None)


def test_the_plugin_registers_one_record_of_each_kind(plugin):
    import my_plugin

    assert "policy-desk" in SUITES and "cheapest" in STRATEGIES
    tasks = my_plugin.build()
    assert [t.task_id for t in tasks] == ["desk-refund", "desk-address", "desk-password"]
    task = tasks[0]
    # the grader the catalog picks for the suite's tasks, and both of its outcomes
    assert grader_for(task).name == "called_tool"
    answer = dict(context_ids=("page-refund",), tool_ids=("refund_order",),
                  output_kind="calls")
    called = ExecutionResult(**answer, tool_calls=(ToolCall(index=0, tool_id="refund_order"),))
    missed = ExecutionResult(**answer, tool_calls=(ToolCall(index=0, tool_id="reset_password"),))
    assert grade_agent(task, called).outcome == "called" and grade_agent(task, called).success
    assert grade_agent(task, missed).outcome == "missed"
    # its decoder and its measure, as the record declares them
    assert grader_for(task).decoder()("[reset_password()]", ("reset_password",))[0] == "calls"
    assert grade_agent(task, called).measures == {"other_calls": 0.0}
    assert grade_agent(task, missed).measures == {"other_calls": 1.0}
    assert agent_measures()["other_calls"].direction == "lower"


@pytest.mark.flow
def test_the_docs_examples_run_through_run_benchmark(plugin, prefect_harness, tmp_path,
                                                     monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the run block writes ./warehouse and ./reports
    namespace: dict = {}
    exec(compile(_example("run"), "docs/extending.md (run)", "exec"), namespace)  # noqa: S102
    run_id = namespace["result"]["run_id"]
    assert capsys.readouterr().out.strip().endswith(run_id)
    metrics = json.loads((tmp_path / "reports" / run_id / "metrics.json").read_text())
    rows = metrics["results"]["policy-desk"]["budget_scale=1"]
    assert set(rows) == {"cheapest", "exact"}
    assert rows["exact"]["tasks"] == rows["cheapest"]["tasks"] == 3
    # exact finds the page and the tool on every task: BM25 ranks the named ones first
    assert rows["exact"]["success_rate"] == 1.0
    report = (tmp_path / "reports" / run_id / "report.md").read_text()
    assert "the gold page and its tool are exposed" in report  # the verifier's meaning


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
