"""The layout's promises: a pure library, no import cycles, a package that installs.

- nothing under ``junction/`` imports ``prefect``, ``flows`` or the suite builders
  (``junction_datasets``), at module level or inside a function, and importing every module
  leaves ``prefect`` out of ``sys.modules``;
- no two modules of the project (``junction/``, ``flows/``, ``datasets/`` as
  ``junction_datasets``) import each other, directly or around a cycle, at module level or
  inside a function;
- a non-editable install (a wheel, installed outside the checkout) runs
  ``junction demo coupling --json``, ``junction bench --suite coupling`` and
  ``junction sql``, and installs no top-level package named ``datasets``.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "junction"
FORBIDDEN = ("prefect", "flows", "junction_datasets", "datasets", "typer")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module an import statement in ``path`` names (absolute), with its line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                name = _module_name(path)
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(p for p in (*parent, base) if p)
            found.append((base, node.lineno))
            # `from junction.x import y` may name the submodule junction.x.y
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


LIBRARY_FILES = sorted(LIBRARY.rglob("*.py"))
MODULES = {_module_name(p): p for p in LIBRARY_FILES}


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_library_module_imports_no_edge_package(path):
    bad = [f"line {line}: {name}" for name, line in _imports(path)
           if name.split(".")[0] in FORBIDDEN]
    assert not bad, f"{path.relative_to(ROOT)} imports the edge: {bad}"


def test_importing_every_library_module_leaves_prefect_out():
    code = ("import importlib, json, sys\n"
            f"names = {sorted(MODULES)!r}\n"
            "for n in names: importlib.import_module(n)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{FORBIDDEN!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == []


def _project_name(path: Path) -> str:
    name = _module_name(path)
    return "junction_datasets" + name[len("datasets"):] if name.split(".")[0] == "datasets" \
        else name


PROJECT_FILES = sorted(p for folder in ("junction", "flows", "datasets")
                       for p in (ROOT / folder).rglob("*.py"))


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Every cycle a depth-first search of ``graph`` closes (one per back edge)."""
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    return cycles


def test_no_import_cycles_in_the_project():
    modules = {_project_name(p): p for p in PROJECT_FILES}

    def named(imp: str) -> str:  # a relative import inside datasets/ resolves to datasets.x
        return "junction_datasets" + imp[len("datasets"):] if imp.split(".")[0] == "datasets" \
            else imp

    graph = {name: sorted({named(imp) for imp, _ in _imports(path)} & set(modules) - {name})
             for name, path in modules.items()}
    # a package's __init__ re-exports its submodules; a submodule importing a sibling through
    # the package is an edge to the package, which is what a cycle through __init__ needs
    cycles = _cycles(graph)
    assert not cycles, " ; ".join(" -> ".join(c) for c in cycles)


def test_the_cycle_check_sees_a_cycle_through_a_package():
    graph = {"p": ["p.a"], "p.a": ["p.b"], "p.b": ["p"], "q": []}
    assert _cycles(graph) == [["p", "p.a", "p.b", "p"]]


def test_the_import_check_sees_a_lazy_import(tmp_path):
    module = tmp_path / "x.py"
    module.write_text("def f():\n    from prefect import flow\n    import flows.cli\n")
    assert {"prefect", "flows.cli"} <= {name for name, _ in _imports(module)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The project built as a wheel and installed (no deps) into a folder outside the
    checkout; returns (wheel path, install folder, environment for running it). The
    environment keeps the session's Prefect home (``PREFECT_HOME``, tests/conftest.py) and
    so its template database: a temporary server's first start on a new home, which
    migrates its database, is tests/test_hardening.py's subject."""
    base = tmp_path_factory.mktemp("install")
    # build from a copy: setuptools' build/ folder in the checkout could carry stale files
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".state", "build", "*.egg-info", "__pycache__", "warehouse", "reports"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(base / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheel = next((base / "dist").glob("junction-*.whl"))
    target = base / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr[-2000:]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "JUNCTION_WAREHOUSE", "JUNCTION_REPORTS",
                        "JUNCTION_STATE_DIR")}
    env["PYTHONPATH"] = str(target)  # ahead of the checkout's editable install
    work = base / "work"
    work.mkdir()
    return wheel, target, env, work


def _junction(installed, *args):
    _, target, env, work = installed
    code = ("import sys, junction, flows.cli\n"
            f"assert junction.__file__.startswith({str(target)!r}), junction.__file__\n"
            "sys.argv = ['junction', *sys.argv[1:]]\n"
            "flows.cli.main()\n")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_wheel_installs_no_datasets_package(installed):
    wheel = installed[0]
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist() if "dist-info" not in name}
    assert top == {"junction", "flows", "junction_datasets"}
    assert "junction/evidence/views.sql" in zipfile.ZipFile(wheel).namelist()


@pytest.mark.flow
def test_the_installed_package_runs_demo_bench_and_sql(installed):
    demo = _junction(installed, "demo", "coupling", "--json")
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert json.loads(demo.stdout)["strategies"]["exact"]["verified"] is True
    bench = _junction(installed, "bench", "--suite", "coupling", "--strategy", "exact",
                      "--budget-scale", "1")
    assert bench.returncode == 0, bench.stderr[-2000:]
    work = installed[3]
    assert (work / "warehouse" / "junction.duckdb").is_file()  # the working folder's
    sql = _junction(installed, "sql", "select 1 as one, count(*) as n from traces",
                    "--format", "json")
    assert sql.returncode == 0, sql.stderr[-2000:]
    assert json.loads(sql.stdout) == [{"n": 1, "one": 1}]


