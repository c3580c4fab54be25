"""Shared pytest fixtures: one loaded judge model and one Prefect test harness per session.

Under ``make test`` each pytest-xdist worker is a session of its own (two workers: two
loads of the model, two harnesses); ``--dist loadfile`` keeps a file on one worker."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import os  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from flows.environment import configure_prefect_env  # noqa: E402

configure_prefect_env(logging_level="WARNING")

# Property tests draw the same examples on every run (``derandomize``), so ``make test`` on
# a fresh clone passes or fails the same way twice; HYPOTHESIS_PROFILE=explore draws new
# ones (each test's own @settings still sets its example count), to look for new faults.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

_MODEL_FIXTURES = {"judge", "agent_model", "default_tokenizer"}
_FLOW_FIXTURES = {"prefect_harness", "cli_env", "installed"}


SLOWEST_FILES = ("test_remote_agent.py", "test_cli.py", "test_hardening.py", "test_judge.py",
                 "test_interrupts.py", "test_caches.py", "test_agent.py", "test_faults.py",
                 "test_milp.py", "test_learned.py", "test_user_faults.py", "test_layout.py",
                 "test_scale.py", "test_pages.py", "test_pipeline.py",
                 "test_judge_strategy.py", "test_solver_limits.py", "test_combinatorial.py",
                 "test_dense.py", "test_default_plan.py", "test_crossfit.py",
                 "test_qkp_bounds.py", "test_bfcl.py", "test_text.py")
"""The test files that take longest under ``make test``, slowest first (an order, not
times: the times are in docs/measurement.md, "Test time", and
``bench/perf/suite_profile.py`` measures them again). They are
collected first and, with ``--no-loadscope-reorder`` (the Makefile), handed to the
pytest-xdist workers in this order, then every other file in its usual order: longest
first, so that no long file starts last while the other worker has nothing left (the
longest-processing-time rule, Graham 1969). pytest-xdist's own order is by the number of
tests in a file, which put the remote agent's file, the slowest, near the end. A file missing
here only runs later; nothing is left out. The order is that of each file's summed
``--durations`` (setup, call and teardown of its tests) in one run on two workers."""


def _slowest_first(item) -> int:
    name = item.path.name
    return SLOWEST_FILES.index(name) if name in SLOWEST_FILES else len(SLOWEST_FILES)


def pytest_collection_modifyitems(config, items):
    """Mark by what a test uses, so ``make test-fast`` (``-m "not model and not flow and not
    slow"``) can leave the expensive parts out: a test using a loaded model is ``model``,
    one using the Prefect harness, the CLI subprocess environment or the installed wheel is
    ``flow``; ``slow`` is set by hand on the few pure tests that take tens of seconds.
    Then the slowest files go first (``SLOWEST_FILES``; a stable sort, so the tests of a
    file keep their order)."""
    items.sort(key=_slowest_first)
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & _MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if used & _FLOW_FIXTURES:
            item.add_marker(pytest.mark.flow)


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One Prefect test harness (temporary server and database) for the whole session.

    Prefect's ``prefect_test_harness``, on a copy of the Prefect home's template database
    when one is ready (``flows.server.copy_template``: the copy ``junction bench``'s own
    temporary server starts on), so the harness's server neither migrates a new file nor
    registers block types (its start time: docs/measurement.md, "Test time");
    without a template, the harness migrates its file as before and it becomes the
    template. Like that server, it runs without the services that only record what a run
    did (``flows.server.discarded_database_settings``): its database is discarded with the
    session. The harness names its folder with ``tempfile.mkdtemp`` (Prefect 3.9.1,
    ``prefect.testing.utilities``), which is pointed at a folder of this session's while
    it starts."""
    import contextlib

    import prefect.testing.utilities as harness
    from prefect.settings import temporary_settings

    from flows import server

    folder = tmp_path_factory.mktemp("prefect-harness")
    database = folder / "prefect-test.db"  # the harness's name, in the folder it is given
    with contextlib.ExitStack() as stack:
        template_settings = server.copy_template(database)
        stack.enter_context(temporary_settings(
            updates={**(template_settings or {}), **server.discarded_database_settings()}))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(harness, "mkdtemp", lambda: str(folder))
            stack.enter_context(harness.prefect_test_harness(server_startup_timeout=120))
        if template_settings is None:
            server.save_template(database)
        yield


@pytest.fixture(scope="session")
def judge():
    """One loaded judge (the embedded default model, the strategy's config) for the whole session.

    Skips when llama-cpp-python is not installed (``make setup`` builds it).
    """
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed; run `make setup`")
    from junction.judge import load_judge
    from junction.strategies.judge_admission import STRATEGY_JUDGE_CONFIG

    return load_judge(STRATEGY_JUDGE_CONFIG)


@pytest.fixture(scope="session")
def agent_model():
    """One loaded agent model (the embedded Qwen2.5-Coder-0.5B-Instruct) per session.

    Skips when llama-cpp-python is not installed (``make setup`` builds it).
    """
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed; run `make setup`")
    from tests.helpers import embedded_agent

    return embedded_agent()


@pytest.fixture(scope="session")
def default_tokenizer():
    """``text -> token ids`` of the default model's own tokenizer, loaded vocab-only (no
    weights) once per session (the embedded Qwen2.5 GGUF; ``bench/studies/token_prices.py``)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed; run `make setup`")
    from llama_cpp import Llama

    from junction.models import embedded_model_path

    llm = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    return lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
