"""The ``junction`` command line (typer).

``junction strategies`` and ``junction suites`` list the catalogs a run draws from (what
``--strategy`` and ``--suite`` of ``junction bench`` accept; ``--data SUITE=PATH`` names
the folder a suite of third-party data reads).

User mistakes (unknown names, bad queries, unreadable files, a folder option or variable
naming a file) print one line on stderr and exit with status 1; they never print a
traceback. A hint in such a line (``run `junction bench` first``) names the program as the
user started it (``flows.cli_run.invoked_as``: ``.venv/bin/junction`` where that is how).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from enum import StrEnum
from pathlib import Path

import typer

from flows.cli_admit import admit
from flows.cli_judge import judge_app
from flows.cli_models import models_app
from flows.cli_run import (
    WAREHOUSE_OPTION,
    PlanCommands,
    invoked_as,
    reports_root,
    warehouse_root,
)
from flows.cli_text import echo, require_text, terminal_safe
from flows.environment import configure_prefect_env
from junction.environment import state_dir
from junction.errors import JunctionError

with contextlib.suppress(JunctionError):  # a state folder that is a file: main() says so
    configure_prefect_env(logging_level="WARNING")  # before anything imports prefect

app = typer.Typer(  # bench and serve: made when named (flows.cli_run.PlanCommands)
    cls=PlanCommands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Junction: which documents and which tools should an agent see, together?",
)
demo_app = typer.Typer(no_args_is_help=True, help="Small worked examples.")
app.add_typer(demo_app, name="demo")
app.add_typer(judge_app, name="judge")
app.add_typer(models_app, name="models")
app.command("admit")(admit)


def _demo_coupling_result() -> dict:
    from junction_datasets.toy import coupling_task

    from junction.agent.execution import execute
    from junction.candidates import PoolRequest
    from junction.strategies import make_strategy, reads_task, strategies_where
    from junction.verifiers import verify

    task = coupling_task()
    view = task.router_view()
    strategies = {}
    for name in (*strategies_where(role="joint"), *strategies_where(role="split")):
        strategy = make_strategy(name)
        sel = (strategy.select(task, PoolRequest()) if reads_task(strategy, name)
               else strategy.select(view, PoolRequest())).selection
        outcome = verify(task, execute(task, sel.context_ids, sel.tool_ids))
        strategies[name] = {
            "context_ids": list(sel.context_ids),
            "tool_ids": list(sel.tool_ids),
            "tokens_used": sel.tokens_used,
            "budget_tokens": task.budget.max_tokens,
            "objective": round(sel.objective, 6),
            "verified": outcome.success,
            "reason": outcome.reason,
        }
    return {"task_id": task.task_id, "strategies": strategies}


@demo_app.command("coupling")
def demo_coupling(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The contractor-policy task: exact joint selection against the split baselines."""
    result = _demo_coupling_result()
    if as_json:
        typer.echo(json.dumps(result, sort_keys=True))
        return
    rows = [(name, ", ".join(row["context_ids"]), ", ".join(row["tool_ids"]),
             f"{row['tokens_used']}/{row['budget_tokens']}", f"{row['objective']:.3f}",
             "yes" if row["verified"] else f"no: {row['reason']}")
            for name, row in result["strategies"].items()]
    _print_table(("strategy", "contexts", "tools", "tokens", "objective", "verified"), rows,
                 title=f"coupling task {result['task_id']}", width=None)



