"""Caches are derived data: a corrupt sqlite cache is set aside with one warning and the run
goes on; a cache that cannot be written is one error line before any work starts."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from junction.agent.generations import AGENT_CACHE_NAME, AgentCache, Generation
from junction.dense import DENSE_CACHE_NAME
from junction.judge.cache import ScoreCache
from junction.judge.errors import JudgeError
from junction.judge.session import SCORE_CACHE_NAME
from junction.sqlite_cache import CACHE_FILES, CacheError, check_cache, check_caches

ROOT = Path(__file__).resolve().parent.parent


def _filled_cache(path: Path, rows: int = 2000) -> None:
    """A score cache of ``rows`` rows at ``path``, every page in the main file (made beside
    it and copied, so this process has not opened, and so checked, ``path`` itself)."""
    source = path.with_name(f"source-{path.name}")
    cache = ScoreCache(source)
    cache.put_many([(f"k{i:05d}", "m", "i", float(i)) for i in range(rows)])
    with sqlite3.connect(source) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(source, path)


def _truncate(path: Path) -> None:
    os.truncate(path, min(8192, path.stat().st_size // 2))  # the replayed report's 8 KB


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 80)  # "file is not a database"


def _zero_header(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.write(b"\0" * 100)


def _scribble_a_page(path: Path) -> None:
    with open(path, "r+b") as handle:  # a b-tree page in the middle: quick_check finds it
        handle.seek(5 * 4096 + 16)
        handle.write(b"\xff" * 2048)


def test_the_registry_names_every_cache_the_library_opens():
    assert set(CACHE_FILES) == {SCORE_CACHE_NAME, AGENT_CACHE_NAME, DENSE_CACHE_NAME}
    literals = set()
    for path in [*(ROOT / "junction").rglob("*.py"), *(ROOT / "flows").rglob("*.py")]:
        literals |= set(re.findall(r"[\"']([\w.-]+\.sqlite)[\"']", path.read_text()))
    assert literals <= set(CACHE_FILES), literals - set(CACHE_FILES)


def test_a_sound_cache_is_left_alone(tmp_path):
    _filled_cache(tmp_path / "s.sqlite", rows=50)
    (tmp_path / "empty.sqlite").write_bytes(b"")  # a 0-byte file is an empty database
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_cache(tmp_path / "s.sqlite") is None
        assert check_cache(tmp_path / "empty.sqlite") is None
        assert check_cache(tmp_path / "missing.sqlite") is None
    assert len(ScoreCache(tmp_path / "s.sqlite")) == 50
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name) == []


@pytest.mark.parametrize("damage", [_truncate, _garbage, _zero_header, _scribble_a_page],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_corrupt_cache_is_set_aside_with_one_warning(tmp_path, damage):
    path = tmp_path / "judge_scores.sqlite"
    _filled_cache(path)
    damage(path)
    before = path.read_bytes()
    with pytest.warns(UserWarning) as caught:
        aside = check_cache(path, "judge score cache")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "\n" not in message and str(path) in message and str(aside) in message
    assert message.startswith(f"the judge score cache {path} was corrupt (")
    assert re.fullmatch(r"judge_scores\.sqlite\.corrupt-\d{8}T\d{6}Z", aside.name)
    assert aside.read_bytes() == before and not path.exists()
    fresh = ScoreCache(path)  # a fresh cache in its place, and the work goes on
    fresh.put_many([("k", "m", "i", 1.5)])
    assert fresh.get_many(["k"]) == {"k": 1.5}


def test_the_wal_goes_aside_with_its_database(tmp_path):
    path = tmp_path / "agent_cache.sqlite"
    _garbage(path)
    Path(f"{path}-wal").write_bytes(b"a log that belongs to the damaged file")
    with pytest.warns(UserWarning):
        aside = check_cache(path, "agent cache")
    assert Path(f"{aside}-wal").read_bytes() == b"a log that belongs to the damaged file"
    assert not Path(f"{path}-wal").exists()
    cache = AgentCache(path)
    cache.put("k", "m", "p", "{}", Generation("text", 1, 1))
    assert cache.get("k").text == "text"


def test_opening_a_corrupt_cache_sets_it_aside_too(tmp_path):
    # the path a judge unit or `junction admit` takes when no check ran before
    path = tmp_path / "scores.sqlite"
    _filled_cache(path)
    _truncate(path)
    with pytest.warns(UserWarning, match="was corrupt"):
        cache = ScoreCache(path)
    assert len(cache) == 0
    assert [p.name.split(".corrupt-")[0] for p in tmp_path.glob("*.corrupt-*Z")] == [
        "scores.sqlite"]


def test_two_corrupt_files_in_one_second_get_two_names(tmp_path):
    names = set()
    for _ in range(2):
        _garbage(tmp_path / "c.sqlite")
        with pytest.warns(UserWarning):
            names.add(check_cache(tmp_path / "c.sqlite").name)
    assert len(names) == 2


@pytest.mark.parametrize("layout, reason", [
    ("folder is a file", "is not a folder"),
    ("cache is a folder", "is not a file"),
])
def test_a_cache_that_cannot_be_written_is_one_line(tmp_path, layout, reason):
    if layout == "folder is a file":
        (tmp_path / "state").write_text("not a folder")
    else:
        (tmp_path / "state" / SCORE_CACHE_NAME).mkdir(parents=True)
    with pytest.raises(CacheError) as caught:
        check_caches(tmp_path / "state")
    message = str(caught.value)
    assert "\n" not in message and reason in message
    assert str(tmp_path / "state" / SCORE_CACHE_NAME) in message
    with pytest.raises(JudgeError, match=re.escape(reason)):  # the cache's own error type
        ScoreCache(tmp_path / "state" / SCORE_CACHE_NAME)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_cache_is_one_line(tmp_path):
    _filled_cache(tmp_path / "judge_scores.sqlite", rows=5)
    os.chmod(tmp_path / "judge_scores.sqlite", 0o444)
    with pytest.raises(CacheError, match="cannot be written"):
        check_caches(tmp_path)


def test_the_bench_command_checks_caches_before_any_work(tmp_path):
    # an unwritable state folder: one line, exit 1, before Prefect or any unit starts
    (tmp_path / "state").write_text("a file where the state folder should be")
    env = {**os.environ, "JUNCTION_STATE_DIR": str(tmp_path / "state"),
           "PREFECT_HOME": str(tmp_path / "prefect"),
           "JUNCTION_WAREHOUSE": str(tmp_path / "wh"), "JUNCTION_REPORTS": str(tmp_path / "rep")}
    env.pop("PREFECT_API_URL", None)
    junction = shutil.which("junction", path=os.path.dirname(sys.executable))
    result = subprocess.run([junction, "bench", "--suite", "coupling", "--strategy", "exact"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    # the state folder itself is refused first, naming the variable (issue 63, item 9)
    assert result.stderr.count("\n") == 1, result.stderr
    assert "JUNCTION_STATE_DIR=" in result.stderr and "is a file" in result.stderr
    assert not (tmp_path / "wh" / "traces").exists()


@pytest.mark.flow
@pytest.mark.model
def test_a_bench_over_corrupt_caches_warns_once_each_and_matches_a_clean_run(tmp_path,
                                                                            prefect_harness):
    # the replayed report: the judge fills its score cache in a clean run; then the score
    # cache is truncated (to half, as the report's was to 8 KB) and the agent cache is
    # garbage, and the same bench passes with one warning line per cache, both set aside,
    # and the same metrics.json. The judge is subtask_admission on one bfcl-subtasks task:
    # it opens the same score cache as judge_admission (judge_session) and scores 6 pairs,
    # where judge_admission first calibrates its floor on 8 synthetic tasks (about 70
    # pairs per run, each run scoring afresh). Both runs report to the session's Prefect
    # server instead of starting one each (caches are checked before Prefect starts).
    from junction.models import embedded_model_path
    from tests.helpers import on_session_server

    state = tmp_path / "state"
    state.mkdir()
    (state / "models").symlink_to(embedded_model_path().parent)
    env = on_session_server({
        **os.environ, "JUNCTION_STATE_DIR": str(state),
        "JUNCTION_WAREHOUSE": str(tmp_path / "wh"), "JUNCTION_REPORTS": str(tmp_path / "rep")})
    env.pop("PREFECT_HOME", None)
    junction = shutil.which("junction", path=os.path.dirname(sys.executable))
    args = [junction, "bench", "--suite", "bfcl-subtasks", "--size", "1",
            "--strategy", "subtask_admission", "--strategy", "exact", "--budget-scale", "1"]

    def bench(run_id: str) -> subprocess.CompletedProcess:
        out = subprocess.run([*args, "--run-id", run_id], env=env, capture_output=True,
                             text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        return out

    clean = bench("clean")
    assert "warning:" not in clean.stderr
    with sqlite3.connect(state / SCORE_CACHE_NAME) as db:  # every row into the main file
        assert db.execute("select count(*) from judge_scores").fetchone()[0] > 0
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _truncate(state / SCORE_CACHE_NAME)
    _garbage(state / AGENT_CACHE_NAME)
    damaged = {name: (state / name).read_bytes() for name in (SCORE_CACHE_NAME,
                                                               AGENT_CACHE_NAME)}
    again = bench("again")
    warned = [line for line in again.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 2, again.stderr[-3000:]
    assert "Traceback" not in again.stderr
    for name, line in zip(damaged, warned, strict=False):
        aside = next(state.glob(f"{name}.corrupt-*[0-9]Z"))
        assert aside.read_bytes() == damaged[name]
        assert f"{state / name} was corrupt" in line and str(aside) in line
    with sqlite3.connect(state / SCORE_CACHE_NAME) as db:  # scored afresh
        assert db.execute("select count(*) from judge_scores").fetchone()[0] > 0
    assert (tmp_path / "rep" / "clean" / "metrics.json").read_bytes() == \
        (tmp_path / "rep" / "again" / "metrics.json").read_bytes()


@pytest.mark.model
def test_the_agent_over_a_corrupt_cache_generates_afresh_and_caches_again(tmp_path):
    # the embedded agent through an agent cache whose header was zeroed: set aside with one
    # warning, generated afresh, stored, and the next call is a hit on the fresh file.
    # (Two generations of one prompt in one process are not compared: llama.cpp reuses the
    # previous prompt's KV prefix, which can change a greedy answer; the bench above
    # compares runs, each in its own process.) The answer is capped at 16 tokens: its
    # length is not the point here.
    from junction_datasets.bfcl import multiple_suite

    from junction.agent.llm import AgentConfig, LLMExecutor
    from tests.helpers import embedded_agent

    agent_model = embedded_agent(AgentConfig(max_tokens=16))

    task = multiple_suite(size=1).tasks[0]
    tool = task.tools[0].id
    source = tmp_path / "source.sqlite"
    AgentCache(source).put("k", "m", "p", "{}", Generation("old", 1, 1))
    with sqlite3.connect(source) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damaged = tmp_path / AGENT_CACHE_NAME
    shutil.copyfile(source, damaged)
    _zero_header(damaged)
    with pytest.warns(UserWarning, match="agent cache .* was corrupt") as caught:
        cache = AgentCache(damaged)
    assert len(caught) == 1 and len(cache) == 0
    executor = LLMExecutor(agent_model, cache)
    first = executor.execute(task, (), (tool,))
    second = executor.execute(task, (), (tool,))
    assert not first.cached and second.cached and len(cache) == 1
    assert (second.text, second.tool_calls) == (first.text, first.tool_calls)
