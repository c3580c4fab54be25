"""The tau2-banking suite (datasets/tau2_banking.py): tool parsing, gold resolution, the
split, router views, the verifier and the missing-data errors.

The fixture ``tests/data/tau2_fixture`` is hand-written in the shared copy's layout; the
tests marked ``needs_tau2`` run on ``../shared/data/tau2-banking-knowledge`` when present.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from junction_datasets import tau2_banking as tb

from junction.agent.execution import ExecutionResult
from junction.errors import DatasetError
from junction.evidence.metrics import pair_coverage
from junction.tasks import GoldPair
from junction.verifiers import verify

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "tau2_fixture"
SHARED = (ROOT / ".." / "shared" / "data" / "tau2-banking-knowledge").resolve()
needs_tau2 = pytest.mark.skipif(not (SHARED / "tasks.json").exists(),
                                reason=f"no tau2 data at {SHARED}")


def _fixture_suite(split: str = "all"):
    return tb.banking_suite(split=split, path=FIXTURE)


# ---------------------------------------------------------------- tools.py with ast

def test_tools_parsed_from_the_fixture():
    tools = {t.name: t for t in tb.parse_agent_tools((FIXTURE / "tools.py").read_text())}
    # KnowledgeTools' 6 decorated methods, in file order; _helper (no decorator) and the
    # customer's apply_for_credit_card (KnowledgeUserTools) are not agent tools
    assert list(tools) == ["get_current_time", "log_verification",
                           "unlock_discoverable_agent_tool", "call_discoverable_agent_tool",
                           "open_bank_account_4821", "close_card_7730"]
    # no Args: an empty object schema; the description stops before Returns:
    assert tools["get_current_time"].json_schema == {"type": "object", "properties": {},
                                                     "required": []}
    assert tools["get_current_time"].description == "Get the current time."
    # required (no default) and optional (default) args; a continuation line joins its arg
    log = tools["log_verification"]
    assert log.description == "Log that the customer's identity was verified."
    assert log.json_schema["required"] == ["user_id", "method"]
    assert log.json_schema["properties"]["method"] == {
        "type": "string",
        "description": "How the identity was checked, for example by date of birth"}
    # docstring types win; the annotation fills in where the docstring gives none
    opened = tools["open_bank_account_4821"].json_schema
    assert opened["properties"]["deposit"]["type"] == "number"
    assert opened["required"] == ["user_id", "account_type"]
    assert tools["call_discoverable_agent_tool"].json_schema["properties"]["arguments"]["type"] \
        == "object"
    assert tools["open_bank_account_4821"].discoverable and not log.discoverable


MALFORMED = '''
class KnowledgeTools:
    @is_tool(ToolType.READ)
    def broken_tool_1(self, user_id: str) -> str:
        """Does something.

        Args:
            user_id -- the id, with no colon
        """
'''


def test_a_malformed_args_line_is_refused_naming_the_tool():
    with pytest.raises(DatasetError, match=r"tool 'broken_tool_1': malformed Args line "
                                           r"'user_id -- the id, with no colon'"):
        tb.parse_agent_tools(MALFORMED)


def test_an_args_name_the_signature_lacks_is_refused():
    source = MALFORMED.replace("user_id -- the id, with no colon", "card: the card")
    with pytest.raises(DatasetError, match="tool 'broken_tool_1': Args names 'card'"):
        tb.parse_agent_tools(source)


# ---------------------------------------------------------------- gold

AGENT = {"log_verification", "open_bank_account_4821", "close_card_7730",
         "unlock_discoverable_agent_tool", "call_discoverable_agent_tool",
         "give_discoverable_user_tool"}


@pytest.mark.parametrize("action, gold", [
    ({"name": "unlock_discoverable_agent_tool",
      "arguments": {"agent_tool_name": "open_bank_account_4821"}}, ("open_bank_account_4821",)),
    ({"name": "call_discoverable_agent_tool",
      "arguments": {"agent_tool_name": "close_card_7730", "arguments": {}}}, ("close_card_7730",)),
    ({"name": "log_verification", "arguments": {"user_id": "u"}}, ("log_verification",)),
    # customer side: not agent gold
    ({"name": "call_discoverable_user_tool", "arguments": {"discoverable_tool_name": "x"}}, ()),
    ({"name": "give_discoverable_user_tool", "arguments": {"discoverable_tool_name": "x"}}, ()),
    ({"name": "apply_for_credit_card", "arguments": {"card_type": "Gold"}}, ()),
    # a discoverable name that is no agent tool
    ({"name": "unlock_discoverable_agent_tool", "arguments": {"agent_tool_name": "nope_1"}}, ()),
])
def test_gold_resolution_per_action_kind(action, gold):
    assert tb.resolve_gold([action], AGENT) == gold


def test_fixture_tasks_gold_and_pairs():
    built = _fixture_suite()
    by_id = {t.metadata["tau2_id"]: t for t in built.tasks}
    assert built.rows_skipped == {"no_instructions": 1}  # task_006's blank instructions
    assert sorted(by_id) == ["task_001", "task_002", "task_003", "task_004", "task_005"]
    t1 = by_id["task_001"]
    # log_verification (direct) then open_bank_account_4821 (unlock and call: once)
    assert t1.gold_tool_ids == ("log_verification", "open_bank_account_4821")
    assert t1.gold_context_ids == ("doc_accounts_opening_001", "doc_verification_001")
    assert {(p.context_id, p.tool_id) for p in t1.gold_pairs} == {
        ("doc_accounts_opening_001", "open_bank_account_4821"),
        ("doc_verification_001", "log_verification")}
    assert by_id["task_003"].gold_tool_ids == ()  # customer-side only: kept, counted
    assert "1 loaded task(s) have no gold agent tool" in built.note
    # get_current_time is gold of task_005, but no required document names it: no pair
    assert by_id["task_005"].gold_tool_ids == ("close_card_7730", "get_current_time")
    assert [p.tool_id for p in by_id["task_005"].gold_pairs] == ["close_card_7730"]
    # resources: every document (title + content), the 6 agent tools, the lexical prior
    assert len(t1.contexts) == 5 and len(t1.tools) == 6
    assert t1.context("doc_cards_closing_001").metadata == {"topic": "cards_closing"}
    assert t1.context("doc_cards_closing_001").content.startswith("Closing a card\n\n")
    assert t1.budget.max_tokens == tb.MAX_TOKENS
    assert t1.interaction_map() == {
        ("doc_accounts_opening_001", "open_bank_account_4821"): tb.NAMED_PAIR_WEIGHT,
        ("doc_cards_closing_001", "close_card_7730"): tb.NAMED_PAIR_WEIGHT,
        ("doc_verification_001", "log_verification"): tb.NAMED_PAIR_WEIGHT}


# ---------------------------------------------------------------- runtime task files

def _required(built):
    return {t.metadata["tau2_id"]: t.gold_context_ids for t in built.tasks}


def test_runtime_task_files_are_read_where_they_exist(tmp_path):
    # the fixture's tasks/task_002.json requires doc_verification_001 too; tasks.json not
    runtime = _fixture_suite()
    assert _required(runtime)["task_002"] == ("doc_cards_closing_001", "doc_verification_001")
    assert "tasks/task_*.json (the files tau2 runs)" in runtime.note
    flat = tmp_path / "tau2"
    shutil.copytree(FIXTURE, flat)
    shutil.rmtree(flat / "tasks")
    legacy = tb.banking_suite(split="all", path=flat)
    assert _required(legacy)["task_002"] == ("doc_cards_closing_001",)
    assert "tasks.json (no tasks/ folder" in legacy.note
    # every other task is the same in both sources
    assert {k: v for k, v in _required(runtime).items() if k != "task_002"} == \
        {k: v for k, v in _required(legacy).items() if k != "task_002"}


@pytest.mark.parametrize("content, message", [
    ("[1, 2]", "expected one JSON task object"), ("{not json", "not readable JSON")])
def test_a_bad_runtime_task_file_names_the_file(tmp_path, content, message):
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    bad = folder / "tasks" / "task_003.json"
    bad.write_text(content)
    with pytest.raises(DatasetError, match=message) as info:
        tb.banking_suite(path=folder)
    assert str(info.value).startswith(str(bad))


def test_an_empty_tasks_folder_is_refused(tmp_path):
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    for f in (folder / "tasks").iterdir():
        f.unlink()
    with pytest.raises(DatasetError, match=r"tasks: no task_\*\.json files"):
        tb.banking_suite(path=folder)


def test_the_split_is_the_same_every_time():
    # split_of("task_00N"): 1, 4, 5 train; 2, 3 eval (sha256 of the id, no seed)
    for _ in range(2):
        assert [t.metadata["tau2_id"] for t in _fixture_suite("train").tasks] == [
            "task_001", "task_004", "task_005"]
        assert [t.metadata["tau2_id"] for t in _fixture_suite("eval").tasks] == [
            "task_002", "task_003"]
    assert _fixture_suite("eval").rows_held_out == 3


_TASKS = _fixture_suite().tasks


@settings(max_examples=25, deadline=None)
@given(st.integers(0, len(_TASKS) - 1), st.data())
def test_router_views_carry_no_gold_pairs(index, data):
    task = _TASKS[index]
    # any gold pairs a task may carry (a random subset of the named pairs of its gold)
    named = [(c, t) for (c, t) in task.interaction_map()
             if c in task.gold_context_ids and t in task.gold_tool_ids]
    chosen = data.draw(st.lists(st.sampled_from(named), unique=True) if named else st.just([]))
    task = task.model_copy(update={"gold_pairs": tuple(
        GoldPair(context_id=c, tool_id=t) for c, t in chosen)})
    view = task.router_view()
    dumped = json.loads(view.model_dump_json())
    assert not {"gold_pairs", "gold_context_ids", "gold_tool_ids", "verifier",
                "metadata"} & set(dumped)
    assert "context_id" not in json.dumps(dumped)  # no GoldPair anywhere inside


# ---------------------------------------------------------------- verifier and metric

@pytest.mark.parametrize("contexts, tools, success, covered", [
    # both gold tools, each with its naming document: success and every pair covered
    (("doc_accounts_opening_001", "doc_verification_001"),
     ("log_verification", "open_bank_account_4821"), True, True),
    # the tools without the documents that make them right
    ((), ("log_verification", "open_bank_account_4821"), False, False),
    # one pair's document missing
    (("doc_accounts_opening_001",), ("log_verification", "open_bank_account_4821"), False, False),
    # the documents without a gold tool
    (("doc_accounts_opening_001", "doc_verification_001"), ("open_bank_account_4821",),
     False, False),
])
def test_tools_with_documents_verifier(contexts, tools, success, covered):
    task = _fixture_suite().tasks[0]
    assert task.task_id == "tau2-banking-task_001"
    outcome = verify(task, ExecutionResult(context_ids=contexts, tool_ids=tools))
    assert outcome.success is success
    pairs = [(p.context_id, p.tool_id) for p in task.gold_pairs]
    assert pair_coverage(contexts, tools, task.gold_context_ids, task.gold_tool_ids,
                         pairs) is covered


# ---------------------------------------------------------------- missing data

@pytest.mark.parametrize("remove, expected", [
    (None, None), (("tasks", "tasks.json"), "tasks.json"), (("documents",), "documents"),
    (("tools.py",), "tools.py")])
def test_missing_data_is_one_line_naming_the_path(tmp_path, remove, expected):
    folder = tmp_path / "tau2"
    if remove is not None:
        shutil.copytree(FIXTURE, folder)
        for name in remove:
            target = folder / name
            shutil.rmtree(target) if target.is_dir() else target.unlink()
    expected = folder if expected is None else folder / expected
    with pytest.raises(DatasetError) as info:
        tb.banking_suite(path=folder)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(expected))


def test_unavailable_without_the_variable(monkeypatch):
    monkeypatch.delenv(tb.DATA_ENV, raising=False)
    reason = tb.unavailable_reason()
    assert reason is not None and "\n" not in reason
    assert tb.DATA_ENV in reason and "sierra-research/tau2-bench" in reason
    from flows.plan import default_suites, skipped_default_suites

    assert "tau2-banking" not in default_suites()
    assert skipped_default_suites() == {"tau2-banking": reason}


def test_bench_on_a_missing_folder_is_one_line_and_writes_nothing(tmp_path):
    missing = tmp_path / "nowhere"
    warehouse, reports = tmp_path / "wh", tmp_path / "reports"
    junction = Path(sys.executable).parent / "junction"
    done = subprocess.run(
        [str(junction), "bench", "--suite", "tau2-banking", "--strategy", "exact",
         "--tau2-data", str(missing), "--warehouse", str(warehouse), "--reports", str(reports)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    assert lines and str(missing) in lines[-1]
    assert not (warehouse / "traces").exists() and not reports.exists()


# ---------------------------------------------------------------- the shared copy

@needs_tau2
def test_shared_copy_counts():
    tools = tb.load_data(SHARED).tools
    assert len(tools) == 58 and sum(t.discoverable for t in tools) == 44
    names = {t.name for t in tools}
    assert "apply_for_credit_card" not in names  # KnowledgeUserTools
    built = tb.banking_suite(split="all", path=SHARED)
    assert built.rows_loaded == 97 and len(built.tasks[0].contexts) == 698
    assert built.rows_skipped == {}


# ---------------------------------------------------------------- the joint-split verdict

def test_joint_split_verdicts_table():
    from junction.evidence.joint_split import joint_split_verdicts

    # 4 shared tasks: learned_exact succeeds on 3, learned_split on 1 (b=2, c=0);
    # tool recall differences 0.5, 0, 0, 0 (mean 0.125)
    rows = []
    for i, (sa, sb, ra, rb) in enumerate([(1, 0, 1.0, 0.5), (1, 0, 1, 1), (1, 1, 1, 1),
                                          (0, 0, 0, 0)]):
        common = {"suite": "s", "budget_scale": 1.0, "seed": 0, "task_id": f"t{i}",
                  "pair_coverage": None}
        rows.append({**common, "strategy": "learned_exact", "success": bool(sa), "tool_recall": ra})
        rows.append({**common, "strategy": "learned_split", "success": bool(sb), "tool_recall": rb})
    out = {r["measure"]: r for r in joint_split_verdicts(rows)}
    assert sorted(out) == ["success", "tool_recall"]  # pair coverage undefined throughout
    assert out["success"]["difference"] == 0.5 and out["success"]["test"] == "mcnemar"
    assert out["success"]["p_value"] == 0.5  # exact McNemar: 2 discordant, both one way
    assert out["tool_recall"]["difference"] == 0.125 and out["tool_recall"]["test"] == "wilcoxon"
    assert out["success"]["tasks_needed"] > 4  # 4 tasks cannot give ±15 points


# ---------------------------------------------------------------- folders a user gets wrong

def test_an_empty_documents_folder_is_refused_before_any_run(tmp_path, monkeypatch):
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    for f in (folder / "documents").iterdir():
        f.unlink()
    monkeypatch.setenv(tb.DATA_ENV, str(folder))
    reason = tb.unavailable_reason()  # what the plan checks before anything starts
    assert reason == f"{folder / 'documents'}: no document files (*.json)"


def test_a_task_with_an_unknown_document_is_one_warning_and_no_task_is_an_error(tmp_path):
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    (folder / "documents" / "doc_cards_rewards_001.json").unlink()  # tasks 003 and 005
    with pytest.warns(UserWarning) as caught:
        built = tb.banking_suite(split="all", path=folder)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all("doc_cards_rewards_001" in m for m in messages)
    assert any("task task_003 left out" in m for m in messages)
    assert built.rows_skipped == {"no_instructions": 1, "unknown_required_document": 2}
    for f in (folder / "tasks").iterdir():  # every task now names a missing document
        raw = json.loads(f.read_text())
        raw["required_documents"] = ["doc_gone_001"]
        f.write_text(json.dumps(raw))
    with pytest.warns(UserWarning), pytest.raises(DatasetError, match="no task could be loaded"):
        tb.banking_suite(split="all", path=folder)


def test_a_folder_whose_every_task_is_skipped_is_refused_before_prefect(tmp_path):
    # before: the run started Prefect's server and failed about 18 s later
    folder = tmp_path / "tau2"
    shutil.copytree(FIXTURE, folder)
    for f in (folder / "tasks").iterdir():
        raw = json.loads(f.read_text())
        raw["required_documents"] = ["doc_gone_001"]
        f.write_text(json.dumps(raw))
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), JUNCTION_STATE_DIR=str(tmp_path / "st"))
    junction = Path(sys.executable).parent / "junction"
    done = subprocess.run(
        [str(junction), "bench", "--suite", "tau2-banking", "--strategy", "exact",
         "--tau2-data", str(folder), "--warehouse", str(tmp_path / "wh"),
         "--reports", str(tmp_path / "rep")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"error: {folder / 'tasks'}: no task could be loaded (skipped: no_instructions 1, "
        "unknown_required_document 5)"], done.stderr
    assert not list((tmp_path / "prefect").rglob("*.db"))  # no server was started
    assert not (tmp_path / "wh" / "traces").exists()