LAYERS: tuple[tuple[str, ...], ...] = (
    ("junction.errors", "junction.text"),
    ("junction.environment",),
    ("junction.tokens", "junction.models", "junction.sqlite_cache", "junction.registry"),
    ("junction.resources", "junction.dense"),
    ("junction.budget", "junction.verifiers"),
    ("junction.tasks",),
    ("junction.suites",),
    ("junction.candidates", "junction.select", "junction.pages", "junction.judge",
     "junction.agent"),
    ("junction.units",),
    ("junction.learned",),
    ("junction.strategies",),
    ("junction.evidence",),
    ("junction.evaluate",),
    ("junction",),
)
"""The library's layers, lowest first: a unit (a top-level module or a package under
``junction/``) imports only units of lower layers."""


def _unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_every_library_unit_has_a_layer():
    layered = {u for layer in LAYERS for u in layer}
    assert {_unit(m) for m in MODULES} == layered


def test_no_library_module_imports_upward_or_sideways():
    layer = {u: i for i, units in enumerate(LAYERS) for u in units}
    bad = []
    for name, path in MODULES.items():
        for imp, line in _imports(path):
            if imp in MODULES and _unit(imp) != _unit(name) \
                    and layer[_unit(imp)] >= layer[_unit(name)]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {imp}")
    assert not bad, bad


def test_the_layer_check_sees_an_upward_import(tmp_path):
    # an upward import is found: tasks (layer 4) importing the evidence half (layer 8)
    module = tmp_path / "x.py"
    module.write_text("from junction.evidence.traces import TaskTraceRecord\n")
    (imp, _), *_ = _imports(module)
    layer = {u: i for i, units in enumerate(LAYERS) for u in units}
    assert layer[_unit(imp)] > layer["junction.tasks"]


def _string_literals(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.value, node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_strategy_name_is_a_literal_outside_the_catalog():
    # roles come from the strategy catalog; only it, the strategy modules and the selectors
    # they run (junction/select names each selector) spell a strategy's name
    from junction.strategies import strategy_names

    names = set(strategy_names())
    exempt = (LIBRARY / "strategies", LIBRARY / "select")
    files = [p for p in (*LIBRARY_FILES, *sorted((ROOT / "flows").rglob("*.py")))
             if not any(p.is_relative_to(e) for e in exempt)]
    bad = [f"{p.relative_to(ROOT)}:{line}: {value!r}" for p in files
           for value, line in _string_literals(p) if value in names]
    assert not bad, bad


def _suite_names_in(text: str, names: set[str]) -> list[str]:
    """The registered suite names ``text`` holds: the literal itself, or a prefix test on
    a family of them ("tau2-")."""
    return sorted(n for n in names if text == n or (text.endswith("-") and n.startswith(text)))


def test_no_suite_name_is_a_literal_outside_the_suite_builders():
    # what a code path once decided from a suite's name is a field of its record
    # (junction.suites.SuiteInfo); only the builders (datasets/) spell a suite's name
    from junction.suites import suite_names

    names = set(suite_names())
    # the same word, not the suite: the coupling-value table's key, the demo command's name
    homonyms = {("junction/evidence/agent_measures.py", "coupling"), ("flows/cli.py", "coupling")}
    files = [*LIBRARY_FILES, *sorted((ROOT / "flows").rglob("*.py"))]
    bad = [f"{p.relative_to(ROOT)}:{line}: {value!r}" for p in files
           for value, line in _string_literals(p) if _suite_names_in(value, names)
           and (str(p.relative_to(ROOT)), value) not in homonyms]
    assert not bad, bad


def test_the_suite_name_check_sees_a_name_and_a_prefix_test(tmp_path):
    module = tmp_path / "x.py"
    module.write_text('a = "tau2-banking"\nb = s.startswith("bfcl-memory")\nc = "tau2-"\n')
    names = {"tau2-banking", "bfcl-memory", "bfcl-memory-pages"}
    found = [v for v, _ in _string_literals(module) if _suite_names_in(v, names)]
    assert sorted(found) == ["bfcl-memory", "tau2-", "tau2-banking"]


def test_every_bench_script_imports():
    """A bench script that no longer imports (a name moved in the library) fails here,
    not when someone next measures with it: one process imports each script of
    bench/perf, bench/studies and bench/checks and the shared modules beside them (each
    keeps its work behind ``if __name__ == "__main__"``)."""
    import subprocess
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench"
    folders = [bench / "perf", bench / "studies", bench / "checks", bench]
    names = sorted(p.stem for folder in folders for p in folder.glob("*.py"))
    assert len(names) >= 30 and len(names) == len(set(names))  # one name space
    code = ("import importlib, sys\nsys.path[:0] = sys.argv[1].split(':')\nbad = []\n"
            "for name in sys.argv[2:]:\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except Exception as exc:\n        bad.append(f'{name}: {exc!r}')\n"
            "print('\\n'.join(bad))\n")
    proc = subprocess.run([sys.executable, "-c", code, ":".join(map(str, folders)), *names],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", proc.stdout
