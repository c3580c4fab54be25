"""The ``junction bench`` and ``junction serve`` commands: options to a ``RunPlan``, then one
run, stopped cleanly, or a deployment that runs the plan on a schedule.

Their plan options are made from the ``RunPlan`` fields (``plan_options``: one typer option
per field, its flag and value name from the field's ``flows.plan.Cli`` marker, its help the
field's description, its default ``flows.plan.cli_default``), beside ``PLAN_ALIASES``
(``--repetitions``, ``--tau2-data``); ``plan_from_options`` turns their values into the
plan. Both commands are made when first named (``PlanCommands``), so no other command
imports the plan's module.

Around the flow (``flows.benchmark``) the command holds the run id's lock (taken before
Prefect is imported, so a second writer is refused at once), sends Prefect's log records
and every traceback to the run's log file (``flows.run_log``), handles SIGINT and SIGTERM
(``flows.interrupts``: exit 130, one line saying how to resume) and watches and stops the
temporary Prefect server (``flows.server``). A fault after the run started is one line on
stderr naming the log file; a mistake before it is one line as before.
"""

from __future__ import annotations

import functools
import inspect
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from enum import Enum, StrEnum
from pathlib import Path
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import OptionInfo

from flows import interrupts, run_log, server
from flows.cli_text import echo
from junction.environment import PROJECT_ROOT, check_folder
from junction.errors import JunctionError, UnknownNameError

if TYPE_CHECKING:
    from typer._click import Command, Context  # typer 0.29 vendors click: its groups' own types

    from flows.plan import RunPlan
    from flows.preflight import PreparedRun

__all__ = ["PLAN_ALIASES", "PLAN_COMMANDS", "WAREHOUSE_OPTION", "PlanCommands", "bench",
           "invoked_as", "parse_data_folders", "plan_command", "plan_from_options",
           "plan_option", "plan_options", "reports_root", "resolve_roots", "resume_command",
           "serve", "warehouse_root"]

_STOP_DRAIN_S = 5.0
"""Seconds Prefect's event and log workers get to send what they hold at the end of a run
whose server is alive (an interrupted run's get 1 s, a dead server's none)."""


def warehouse_root(given: str | None = None) -> str:
    """The traces root: ``given`` (``--warehouse``), else ``$JUNCTION_WAREHOUSE``, else
    ``<project>/warehouse``. A local one that is, or lies inside, a file is one
    ``JunctionError`` line naming the option or variable (``check_folder``)."""
    return _root(given, "--warehouse", "JUNCTION_WAREHOUSE", "warehouse")


def reports_root(given: str | None = None, writable: bool = False) -> str:
    """The reports root: ``given`` (``--reports``), else ``$JUNCTION_REPORTS``, else
    ``<project>/reports``; checked as ``warehouse_root``'s, and with ``writable`` also that
    a file can be written there (``check_folder``: what the check makes, it removes)."""
    return _root(given, "--reports", "JUNCTION_REPORTS", "reports", writable)


def _root(given: str | None, option: str, variable: str, default: str,
          writable: bool = False) -> str:
    env = os.environ.get(variable)
    root, label, fix = ((given, f"{default} {given}", f"pass a folder to {option}") if given
                        else (env, f"{variable}={env}", f"set {variable} to a folder") if env
                        else (str(PROJECT_ROOT / default), f"the default {default} folder "
                              f"{PROJECT_ROOT / default}", f"pass a folder to {option}"))
    if "://" not in root:
        check_folder(Path(root), label, fix, writable)
    return root


WAREHOUSE_OPTION = typer.Option(None, "--warehouse", help="Traces root: a folder or an fsspec "
                                "URL (default: $JUNCTION_WAREHOUSE or ./warehouse).")

PLAN_ALIASES: dict[str, tuple[object, object]] = {
    "repetitions": (int | None, typer.Option(
        None, "--repetitions", metavar="R",
        help="Seeds 0..R-1: R repetitions of the cross-fitting fold draw (not with --seed).")),
    "tau2_data": (Path | None, typer.Option(
        None, "--tau2-data", metavar="PATH",
        help="Alias of --data tau2-banking=PATH: a tau2-bench checkout or its "
             "banking_knowledge folder (default: $JUNCTION_TAU2_DATA).")),
}
"""The options of ``bench`` and ``serve`` beside the ``RunPlan`` fields, each another way to
give one: name -> (type, typer option)."""


