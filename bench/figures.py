"""Generate ``bench/figures.json``: every figure read from a named result record.

    python bench/figures.py                      # regenerate every figure's value
    python bench/figures.py --check              # exit 1 when figures.json is not what
                                                 # its sources give (writes nothing)
    python bench/figures.py --record perf/exact_work [--machine M] [--commit C]
                                                 # keep a result: copy it into records/,
                                                 # point the script's figures it has at it

A figure in ``figures.json`` is an entry's ``figures[name]``: its ``source`` names a record
and a figure in it, ``{"script": "perf/exact_work", "machine": "vm-2cpu", "commit":
"1a2b3c4", "path": "max_lp_iterations"}``, and ``value`` (and ``measured``: the record's
``written_at``, ``load_1m`` and ``cpus``) is generated from it. ``path`` names a leaf of
the record's ``figures`` as ``bench/compare.py`` names it (``rows[2].max_nodes``). The
record is ``bench/records/<machine>/<script>/<commit>.json``: a result file of
``bench/results.py`` (the same layout, keyed per machine × commit as asv keys its
results, with each machine's ``machine.json``), copied there by ``--record`` and committed,
because the results folder beside ``bench/results.py`` is not. An entry's ``text``
(optional) is the sentence the index shows, with ``{name}`` (and a format spec,
``{name:,}``) where a figure's value goes (a name holding ``.`` or ``[`` cannot be
named there); without it the index shows ``name value; ...``. One entry's figures may
come from several records (a run with other arguments at another commit: one record per
machine × script × commit).

A figure whose source is ``"hand"`` was typed by hand: its ``value`` is the sentence as
measured then, with ``note`` saying where it came from (and ``commit``, ``date`` where
known). Those are the figures no result record was kept for; ``--record`` cannot convert
them (which of a record's figures the sentence used is not known), so a script's first
record needs its figures named by hand in ``figures.json`` (``--record`` lists the paths).

Exit status: 0; 1 with one line per figure whose record is missing, unreadable or lacks
the path (named ``script: name``), or per entry whose ``text`` does not fill (nothing is
written then; a record ``--record`` copied stays), or with ``--check`` when the
file differs; 2 with one line for a ``--record`` that finds no result file, or a figures
file that is not JSON. ``--figures`` and ``--records`` name other files (tests use them).
``tests/test_bench_index.py`` checks that regenerating from the committed records gives
the committed file.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results.py beside it
from compare import flatten
from results import (
    MACHINE_FILE,
    ResultFileError,
    machine_info,
    machine_name,
    read_results,
    result_files,
    result_path,
    results_dir,
    write_json,
)

BENCH = Path(__file__).resolve().parent
FIGURES = BENCH / "figures.json"
RECORDS = BENCH / "records"
SECTIONS = ("scripts", "targets")
"""The parts of ``figures.json``: bench scripts (by id) and Makefile targets (by name)."""


def load(path: Path = FIGURES) -> dict:
    """``figures.json`` as a dict: ``{"scripts": {id: entry}, "targets": {name: entry}}``."""
    return json.loads(path.read_text(encoding="utf-8"))


def dump(figures: dict) -> str:
    """``figures`` as ``figures.json`` is written: indented, sorted keys, a final newline."""
    return json.dumps(figures, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def record_path(source: dict, records: Path = RECORDS) -> Path:
    """The record a figure's ``source`` names: ``records/<machine>/<script>/<commit>.json``."""
    return result_path(records, source["machine"], source["script"], source["commit"])


def leaves(figures: dict) -> dict[str, object]:
    """The leaves of a record's ``figures`` by path (``a.b``, ``a[0].c``), as
    ``bench/compare.py`` names them (``compare.flatten``)."""
    return flatten(figures)


def show(value, spec: str = "") -> str:
    """A figure's value in the index: with ``spec`` (``format``), else a float to 4
    significant digits and anything else as ``str``."""
    if spec:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class _Shown:
    """A figure's value for ``str.format``: ``{name}`` as ``show`` writes it, ``{name:,}``
    with the spec."""

    def __init__(self, value):
        self.value = value

    def __format__(self, spec: str) -> str:
        return show(self.value, spec)


class TextError(ValueError):
    """An entry's ``text`` that names no figure of the entry or does not format."""


