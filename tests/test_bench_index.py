"""bench/README.md is generated from bench/figures.json and the scripts, and lists every
bench script; bench/figures.json is generated from committed result records
(bench/figures.py), each figure named by script, machine, commit and path, or marked as
typed by hand; bench/results.py writes one record per machine, script and commit;
bench/compare.py sets two commits' records side by side (no model, no flow)."""

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
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


index = _module("index")
results = _module("results")
figures_py = _module("figures")


def test_the_readme_is_what_figures_json_gives():
    figures = index.load_figures()
    assert (BENCH / "README.md").read_text() == index.render(figures), \
        "bench/README.md differs from bench/figures.json: run .venv/bin/python bench/index.py"


def test_every_bench_script_is_in_the_index_with_what_it_measures_and_its_command():
    figures = index.load_figures()
    assert index.missing(figures) == [], "figures.json lists scripts that are gone"
    scripts = results.bench_scripts()  # read from bench/: a script added there is listed
    assert len(scripts) >= 30 and {s.split("/")[0] for s in scripts} == set(results.KINDS)
    entries = index.entries(figures)
    assert sorted(entries) == scripts
    readme = index.render(figures)
    for script in scripts:
        entry = entries[script]
        assert entry["measures"] and entry["command"], script
        assert f"bench/{script}.py" in entry["command"], (script, entry["command"])
        assert f"[`{script}.py`]({script}.py)" in readme, script
    shared = {p.stem for p in BENCH.glob("*.py")}
    assert shared == {"results", "compare", "index", "figures"}, \
        "scripts go in perf/, studies/, checks/"


def test_figures_json_is_what_its_committed_records_give():
    """Every figure is read again from the record its source names (committed under
    bench/records/), or is marked as typed by hand with a note; regenerating gives the
    committed file byte for byte, twice the same."""
    text = (BENCH / "figures.json").read_text()
    figures = json.loads(text)
    once, problems = figures_py.generate(figures)
    assert problems == [], problems
    assert figures_py.dump(once) == text, "run .venv/bin/python bench/figures.py"
    assert figures_py.dump(figures_py.generate(once)[0]) == text
    for _, key, name, figure in figures_py.each_figure(figures):
        if figure["source"] == "hand":
            assert figure["note"] and figure["value"], (key, name)
            continue
        source = figure["source"]
        assert set(source) == {"script", "machine", "commit", "path"}, (key, name)
        path = figures_py.record_path(source)
        assert path.is_file() and path.is_relative_to(BENCH / "records"), (key, name)
        assert (BENCH / "records" / source["machine"] / "machine.json").is_file(), source
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT,
                                 capture_output=True, timeout=60)
        assert tracked.returncode in (0, 128), tracked  # 128: not a git checkout
    out = subprocess.run([sys.executable, str(BENCH / "figures.py"), "--check"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0 and out.stderr == "", out.stderr


def _result(folder: Path, machine: str, script: str, commit: str, figures: dict,
            load: float = 1.0) -> Path:
    path = folder / machine / script / f"{commit}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"script": script, "commit": commit, "figures": figures,
                                "written_at": "2026-12-06T10:00:00+00:00", "argv": [],
                                "machine": {"name": machine, "cpus": 2, "load_1m": load}}))
    (folder / machine / "machine.json").write_text(json.dumps({"machine": machine}))
    return path


def _figure(machine: str, commit: str, path: str) -> dict:
    return {"source": {"script": "perf/scale", "machine": machine, "commit": commit,
                       "path": path}, "value": None}


def _figures_file(tmp_path: Path, figs: dict, text: str | None = None) -> Path:
    entry = {"measures": "m", "command": "c", "figures": figs}
    if text:
        entry["text"] = text
    path = tmp_path / "figures.json"
    path.write_text(json.dumps({"scripts": {"perf/scale": entry}, "targets": {
        "make bench": {"measures": "m", "command": "c", "figures": {"figure": {
            "source": "hand", "note": "timed by hand", "value": "7:51"}}}}}))
    return path


