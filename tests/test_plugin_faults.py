"""Plug-ins (entry points of ``junction.registry.PLUGINS``) that a user installs: one that
takes a built-in name, one that says it replaces it, one whose import raises, one that names
a missing module, one that names a missing attribute.

Each plug-in is a real installed package: a handwritten ``.dist-info`` (METADATA and
``entry_points.txt``) and its module in a folder of its own, first on ``PYTHONPATH``, as
``pip install --target`` would leave it; ``junction`` runs as a subprocess, as a user runs
it. A plug-in that cannot be used is one line naming its entry point and distribution, exit
1, nothing written; a plug-in that replaces a built-in with ``replace=True`` runs, and the
run records it (run.json's ``plugins``, the report's Run section).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from junction.registry import Catalog, PluginError
from tests.helpers import on_session_server

ROOT = Path(__file__).resolve().parent.parent
JUNCTION = str(Path(sys.executable).parent / "junction")

# The plug-in's "exact": the built-in record with the split baseline's selector in it.
SHADOW = """
from dataclasses import replace

from junction.strategies.catalog import register_strategy, strategy_info

register_strategy(replace(strategy_info("exact"), factory=strategy_info("fixed_split").factory,
                          description="a plug-in's exact"){replace})
"""


def install_plugin(site: Path, value: str, source: str | None = None,
                   module: str = "shadow_plugin", entry_point: str = "shadow",
                   distribution: str = "shadow-plugin") -> Path:
    """A package installed into ``site``: ``module``.py holding ``source`` (none: no module)
    and ``<distribution>-0.1.dist-info`` whose entry point ``entry_point = value`` is in the
    ``junction.plugins`` group. Returns ``site``, the folder to put on PYTHONPATH."""
    site.mkdir(parents=True, exist_ok=True)
    if source is not None:
        (site / f"{module}.py").write_text(source)
    info = site / f"{distribution.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(f"[junction.plugins]\n{entry_point} = {value}\n")
    return site


@pytest.fixture(scope="module")
def base_env(tmp_path_factory):
    """A user's shell: temporary warehouse, reports and state (no Prefect server: a refused
    command never reaches one)."""
    base = tmp_path_factory.mktemp("plugins")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(JUNCTION_WAREHOUSE=str(base / "warehouse"), JUNCTION_REPORTS=str(base / "reports"),
               JUNCTION_STATE_DIR=str(base / "state"), COLUMNS="200")
    return env


def run(env: dict[str, str], site: Path, *args: str) -> subprocess.CompletedProcess:
    """``junction ARGS`` with the package in ``site`` installed (first on PYTHONPATH)."""
    return subprocess.run([JUNCTION, *args], cwd=ROOT, env={**env, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=300)


def files_under(*roots: str) -> dict[str, int]:
    """Every file under the roots (what a command left behind): path -> modification time
    (ns), so a file rewritten in place counts as written."""
    return {str(p): p.stat().st_mtime_ns for r in map(Path, roots) if r.exists()
            for p in r.rglob("*") if p.is_file()}


def one_line(result: subprocess.CompletedProcess, *parts: str) -> str:
    """The one ``error:`` line of a refused command (exit 1, no traceback), holding each of
    ``parts``."""
    assert result.returncode == 1, (result.stdout, result.stderr[-3000:])
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), \
        result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    for part in parts:
        assert part in result.stderr, result.stderr
    return result.stderr


WIDGETS: Catalog[str] | None = None
"""The catalog the in-process plug-ins below register into (set by their test)."""

PLUGIN = "plug-in 'shadow' (distribution shadow-plugin 0.1, entry point shadow = "


@pytest.fixture(scope="module")
def finished_run(base_env, tmp_path_factory, prefect_harness):
    """One small run, on the session's Prefect server, with a plug-in that replaces
    ``exact`` on purpose (``replace=True``): its run id."""
    site = install_plugin(tmp_path_factory.mktemp("site-replace"), "shadow_plugin",
                          SHADOW.format(replace=", replace=True"))
    done = run(on_session_server(base_env), site, "bench", "--suite", "coupling", "--strategy",
               "exact", "--budget-scale", "1", "--agent-size", "0", "--run-id", "with-plugin")
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    return "with-plugin"


# ------------------------------------------------------------ a plug-in takes a built-in name

@pytest.mark.parametrize("command", [
    ["suites"],
    ["bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1"],
], ids=["suites", "bench"])
def test_a_plugin_that_takes_a_built_in_name_is_refused(base_env, tmp_path, command):
    site = install_plugin(tmp_path / "site", "shadow_plugin", SHADOW.format(replace=""))
    before = files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"])
    line = one_line(run(base_env, site, *command),
                    PLUGIN + "shadow_plugin) tried to take strategy 'exact', a built-in",
                    "replace=True", f"pip uninstall shadow-plugin (installed under {site})")
    assert "which the run then records" in line
    # nothing ran, nothing was written: no run record, no lock, no report
    assert files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"]) == before


def test_a_plugin_that_says_replace_runs_and_the_run_records_it(base_env, finished_run):
    meta = json.loads((Path(base_env["JUNCTION_WAREHOUSE"]) / "runs"
                       / f"{finished_run}.json").read_text())
    assert meta["status"] == "completed"
    assert meta["plugins"] == [{"entry_point": "shadow", "value": "shadow_plugin",
                                "distribution": "shadow-plugin", "version": "0.1",
                                "replaces": ["strategy 'exact'"]}]
    report = (Path(base_env["JUNCTION_REPORTS"]) / finished_run / "report.md").read_text()
    run_section = report.split("## Run", 1)[1].split("\n## ", 1)[0]
    assert ("- plug-ins: `shadow` (shadow-plugin 0.1, entry point `shadow = shadow_plugin`; "
            "replaces strategy 'exact')") in run_section.splitlines()


def test_resuming_without_the_plugin_a_run_started_with_is_one_line(base_env, finished_run,
                                                                    tmp_path):
    """The run's units would otherwise mix the plug-in's ``exact`` with the built-in one
    under one run id; with it installed again, the same command resumes (nothing left)."""
    before = files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"])
    one_line(run(base_env, tmp_path / "nothing-installed", "bench", "--suite", "coupling",
                 "--strategy", "exact", "--budget-scale", "1", "--agent-size", "0",
                 "--run-id", finished_run),
             f"error: run {finished_run} was started with other plug-ins: shadow "
             "(shadow-plugin) 0.1 → not installed; use a new run id or the plug-ins it "
             "started with")
    assert files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"]) == before


# ------------------------------------------------------------ a plug-in that cannot load

BROKEN = {
    "raises": ("shadow_plugin", "raise RuntimeError('the plug-in broke on import')\n",
               "failed to load: RuntimeError: the plug-in broke on import"),
    "missing-module": ("no_such_plugin_module", None,
                       "failed to load: ModuleNotFoundError: No module named "
                       "'no_such_plugin_module'"),
    "missing-attribute": ("shadow_plugin:no_such_attribute", "VALUE = 1\n",
                          "failed to load: AttributeError: module 'shadow_plugin' has no "
                          "attribute 'no_such_attribute'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_plugin_that_cannot_load_is_one_line_naming_it(base_env, tmp_path, case):
    value, source, error = BROKEN[case]
    site = install_plugin(tmp_path / "site", value, source)
    one_line(run(base_env, site, "suites"), f"{PLUGIN}{value})", error,
             f"fix the plug-in or remove it: pip uninstall shadow-plugin (installed under "
             f"{site})")


def test_a_broken_plugin_stops_report_and_bench_and_leaves_the_runs_alone(
        base_env, finished_run, tmp_path):
    value, source, error = BROKEN["raises"]
    site = install_plugin(tmp_path / "site", value, source)
    before = files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"])
    for command in (["report", finished_run],
                    ["bench", "--suite", "coupling", "--strategy", "exact"]):
        one_line(run(base_env, site, *command), f"{PLUGIN}{value})", error)
    # the report was not rewritten, no run started
    assert files_under(base_env["JUNCTION_WAREHOUSE"], base_env["JUNCTION_REPORTS"]) == before
    # a command that reads no catalog still works: the user's runs stay listed
    listed = run(base_env, site, "runs")
    assert listed.returncode == 0 and finished_run in listed.stdout, listed.stderr


# ------------------------------------------------------------ the rule, in this process

def test_a_catalog_registers_a_name_once_unless_told_to_replace():
    catalog: Catalog[str] = Catalog("widget")
    catalog.register("a", "first")
    catalog.register("a", "first")  # the same record again: nothing to replace
    with pytest.raises(ValueError, match=r"widget 'a' is already registered \(a built-in\); "
                                         r"register\(\.\.\., replace=True\) replaces it"):
        catalog.register("a", "second")
    assert catalog["a"] == "first"
    catalog.register("a", "second", replace=True)
    assert catalog["a"] == "second"
    assert issubclass(PluginError, Exception) and "a" in catalog


def test_two_plugins_that_take_one_name_name_each_other_and_the_refusal_stays(tmp_path,
                                                                               monkeypatch):
    # in this process, on a group of its own: plug-in 'a' (distribution a-widgets) registers
    # widget 'w'; plug-in 'b' (distribution b-widgets, loaded after it) registers it too
    group = "junction.test_plugin_faults"
    source = ("from tests.test_plugin_faults import WIDGETS\n"
              "WIDGETS.register('w', {value!r})\n")
    for name in ("a", "b"):
        site = tmp_path / name
        install_plugin(site, f"{name}_widget", source.format(value=name),
                       module=f"{name}_widget", entry_point=name,
                       distribution=f"{name}-widgets")
        (site / f"{name}_widgets-0.1.dist-info" / "entry_points.txt").write_text(
            f"[{group}]\n{name} = {name}_widget\n")
        monkeypatch.syspath_prepend(str(site))
    widgets: Catalog[str] = Catalog("widget", entry_points=group)
    monkeypatch.setattr(sys.modules[__name__], "WIDGETS", widgets)
    try:
        for _ in range(2):  # the first lookup fails, and so does every later one
            with pytest.raises(PluginError, match=(
                    r"^plug-in 'b' \(distribution b-widgets 0\.1, entry point b = b_widget\) "
                    r"tried to take widget 'w', which plug-in 'a' \(distribution a-widgets "
                    r"0\.1, entry point a = a_widget\) registered; .* pip uninstall b-widgets "
                    r"\(installed under " + re.escape(str(tmp_path / "b")) + r"\)$")):
                widgets.names()
    finally:
        for name in ("a_widget", "b_widget"):
            sys.modules.pop(name, None)