def _cli_type(annotation: object) -> object:
    """The command-line type of a ``RunPlan`` field's annotation: constraints and None
    dropped, a list of its items' type, a dict as ``KEY=VALUE`` texts, a ``Literal`` as a
    choice (an enum of its values)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _cli_type(args[0])
    if origin in (Union, UnionType):
        return _cli_type(next(a for a in args if a is not type(None)))
    if origin is list:
        return list[_cli_type(args[0])]  # type: ignore[misc]
    if origin is dict:
        return list[str]
    return StrEnum("Choice", {v: v for v in args}) if origin is Literal else annotation


def plan_option(name: str) -> OptionInfo:
    """The typer option of ``RunPlan`` field ``name``, all read off the field: its flag and
    value name (``flows.plan.Cli``), help (the field's description) and default
    (``flows.plan.cli_default``)."""
    from flows.plan import RunPlan, cli_default, cli_option

    field, cli = RunPlan.model_fields[name], cli_option(name)
    assert cli is not None, f"RunPlan.{name} has no Cli marker"
    return typer.Option(cli_default(name), cli.flag, help=field.description,
                        metavar=cli.metavar, show_default=cli_default(name) is not None)


def plan_options(command: Callable[..., None]) -> Callable[..., None]:
    """``command(options, **own)`` as a typer command whose options are its own
    parameters, then one per ``RunPlan`` field (``plan_option``) and ``PLAN_ALIASES``:
    ``options`` holds the latter's values by name (``plan_from_options`` reads them)."""
    from flows.plan import RunPlan

    own = [p for p in inspect.signature(command).parameters.values() if p.name != "options"]
    hints = get_type_hints(command)
    keyword = inspect.Parameter.KEYWORD_ONLY
    added = [*((n, _cli_type(f.annotation), plan_option(n))
               for n, f in RunPlan.model_fields.items()),
             *((n, kind, option) for n, (kind, option) in PLAN_ALIASES.items())]

    @functools.wraps(command)
    def wrapper(**values: object) -> None:
        options = {n: values.pop(n) for n, _, _ in added}
        command(options, **values)

    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*(p.replace(kind=keyword) for p in own),
         *(inspect.Parameter(n, keyword, default=o, annotation=t) for n, t, o in added)])
    wrapper.__annotations__ = {**{p.name: hints[p.name] for p in own},
                               **{n: t for n, t, _ in added}}
    return wrapper


PLAN_COMMANDS: dict[str, Callable[..., None]] = {}
"""The commands that take a plan's options (``plan_options``), by name: filled below."""


class PlanCommands(TyperGroup):
    """A typer group (``typer.Typer(cls=PlanCommands)``) whose ``PLAN_COMMANDS`` are made
    when first named: making their options reads ``RunPlan``, whose module imports the
    catalogs and the retrieval stack (about 2 s of start-up that every other command,
    ``junction runs`` say, does not pay)."""

    def list_commands(self, ctx: Context) -> list[str]:
        names = super().list_commands(ctx)
        return [*names, *(n for n in PLAN_COMMANDS if n not in names)]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name in PLAN_COMMANDS and cmd_name not in self.commands:
            self.add_command(plan_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)


def plan_command(name: str) -> TyperCommand:
    """The click command ``junction NAME`` of ``PLAN_COMMANDS[name]`` with its plan options
    (``plan_options``), made as typer makes a registered command."""
    from typer.core import DEFAULT_MARKUP_MODE
    from typer.main import get_command_from_info
    from typer.models import CommandInfo

    command = get_command_from_info(
        CommandInfo(name=name, callback=plan_options(PLAN_COMMANDS[name])),
        pretty_exceptions_short=True, rich_markup_mode=DEFAULT_MARKUP_MODE)
    assert isinstance(command, TyperCommand)  # typer's default command class
    return command


