"""Shared pytest fixtures: one loaded judge model and one Prefect test harness per session.

Under ``make test`` each pytest-xdist worker is a session of its own (two workers: two
loads of the model, two harnesses); ``--dist loadfile`` keeps a file on one worker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import pytest  # noqa: E402

from flows.environment import configure_prefect_env  # noqa: E402

configure_prefect_env(logging_level="WARNING")

_MODEL_FIXTURES = {"judge", "agent_model", "default_tokenizer"}
_FLOW_FIXTURES = {"prefect_harness", "cli_env", "installed"}


def pytest_collection_modifyitems(config, items):
    """Mark by what a test uses, so ``make test-fast`` (``-m "not model and not flow and not
    slow"``) can leave the expensive parts out: a test using a loaded model is ``model``,
    one using the Prefect harness, the CLI subprocess environment or the installed wheel is
    ``flow``; ``slow`` is set by hand on the few pure tests that take tens of seconds."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & _MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if used & _FLOW_FIXTURES:
            item.add_marker(pytest.mark.flow)


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test harness (temporary server and database) for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
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
    from junction.agent.llm import LlamaAgent
    from junction.models import embedded_model_path, file_sha256

    path = embedded_model_path()
    return LlamaAgent(path, file_sha256(path))


@pytest.fixture(scope="session")
def default_tokenizer():
    """``text -> token ids`` of the default model's own tokenizer, loaded vocab-only (no
    weights) once per session (the embedded Qwen2.5 GGUF; ``bench/token_prices.py``)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed; run `make setup`")
    from llama_cpp import Llama

    from junction.models import embedded_model_path

    llm = Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
    return lambda text: llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
