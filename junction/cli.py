"""The ``junction`` command line (typer).

User mistakes (unknown names, bad queries, unreadable files) print one line on stderr and
exit with status 1; they never print a traceback.
"""

from __future__ import annotations

import json
import sys

import typer

from junction.errors import JunctionError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Junction: which documents and which tools should an agent see, together?",
)
demo_app = typer.Typer(no_args_is_help=True, help="Small worked examples.")
app.add_typer(demo_app, name="demo")


def _demo_coupling_result() -> dict:
    from datasets.toy import coupling_task
    from junction.execution import execute, verify
    from junction.strategies import make_strategy

    task = coupling_task()
    view = task.router_view()
    strategies = {}
    for name in ("exact", "fixed_split", "adaptive_split"):
        sel = make_strategy(name)(view, None).selection
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
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"coupling task {result['task_id']}")
    for col in ("strategy", "contexts", "tools", "tokens", "objective", "verified"):
        table.add_column(col)
    for name, row in result["strategies"].items():
        table.add_row(name, ", ".join(row["context_ids"]), ", ".join(row["tool_ids"]),
                      f"{row['tokens_used']}/{row['budget_tokens']}", f"{row['objective']:.3f}",
                      "yes" if row["verified"] else f"no: {row['reason']}")
    Console().print(table)


def main() -> None:
    """Console-script entry point: run the app, turning Junction errors into one line."""
    try:
        app()
    except JunctionError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
