"""bench/README.md is generated from bench/figures.json and lists every bench script;
bench/results.py writes one record per script and commit; bench/compare.py sets two
commits' records side by side (no model, no flow)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _module(name: str):
    """A module of bench/ (scripts, not a package), loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


index = _module("index")
results = _module("results")


def test_the_readme_is_what_figures_json_gives():
    figures = index.load_figures()
    assert (BENCH / "README.md").read_text() == index.render(figures), \
        "bench/README.md differs from bench/figures.json: run .venv/bin/python bench/index.py"


def test_every_bench_script_is_in_the_index_with_what_it_measures_and_its_command():
    figures = index.load_figures()
    unlisted, gone = index.missing(figures)
    assert (unlisted, gone) == ([], []), f"not in figures.json: {unlisted}; no such script: {gone}"
    scripts = results.bench_scripts()
    assert len(scripts) >= 30 and {s.split("/")[0] for s in scripts} == set(results.KINDS)
    readme = (BENCH / "README.md").read_text()
    for script in scripts:
        entry = figures["scripts"][script]
        assert entry["measures"] and entry["command"], script
        assert f"bench/{script}.py" in entry["command"], (script, entry["command"])
        assert f"[`{script}.py`]({script}.py)" in readme, script
    shared = {p.stem for p in BENCH.glob("*.py")}
    assert shared == {"results", "compare", "index"}, "scripts go in perf/, studies/, checks/"


def test_write_results_writes_one_record_per_machine_script_and_commit(tmp_path, monkeypatch):
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path))
    monkeypatch.setenv(results.MACHINE_ENV, "box-a")
    script = BENCH / "perf" / "scale.py"
    first = results.write_results(script, {"speedup": 1.5}, argv=["--json"])
    second = results.write_results(script, {"speedup": 1.7, "tasks": 800}, argv=["--json"])
    assert first == second and first.parent == tmp_path / "box-a" / "perf" / "scale"
    assert re.fullmatch(r"([0-9a-f]{7,}(-dirty)?|unknown)\.json", first.name)
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary file left
    record = json.loads(first.read_text())
    assert record["script"] == "perf/scale" and record["commit"] == first.stem
    assert record["figures"] == {"speedup": 1.7, "tasks": 800} and record["argv"] == ["--json"]
    assert record["machine"]["cpus"] >= 1 and record["machine"]["name"] == "box-a"
    assert {"load_1m", "load_5m", "load_15m", "python"} <= set(record["machine"])
    described = json.loads((tmp_path / "box-a" / "machine.json").read_text())
    assert described["machine"] == "box-a" and described["num_cpu"] == record["machine"]["cpus"]
    assert {"arch", "cpu", "os", "ram", "version"} <= set(described)

    monkeypatch.setenv(results.MACHINE_ENV, "box-b")  # another machine: another folder
    other = results.write_results(script, {"speedup": 1.9}, argv=[])
    assert other == tmp_path / "box-b" / "perf" / "scale" / first.name
    assert [(f.machine, f.script, f.commit) for f in results.result_files(tmp_path)] == [
        ("box-a", "perf/scale", first.stem), ("box-b", "perf/scale", first.stem)]

    monkeypatch.delenv(results.MACHINE_ENV)  # the host's name and core count: stable
    assert results.machine_name() == results.machine_name()
    assert re.fullmatch(r"[a-z0-9.-]+-\d+cpu", results.machine_name())
    monkeypatch.setenv(results.MACHINE_ENV, "../x y")  # not a folder name: figures kept
    kept = results.write_results(script, {"speedup": 2.0}, argv=[])
    assert kept == tmp_path / "x-y" / "perf" / "scale" / first.name


def _record(tmp_path: Path, script: str, commit: str, figures: dict, load: float) -> Path:
    path = tmp_path / script.split("/")[1] / f"{commit}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"script": script, "commit": commit, "figures": figures,
                                "written_at": "2026-12-06T10:00:00+00:00", "argv": [],
                                "machine": {"cpus": 2, "load_1m": load}}))
    return path


def _compare(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / "compare.py"), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_compare_prints_two_commits_side_by_side(tmp_path):
    _record(tmp_path, "perf/scale", "aaaaaaa",
            {"workers_1_s": 33.1, "workers_2_s": 19.1, "tasks": 800}, 1.2)
    _record(tmp_path, "perf/scale", "bbbbbbb-dirty",
            {"workers_1_s": 33.1, "workers_2_s": 20.0, "tasks": 800}, 3.4)
    _record(tmp_path, "perf/exact_work", "aaaaaaa", {"rows": [{"max_nodes": 10}]}, 1.2)
    out = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "perf/scale" in lines and "perf/exact_work" in lines
    assert "  A: aaaaaaa (2026-12-06, load 1.2 on 2 cpus)" in lines
    assert "  B: bbbbbbb-dirty (2026-12-06, load 3.4 on 2 cpus)" in lines
    rows = {line.split()[-1]: line.split() for line in lines if line.startswith(("  * ", "    "))}
    assert rows["workers_2_s"] == ["*", "19.1", "20", "1.05", "workers_2_s"]
    assert rows["workers_1_s"] == ["33.1", "33.1", "1.00", "workers_1_s"]
    assert rows["rows[0].max_nodes"] == ["*", "10", "—", "rows[0].max_nodes"]  # not at B

    by_path = _compare(str(tmp_path / "scale" / "aaaaaaa.json"),
                       str(tmp_path / "scale" / "bbbbbbb-dirty.json"), "--changed")
    assert by_path.returncode == 0, by_path.stderr
    assert "workers_2_s" in by_path.stdout and "workers_1_s" not in by_path.stdout


def test_compare_says_in_one_line_when_a_commit_has_no_results(tmp_path):
    _record(tmp_path, "perf/scale", "aaaaaaa", {"speedup": 1.7}, 1.0)
    out = _compare("--results", str(tmp_path), "aaaaaaa", "ccccccc")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no results for 'ccccccc'" in out.stderr


def test_a_newer_result_becomes_the_index_figure():
    figures = index.load_figures()
    entry = figures["scripts"]["perf/prefect_start"]
    kept = dict(entry)
    older = {"script": "perf/prefect_start", "commit": "0000000", "figures": {"x": 9.9},
             "written_at": "2000-01-01T00:00:00+00:00", "machine": {}}
    assert index.merge(figures, {"perf/prefect_start": older}) == [] and entry == kept
    newer = {"script": "perf/prefect_start", "commit": "1a2b3c4",
             "figures": {"start, new home": {"median_s": 12.0, "runs_s": [12.0]},
                         "start, from template": {"median_s": 6.0, "runs_s": [6.0]}},
             "written_at": "2999-01-01T00:00:00+00:00", "machine": {"cpus": 2, "load_1m": 0.5}}
    assert index.merge(figures, {"perf/prefect_start": newer}) == ["perf/prefect_start"]
    assert entry["commit"] == "1a2b3c4" and entry["date"].startswith("2999")
    assert entry["figure"] == ("start, new home.median_s 12; start, new home.runs_s[0] 12; "
                               "start, from template.median_s 6; start, from template.runs_s[0] 6 "
                               "(load 0.5 on 2 cores)")
    assert "1a2b3c4" in index.render(figures)