def _print_table(header, rows, title: str | None = None, width: int | None = 200) -> None:
    """Print rows of strings as a rich table (``width`` None: the terminal's width)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=None if title is None else Text(terminal_safe(title)))
    for col in header:
        table.add_column(Text(terminal_safe(col)))
    for row in rows:  # plain text: a cell's "[...]" is not rich markup, its controls escaped
        table.add_row(*(Text(terminal_safe(cell)) for cell in row))
    Console(width=width).print(table)


@app.command()
def strategies() -> None:
    """List the strategy catalog: role, what it sees, and its place in the default run."""
    from junction.strategies import STRATEGIES

    rows = [(i.name, i.role, "yes" if i.sees_interactions else "no",
             "yes" if i.respects_budget else "no", "yes" if i.in_default_run else "no",
             "-" if i.default_size is None else str(i.default_size),
             "-" if i.default_scales is None else ",".join(f"{x:g}" for x in i.default_scales),
             i.description) for i in sorted(STRATEGIES.values(), key=lambda i: i.name)]
    _print_table(("strategy", "role", "interactions", "budget", "default run", "cap",
                  "scales", "what it does"), rows)


def _pool_limit_text(limit) -> str:
    """A suite's candidate-pool limit per lane: ``-`` (the whole pool), N, or a pair
    ``contexts/tools`` (either ``-``)."""
    if limit is None:
        return "-"
    if isinstance(limit, tuple):
        return "/".join("-" if n is None else str(n) for n in limit)
    return str(limit)


def _data_text(info) -> str:
    """A suite's data folder: ``-`` without one (``SuiteInfo.data_env`` None), else its
    environment variable and whether a folder is set and can be read now."""
    if info.data_env is None:
        return "-"
    if info.data_folder() is None:
        return f"${info.data_env}: not set"
    reason = info.unavailable_reason()
    return f"${info.data_env}: " + ("set, available" if reason is None
                                    else f"set, unavailable: {reason}")


@app.command()
def suites() -> None:
    """List the suite registry: family, size, pool limit, place in the default run, data.

    Default size: tasks in the default run's sample (-: every task); pool limit: candidates
    per lane its strategies see (-: the whole pool; contexts/tools: one per lane); data: the
    environment variable naming the folder a suite of third-party data reads, and whether
    one is set and readable now (`junction bench --data SUITE=PATH` names one for a run).
    """
    from junction_datasets import SUITES, suite_names

    rows = [(name, i.family or "-", "-" if i.default_size is None else str(i.default_size),
             _pool_limit_text(i.pool_limit), "yes" if i.in_default_run else "no",
             "yes" if i.cross_fit else "no", _data_text(i), i.description)
            for name, i in ((n, SUITES[n]) for n in suite_names())]
    _print_table(("suite", "family", "default size", "pool limit", "default run",
                  "cross-fitted", "data", "what it is"), rows)


@app.command()
def runs(warehouse: str = WAREHOUSE_OPTION) -> None:
    """List benchmark runs, oldest first."""
    from junction.evidence.store import TraceStore

    metas = TraceStore(warehouse_root(warehouse)).run_metas()
    if not metas:
        raise JunctionError("no runs yet; run `junction bench` first")
    rows = []
    for m in metas:
        raw_params = m.get("params")
        params = raw_params if isinstance(raw_params, dict) else {}
        commit = str(m.get("git_commit") or "?")[:10] + ("+" if m.get("git_dirty") else "")
        status = str(m.get("status") or "?") + (f" ({m['problem']})" if m.get("problem") else "")
        rows.append((m["run_id"], commit, status, str(m.get("started_at") or ""),
                     ",".join(params.get("suites", [])), ",".join(params.get("strategies", []))))
    _print_table(("run_id", "commit", "status", "started_at", "suites", "strategies"), rows)


@app.command()
def report(
    run: str = typer.Argument(..., help="Run id, latest, previous, or a git commit."),
    warehouse: str = WAREHOUSE_OPTION,
    reports: str = typer.Option(None, "--reports", help="Reports folder (default ./reports)."),
) -> None:
    """(Re)write the report of one run."""
    root = warehouse_root(warehouse)  # a folder named that cannot be used: one line, first
    folder = Path(reports_root(reports, writable=True))
    from flows.plan import REPORT_LEFT_OUT
    from junction.evidence.diff import resolve_run
    from junction.evidence.reports import write_report
    from junction.evidence.warehouse import Warehouse

    wh = Warehouse(root)
    run_id = resolve_run(wh.store, run)
    data = wh.run_data(run_id)
    recorded = data.run.get("plugins")
    if recorded is not None:
        from flows.preflight import plugin_differences

        changed = plugin_differences(recorded)
        if changed:  # a plug-in's strategies and suites are then read without their records
            typer.echo(f"warning: run {run_id} was made with other plug-ins ({changed}): "
                       "their strategies and suites are reported without their catalog "
                       "records", err=True)
    try:
        paths = write_report(folder / run_id, data, params_left_out=REPORT_LEFT_OUT)
    except OSError as exc:  # a folder that became unwritable, a full disk
        raise JunctionError(f"cannot write the report of run {run_id} under {folder}: "
                            f"{exc.strerror or exc}") from None
    typer.echo(f"report: {paths['report.md']}")


class DiffFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


@app.command()
def diff(
    a: str = typer.Argument(..., help="Before: run id, latest, previous, or a git commit."),
    b: str = typer.Argument(..., help="After: run id, latest, previous, or a git commit."),
    fmt: DiffFormat = typer.Option(DiffFormat.table, "--format"),
    changed: bool = typer.Option(False, "--changed", help="Only rows whose value changed."),
    html_path: Path = typer.Option(None, "--html", help="Also write the diff as an HTML page "
                                   "(changed rows first) to this path."),
    warehouse: str = WAREHOUSE_OPTION,
) -> None:
    """What both runs share, the run parameters that differ (the learned fit's search
    among them), then per suite and strategy each metric before, after, change and a paired
    95% CI (binary metrics: McNemar/Newcombe, as the report's headline)."""
    from flows.run_record import compared_params
    from junction.evidence.diff import (
        check_comparable,
        diff_page,
        diff_runs,
        format_row,
        param_lines,
        resolve_run,
        run_scope,
        scope_lines,
    )
    from junction.evidence.store import TraceStore

    store = TraceStore(warehouse_root(warehouse))
    run_a, run_b = resolve_run(store, a), resolve_run(store, b)
    if run_a == run_b:
        raise JunctionError(f"{a!r} and {b!r} are the same run ({run_a}); nothing to compare")
    params = compared_params(store.read_run_meta(run_a) or {}, store.read_run_meta(run_b) or {})
    traces_a, traces_b = store.read_traces(run_a), store.read_traces(run_b)
    scope = run_scope(traces_a, traces_b)
    check_comparable(scope)
    rows = diff_runs(traces_a, traces_b)
    if html_path is not None:
        html_path.write_text(diff_page(run_a, run_b, scope, rows, params))
    n_total = len(rows)
    n_changed = sum(r["change"] != 0 for r in rows)
    n_significant = sum(r["significant"] for r in rows)
    if changed:
        rows = [r for r in rows if r["change"] != 0]
    if fmt is DiffFormat.json:
        typer.echo(json.dumps({"before": run_a, "after": run_b, "params": params,
                               "scope": scope, "rows": rows}, sort_keys=True))
        return
    for line in [*scope_lines(scope), *param_lines(params)]:  # then the metric rows
        typer.echo(line)

    header = ("suite", "strategy", "scale", "metric", "tasks", "before", "after", "change",
              "95% CI", "sig")
    cells = [(r["suite"], r["strategy"], f"{r['budget_scale']:g}", r["metric"], str(r["tasks"]),
              f["before"], f["after"], f["change"], f["ci"], "*" if r["significant"] else "")
             for r, f in ((r, format_row(r)) for r in rows)]
    if fmt is DiffFormat.markdown:
        typer.echo(f"\nDiff {run_a} -> {run_b} (* = significant by the paired test)\n")
        typer.echo("| " + " | ".join(header) + " |")
        typer.echo("|" + "---|" * len(header))
        for row in cells:
            typer.echo("| " + " | ".join(row) + " |")
        return
    if cells:
        _print_table(header, cells,
                     title=f"{run_a} -> {run_b}  (sig * = significant by the paired test)")
    summary = f"{n_changed} of {n_total} metric rows changed, {n_significant} significantly"
    typer.echo(summary if changed else summary + " (--changed shows only those)")


class SqlFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def sql(
    query: str = typer.Argument(..., help="SQL over the views traces, timings, runs, "
                                          "strategy_summary."),
    fmt: SqlFormat = typer.Option(SqlFormat.table, "--format"),
    warehouse: str = WAREHOUSE_OPTION,
) -> None:
    """Run one read-only SQL query (SELECT only) against the warehouse views."""
    from junction.evidence.warehouse import Warehouse

    require_text(query, "QUERY")
    result = Warehouse(warehouse_root(warehouse)).query(query)
    if fmt is SqlFormat.csv:
        import pyarrow.csv as pacsv

        sink = sys.stdout.buffer
        pacsv.write_csv(_nested_as_json(result), sink)
        sink.flush()
        return
    rows = result.to_pylist()
    if fmt is SqlFormat.json:  # JSON has no NaN or infinity: they are null
        typer.echo(json.dumps(_json_finite(rows), default=str, sort_keys=True,
                              allow_nan=False))
        return
    _print_table(result.column_names,
                 [["NULL" if v is None else _cell_text(v) for v in row.values()] for row in rows])


def _json_finite(value):
    """``value`` (rows of Python values, nested lists and dicts) with every NaN or infinite
    float replaced by None, so ``json.dumps`` gives valid JSON (RFC 8259 has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_finite(v) for v in value]
    return value


def _cell_text(value) -> str:
    """A table cell: lists and structs as JSON text, everything else as ``str``."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


def _nested_as_json(table):
    """``table`` with every list, struct or map column as JSON text (CSV has no nesting)."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_nested(field.type):
            texts = [None if v is None else _cell_text(v) for v in table.column(i).to_pylist()]
            table = table.set_column(i, pa.field(field.name, pa.string()),
                                     pa.array(texts, pa.string()))
    return table


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: ``warning: <message>``, one line."""
    print(terminal_safe(f"warning: {_as_invoked(str(message))}"), file=file or sys.stderr)


_HINT = re.compile(r"\b(run|with) `junction ")
"""A hint's command in a message: "run `junction bench` first", "resume it with `junction
bench --run-id ...`"."""


def _as_invoked(text: str) -> str:
    """``text`` with each hint's ``junction`` command (``_HINT``) spelled as this program
    was started (``invoked_as``: ``.venv/bin/junction`` where that is how)."""
    program = invoked_as()
    if program == "junction":
        return text
    return _HINT.sub(lambda m: f"{m.group(1)} `{program} ", text)


def main() -> None:
    """Console-script entry point: run the app, turning Junction errors into one line and
    warnings into ``warning: ...`` lines; a hint in either names the program as it was
    started (``_as_invoked``). A state folder (``JUNCTION_STATE_DIR``) or Prefect home
    that is a file is one such line too, before any command runs."""
    import warnings

    warnings.showwarning = _one_line_warning
    try:
        state_dir()  # a state folder that is a file: one line, whatever the command
        configure_prefect_env(logging_level="WARNING")  # again: the one line if it failed
        app(prog_name=invoked_as())  # usage lines too: "Try '.venv/bin/junction bench --help'"
    except JunctionError as exc:
        echo(f"error: {_as_invoked(str(exc))}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run handles it: flows.interrupts)
        echo("interrupted", err=True)
        sys.exit(130)
    except SystemExit as exc:  # typer ends a Ctrl-C with a silent exit 130: say it
        if exc.code == 130 and _from_ctrl_c(exc):
            echo("interrupted before the run started; nothing was written", err=True)
        raise


def _from_ctrl_c(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among ``exc``'s causes and contexts."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


if __name__ == "__main__":
    main()
