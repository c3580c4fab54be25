"""The ``junction`` command line (typer).

User mistakes (unknown names, bad queries, unreadable files) print one line on stderr and
exit with status 1; they never print a traceback.
"""

from __future__ import annotations

import json
import math
import os
import sys
from enum import Enum
from pathlib import Path

import typer

from flows.cli_admit import admit
from flows.cli_judge import judge_app
from flows.cli_models import models_app
from flows.cli_text import echo, require_text, terminal_safe
from flows.environment import configure_prefect_env
from junction.environment import PROJECT_ROOT
from junction.errors import JunctionError

configure_prefect_env(logging_level="WARNING")  # before anything imports prefect

app = typer.Typer(
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
    from junction.agent.execution import execute, verify
    from junction.strategies import make_strategy, strategies_where

    task = coupling_task()
    view = task.router_view()
    strategies = {}
    for name in (*strategies_where(role="joint"), *strategies_where(role="split")):
        sel = make_strategy(name).select(view, None).selection
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


def _warehouse_root() -> str:
    return os.environ.get("JUNCTION_WAREHOUSE", str(PROJECT_ROOT / "warehouse"))


def _reports_root() -> str:
    return os.environ.get("JUNCTION_REPORTS", str(PROJECT_ROOT / "reports"))


WAREHOUSE_OPTION = typer.Option(None, "--warehouse", help="Traces root: a folder or an fsspec "
                                "URL (default: $JUNCTION_WAREHOUSE or ./warehouse).")


class Runner(str, Enum):
    thread = "thread"
    dask = "dask"


def _strategy_option(values: list[str] | None, option: str, kind: type) -> dict | None:
    """``STRATEGY=VALUE`` options as a dict (None when not given; ``none`` alone: {})."""
    if not values:
        return None
    if values == ["none"]:
        return {}
    out: dict = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            parsed = kind(value)
        except ValueError:
            raise JunctionError(f"{option} takes STRATEGY={kind.__name__.upper()}, got "
                                f"{text!r}") from None
        if kind is int:
            out[name] = parsed
        else:
            out.setdefault(name, []).append(parsed)
    return out


def _strategy_scales(values: list[str] | None) -> dict | None:
    return _strategy_option(values, "--strategy-scale", float)


class _JunctionErrorsSaidOnce:
    """A logging filter for Prefect's run loggers: drops the records (with tracebacks)
    of a ``JunctionError`` that ends a run, which ``main`` prints as its one line."""

    @staticmethod
    def filter(record) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JunctionError)


def _quiet_prefect_run_errors() -> None:
    import logging

    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _JunctionErrorsSaidOnce) for f in logger.filters):
            logger.addFilter(_JunctionErrorsSaidOnce())


def _agent_model(value: str | None) -> str | None:
    """An embedded model name as given; a path resolved (``ModelError`` if missing)."""
    if value is None:
        return None
    from junction.models import EMBEDDED_MODELS, resolve_model_path

    return value if value in EMBEDDED_MODELS else str(resolve_model_path(value).resolve())


