"""The success-against-budget figure tells the truth: every line's label matches the data
it draws, each strategy has one colour in the whole figure, and the legend names exactly
the strategies drawn.

The summary below has panels with different strategy sets (the case that mislabelled
main's plot: each panel cycled colours over its own strategies and the one legend came
from the first panel). Expected rates are the summary's own values.
"""

from __future__ import annotations

import json
from typing import cast

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

matplotlib.use("Agg")

# suite -> strategy -> {scale: rate}; 10 tasks per cell
_RATES = {
    "bfcl-multiple": {"bfcl_listed": {1.0: 0.9}, "exact": {0.5: 0.5, 1.0: 0.7},
                      "fixed_split": {0.5: 0.3, 1.0: 0.6}},
    "synthetic": {"exact": {0.5: 0.4, 1.0: 0.7, 2.0: 0.8}, "fixed_split": {0.5: 0.0, 1.0: 0.1,
                  2.0: 0.2}, "judge_admission": {1.0: 0.3}},
    "coupling": {"adaptive_split": {1.0: 0.2}, "exact": {1.0: 1.0}},
}


def _summary() -> list[dict]:
    return [{"suite": suite, "strategy": strategy, "budget_scale": scale, "tasks": 10,
             "success_rate": rate}
            for suite, by_strategy in _RATES.items() for strategy, by_scale in by_strategy.items()
            for scale, rate in by_scale.items()]


def _draw(tmp_path, monkeypatch) -> Figure:
    """Run the report's plot code and keep the figure it saves."""
    from junction.evidence import plots

    saved: list[Figure] = []
    original = Figure.savefig

    def keep(self, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    plots.success_plot(_summary(), tmp_path / "plot.png")
    (fig,) = saved
    return fig


def _lines(fig: Figure) -> list[tuple[str, str, str, list[float]]]:
    """(panel title, label, colour, y data) of every labelled line, from the artists."""
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for container in ax.containers:  # errorbar: the data line is lines[0]
            line = cast(ErrorbarContainer, container).lines[0]
            out.append((ax.get_title(), str(container.get_label()), to_hex(line.get_color()),
                        [float(y) for y in np.asarray(line.get_ydata())]))
        for line in ax.get_lines():
            if not str(line.get_label()).startswith("_"):
                out.append((ax.get_title(), str(line.get_label()), to_hex(line.get_color()),
                            [float(y) for y in np.asarray(line.get_ydata())]))
    return out


def test_every_line_draws_its_own_strategy_in_one_colour(tmp_path, monkeypatch):
    fig = _draw(tmp_path, monkeypatch)
    lines = _lines(fig)
    assert len(lines) == sum(len(v) for v in _RATES.values())  # 7 lines in 3 panels
    colours: dict[str, set[str]] = {}
    for suite, label, colour, ys in lines:
        strategy = label.removesuffix(" (reference)")
        expected = [rate for _, rate in sorted(_RATES[suite][strategy].items())]
        assert ys == pytest.approx(expected), f"{suite}: line {label!r} draws another's data"
        colours.setdefault(strategy, set()).add(colour)
    two = {s: sorted(c) for s, c in colours.items() if len(c) > 1}
    assert not two, f"a strategy drawn in two colours: {two}"
    assert len({c for (c,) in colours.values()}) == len(colours), "two strategies share a colour"
    # the one legend: exactly the strategies drawn, each in the colour of its lines
    (legend,) = fig.legends
    entries = {t.get_text(): to_hex(h.get_color())
               for t, h in zip(legend.get_texts(), legend.legend_handles, strict=False)}
    assert set(entries) == {label for _, label, _, _ in lines}
    for label, colour in entries.items():
        assert {colour} == colours[label.removesuffix(" (reference)")], label


def test_references_are_dashed_and_named_as_references(tmp_path, monkeypatch):
    fig = _draw(tmp_path, monkeypatch)
    (panel,) = [ax for ax in fig.axes if ax.get_title() == "bfcl-multiple"]
    styles = {c.get_label(): c.lines[0].get_linestyle() for c in panel.containers}
    assert styles == {"bfcl_listed (reference)": "--", "exact": "-", "fixed_split": "-"}


def test_the_sidecar_lists_the_lines_and_the_legend(tmp_path, monkeypatch):
    _draw(tmp_path, monkeypatch)
    doc = json.loads((tmp_path / "plot.json").read_text())
    assert doc["image"] == "plot.png"
    assert doc["legend"] == ["adaptive_split", "exact", "fixed_split", "judge_admission",
                             "bfcl_listed (reference)"]
    synthetic_exact = [x for x in doc["lines"]
                       if (x["suite"], x["strategy"]) == ("synthetic", "exact")]
    assert [(x["x"], x["y"], x["colour"]) for x in synthetic_exact] == [
        ([0.5, 1.0, 2.0], [0.4, 0.7, 0.8], "tab:blue")]
    assert {x["label"] for x in doc["lines"]} == set(doc["legend"])
