"""Reading report text by its structure, not its wording.

A test that pins a report sentence word for word fails on every rewording and says nothing
more than one that reads the sentence's numbers. These helpers read what a line *says*: a
verdict line's status, the strategies it compares, its difference and interval in points,
its task count and rates; a Markdown table as rows keyed by their column names; the first
screen's verdict lines and paragraphs; the Run section's plan and agent lines. A test then
compares those with the numbers it computed (or ``metrics.json`` holds).

Each reader refuses text it cannot read (``AssertionError``), so a line that lost its
numbers fails the test instead of passing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Verdict", "agent_line", "first_screen_paragraphs", "percent", "plan_line",
           "points", "read_points", "read_summary", "read_verdict", "table_rows",
           "verdict_bullets"]

_NAME = r"[\w.-]+"

# the words that carry a verdict's meaning, each status once; a line must say exactly one
_STATUS = {
    "too few": re.compile(r"\btoo few tasks\b", re.I),
    "none": re.compile(r"\bno detectable difference\b", re.I),
    "detected": re.compile(rf"\b{_NAME} beats {_NAME}"),
    "alone": re.compile(rf"\bonly {_NAME}(?: = {_NAME})* ran\b"),
}
_POINTS = re.compile(r"(?P<d>[+-]\d+)(?: points)? \[(?P<lo>[+-]\d+), (?P<hi>[+-]\d+)\]")


def points(x: float) -> int:
    """A difference of rates in whole points, rounded as the report rounds it."""
    return int(f"{100 * x:+.0f}")


def percent(x: float) -> int:
    """A rate in whole percent, rounded as the report rounds it."""
    return int(f"{100 * x:.0f}")


def read_points(text: str) -> tuple[int, int, int]:
    """The first "difference [low, high]" of ``text`` in points: "+60 points [+33, +78]"
    and "+60 [+33, +78]" both read (60, 33, 78)."""
    m = _POINTS.search(text)
    assert m, f"no difference with an interval in {text!r}"
    return int(m["d"]), int(m["lo"]), int(m["hi"])


@dataclass(frozen=True)
class Verdict:
    """What a verdict line or headline sentence says."""

    text: str
    status: str
    """"detected", "none" (no detectable difference), "too few" or "alone"."""
    pair: tuple[str, str] | None
    """The two strategies compared, the better first; None for "alone"."""
    points: tuple[int, int, int] | None
    """Difference, interval low and high, in points; None for "alone"."""
    n: int | None
    """The shared tasks (``n = 20`` or ``over 20 shared tasks``)."""
    rates: dict[str, int] = field(default_factory=dict)
    """Strategy -> success rate in percent, where the line gives rates."""
    tied: tuple[str, ...] = ()
    """The strategies the line says tie for best (none: no tie)."""
    suite: str | None = None
    budget_scale: float | None = None
    outcome: str | None = None
    """The outcome that decides, as the line names it ("verified success", "success")."""


def read_verdict(text: str) -> Verdict:
    """A verdict line of report.md (``verdict_text.verdict_lines``) or a headline sentence
    (``verdicts.headline``'s ``sentence``) read into a ``Verdict``."""
    said = [s for s, pattern in _STATUS.items() if pattern.search(text)]
    assert len(said) == 1, f"not exactly one verdict ({said}) in {text!r}"
    status = said[0]
    cell = re.search(rf"(?:\*\*(?P<bold>[^*]+)\*\*|(?P<plain>{_NAME})) \(budget × "
                     r"(?P<scale>[\d.]+), (?P<outcome>[^,)]+)(?:, n = (?P<n>\d+))?\)", text)
    n = re.search(r"\bn = (\d+)\b", text) or re.search(r"\bover (\d+) shared tasks?\b", text)
    rates = {m[1]: int(m[2]) for m in re.finditer(rf"({_NAME}) (\d+)% against", text)}
    rates |= {m[1]: int(m[2]) for m in re.finditer(rf"against ({_NAME}) (\d+)%", text)}
    pair = None
    if status == "alone":
        alone = re.search(rf"\bonly ({_NAME}) ran \((\d+)%\)", text)
        if alone:
            rates[alone[1]] = int(alone[2])
    else:
        compared = (re.search(rf"({_NAME}) beats ({_NAME})", text)
                    or re.search(rf"between ({_NAME}) and ({_NAME})", text)
                    or re.search(rf"({_NAME}) \d+% against ({_NAME})", text))
        assert compared, f"no pair of strategies in {text!r}"
        pair = (compared[1], compared[2])
    tied = re.search(r"Tied for best: ([\w, -]+)", text)
    if tied:
        names = tuple(x.strip() for x in tied[1].split(","))
    else:
        tie = re.search(rf"((?:{_NAME} and )+{_NAME}) tie for best", text)
        names = tuple(tie[1].split(" and ")) if tie else ()
    return Verdict(
        text=text, status=status, pair=pair,
        points=None if status == "alone" else read_points(text),
        n=int(n[1]) if n else None, rates=rates, tied=names,
        suite=cell and (cell["bold"] or cell["plain"]),
        budget_scale=float(cell["scale"]) if cell else None,
        outcome=cell["outcome"] if cell else None)


def verdict_bullets(md: str) -> list[str]:
    """The first screen's verdict lines: the bullets between ``<!-- verdicts -->`` and
    ``<!-- /verdicts -->``, without their "- "."""
    assert md.count("<!-- verdicts -->") == 1, "no single verdicts block"
    block = md[md.index("<!-- verdicts -->"):md.index("<!-- /verdicts -->")]
    return [line[2:] for line in block.splitlines() if line.startswith("- ")]


def first_screen_paragraphs(md: str) -> list[str]:
    """The paragraphs after the verdict lines and before the plot or the next section: the
    run summary, then what else the first screen says."""
    start = md.index("<!-- /verdicts -->") + len("<!-- /verdicts -->")
    ends = [i for i in (md.find("\n![", start), md.find("\n## ", start)) if i >= 0]
    text = md[start:min(ends) if ends else len(md)]
    return [p.strip() for p in text.split("\n\n") if p.strip()]


_SUMMARY_STATUS = (("too few", r"\btoo few tasks\b"), ("none", r"\bno detectable difference\b"),
                   ("detected", r"\bdetected\b"), ("alone", r"\bsingle strategy\b"))


def read_summary(text: str) -> tuple[int, dict[str, list[str]]]:
    """The run summary (``verdict_text.run_summary``): the number of suites and, per
    verdict status, the suites it names."""
    count = re.search(r"\b(\d+) suites?\b", text)
    assert count, f"no suite count in {text!r}"
    groups: dict[str, list[str]] = {}
    for part in text.rstrip(".").split(";"):
        status = next((s for s, p in _SUMMARY_STATUS if re.search(p, part)), None)
        on = re.search(r"\bon ([\w, -]+)$", part.strip())
        assert status and on, f"unreadable part {part!r} of {text!r}"
        groups[status] = [s.strip() for s in on[1].split(",")]
    return int(count[1]), groups


def _cells(line: str) -> list[str]:
    """A Markdown table line's cells (an escaped ``\\|`` stays inside its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def table_rows(md: str, *columns: str) -> list[dict[str, str]]:
    """The rows of every Markdown table whose header starts with ``columns``, each keyed by
    its own table's column names."""
    lines = md.splitlines()
    out: list[dict[str, str]] = []
    found = False
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        header = _cells(line)
        if tuple(header[:len(columns)]) != columns or i + 1 >= len(lines) \
                or not lines[i + 1].startswith("|---"):
            continue
        found = True
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cells = _cells(row)
            assert len(cells) == len(header), f"{row!r} has not the columns of {header}"
            out.append(dict(zip(header, cells, strict=False)))
    assert found, f"no table with columns {columns}"
    return out


def _line(md: str, prefix: str) -> str:
    (line,) = [x for x in md.splitlines() if x.startswith(prefix)]
    return line


def _scales(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"[\d.]+", text)]


