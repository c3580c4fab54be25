"""Shared pytest fixtures: one loaded judge model and one Prefect test harness per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


import pytest  # noqa: E402

from junction.environment import configure_prefect_env  # noqa: E402

configure_prefect_env(logging_level="WARNING")


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect test harness (temporary server and database) for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield
