"""Helpers that several test modules share, imported by public name
(``from tests.helpers import trace_record``), so no test module imports another.

- ``trace_record``: a valid ``TaskTraceRecord`` with any field overridden;
- ``BFCL_DATA`` and ``needs_data``: the pinned ``bfcl-eval`` package's data folder, and the
  mark that skips a test when it is not installed;
- ``write_bfcl_category``: a hand-made BFCL category file (and its answers) in a folder;
- ``on_session_server``: a subprocess environment that reports to the session's Prefect
  server;
- ``junction_in_process``: ``junction ARGS`` that starts no run (a refusal, a listing, a
  query, a report), run by this process's interpreter rather than a new one;
- ``embedded_agent``: the embedded agent model loaded with a given configuration;
- ``notetaker`` and ``notetaker_one_tool``: BFCL memory's notetaker task, whole, and with
  one tool, whose conversation overflows a small window while the cut prompt stays short;
  ``with_listed_tools``: a BFCL task listing fewer tools.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import io
import json
import os
import shutil
import subprocess
import sys
import traceback
import warnings
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from pathlib import Path

import pytest

from junction.evidence.traces import CandidateRecord, TaskTraceRecord, ToolCallRecord

__all__ = ["BFCL_DATA", "NOTETAKER_WINDOW", "embedded_agent", "junction_in_process", "needs_data",
           "notetaker", "notetaker_one_tool", "on_session_server", "trace_record",
           "with_listed_tools", "write_bfcl_category"]


def trace_record(**overrides) -> TaskTraceRecord:
    """A valid trace row (run r1, suite s, strategy exact, task t1: contexts c1 and c2, tool
    t1; c1 and t1 exposed, 10 + 30 = 40 tokens, one call, success) with ``overrides``."""
    base: dict[str, object] = {
        "run_id": "r1", "suite": "s", "strategy": "exact", "task_id": "t1", "seed": 0,
        "budget_scale": 1.0, "budget_tokens": 100, "budget_tools": None,
        "budget_latency_ms": None, "budget_cost_usd": None,
        "context_candidates": (
            CandidateRecord(resource_id="c1", score=1.0, rank=0, token_cost=10),
            CandidateRecord(resource_id="c2", score=0.5, rank=1, token_cost=20)),
        "tool_candidates": (CandidateRecord(resource_id="t1", score=2.0, rank=0, token_cost=30),),
        "exposed_context_ids": ("c1",), "exposed_tool_ids": ("t1",),
        "context_tokens": 10, "tool_tokens": 30, "tokens_used": 40,
        "unary": 1.0, "interaction": 0.5, "objective": 1.5, "selector": "enumeration",
        "selection_status": "optimal",
        "tool_calls": (ToolCallRecord(index=0, tool_id="t1"),),
        "success": True,
    }
    return TaskTraceRecord.model_validate({**base, **overrides})


try:
    BFCL_DATA: Traversable | None = importlib.resources.files("bfcl_eval") / "data"
except ModuleNotFoundError:  # pragma: no cover - depends on the environment
    BFCL_DATA = None
needs_data = pytest.mark.skipif(BFCL_DATA is None, reason="bfcl-eval is not installed")


def write_bfcl_category(root: Path, name: str, rows: list, answers: list | None) -> None:
    """``root/BFCL_v4_<name>.json`` (one row per line; a str row is written as is, to make a
    malformed line) and, unless ``answers`` is None, ``root/possible_answer/`` beside it."""
    (root / "possible_answer").mkdir(parents=True, exist_ok=True)
    (root / f"BFCL_v4_{name}.json").write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows), encoding="utf-8")
    if answers is not None:
        (root / "possible_answer" / f"BFCL_v4_{name}.json").write_text(
            "\n".join(json.dumps(a) for a in answers), encoding="utf-8")


def embedded_agent(config=None):
    """The embedded agent model (``junction.models.embedded_model_path``) loaded with
    ``config`` (None: ``AgentConfig()``'s defaults)."""
    from junction.agent.llm import AgentConfig, LlamaAgent
    from junction.models import embedded_model_path, file_sha256

    path = embedded_model_path()
    return LlamaAgent(path, file_sha256(path), config or AgentConfig())


def on_session_server(env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``PREFECT_API_URL`` set to the session's Prefect server (the caller holds
    the ``prefect_harness`` fixture, tests/conftest.py): a ``junction bench`` run in a
    subprocess then reports there, as a user's with a configured server, instead of
    starting a temporary server of its own (a few seconds of CPU each), for the tests whose
    subject is not that server's start."""
    from prefect.settings import PREFECT_API_URL

    return {**env, "PREFECT_API_URL": PREFECT_API_URL.value()}


JUNCTION = shutil.which("junction", path=os.path.dirname(sys.executable)) or "junction"
"""The console script of this interpreter's environment (``.venv/bin/junction``)."""


def junction_in_process(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``junction ARGS`` as ``subprocess.run([JUNCTION, *ARGS], env=env, cwd=ROOT,
    capture_output=True, text=True)`` would give it (return code, standard output, standard
    error), run in this process: the console script's entry point (``flows.cli.main``) with
    ``sys.argv``, the environment and the working folder (the checkout) swapped in, its
    output captured, and all three restored afterwards, with the warning filters and
    ``warnings.showwarning``. A new interpreter costs about a second of CPU in imports
    (``flows.plan`` alone half a second); this costs none.

    For commands that start no run: refusals of bad input, listings, queries, reports and
    diffs of finished runs. A run (Prefect, a model, a lock) goes through a process of its
    own, and so does a command reading standard input, a fault at import time (this
    process has imported everything already) or a plug-in installed for the test (entry
    points are read once per process). An exception ``main`` lets through is what a
    process would print: its traceback on standard error, return code 1."""
    from flows.cli import main

    # text streams over bytes, as a process's are (``sys.stdout.buffer``: CSV is written there)
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
                for _ in range(2))
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    code = 0
    try:
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [JUNCTION, *args]
        os.chdir(Path(__file__).resolve().parent.parent)
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:  # sys.exit("message"): printed, status 1
                    print(exc.code, file=sys.stderr)
                    code = 1
            except Exception:  # what the interpreter would print
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
    return subprocess.CompletedProcess([JUNCTION, *args], code, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    # universal newlines, as ``subprocess.run(..., text=True)`` reads a pipe
    return raw.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


NOTETAKER_WINDOW = 768
"""A context window (tokens) that ``notetaker_one_tool``'s whole prompt (about 1,750 tokens)
overflows and that still holds its system prompt, its tool, the question and several turns
(about 460 tokens without a turn, about 55 a turn)."""


def notetaker():
    """BFCL memory's notetaker task: 24 turns of conversation and the whole memory API
    (20 tools, 2,154 tokens) listed, about 3,400 prompt tokens in all."""
    from junction_datasets.bfcl import memory_suite

    return next(t for t in memory_suite(size=None).tasks
                if t.metadata["scenario"] == "notetaker")


def notetaker_one_tool():
    """``notetaker()`` with one tool of its memory API (``core_memory_retrieve``) as its
    tools and listed functions instead of all 20: its conversation overflows
    ``NOTETAKER_WINDOW`` and must be cut, while the cut prompt stays short to evaluate."""
    return with_listed_tools(notetaker(), ("core_memory_retrieve",))


def with_listed_tools(task, keep):
    """A BFCL ``task`` whose tools and listed functions (``metadata["listed_tool_ids"]``,
    what ``bfcl_listed`` exposes) are only the tool ids ``keep``: a shorter prompt where
    the number of tools is not the point."""
    return task.model_copy(update={
        "tools": tuple(t for t in task.tools if t.id in keep),
        "metadata": {**task.metadata, "listed_tool_ids": list(keep)}})


def with_gold_redrawn(task, data):
    """``task`` with its gold tools, documents, pairs, verifier and metadata redrawn by
    Hypothesis's ``data`` (st.data()) from its own candidates: what a no-leak property
    compares a task with (nothing a strategy reads may change)."""
    from hypothesis import strategies as st

    from junction.tasks import GoldPair, VerifierSpec

    docs, tools = [c.id for c in task.contexts], [t.id for t in task.tools]
    gold_t = tuple(data.draw(st.lists(st.sampled_from(tools), max_size=3, unique=True)))
    gold_c = tuple(data.draw(st.lists(st.sampled_from(docs), max_size=3, unique=True)))
    return task.model_copy(update={
        "gold_tool_ids": gold_t, "gold_context_ids": gold_c,
        "gold_pairs": tuple(GoldPair(context_id=c, tool_id=t) for c in gold_c for t in gold_t),
        "verifier": VerifierSpec(kind="tools_exposed"), "metadata": {"x": data.draw(st.text())}})
