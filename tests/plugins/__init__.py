"""Plug-in packages the tests install as a user would, and the helpers that install them.

``policy_desk/`` is docs/extending.md's example plug-in, a real package: its
``pyproject.toml`` (one ``junction.plugins`` entry point), its module (a suite with its own
verifier kind, agent grader and data folder, and a strategy) and ``data/``, the folder the
suite reads (``--data policy-desk=PATH``). ``install`` puts it into a folder with pip, as
``pip install --target`` leaves it (offline: no index, no build isolation; the project's dev
dependencies hold setuptools); ``present`` imports it into this process for a test and
takes its records out again after.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

POLICY_DESK = Path(__file__).resolve().parent / "policy_desk"
"""The example plug-in's package folder (pyproject.toml, policy_desk.py, data/)."""
POLICY_DESK_DATA = POLICY_DESK / "data"
"""The folder its suite reads."""
POLICY_DESK_RECORDS = {"suite": "policy-desk", "strategy": "cheapest",
                       "verifier kind": "page_and_tool", "agent grader": "called_tool"}
"""What the plug-in registers: catalog kind -> name."""


def install(package: Path, site: Path) -> Path:
    """``pip install --no-deps --no-index --no-build-isolation --target site`` of a copy of
    ``package`` (the build's ``build/`` and ``*.egg-info`` land in the copy, not in the
    repository). Returns ``site``, the folder to put first on ``PYTHONPATH``; a folder that
    already holds the install (``.installed``) is reused. Raises ``AssertionError`` with
    pip's output when pip fails."""
    if (site / ".installed").exists():
        return site
    source = site.parent / f"{package.name}-source"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(package, source, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", "--quiet", "--target",
         str(site), str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout, done.stderr)
    (site / ".installed").write_text("")
    return site


def policy_desk_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plug-in installed once per test process (``install``), under the
    session's temporary folder."""
    return install(POLICY_DESK, tmp_path_factory.getbasetemp() / "policy-desk-site")


@contextmanager
def present(site: Path) -> Iterator[object]:
    """The plug-in installed in ``site`` imported into this process (its records
    registered in every catalog), as the catalogs' entry-point loading imports it; its
    module and its records are removed on exit. The catalogs load their own entry points
    first, so this process's plug-in list is the one it had."""
    from junction.agent.graders import AGENT_GRADERS
    from junction.registry import Catalog
    from junction.strategies import STRATEGIES
    from junction.suites import SUITES
    from junction.verifiers import VERIFIERS

    catalogs: dict[str, Catalog[Any]] = {
        "suite": SUITES, "strategy": STRATEGIES, "verifier kind": VERIFIERS,
        "agent grader": AGENT_GRADERS}
    for catalog in catalogs.values():
        catalog.names()  # entry points loaded now, before the site is on the path
    sys.path.insert(0, str(site))
    try:
        import policy_desk  # type: ignore[import-not-found]  # installed in site, above

        yield policy_desk
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("policy_desk", None)
        for kind, name in POLICY_DESK_RECORDS.items():
            catalogs[kind].pop(name, None)
