"""The report's success-against-budget figure, with one fixed style per strategy.

Each strategy is drawn in the same colour and marker in every panel, from its record in
the strategy catalog (``strategy_style``; colours: matplotlib's ``tab10`` palette, whose
entries are named ``tab:blue`` ...). References (the catalog's ``reference_strategies``)
are drawn dashed and labelled "<name> (reference)". The one legend is built from the
strategies actually drawn, in any panel, so it names exactly the lines on the figure.

``success_plot`` also writes a JSON sidecar beside the image (``plot.json`` beside
``plot.png``) that lists every line drawn (suite, strategy, label, colour, marker, line
style, budget scales, rates) and the legend's labels, so a check can compare the legend
with the lines without reading pixels.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa

from junction.evidence import verdicts
from junction.evidence.arrow_sql import registered
from junction.strategies.catalog import STRATEGIES, reference_strategies

__all__ = [
    "LineStyle",
    "scales_note",
    "sidecar_path",
    "strategy_label",
    "strategy_style",
    "strategy_times",
    "success_figure",
    "success_plot",
    "time_plot",
]


@dataclass(frozen=True)
class LineStyle:
    """How one strategy is drawn: matplotlib colour name, marker and line style."""

    colour: str
    marker: str
    linestyle: Literal["-", "--"]


_SPARE_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
_SPARE_MARKERS = ("*", "P", "X", "d", "1", "2")


def strategy_style(strategy: str) -> LineStyle:
    """The strategy's style, fixed for every figure: its catalog record's ``colour`` and
    ``marker``, else ones chosen by a sha256 of its name (stable across runs and
    processes); dashed when it is a reference (``respects_budget=False``)."""
    info = STRATEGIES.get(strategy)
    if info is not None and info.colour and info.marker:
        return LineStyle(info.colour, info.marker, "-" if info.respects_budget else "--")
    digest = int(hashlib.sha256(strategy.encode()).hexdigest(), 16)
    return LineStyle(_SPARE_COLOURS[digest % len(_SPARE_COLOURS)],
                     _SPARE_MARKERS[(digest // 7) % len(_SPARE_MARKERS)],
                     "--" if strategy in reference_strategies() else "-")


def strategy_label(strategy: str) -> str:
    """The legend label: the name, with " (reference)" after a reference strategy."""
    return f"{strategy} (reference)" if strategy in reference_strategies() else strategy


def _order(strategies: Iterable[str]) -> list[str]:
    """Strategies first, references last, each by name."""
    references = reference_strategies()
    return sorted(strategies, key=lambda s: (s in references, s))


def success_figure(summary: Sequence[Mapping[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """(matplotlib figure, lines drawn) of verified success rate against budget scale.

    Figure: 4.2 in per panel wide (up to 3 panels a row), 3.2 in per row high plus 0.6 in,
    the one legend on top.
    ``summary``: ``strategy_summary`` rows (suite, strategy, budget_scale, tasks,
    success_rate). One panel per suite (sorted), one line per strategy with a rate, Wilson
    95% error bars (``verdicts.wilson_interval``, scipy), x on a log2 axis. Lines of
    different strategies are nudged apart on x by up to ±1.5% per strategy so that their
    bars do not hide each other; the recorded ``x`` is the unshifted budget scale.
    Each line: {suite, strategy, label, colour, marker, linestyle, reference, x, y}.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    suites = sorted({r["suite"] for r in summary})
    strategies = _order({r["strategy"] for r in summary})
    cols = max(1, min(3, len(suites)))
    nrows = max(1, math.ceil(len(suites) / cols))
    # at least 6.4 inches wide, so a one-panel figure's legend takes two or three columns
    # and leaves the panel its height; taller by the legend's rows
    width = max(4.2 * cols, 6.4)
    names = [strategy_label(s) for s in strategies]
    entry = LEGEND_CHAR_IN * max((len(n) for n in names), default=1) + LEGEND_MARK_IN
    legend_rows = math.ceil(len(names) / max(1, min(len(names), int(width // entry)))) \
        if names else 0
    fig, axes = plt.subplots(nrows, cols, figsize=(width, 3.2 * nrows + 0.6 + 0.2 * legend_rows),
                             squeeze=False, sharey=True)
    offsets = {s: (i - (len(strategies) - 1) / 2) * 0.015 for i, s in enumerate(strategies)}
    lines: list[dict[str, Any]] = []
    for ax, suite in zip(axes.flat, suites, strict=False):
        for strategy in strategies:
            rows = sorted((r for r in summary if r["suite"] == suite and r["strategy"] == strategy
                           and r["success_rate"] is not None), key=lambda r: r["budget_scale"])
            if not rows:
                continue
            style = strategy_style(strategy)
            xs = [r["budget_scale"] * (1 + offsets[strategy]) for r in rows]
            ys = [r["success_rate"] for r in rows]
            cis = [verdicts.wilson_interval(round(r["success_rate"] * r["tasks"]), r["tasks"])
                   for r in rows]
            err = [[max(0.0, y - lo) for y, (lo, _) in zip(ys, cis, strict=True)],
                   [max(0.0, hi - y) for y, (_, hi) in zip(ys, cis, strict=True)]]
            ax.errorbar(xs, ys, yerr=err, color=style.colour, marker=style.marker,
                        linestyle=style.linestyle, capsize=3, label=strategy_label(strategy))
            lines.append({"suite": suite, "strategy": strategy, "label": strategy_label(strategy),
                          "colour": style.colour, "marker": style.marker,
                          "linestyle": style.linestyle,
                          "reference": strategy in reference_strategies(),
                          "x": [r["budget_scale"] for r in rows], "y": ys})
        scales = sorted({r["budget_scale"] for r in summary if r["suite"] == suite})
        ax.set_xscale("log", base=2)
        ax.set_xticks(scales, [f"{x:g}" for x in scales])
        ax.set_xlim(scales[0] / 1.6, scales[-1] * 1.6)
        ax.minorticks_off()
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(suite, fontsize=9)
        ax.set_xlabel("budget scale", fontsize=8)
    for ax in list(axes.flat)[len(suites):]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("verified success rate")
    drawn = _order({line["strategy"] for line in lines})
    handles = [Line2D([], [], color=strategy_style(s).colour, marker=strategy_style(s).marker,
                      linestyle=strategy_style(s).linestyle) for s in drawn]
    # the legend above the panels, so the first screen of a report shows it; as many
    # entries a row as the figure's width holds (a one-panel figure wraps), none cut off
    width, height = fig.get_size_inches()
    labels = [strategy_label(s) for s in drawn]
    label_rows = 1
    if drawn:
        entry = LEGEND_CHAR_IN * max(len(label) for label in labels) + LEGEND_MARK_IN
        ncol = max(1, min(len(drawn), int(width // entry)))
        label_rows = math.ceil(len(drawn) / ncol)
        fig.legend(handles, labels, loc="upper center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.2 + 0.2 * label_rows) / height))
    return fig, lines


LEGEND_CHAR_IN = 0.075
"""Inches one character of an 8-point legend label takes (DejaVu Sans averages about 0.6
em a character: 8 pt x 0.6 / 72 = 0.067, with room to spare)."""

LEGEND_MARK_IN = 0.6
"""Inches of a legend entry besides its label: the line and marker, and the gap after."""


def sidecar_path(image: Path) -> Path:
    """Where ``success_plot`` writes the lines of ``image``: the same name, ``.json``."""
    return image.with_suffix(".json")


def success_plot(summary: Sequence[Mapping[str, Any]], path: Path,
                 sidecar: Path | None = None, image_name: str | None = None) -> None:
    """Draw ``success_figure`` to ``path`` (PNG, 80 dpi, no software tag, so the bytes are
    deterministic) and its lines and legend to ``sidecar`` (default ``sidecar_path(path)``;
    JSON: {"image": ``image_name`` or the file's name, "legend": [labels], "lines": [...]},
    sorted keys). What the figure cannot show is ``scales_note``'s."""
    import matplotlib.pyplot as plt

    fig, lines = success_figure(summary)
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
    drawn = _order({line["strategy"] for line in lines})
    doc = {"image": image_name or path.name, "legend": [strategy_label(s) for s in drawn],
           "lines": lines}
    (sidecar or sidecar_path(path)).write_text(
        json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n")


def scales_note(summary: Sequence[Mapping[str, Any]]) -> str:
    """A note on what ``success_figure`` of ``summary`` cannot show ("" if nothing): with one
    budget scale, no curve."""
    scales = sorted({r["budget_scale"] for r in summary})
    if len(scales) == 1:
        return (f"Only budget scale {scales[0]:g} ran, so each panel has one point per "
                "strategy; `--budget-scale 0.5 --budget-scale 1 --budget-scale 2` draws curves.")
    return ""


def strategy_times(timings: pa.Table,
                   con: duckdb.DuckDBPyConnection | None = None) -> list[tuple[str, float, float]]:
    """(strategy, selection s, execution s) per strategy from ``timings`` rows (milliseconds),
    by name. ``con``: the DuckDB connection to compute in
    (``junction.evidence.arrow_sql.registered``; None: its own)."""
    with registered(con, timings=timings) as db:
        return [(r[0], float(r[1] or 0.0), float(r[2] or 0.0)) for r in db.sql(
            "SELECT strategy, sum(select_ms) / 1000, sum(execute_ms) / 1000 FROM timings "
            "GROUP BY strategy ORDER BY strategy").fetchall()]


def time_plot(rows: Sequence[tuple[str, float, float]], path: Path) -> None:
    """Horizontal bars: selection and execution seconds per strategy (log scale), from
    ``strategy_times``' rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.7 * len(rows) + 1.4))
    ys = range(len(rows))
    floor = 1e-3  # a log axis cannot show 0 s: bars start at 1 ms
    for offset, (label, index) in ((-0.2, ("selection", 1)), (0.2, ("execution", 2))):
        values = [max(r[index], floor) for r in rows]
        bars = ax.barh([y + offset for y in ys], values, height=0.38, label=label)
        for bar, r in zip(bars, rows, strict=True):
            ax.text(bar.get_width() * 1.1, bar.get_y() + bar.get_height() / 2,
                    f"{r[index]:.3g} s", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yticks(list(ys), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds, summed over the run's tasks (log scale)")
    top = max([max(r[1], r[2]) for r in rows] + [floor])
    ax.set_xlim(floor / 2, top * 8)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("selection and execution time per strategy", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(fig)