class _Values(dict):
    def __missing__(self, key):
        raise TextError(f"names {{{key}}}, which is not a figure of the entry (a name "
                        "with '.' or '[' cannot be named in a text)")


def fill(entry: dict) -> str:
    """An entry's figures as one sentence: its ``text`` with each ``{name}`` (``{name:spec}``)
    replaced by that figure's value, or each figure as ``name value`` (a hand figure's
    sentence alone), in name order. Raises ``TextError`` for a text that names no figure
    of the entry or whose spec does not fit the value."""
    figs = entry.get("figures", {})
    if entry.get("text"):
        try:
            return entry["text"].format_map(_Values({n: _Shown(f.get("value"))
                                                     for n, f in figs.items()}))
        except TextError:
            raise
        except (ValueError, TypeError, IndexError, AttributeError, KeyError) as exc:
            raise TextError(f"does not format ({exc})") from None
    return "; ".join(str(f.get("value")) if f.get("source") == "hand"
                     else f"{n} {show(f.get('value'))}" for n, f in sorted(figs.items()))


def each_figure(figures: dict):
    """``(section, entry id, figure name, figure)`` for every figure, in file order."""
    for section in SECTIONS:
        for key, entry in sorted(figures.get(section, {}).items()):
            for name, figure in sorted(entry.get("figures", {}).items()):
                yield section, key, name, figure


def generate(figures: dict, records: Path = RECORDS) -> tuple[dict, list[str]]:
    """``(figures with every sourced value read again, problems)``: a copy of ``figures``
    in which each figure whose ``source`` names a record has the ``value`` at its ``path``
    and the record's ``measured`` (``written_at``, ``load_1m``, ``cpus``); hand figures
    are kept as they are. ``problems``: one line per figure that could not be read
    (``script: name: ...`` naming the record or the path), that figure left unchanged,
    and one per entry whose ``text`` does not fill (``fill``). Reads only the records the
    sources name; deterministic."""
    out = copy.deepcopy(figures)
    problems: list[str] = []
    cache: dict[Path, dict | str] = {}
    for _, key, name, figure in each_figure(out):
        source = figure.get("source")
        if source == "hand":
            continue
        if not isinstance(source, dict) or not {"script", "machine", "commit", "path"} <= set(
                source):
            problems.append(f"{key}: {name}: source is neither \"hand\" nor "
                            "{script, machine, commit, path}")
            continue
        path = record_path(source, records)
        if path not in cache:
            if not path.is_file():
                cache[path] = f"no record {path}"
            else:
                try:
                    cache[path] = read_results(path)
                except ResultFileError as exc:
                    cache[path] = str(exc)
        record = cache[path]
        if isinstance(record, str):
            problems.append(f"{key}: {name}: {record}")
            continue
        found = leaves(record["figures"])
        if source["path"] not in found:
            problems.append(f"{key}: {name}: no figure {source['path']!r} in {path}")
            continue
        m = record.get("machine", {})
        figure["value"] = found[source["path"]]
        figure["measured"] = {"written_at": record.get("written_at"),
                              "load_1m": m.get("load_1m"), "cpus": m.get("cpus")}
    for section in SECTIONS:
        for key, entry in sorted(out.get(section, {}).items()):
            try:
                fill(entry)
            except TextError as exc:
                problems.append(f"{key}: text {exc}")
    return out, problems


def counts(figures: dict) -> dict[str, int]:
    """``rows``: entries whose figures are all read from records; ``values``: how many
    figures those are; ``hand``: entries with a figure typed by hand."""
    rows = values = hand = 0
    for section in SECTIONS:
        for entry in figures.get(section, {}).values():
            figs = entry.get("figures", {}).values()
            if any(f.get("source") == "hand" for f in figs):
                hand += 1
            elif figs:
                rows += 1
                values += len(figs)
    return {"rows": rows, "values": values, "hand": hand}


