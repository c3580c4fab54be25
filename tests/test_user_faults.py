"""Faults a user causes at the command line: an empty query, a binary file or argument, a
page that would write escape sequences to the terminal, a query whose answer holds NaN.
Each is one line and exit 1 (or, for output, escaped and valid), never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli_text import json_text, terminal_safe
from junction.text import binary_offset
from tests.helpers import junction_in_process

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory):
    """A user's shell: temporary warehouse, reports and state, no Prefect server."""
    base = tmp_path_factory.mktemp("faults")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "warehouse"), JUNCTION_REPORTS=str(base / "reports"),
               JUNCTION_STATE_DIR=str(base / "state"), COLUMNS="200")
    return env


def run(env, *args: str) -> subprocess.CompletedProcess:
    """``junction ARGS``: every command here stops before any work (``junction_in_process``)."""
    return junction_in_process(env, *args)


def _one_line(result: subprocess.CompletedProcess, message: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr[-2000:])
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert message in result.stderr, result.stderr


# ------------------------------------------------------------------------- empty queries

@pytest.mark.parametrize("query", ["", "   ", "\t\n"], ids=["empty", "spaces", "whitespace"])
@pytest.mark.parametrize("command, message", [
    (["judge", "score", "{q}", "Paris is the capital of France.", "Berlin is."],
     "QUERY must not be empty"),
    (["admit", "{page}", "--query", "{q}"], "--query must not be empty"),
    (["admit", "{page}", "--query", "q", "--exploit", "--original", "{q}"],
     "--exploit needs --original TASK"),
    (["sql", "{q}"], "QUERY must not be empty"),
], ids=["judge-score", "admit", "admit-original", "sql"])
def test_every_command_taking_a_query_refuses_an_empty_one(cli_env, tmp_path, query, command,
                                                          message):
    page = tmp_path / "p.html"
    page.write_text("<p>Mileage is reimbursed at 0.50 USD per km.</p>", encoding="utf-8")
    args = [a.format(q=query, page=page) for a in command]
    _one_line(run(cli_env, *args), message)


def test_a_query_of_comments_only_is_one_line(cli_env):
    _one_line(run(cli_env, "sql", "/* nothing */ ;"), "the query holds no SQL statement")


# ------------------------------------------------------------------------- binary input

def test_binary_offsets():
    # (text, UTF-8 byte offset or None): a NUL anywhere; controls over half the visible text
    table = [("plain text", None), ("ab\0c", 2), ("é\0", 2), ("\x1b[31mred\x1b[0m", None),
             ("\x01\x02\x03 abc", None), ("x\x01\x02\x03\x04", 1), ("\t\n\r\f", None), ("", None)]
    assert [binary_offset(text) for text, _ in table] == [offset for _, offset in table]


@pytest.mark.parametrize("content, offset", [
    (b"\0" * 100_000, 0),  # the replayed report: "1 chunks, 33334 tokens", rc 0
    (bytes(range(1, 32)) * 256, 0),  # ASCII control bytes: "admitted" and printed verbatim
    (b"<html><body><p>fine so far</p>\0\0\0</body></html>", 30),
])
def test_admit_refuses_a_binary_page(cli_env, tmp_path, content, offset):
    page = tmp_path / "blob.html"
    page.write_bytes(content)
    _one_line(run(cli_env, "admit", str(page), "--query", "what is it?"),
              f"{page}: binary content at byte {offset}")
    piped = subprocess.run([JUNCTION, "admit", "-", "--query", "what is it?"], cwd=ROOT,
                           env=cli_env, input=content, capture_output=True, timeout=300)
    assert piped.returncode == 1
    assert piped.stderr.decode() == (f"error: standard input: binary content at byte "
                                     f"{offset}; expected text\n")


def test_judge_score_refuses_a_binary_document(cli_env):
    _one_line(run(cli_env, "judge", "score", "q", "a document", "\x01\x02\x03\x04"),
              "DOCUMENT 2: binary content at byte 0")


def _suite_line(**context) -> str:
    from junction_datasets.toy import synthetic_suite

    task = synthetic_suite(seed=5, size=1, suite="mine")[0].model_dump(mode="json")
    task["contexts"][0].update(context)
    if context.get("format") == "html":  # a page is priced at load
        task["contexts"][0] = {k: task["contexts"][0][k] for k in ("id", "format", "content")}
    return json.dumps(task)


