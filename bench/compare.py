"""Two commits' bench figures side by side, as ``asv compare`` sets two runs side by side.

    python bench/compare.py A B [--script NAME ...] [--machine NAME] [--changed]
                            [--results DIR]

A and B are commits (a prefix of the id ``bench/results.py`` records, e.g. ``1a2b3c4`` or
``1a2b3c4-dirty``) or paths of result files. For a commit, every script that has a result
file for it in the results folder (``results/<machine>/<script>/<commit>.json`` beside
this file, or ``$JUNCTION_BENCH_RESULTS``, or ``--results``; files of the layout before
machines, ``results/<script>/<commit>.json``, count as of an unnamed machine) counts, on
one machine: ``--machine``, or the one machine that has results for that commit (several
is one line asking for ``--machine``, as ``asv compare`` asks). A and B may come from two
machines; each side's line names its machine. For every script measured at A or
at B it prints the commit, machine, date and machine load of each side, then one row per figure:
the value at A, at B, B / A where both are numbers, and the figure's name (nested figures
are named by their path, ``family_table[0].median_s``). ``*`` marks a figure whose value
differs. The machine's load is printed with each side because these machines are shared:
a figure measured under load 6 is not comparable with one at load 1.

A result file that cannot be read (truncated, not JSON, not a record) is left out with
one ``warning:`` line on stderr naming it; the rest is compared as usual. With
``--script``, only those scripts' files are read, so a damaged file of another script is
never touched.

Exit status: 0; 2 with one line on stderr when A or B has no readable result file at all
(after a ``warning:`` line per unreadable file), when a result file named as A or B is
not readable, or when a commit was measured on several machines and no ``--machine``
says which.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # results.py beside it
import results
from results import ResultFile, ResultFileError, read_results, results_dir

MISSING = "—"


class NoResults(Exception):
    """A commit or path with no result file."""


def _resolve(ref: str) -> str:
    """``ref`` as the short commit id the result files are named by, where git knows it
    (``HEAD``, a branch, a tag, a longer id); ``ref`` itself otherwise (a prefix)."""
    out = subprocess.run(["git", "rev-parse", "--short", f"{ref}^{{commit}}"],
                         capture_output=True, text=True, check=False,
                         cwd=Path(__file__).resolve().parents[1])
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else ref


def _selected(script: str, scripts: list[str] | None) -> bool:
    """Whether a script's results (``perf/scale``, or ``scale`` in the layout before
    machines) are asked for: ``scripts`` name it by id or by its last part."""
    return not scripts or script.split("/")[-1] in {s.split("/")[-1] for s in scripts}


def _machine(machine: str | None) -> str:
    return machine if machine is not None else "(unnamed)"


def warn(message: str) -> None:
    """One ``warning:`` line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def load(which: str, folder: Path, scripts: list[str] | None = None,
         machine: str | None = None) -> dict[str, dict]:
    """script id -> record for ``which``: a result file's path, or a commit (prefix).

    Per machine and script, a file named exactly ``which`` wins; otherwise one commit must
    start with ``which`` (two commits that both do are refused as ambiguous). ``scripts``
    (None: all) limits the files read, as ``--script`` does; ``machine`` (None: the one
    machine with files for ``which``; several raise ``NoResults`` naming them) limits them
    to one machine's. A file that is not a readable record (``results.ResultFileError``)
    is left out with a ``warn`` line naming it; a path given as ``which`` that is not one
    raises ``NoResults`` with that line."""
    path = Path(which)
    if path.suffix == ".json" and path.is_file():
        try:
            record = read_results(path)
        except ResultFileError as exc:
            raise NoResults(str(exc)) from None
        return {record["script"]: record}
    which = _resolve(which)
    groups: dict[tuple[str, str], list[ResultFile]] = {}
    for f in results.result_files(folder):
        if (f.commit.startswith(which) and _selected(f.script, scripts)
                and (machine is None or f.machine == machine)):
            groups.setdefault((_machine(f.machine), f.script), []).append(f)
    chosen: list[ResultFile] = []
    for (_, script), files in sorted(groups.items()):
        exact = [f for f in files if f.commit == which]
        if exact:
            files = exact
        if len(files) > 1:
            raise NoResults(f"{which!r} is ambiguous for {script}: "
                            + ", ".join(f.commit for f in files))
        chosen += files
    machines = sorted({_machine(f.machine) for f in chosen})
    if len(machines) > 1:
        raise NoResults(f"{which!r} was measured on {len(machines)} machines "
                        f"({', '.join(machines)}): name one with --machine")
    found: dict[str, dict] = {}
    for f in chosen:
        try:
            record = read_results(f.path)
        except ResultFileError as exc:
            warn(f"{exc}; left out of the comparison")
            continue
        found[record["script"]] = record
    if not found:
        where = f"{folder / machine}" if machine is not None else f"{folder}"
        raise NoResults(f"no results for {which!r} in {where} (a bench script writes "
                        "them when it runs at that commit)")
    return found