def resolve_roots(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the traces and reports roots resolved as the user set them
    (``warehouse_root``, ``reports_root`` writable: the option, else its environment
    variable, else the default): one line for a folder that cannot be used."""
    return {**options, "output_root": warehouse_root(options["output_root"]),
            "reports_root": reports_root(options["reports_root"], writable=True)}


def plan_from_options(options: dict[str, Any]) -> RunPlan:
    """The ``RunPlan`` of ``bench``'s or ``serve``'s options (``plan_options``; roots
    resolved by ``resolve_roots``): a repeatable option not given is the default plan's,
    ``STRATEGY=VALUE`` and ``SUITE=PATH`` options parsed, ``--repetitions`` as seeds,
    ``--tau2-data`` as a data folder, paths resolved. One ``JunctionError`` line for a
    mistake (``RunPlan.build``)."""
    from flows.plan import RunPlan

    given: dict[str, Any] = {  # a choice as its value; a repeatable option not given: None
        k: v.value if isinstance(v, Enum) else (v or None) if isinstance(v, list) else v
        for k, v in options.items()}
    repetitions, tau2_data = given.pop("repetitions"), given.pop("tau2_data")
    data_folders = parse_data_folders(given["data_folders"], tau2_data)
    if repetitions is not None and given["seeds"]:
        raise JunctionError("--repetitions R means seeds 0..R-1; give it or --seed, not both")
    if repetitions is not None and repetitions < 1:  # one line, as the plan's own checks
        raise JunctionError(f"repetitions (--repetitions): Input should be greater than or "
                            f"equal to 1 (got {repetitions})")
    url = given["agent_url"]
    return RunPlan.build(**{
        **given, "data_folders": data_folders,
        "seeds": list(range(repetitions)) if repetitions is not None else given["seeds"],
        "suite_files": [str(Path(p).resolve()) for p in given["suite_files"] or []] or None,
        "strategy_size": _strategy_option(given["strategy_size"], "--strategy-size", int),
        "strategy_scales": _strategy_option(given["strategy_scales"], "--strategy-scale",
                                            float),
        "agent_model": given["agent_model"] if url else _agent_model(given["agent_model"])})


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


def parse_data_folders(values: list[str] | None, tau2_data: Path | None = None
                       ) -> dict[str, str]:
    """``--data SUITE=PATH`` values (and ``--tau2-data PATH``, an alias of ``--data
    tau2-banking=PATH``) as suite name -> resolved folder, for ``RunPlan.data_folders``.

    One ``JunctionError`` line for a value that is not SUITE=PATH (no ``=``, an empty name
    or path), a suite that is not registered (``UnknownNameError``) or reads no data folder
    (``SuiteInfo.data_env`` None), and for two different folders named for one suite."""
    from junction_datasets import SUITES, get_suite, suite_names
    from junction_datasets.tau2_banking import SUITE as TAU2_SUITE

    readers = ", ".join(n for n in suite_names() if SUITES[n].data_env is not None) or "none"
    given: list[tuple[str, str, str]] = []  # (suite, folder, as the user wrote it)
    for text in values or []:
        name, sep, path = text.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise JunctionError(f"--data takes SUITE=PATH, got {text!r}")
        name = name.strip()
        try:
            info = get_suite(name)
        except UnknownNameError:
            raise UnknownNameError(f"--data names unknown suite {name!r}; suites with a data "
                                   f"folder: {readers}") from None
        if info.data_env is None:
            raise JunctionError(f"--data names suite {name!r}, which reads no data folder; "
                                f"suites that do: {readers}")
        given.append((name, str(Path(path).expanduser().resolve()), f"--data {text}"))
    if tau2_data is not None:
        given.append((TAU2_SUITE, str(tau2_data.expanduser().resolve()),
                      f"--tau2-data {tau2_data}"))
    folders: dict[str, str] = {}
    named: dict[str, str] = {}
    for name, folder, option in given:
        if name in folders and folders[name] != folder:
            raise JunctionError(f"two data folders for suite {name!r}: {named[name]} and "
                                f"{option}; give one")
        folders[name], named[name] = folder, option
    return folders


def _agent_model(value: str | None) -> str | None:
    """An embedded model name as given; a path resolved (``ModelError`` if missing)."""
    if value is None:
        return None
    from junction.models import EMBEDDED_MODELS, resolve_model_path

    return value if value in EMBEDDED_MODELS else str(resolve_model_path(value).resolve())


def bench(options: dict[str, Any],
          run_id: str = typer.Option(None, "--run-id", help="Name the run; if a run of this "
                                     "id exists, complete it (same parameters only).")
          ) -> None:
    """Run the benchmark flow and write the report.

    With no options: every suite and every strategy of the default plan at budget scales
    0.5, 1 and 2 on each suite's default benchmark sample, a strategy with a catalog cap or
    scale (the judge, the references: `junction strategies`) within it; the references on
    the suites they read; the language-model agent on 1 task per suite it can be graded on
    (BFCL, tau2-banking) for every strategy that respects the budget (the references' agent
    outcome: `make bench-agent`, `make bench-tau2-agent`).
    """
    options = resolve_roots(options)  # a file named: one line, before anything
    if run_id and "://" not in options["output_root"]:  # a held run id: refused at once
        from junction.evidence.locks import check_run_free

        check_run_free(Path(options["output_root"]), run_id)
    import flows.preflight
    from flows.plan import unreadable_named_folders
    from junction.evidence.store import TraceStore

    plan = plan_from_options(options)  # every check that needs no suite data
    run = flows.preflight.prepare_run(plan, run_id)  # suite files too: before the lock
    for name, reason in unreadable_named_folders(plan).items():  # the run goes on without
        echo(f"warning: {name} is left out of this run: {reason}", err=True)
    store = TraceStore(plan.output_root)
    known = bool(run_id) and store.read_run_meta(run.run_id) is not None
    if run_id:
        typer.echo(f"{'resuming' if known else 'starting new'} run {run.run_id}")
    with store.run_lock(run.run_id):  # before Prefect is imported: a 2nd writer is told now
        if known:  # a resumed run's unit file that cannot be read is run again
            for path in store.unreadable_unit_files(run.run_id):
                echo(f"warning: unit file {path} of run {run.run_id} cannot be read (corrupt "
                     "or truncated); its unit runs again", err=True)
        result = _run(run)
    typer.echo(f"run {result['run_id']}: {result['tasks']} task evaluations in "
               f"{result['units']} units ({result['units_skipped']} already done)")
    typer.echo(f"report: {result['report']}")
    if result.get("report"):  # the same report as a page, for a browser
        typer.echo(f"page:   {Path(result['report']).with_name('report.html')}")


def serve(options: dict[str, Any],
          cron: str = typer.Option(..., "--cron", help='Cron schedule, e.g. "0 3 * * *".'),
          name: str = typer.Option("junction-scheduled", "--name", help="Deployment name.")
          ) -> None:
    """Serve the benchmark flow on a cron schedule (needs `prefect server start`; see
    docs/usage.md). Takes every plan option of `junction bench`; the plan is resolved
    now, environment variables and defaults included, and every scheduled run runs it."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL

    try:
        CronSchedule(cron=cron)
    except ValueError as exc:
        message = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
        raise JunctionError(f"invalid --cron {cron!r}: {message}") from None
    if not PREFECT_API_URL.value():
        raise JunctionError("scheduled runs need a Prefect server: run `prefect server start` "
                            "and set PREFECT_API_URL=http://127.0.0.1:4200/api (see "
                            "docs/usage.md)")
    import flows.preflight
    from flows.benchmark import benchmark
    from flows.runners import task_runner

    plan = plan_from_options(resolve_roots(options))
    flows.preflight.prepare_run(plan)  # a mistake is one line now, not at 3 am
    runner = task_runner(plan.runner, plan.workers, plan.dask_address)
    benchmark.with_options(task_runner=runner).serve(
        name=name, cron=cron, parameters={"plan": plan.model_dump(mode="json")})


PLAN_COMMANDS.update(bench=bench, serve=serve)


def _run_with_progress(run: PreparedRun) -> dict:
    """Run a prepared plan (its run lock held) with a progress bar of units."""
    from rich.progress import Progress

    import flows.runners as fb

    with Progress(transient=False) as progress:
        bar = progress.add_task("benchmark units", total=None)
        interrupts.on_exit(progress.stop)

        def advance(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        return fb.run_prepared(run, progress=advance)


def _run(run: PreparedRun) -> dict:
    """Run the prepared plan with its log, signal handling and server watch in place.
    Faults become one ``JunctionError`` line naming the log; an interrupt exits here, and
    so does a fault that follows a Ctrl-C (a Dask worker the signal reached as it
    started, say): it is the interruption's."""
    run_id = run.run_id
    log = run_log.log_path(run_id)
    interrupts.arm(run_id, resume_command(sys.argv, run_id))
    try:
        import prefect  # noqa: F401 - configures Prefect's logging, then routed to the log

        run_log.route_to(log)
        server.send_stderr_to(log)
        server.watch(lambda pid, code: _server_exited(pid, code, run_id, log))
        return _run_with_progress(run)
    except interrupts.RunInterrupted:
        interrupts.exit_now(drain_s=1.0)
        raise  # not reached: exit_now ends the process
    except Exception as exc:
        if not interrupts.stop_requested():
            return _fault(exc, log, run_id)
        run_log.log_exception("after the interrupt", exc)
        interrupts.exit_now(drain_s=1.0)
        raise  # not reached
    finally:
        server.stop(drain_s=_STOP_DRAIN_S)
        interrupts.disarm()


def _fault(exc: Exception, log: Path, run_id: str):
    """A fault of the run as one ``JunctionError`` line naming the log (traceback there);
    a unit's fault (the run started, its finished units kept) also says how to resume."""
    from flows.benchmark import UnitFailedError

    if isinstance(exc, UnitFailedError):
        run_log.log_exception(str(exc), exc)
        raise JunctionError(f"{exc}; resume with `{resume_command(sys.argv, run_id)}`; full "
                            f"traceback in {log}") from None
    if isinstance(exc, JunctionError):
        run_log.log_exception(str(exc), exc)
        raise exc
    run_log.log_exception("the run failed", exc)
    first = str(exc).splitlines()[0] if str(exc) else ""
    raise JunctionError(f"the run failed: {type(exc).__name__}: {first}; full "
                        f"traceback in {log}") from None


def _server_exited(pid: int, code: int, run_id: str, log: Path) -> None:
    """The temporary server ended on its own: end the process now, the run marked failed
    (a signal to the whole process group that also ended it is an interrupt)."""
    if interrupts.stop_requested():
        interrupts.exit_now()
    reason = f"the temporary Prefect server (PID {pid}) exited with status {code}"
    interrupts.exit_now(failed=reason, line=(
        f"error: {reason} during the run; the run is marked failed; resume with "
        f"`{resume_command(sys.argv, run_id)}`; log: {log}"))


def invoked_as(argv0: str | None = None) -> str:
    """This program as the user started it, for a command line they can paste: ``junction``
    where that name on ``PATH`` (``shutil.which``) is the program running (``argv0``,
    default ``sys.argv[0]``); else its path, relative to the working folder when inside it
    (``.venv/bin/junction``, the README's); for a module run (``python -m flows.cli``)
    that Python, found the same way, and ``-m flows.cli``. Quoted for a POSIX shell."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if argv0.endswith(".py"):  # python -m flows.cli, or the file itself
        return shlex.join([_as_typed(sys.executable), "-m", "flows.cli"])
    return shlex.quote(_as_typed(argv0))


def _as_typed(program: str) -> str:
    """``program``'s name where ``PATH`` finds this very file by it, else its path
    (relative to the working folder when inside it; ``./`` before a bare name)."""
    name = os.path.basename(program)
    found = shutil.which(name)
    if found and _same_program(found, program):
        return name
    path = os.path.abspath(program)
    cwd = os.getcwd()
    if os.path.commonpath([cwd, path]) == cwd:
        path = os.path.relpath(path, cwd)
        return path if os.sep in path else f".{os.sep}{path}"
    return path


def _same_program(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` start the same program: one path, or one file reached
    through no symbolic link (a venv's ``python`` links to the base interpreter, which
    starts without the venv)."""
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return not (os.path.islink(a) or os.path.islink(b)) and os.path.samefile(a, b)
    except OSError:
        return False


def resume_command(argv: list[str], run_id: str, program: str | None = None) -> str:
    """``PROGRAM bench --run-id RUN_ID`` followed by the options of ``argv`` (this
    process's ``sys.argv``) after ``bench``, without any ``--run-id`` given: the command
    that resumes this run as it was started, quoted for a POSIX shell (``shlex.join``).
    ``program``: how this program is typed (default: ``invoked_as(argv[0])``)."""
    args = argv[1:]
    args = args[args.index("bench") + 1:] if "bench" in args else []
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--run-id":
            skip = True
        elif not arg.startswith("--run-id="):
            kept.append(arg)
    program = invoked_as(argv[0] if argv else None) if program is None else program
    return " ".join([program, shlex.join(["bench", "--run-id", run_id, *kept])])