@app.command()
def bench(
    suite: list[str] = typer.Option(None, "--suite", help="Suite name (repeatable; default: all)."),
    strategy: list[str] = typer.Option(None, "--strategy", help="Strategy (repeatable; default: the catalog's default plan, `junction strategies`)."),
    seed: list[int] = typer.Option(None, "--seed", help="Suite seed (repeatable; default 0)."),
    budget_scale: list[float] = typer.Option(
        None, "--budget-scale", help="Token-budget multiplier (repeatable; default 0.5, 1, 2)."),
    size: int = typer.Option(None, "--size", min=1, help="Tasks per suite (default: each suite's default size)."),
    full: bool = typer.Option(False, "--full", help="Every task of every suite (no subsampling)."),
    batch_size: int = typer.Option(100, "--batch-size", min=1, help="Tasks per work unit."),
    run_id: str = typer.Option(None, "--run-id", help="Name the run; if a run of this id "
                               "exists, complete it (same parameters only)."),
    runner: Runner = typer.Option(Runner.thread, "--runner", help="Task runner."),
    workers: int = typer.Option(None, "--workers", min=1, help="Workers (threads or Dask processes)."),
    dask_address: str = typer.Option(None, "--dask-address", help="Existing Dask scheduler address."),
    suite_file: list[Path] = typer.Option(None, "--suite-file",
                                          help="JSON Lines suite file (repeatable)."),
    strategy_size: list[str] = typer.Option(
        None, "--strategy-size", metavar="STRATEGY=N",
        help="At most N tasks per suite for STRATEGY (repeatable). Default without --size/"
             "--full: the catalog's caps (`junction strategies`); with either: none. `none` "
             "lifts every cap."),
    strategy_scale: list[str] = typer.Option(
        None, "--strategy-scale", metavar="STRATEGY=F",
        help="Run STRATEGY at budget scale F only (repeatable; F among --budget-scale). "
             "Default without --budget-scale: the catalog's scales (`junction strategies`); "
             "with it: none. `none` runs every strategy at every scale."),
    agent_size: int = typer.Option(
        None, "--agent-size", min=0,
        help="BFCL tasks per suite the language-model agent acts on, for every strategy and "
             "reference at budget scale 1 (default: 1; with --full: every task; with --size: "
             "0). 0 runs no agent."),
    agent_model: str = typer.Option(
        None, "--agent-model", metavar="PATH|NAME",
        help="The agent's GGUF file or embedded model name (default: the embedded "
             "Qwen2.5-Coder-0.5B-Instruct); with --agent-url, the model id the server "
             "serves."),
    agent_url: str = typer.Option(
        None, "--agent-url", metavar="URL",
        help="An OpenAI-compatible server's base URL (http://host:port/v1): the agent's "
             "prompts go there. The API key, if any, comes from $JUNCTION_AGENT_API_KEY."),
    agent_concurrency: int = typer.Option(
        1, "--agent-concurrency", min=1, metavar="N",
        help="Requests in flight to --agent-url at once."),
    agent_context_tokens: int = typer.Option(None, "--agent-context-tokens", metavar="N", help="The --agent-url server's context window in tokens (default: as the server reports it)."),
    tau2_data: Path = typer.Option(
        None, "--tau2-data", metavar="PATH",
        help="tau2-bench checkout or banking_knowledge folder for the tau2-banking suite "
             "(default: $JUNCTION_TAU2_DATA)."),
    warehouse: str = WAREHOUSE_OPTION,
    reports: str = typer.Option(None, "--reports", help="Reports folder (default ./reports)."),
) -> None:
    """Run the benchmark flow and write the report.

    With no options: every suite and every strategy of the default plan at budget scales
    0.5, 1 and 2 on each suite's default benchmark sample, a strategy with a catalog cap or
    scale (the judge, the references: `junction strategies`) within it; the references on
    BFCL suites only; the language-model agent on 1 task per BFCL suite for every strategy
    and reference.
    """
    from junction_datasets.jsonl import load_suite_file

    from flows.plan import RunPlan, prepare_run
    from junction.evidence.store import TraceStore
    from junction_datasets.tau2_banking import DATA_ENV

    if tau2_data is not None:
        os.environ[DATA_ENV] = str(tau2_data.resolve())
    plan = RunPlan.build(
        suites=suite or None, strategies=strategy or None, seeds=seed or None,
        budget_scales=budget_scale or None, size=size, full=full,
        batch_size=batch_size, output_root=warehouse or _warehouse_root(),
        reports_root=reports or _reports_root(), runner=runner.value,
        workers=workers, dask_address=dask_address,
        suite_files=[str(p.resolve()) for p in suite_file or []] or None,
        strategy_size=_strategy_option(strategy_size, "--strategy-size", int),
        strategy_scales=_strategy_scales(strategy_scale),
        agent_size=agent_size,
        agent_model=agent_model if agent_url else _agent_model(agent_model),
        agent_url=agent_url, agent_concurrency=agent_concurrency,
        agent_context_tokens=agent_context_tokens,
    )  # every check that needs no suite data: one error before anything starts
    given_id, run_id = run_id, prepare_run(plan, run_id)
    for path in suite_file or []:
        load_suite_file(path)  # refuse a malformed file before anything starts
    store = TraceStore(plan.output_root)
    if given_id:
        known = store.read_run_meta(run_id) is not None
        typer.echo(f"{'resuming' if known else 'starting new'} run {run_id}")
    with store.run_lock(run_id):  # before Prefect is imported: a second writer is told now
        result = _run_with_progress(plan, run_id)
    typer.echo(f"run {result['run_id']}: {result['tasks']} task evaluations in "
               f"{result['units']} units ({result['units_skipped']} already done)")
    typer.echo(f"report: {result['report']}")