def flatten(value, name: str = "") -> dict[str, object]:
    """Leaves of nested dicts and lists by path: ``a.b``, ``a[0].c``."""
    if isinstance(value, dict) and value:
        out: dict[str, object] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{name}.{key}" if name else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, item in enumerate(value):
            out.update(flatten(item, f"{name}[{i}]"))
        return out
    return {name: value}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def show(value) -> str:
    """A figure as a table cell: numbers to 6 significant digits, text cut to 40."""
    if value is MISSING:
        return MISSING
    if _number(value):
        return f"{value:.6g}" if isinstance(value, float) else str(value)
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def ratio(a, b) -> str:
    """B / A for two numbers, A not 0; else empty."""
    if _number(a) and _number(b) and a != 0:
        return f"{b / a:.2f}"
    return ""


def side(record: dict | None) -> str:
    """``commit on MACHINE (date, load L on N cpus)`` of one side (no ``on MACHINE`` for
    a record without a machine's name)."""
    if record is None:
        return "not measured"
    m = record.get("machine", {})
    on = f" on {m['name']}" if m.get("name") else ""
    return (f"{record['commit']}{on} ({record.get('written_at', '?')[:10]}, load "
            f"{m.get('load_1m', '?')} on {m.get('cpus', '?')} cpus)")


def table(a: dict[str, dict], b: dict[str, dict], scripts: list[str] | None = None,
          changed: bool = False) -> list[str]:
    """The lines ``main`` prints for records ``a`` and ``b`` (script id -> record)."""
    lines = []
    names = sorted(set(a) | set(b))
    if scripts:
        names = [n for n in names if n in scripts or n.split("/")[-1] in scripts]
    for name in names:
        ra, rb = a.get(name), b.get(name)
        fa = flatten(ra["figures"]) if ra else {}
        fb = flatten(rb["figures"]) if rb else {}
        rows = []
        for key in list(dict.fromkeys([*fa, *fb])):
            va, vb = fa.get(key, MISSING), fb.get(key, MISSING)
            differs = va != vb
            if changed and not differs:
                continue
            rows.append(("*" if differs else " ", show(va), show(vb), ratio(va, vb), key))
        lines.append("")
        lines.append(f"{name}")
        lines.append(f"  A: {side(ra)}")
        lines.append(f"  B: {side(rb)}")
        if ra and rb and ra.get("argv") != rb.get("argv"):
            lines.append(f"  arguments differ: A {' '.join(ra.get('argv', []))!r}, "
                         f"B {' '.join(rb.get('argv', []))!r}")
        if not rows:
            lines.append("  (no figure differs)" if changed else "  (no figures)")
            continue
        wa = max(len("A"), *(len(r[1]) for r in rows))
        wb = max(len("B"), *(len(r[2]) for r in rows))
        lines.append(f"    {'A':>{wa}}  {'B':>{wb}}  {'B/A':>6}  figure")
        for mark, va, vb, rt, key in rows:
            lines.append(f"  {mark} {va:>{wa}}  {vb:>{wb}}  {rt:>6}  {key}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("a", help="commit (or prefix) or result file: the A side")
    parser.add_argument("b", help="commit (or prefix) or result file: the B side")
    parser.add_argument("--script", action="append",
                        help="only this script (perf/exact_solver or exact_solver; repeatable)")
    parser.add_argument("--machine", default=None,
                        help="only this machine's results (results/<machine>/); default: "
                             "the one machine with results for the commit")
    parser.add_argument("--changed", action="store_true", help="only figures that differ")
    parser.add_argument("--results", type=Path, default=None,
                        help="the results folder (default: $JUNCTION_BENCH_RESULTS or "
                             "bench/results/)")
    args = parser.parse_args(argv)
    folder = args.results or results_dir()
    try:
        a = load(args.a, folder, args.script, args.machine)
        b = load(args.b, folder, args.script, args.machine)
    except NoResults as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    print(f"A = {args.a}, B = {args.b}; * marks a figure that differs")
    print("\n".join(table(a, b, args.script, args.changed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
