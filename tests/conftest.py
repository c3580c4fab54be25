"""Shared pytest fixtures: one loaded judge model and one Prefect test harness per session."""

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