def _run_with_progress(plan, run_id: str) -> dict:
    """Run a prepared plan (its run lock held) with a progress bar of units."""
    import flows.benchmark as fb
    from rich.progress import Progress

    _quiet_prefect_run_errors()  # a run that fails on a JunctionError says so once, below
    with Progress(transient=False) as progress:
        bar = progress.add_task("benchmark units", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        return fb.run_prepared(plan, run_id, progress=advance)


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


@app.command()
def runs(warehouse: str = WAREHOUSE_OPTION) -> None:
    """List benchmark runs, oldest first."""
    from junction.evidence.store import TraceStore

    metas = TraceStore(warehouse or _warehouse_root()).run_metas()
    if not metas:
        raise JunctionError("no runs yet; run `junction bench` first")
    rows = []
    for m in metas:
        params = m.get("params") if isinstance(m.get("params"), dict) else {}
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
    from junction.evidence.diff import resolve_run
    from junction.evidence.reports import run_timings, write_report
    from junction.evidence.store import TraceStore

    root = warehouse or _warehouse_root()
    store = TraceStore(root)
    run_id = resolve_run(store, run)
    meta = store.read_run_meta(run_id) or {"run_id": run_id}
    paths = write_report(Path(reports or _reports_root()) / run_id, meta,
                         store.read_traces(run_id), meta.get("suites", {}),
                         timings=run_timings(root, run_id))
    typer.echo(f"report: {paths['report.md']}")


class DiffFormat(str, Enum):
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
    """What both runs share, then per suite and strategy each metric before, after, change
    and a paired 95% CI (binary metrics: McNemar/Newcombe, as the report's headline)."""
    from junction.evidence.diff import check_comparable, diff_page, diff_runs, format_row, resolve_run, \
        run_scope, scope_lines
    from junction.evidence.store import TraceStore

    store = TraceStore(warehouse or _warehouse_root())
    run_a, run_b = resolve_run(store, a), resolve_run(store, b)
    if run_a == run_b:
        raise JunctionError(f"{a!r} and {b!r} are the same run ({run_a}); nothing to compare")
    traces_a, traces_b = store.read_traces(run_a), store.read_traces(run_b)
    scope = run_scope(traces_a, traces_b)
    check_comparable(scope)
    rows = diff_runs(traces_a, traces_b)
    if html_path is not None:
        html_path.write_text(diff_page(run_a, run_b, scope, rows))
    n_total = len(rows)
    n_changed = sum(r["change"] != 0 for r in rows)
    n_significant = sum(r["significant"] for r in rows)
    if changed:
        rows = [r for r in rows if r["change"] != 0]
    if fmt is DiffFormat.json:
        typer.echo(json.dumps({"before": run_a, "after": run_b, "scope": scope, "rows": rows},
                              sort_keys=True))
        return
    for line in scope_lines(scope):
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


class SqlFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def sql(
    query: str = typer.Argument(..., help="SQL over the views traces, timings, runs, strategy_summary."),
    fmt: SqlFormat = typer.Option(SqlFormat.table, "--format"),
    warehouse: str = WAREHOUSE_OPTION,
) -> None:
    """Run one read-only SQL query (SELECT only) against the warehouse views."""
    from junction.evidence.warehouse import Warehouse

    require_text(query, "QUERY")
    result = Warehouse(warehouse or _warehouse_root()).query(query)
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
            table = table.set_column(i, pa.field(field.name, pa.string()), pa.array(texts, pa.string()))
    return table


@app.command()
def serve(
    cron: str = typer.Option(..., "--cron", help='Cron schedule, e.g. "0 3 * * *".'),
    name: str = typer.Option("junction-scheduled", "--name", help="Deployment name."),
    suite: list[str] = typer.Option(None, "--suite", help="Suite name (repeatable; default: all)."),
    strategy: list[str] = typer.Option(None, "--strategy", help="Strategy (repeatable; default: the catalog's default plan, `junction strategies`)."),
) -> None:
    """Serve the benchmark flow on a cron schedule (needs `prefect server start`; see README)."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        errors = getattr(exc, "errors", lambda: [{"msg": str(exc)}])()
        raise JunctionError(f"invalid --cron {cron!r}: {errors[0]['msg']}") from None
    if not PREFECT_API_URL.value():
        raise JunctionError("scheduled runs need a Prefect server: run `prefect server start` "
                            "and set PREFECT_API_URL=http://127.0.0.1:4200/api (see README)")
    from flows.benchmark import benchmark
    from flows.plan import RunPlan

    given = {"suites": suite or None, "strategies": strategy or None}
    RunPlan.build(**given)  # refuse a bad name now; each scheduled run fills its defaults
    benchmark.serve(name=name, cron=cron, parameters={"plan": given})


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: ``warning: <message>``, one line."""
    print(terminal_safe(f"warning: {message}"), file=file or sys.stderr)


def main() -> None:
    """Console-script entry point: run the app, turning Junction errors into one line and
    warnings into ``warning: ...`` lines."""
    import warnings

    warnings.showwarning = _one_line_warning
    try:
        app()
    except JunctionError as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