@pytest.mark.parametrize("write, message", [
    (lambda p: p.write_bytes(b"\0" * 4096), ":1: binary content at byte 0"),
    (lambda p: p.write_bytes(bytes(range(1, 32)) * 100), ":1: binary content at byte 0"),
    (lambda p: p.write_text(_suite_line() + "\n" + "\0" * 10 + "\n"),
     ":2: binary content at byte"),
    (lambda p: p.write_text(_suite_line(content="fine\u0000hidden") + "\n"),
     "task 'mine-5-00000': contexts[0].content: binary content at byte 4"),
    (lambda p: p.write_text(_suite_line(format="html", content="<p>\u0000</p>") + "\n"),
     "contexts[0].content: binary content at byte 3"),
], ids=["nul-file", "control-file", "nul-line", "escaped-nul", "html-page"])
def test_a_binary_suite_file_is_refused_in_one_line(cli_env, tmp_path, write, message):
    path = tmp_path / "suite.jsonl"
    write(path)
    result = run(cli_env, "bench", "--suite-file", str(path), "--strategy", "exact")
    _one_line(result, message)
    assert str(path) in result.stderr
    assert not (Path(cli_env["JUNCTION_WAREHOUSE"]) / "traces").exists()


# ------------------------------------------------------------------------- terminal

def test_terminal_safe_escapes_controls_and_overrides():
    # ESC (C0), CSI (C1), DEL, a bidi override and a CR are escaped; tab, newline and
    # every printable character of any script stay
    text = "a\x1b[2Jb\x9b31mc\x7fd\u202ee\rf\tg\nh é 日本"
    assert terminal_safe(text) == "a\\x1b[2Jb\\x9b31mc\\x7fd\\u202ee\\x0df\tg\nh é 日本"
    assert json.loads(json_text({"t": text})) == {"t": text}  # still the same JSON value
    assert not any(ch in json_text({"t": text}) for ch in "\x1b\x9b\x7f\u202e\r")


@pytest.mark.model
def test_admit_prints_a_page_with_escape_sequences_escaped(judge, tmp_path):
    # in-process (the session's judge); the page has a few ESC sequences (not binary)
    from typer.testing import CliRunner

    from flows.cli import app

    page = tmp_path / "ansi.html"
    page.write_text("<h1>Rates\x1b[2J</h1><p>\x1b[31mMileage\x1b[0m is reimbursed at 0.50 "
                    "USD per km driven for client work.</p><h1>Leave</h1><p>Unpaid leave "
                    "needs a week's notice to the project lead.</p>", encoding="utf-8")
    args = ["admit", str(page), "--query", "How much is mileage per km?", "--chunk-tokens",
            "20"]
    state = {"JUNCTION_STATE_DIR": str(tmp_path / "state")}
    shown = CliRunner().invoke(app, args, env=state)
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and "\\x1b[31mMileage\\x1b[0m" in shown.stdout
    assert "Rates\\x1b[2J" in shown.stdout
    as_json = CliRunner().invoke(app, [*args, "--json"], env=state)
    assert as_json.exit_code == 0 and "\x1b" not in as_json.stdout
    texts = [a["text"] for a in json.loads(as_json.stdout)["admitted"]]
    assert any("\x1b[31mMileage" in t for t in texts)  # JSON keeps the page's own text


@pytest.fixture(scope="module")
def warehouse(cli_env):
    """The module's warehouse with one run of one unit (``sql`` needs traces to query)."""
    from junction.evidence.store import TraceStore
    from tests.helpers import trace_record

    store = TraceStore(cli_env["JUNCTION_WAREHOUSE"])
    store.write_unit("r1", "s", "exact", "u0", [trace_record()], [])
    return store


def test_tables_escape_controls_and_do_not_read_markup(cli_env, warehouse):
    result = run(cli_env, "sql", "select '[red]x\x1b[2J' as t, 'nan'::double as v")
    assert result.returncode == 0, result.stderr
    assert "[red]x\\x1b[2J" in result.stdout and "\x1b" not in result.stdout


# ------------------------------------------------------------------------- JSON out

def test_sql_json_turns_nan_and_infinity_into_null(cli_env, warehouse):
    result = run(cli_env, "sql", "select 'nan'::double as a, '-inf'::double as b, "
                 "['inf'::double, 1.5::double] as c, {'x': 'nan'::double} as d, 2.5::double as e",
                 "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout, parse_constant=lambda name: pytest.fail(name)) == [
        {"a": None, "b": None, "c": [None, 1.5], "d": {"x": None}, "e": 2.5}]


# ------------------------------------------------------------------------- DuckDB's hint

@pytest.mark.parametrize("query, hint", [
    ("select * from tracs", 'Did you mean "traces"?'),
    ("select strateg from traces", 'Candidate bindings: "strategy"'),
], ids=["table", "column"])
def test_sql_keeps_duckdbs_hint_on_its_one_line(cli_env, warehouse, query, hint):
    # before: only DuckDB's first line, "... does not exist!", without the hint below it
    result = run(cli_env, "sql", query)
    _one_line(result, "error: query failed: ")
    assert hint in result.stderr, result.stderr
    assert "LINE 1" not in result.stderr