def keep(script: str, machine: str | None = None, commit: str | None = None,
         results: Path | None = None, records: Path = RECORDS) -> tuple[Path, dict]:
    """Copy ``script``'s result (this machine's newest by ``written_at``, or that of
    ``machine`` / ``commit``) from ``results`` into ``records`` with its ``machine.json``;
    ``(the copy, the record)``. Raises ``FileNotFoundError`` naming what was looked for."""
    folder = results or results_dir()
    machine = machine or machine_name()
    best: tuple[str, Path, dict] | None = None
    for f in result_files(folder):
        if f.machine != machine or f.script != script or (commit and f.commit != commit):
            continue
        try:
            record = read_results(f.path)
        except ResultFileError as exc:
            print(f"warning: {exc}; not recorded", file=sys.stderr)
            continue
        stamp = record.get("written_at") or ""
        if best is None or stamp > best[0]:
            best = (stamp, f.path, record)
    if best is None:
        raise FileNotFoundError(f"no result of {script} on machine {machine}"
                                + (f" at {commit}" if commit else "") + f" in {folder}")
    _, path, record = best
    target = result_path(records, machine, script, path.stem)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target)
    described = folder / machine / MACHINE_FILE
    if described.is_file():
        shutil.copyfile(described, records / machine / MACHINE_FILE)
    elif machine == machine_name() and not (records / machine / MACHINE_FILE).is_file():
        write_json(records / machine / MACHINE_FILE, machine_info(machine))
    return target, record


def point(figures: dict, script: str, machine: str, commit: str,
          paths: set[str] | None = None) -> list[str]:
    """Point the figures of ``script``'s entry read from a record at ``machine`` /
    ``commit``: each one whose ``path`` is in ``paths`` (None: every one; a run with other
    arguments may not have all of a script's figures); the names of the figures pointed."""
    entry = figures["scripts"].get(script, {})
    moved = []
    for name, figure in sorted(entry.get("figures", {}).items()):
        source = figure.get("source")
        if (isinstance(source, dict) and source.get("script") == script
                and (paths is None or source.get("path") in paths)):
            source.update(machine=machine, commit=commit)
            moved.append(name)
    return moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when figures.json is not what its "
                             "sources give")
    parser.add_argument("--record", metavar="SCRIPT",
                        help="copy SCRIPT's newest result on this machine into "
                             "bench/records/ and point its figures at it")
    parser.add_argument("--machine", help="with --record: the machine (default: this one)")
    parser.add_argument("--commit", help="with --record: the commit (default: the newest)")
    parser.add_argument("--figures", type=Path, default=FIGURES,
                        help="the figures file (default: bench/figures.json)")
    parser.add_argument("--records", type=Path, default=RECORDS,
                        help="the records folder (default: bench/records/)")
    parser.add_argument("--results", type=Path, default=None,
                        help="with --record: the results folder (default: "
                             "$JUNCTION_BENCH_RESULTS or bench/results/)")
    args = parser.parse_args(argv)
    out = args.figures
    try:
        figures = load(out)
    except (OSError, ValueError) as exc:
        print(f"figures: {out}: not readable as JSON ({exc})", file=sys.stderr)
        return 2
    if args.record:
        try:
            target, record = keep(args.record, args.machine, args.commit, args.results,
                                  args.records)
        except FileNotFoundError as exc:
            print(f"figures: {exc}", file=sys.stderr)
            return 2
        machine = target.relative_to(args.records).parts[0]
        moved = point(figures, args.record, machine, target.stem,
                      set(leaves(record["figures"])))
        kept = [n for n, f in sorted(figures["scripts"].get(args.record, {})
                                     .get("figures", {}).items())
                if isinstance(f.get("source"), dict) and n not in moved]
        if kept:
            print(f"kept on their records (not in this one): {', '.join(kept)}")
        print(f"recorded {target}")
        if target.stem.endswith("-dirty"):
            print(f"note: {target.stem} is a checkout with uncommitted changes: its figures "
                  "belong to no commit exactly")
        if not moved:
            paths = list(leaves(record["figures"]))
            more = f", and {len(paths) - 40} more" if len(paths) > 40 else ""
            print(f"{args.record} has no figure read from a record: name some in "
                  "figures.json (source path), from: " + ", ".join(paths[:40]) + more)
    new, problems = generate(figures, args.records)
    for line in problems:
        print(f"figures: {line}", file=sys.stderr)
    if args.check:
        current = out.read_text(encoding="utf-8") == dump(new)
        if not current:
            print(f"{out} differs from its sources: run bench/figures.py", file=sys.stderr)
        return 0 if current and not problems else 1
    if problems:
        return 1
    out.write_text(dump(new), encoding="utf-8")
    c = counts(new)
    print(f"wrote {out}: {c['rows']} entries read from records ({c['values']} figures), "
          f"{c['hand']} typed by hand; now run bench/index.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
