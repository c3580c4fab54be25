"""Hostile input: malformed suite files are refused whole, with a clear error, and nothing
is written."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from junction_datasets.jsonl import load_suite_file
from junction_datasets.toy import synthetic_suite

from junction.errors import DatasetError
from junction.resources import MAX_TEXT_CHARS

VALID = [t.model_dump(mode="json") for t in synthetic_suite(seed=5, size=3, suite="mine")]


def _write(path, rows, raw_lines=()):
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
        for line in raw_lines:
            handle.write(line + "\n")


def test_valid_file_loads(tmp_path):
    _write(tmp_path / "ok.jsonl", VALID)
    built = load_suite_file(tmp_path / "ok.jsonl")
    assert [t.task_id for t in built.tasks] == [r["task_id"] for r in VALID]


def _drop_field(task, data):
    key = data.draw(st.sampled_from(["task_id", "suite", "objective", "verifier"]))
    del task[key]
    return key


def _resource_field_drop(task, data):
    # a cost left out is computed (datasets.jsonl.price_missing_costs), so it is no fault;
    # a tool without the description its cost is computed from is
    kind = data.draw(st.sampled_from(["contexts", "tools"]))
    key = data.draw(st.sampled_from(["id"] if kind == "contexts" else ["id", "description"]))
    del task[kind][0][key]
    return key


def _duplicate_id(task, data):
    task["contexts"].append(copy.deepcopy(task["contexts"][0]))
    return "duplicate resource id"


def _bad_number(task, data):
    where = data.draw(st.sampled_from(["token_cost", "latency", "unary", "budget"]))
    value = data.draw(st.sampled_from([-1, -1e9]))
    if where == "token_cost":
        task["contexts"][0]["token_cost"] = value
    elif where == "latency":
        task["tools"][0]["estimated_latency_ms"] = value
    elif where == "unary":
        task["unary"]["nope-id"] = 1.0
    else:
        task["budget"]["max_tokens"] = value
    return None


def _huge_text(task, data):
    task["contexts"][0]["content"] = "x" * (MAX_TEXT_CHARS + 1)
    return "limit is"


def _bad_id_text(task, data):
    value = data.draw(st.sampled_from(["", "   ", "a\x00b", "tab\there", "x" * 600]))
    task["tools"][0]["id"] = value
    return "id"


def _wrong_type(task, data):
    task["contexts"] = data.draw(st.sampled_from(["not a list", 5, {"a": 1}]))
    return "contexts"


MUTATIONS = [_drop_field, _resource_field_drop, _duplicate_id, _bad_number, _huge_text,
             _bad_id_text, _wrong_type]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=st.data(), line=st.integers(0, 2))
def test_malformed_task_is_refused_naming_file_and_line(tmp_path, data, line):
    rows = copy.deepcopy(VALID)
    mutation = data.draw(st.sampled_from(MUTATIONS))
    expected = mutation(rows[line], data)
    path = tmp_path / "bad.jsonl"
    _write(path, rows)
    with pytest.raises(DatasetError) as info:
        load_suite_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line + 1}: ")
    if expected:
        assert expected in message


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        ('{"task_id": "a", "objective": NaN}', "non-finite number NaN"),
        ('{"task_id": "a", "objective": Infinity}', "non-finite number Infinity"),
        ("[1, 2]", "expected a JSON object"),
        ("{broken", "not valid JSON"),
        ('{"task_id": "\\ud800", "suite": "mine"}', "not valid Unicode text"),
    ],
)
def test_raw_lines_are_refused(tmp_path, raw, needle):
    path = tmp_path / "raw.jsonl"
    _write(path, VALID[:1], [raw])
    with pytest.raises(DatasetError, match=needle):
        load_suite_file(path)


def test_duplicate_task_and_mixed_suites_are_refused(tmp_path):
    _write(tmp_path / "dup.jsonl", [VALID[0], VALID[0]])
    with pytest.raises(DatasetError, match=r"duplicate task id .* \(first on line 1\)"):
        load_suite_file(tmp_path / "dup.jsonl")
    other = {**VALID[1], "suite": "other"}
    _write(tmp_path / "mixed.jsonl", [VALID[0], other])
    with pytest.raises(DatasetError, match="suite 'other' differs"):
        load_suite_file(tmp_path / "mixed.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match="no tasks"):
        load_suite_file(tmp_path / "empty.jsonl")


@pytest.mark.flow
def test_flow_writes_nothing_for_a_malformed_suite(prefect_harness, tmp_path):
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    rows = copy.deepcopy(VALID)
    rows[2]["contexts"][0]["token_cost"] = -1
    _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DatasetError, match=r"bad.jsonl:3: .*token_cost"):
        benchmark(RunPlan.build(suites=["coupling"], suite_files=[str(tmp_path / "bad.jsonl")],
                                strategies=["exact"], output_root=str(tmp_path / "wh"),
                                reports_root=str(tmp_path / "reports")))
    assert not (tmp_path / "wh").exists()
    assert not (tmp_path / "reports").exists()