def test_figures_are_generated_per_machine_and_commit_and_a_missing_source_is_named(tmp_path):
    records = tmp_path / "records"
    _result(records, "box-a", "perf/scale", "aaaaaaa",
            {"speedup": 1.73, "rows": [{"tasks": 800}]}, load=1.2)
    _result(records, "box-b", "perf/scale", "aaaaaaa", {"speedup": 1.95, "rows": []}, load=0.4)
    _result(records, "box-a", "perf/scale", "bbbbbbb", {"speedup": 1.70}, load=3.0)
    figs = {"a speedup": _figure("box-a", "aaaaaaa", "speedup"),
            "b speedup": _figure("box-b", "aaaaaaa", "speedup"),
            "a later": _figure("box-a", "bbbbbbb", "speedup"),
            "tasks": _figure("box-a", "aaaaaaa", "rows[0].tasks")}
    path = _figures_file(tmp_path, figs, "{tasks:,} tasks: {a speedup:.2f}× on box-a")
    run = [sys.executable, str(BENCH / "figures.py"), "--figures", str(path),
           "--records", str(records)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first = path.read_text()
    got = json.loads(first)["scripts"]["perf/scale"]["figures"]
    assert {n: f["value"] for n, f in got.items()} == {
        "a speedup": 1.73, "b speedup": 1.95, "a later": 1.70, "tasks": 800}
    assert got["b speedup"]["measured"] == {"written_at": "2026-12-06T10:00:00+00:00",
                                            "load_1m": 0.4, "cpus": 2}
    assert json.loads(first)["targets"]["make bench"]["figures"]["figure"]["value"] == "7:51"
    assert subprocess.run(run, capture_output=True, timeout=60).returncode == 0
    assert path.read_text() == first  # deterministic
    assert subprocess.run([*run, "--check"], capture_output=True, timeout=60).returncode == 0
    entry = index.entries({"scripts": json.loads(first)["scripts"]})["perf/scale"]
    assert index.figure_text(entry) == (
        "800 tasks: 1.73× on box-a (bbbbbbb on box-a, 2026-12-06, load 3.0 on 2 cores; "
        "aaaaaaa on box-a, 2026-12-06, load 1.2 on 2 cores; aaaaaaa on box-b, 2026-12-06, "
        "load 0.4 on 2 cores)")  # each record once, in the figures' order

    (records / "box-b" / "perf/scale" / "aaaaaaa.json").unlink()  # a source gone
    figs["gone"] = _figure("box-a", "ccccccc", "speedup")
    figs["no path"] = _figure("box-a", "aaaaaaa", "rows[1].tasks")
    path = _figures_file(tmp_path, figs)
    before = path.read_text()
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stdout == ""
    lines = out.stderr.splitlines()
    missing = records / "box-b" / "perf" / "scale" / "aaaaaaa.json"
    assert lines == [
        f"figures: perf/scale: b speedup: no record {missing}",
        f"figures: perf/scale: gone: no record {records}/box-a/perf/scale/ccccccc.json",
        f"figures: perf/scale: no path: no figure 'rows[1].tasks' in "
        f"{records}/box-a/perf/scale/aaaaaaa.json"], out.stderr
    assert path.read_text() == before  # nothing written
    check = subprocess.run([*run, "--check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "perf/scale: b speedup: no record" in check.stderr


def test_record_keeps_this_machines_newest_result_and_points_the_figures_at_it(
        tmp_path, monkeypatch):
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path / "results"))
    monkeypatch.setenv(results.MACHINE_ENV, "box-a")
    written = results.write_results(BENCH / "perf" / "scale.py", {"speedup": 1.8}, argv=[])
    _result(tmp_path / "results", "box-b", "perf/scale", written.stem, {"speedup": 9.9})
    records = tmp_path / "records"
    _result(records, "box-a", "perf/scale", "aaaaaaa", {"speedup": 1.7})
    path = _figures_file(tmp_path, {"speedup": _figure("box-a", "aaaaaaa", "speedup")})
    run = [sys.executable, str(BENCH / "figures.py"), "--figures", str(path),
           "--records", str(records)]
    out = subprocess.run([*run, "--record", "perf/scale"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    kept = records / "box-a" / "perf" / "scale" / written.name
    assert kept.read_bytes() == written.read_bytes()
    assert json.loads((records / "box-a" / "machine.json").read_text())["machine"] == "box-a"
    figure = json.loads(path.read_text())["scripts"]["perf/scale"]["figures"]["speedup"]
    assert figure["source"]["commit"] == written.stem and figure["value"] == 1.8

    figures = json.loads(path.read_text())  # a run with other arguments: only its paths
    figures["scripts"]["perf/scale"]["figures"]["rows"] = _figure("box-a", "aaaaaaa", "rows")
    assert figures_py.point(figures, "perf/scale", "box-a", "ddddddd", {"speedup"}) == [
        "speedup"]
    assert figures["scripts"]["perf/scale"]["figures"]["rows"]["source"]["commit"] == "aaaaaaa"

    none = subprocess.run([*run, "--record", "perf/exact_work"], capture_output=True,
                          text=True, timeout=60)
    assert none.returncode == 2 and none.stdout == "" and none.stderr.count("\n") == 1
    assert none.stderr.startswith("figures: no result of perf/exact_work on machine box-a")


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


def _record(tmp_path: Path, script: str, commit: str, figures: dict, load: float,
            machine: str = "box-a") -> Path:
    return _result(tmp_path, machine, script, commit, figures, load)


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
    assert "  A: aaaaaaa on box-a (2026-12-06, load 1.2 on 2 cpus)" in lines
    assert "  B: bbbbbbb-dirty on box-a (2026-12-06, load 3.4 on 2 cpus)" in lines
    rows = {line.split()[-1]: line.split() for line in lines if line.startswith(("  * ", "    "))}
    assert rows["workers_2_s"] == ["*", "19.1", "20", "1.05", "workers_2_s"]
    assert rows["workers_1_s"] == ["33.1", "33.1", "1.00", "workers_1_s"]
    assert rows["rows[0].max_nodes"] == ["*", "10", "—", "rows[0].max_nodes"]  # not at B

    scale = tmp_path / "box-a" / "perf" / "scale"
    by_path = _compare(str(scale / "aaaaaaa.json"), str(scale / "bbbbbbb-dirty.json"),
                       "--changed")
    assert by_path.returncode == 0, by_path.stderr
    assert "workers_2_s" in by_path.stdout and "workers_1_s" not in by_path.stdout


def test_compare_says_in_one_line_when_a_commit_has_no_results(tmp_path):
    _record(tmp_path, "perf/scale", "aaaaaaa", {"speedup": 1.7}, 1.0)
    out = _compare("--results", str(tmp_path), "aaaaaaa", "ccccccc")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "no results for 'ccccccc'" in out.stderr




def test_compare_keeps_machines_apart(tmp_path):
    _record(tmp_path, "perf/scale", "aaaaaaa", {"speedup": 1.7}, 1.0, machine="box-a")
    _record(tmp_path, "perf/scale", "aaaaaaa", {"speedup": 3.1}, 0.2, machine="box-b")
    _record(tmp_path, "perf/scale", "bbbbbbb", {"speedup": 1.8}, 1.0, machine="box-a")
    both = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb")
    assert both.returncode == 2 and both.stdout == ""
    assert both.stderr == ("compare: 'aaaaaaa' was measured on 2 machines (box-a, box-b): "
                           "name one with --machine\n")
    one = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb", "--machine", "box-a")
    assert one.returncode == 0, one.stderr
    assert "  A: aaaaaaa on box-a (2026-12-06, load 1.0 on 2 cpus)" in one.stdout
    assert "1.7" in one.stdout and "3.1" not in one.stdout
    other = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb", "--machine", "box-b")
    assert other.returncode == 2 and "no results for 'bbbbbbb' in " in other.stderr
    assert f"{tmp_path / 'box-b'}" in other.stderr

    cut = tmp_path / "box-a" / "perf" / "scale" / "bbbbbbb.json"  # a truncated file
    _record(tmp_path, "perf/exact_work", "bbbbbbb", {"x": 1}, 1.0, machine="box-a")
    _record(tmp_path, "perf/exact_work", "aaaaaaa", {"x": 2}, 1.0, machine="box-a")
    cut.write_text(cut.read_text()[:40])
    warned = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb", "--machine", "box-a")
    assert warned.returncode == 0 and warned.stderr.count("\n") == 1, warned.stderr
    assert warned.stderr.startswith(f"warning: {cut}: not a readable result file")
    assert "B: not measured" in warned.stdout and "perf/exact_work" in warned.stdout


def test_compare_reads_the_layout_before_machines(tmp_path):
    for commit, value in (("aaaaaaa", 1.0), ("bbbbbbb", 1.5)):
        path = tmp_path / "scale" / f"{commit}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"script": "perf/scale", "commit": commit,
                                    "figures": {"x": value}, "machine": {"cpus": 2}}))
    out = _compare("--results", str(tmp_path), "aaaaaaa", "bbbbbbb", "--script", "scale")
    assert out.returncode == 0, out.stderr
    assert "  A: aaaaaaa (?, load ? on 2 cpus)" in out.stdout and "1.50  x" in out.stdout


def test_an_entry_text_naming_no_figure_is_one_line_naming_the_entry(tmp_path):
    records = tmp_path / "records"
    _result(records, "box-a", "perf/scale", "aaaaaaa", {"speedup": 1.73})
    figs = {"speedup": _figure("box-a", "aaaaaaa", "speedup")}
    good = figures_py.generate(json.loads(_figures_file(tmp_path, figs, "{speedup:.1f}×")
                                          .read_text()), records)
    assert good[1] == [] and figures_py.fill(good[0]["scripts"]["perf/scale"]) == "1.7×"
    bad = json.loads(_figures_file(tmp_path, figs, "{speedup} and {workers}").read_text())
    assert figures_py.generate(bad, records)[1] == [
        "perf/scale: text names {workers}, which is not a figure of the entry (a name with "
        "'.' or '[' cannot be named in a text)"]
    spec = json.loads(_figures_file(tmp_path, figs, "{speedup:d}").read_text())
    assert figures_py.generate(spec, records)[1][0].startswith("perf/scale: text does not "
                                                               "format (")