def plan_line(md: str) -> dict[str, dict[str, object]]:
    """The Run section's per-strategy plan: strategy -> {"tasks": per-suite cap or None,
    "scales": the budget scales it runs at or None (every scale)}."""
    line = _line(md, "- per-strategy plan:")
    body = line.split(":", 1)[1].split(". ", 1)[0]
    out: dict[str, dict[str, object]] = {}
    for part in body.split(";"):
        names, what = part.split(":", 1)
        tasks = re.search(r"\b(\d+) tasks\b", what)
        scales = re.search(r"\bat scales? ([\d., ]+?) only\b", what)
        assert tasks or scales or re.search(r"\bevery task\b", what), f"unreadable {part!r}"
        for name in names.split(","):
            out[name.strip()] = {"tasks": int(tasks[1]) if tasks else None,
                                 "scales": _scales(scales[1]) if scales else None}
    return out


def agent_line(md: str) -> dict[str, object]:
    """The Run section's agent line: {"sample": tasks per suite (None: every task),
    "acted": the strategies it acted for (None: every strategy and reference),
    "left_out": those it did not act for, "scale": the budget scale}."""
    line = _line(md, "- agent:")
    sample = re.search(r"\bacted on (?:(\d+) tasks?|every task)\b", line)
    whom = re.search(r"\bfor ([\w, ]+?)(?: \(not for ([\w, ]+)\))?, at budget scale ([\d.]+)",
                     line)
    assert sample and whom, f"unreadable agent line {line!r}"
    every = re.fullmatch(r"every strategy\b.*", whom[1])
    return {"sample": int(sample[1]) if sample[1] else None,
            "acted": None if every else [x.strip() for x in whom[1].split(",")],
            "left_out": [x.strip() for x in whom[2].split(",")] if whom[2] else [],
            "scale": float(whom[3])}
