"""The ``junction bench`` command: options to a ``RunPlan``, then one run, stopped cleanly.

Around the flow (``flows.benchmark``) the command holds the run id's lock (taken before
Prefect is imported, so a second writer is refused at once), sends Prefect's log records
and every traceback to the run's log file (``flows.run_log``), handles SIGINT and SIGTERM
(``flows.interrupts``: exit 130, one line saying how to resume) and watches and stops the
temporary Prefect server (``flows.server``). A fault after the run started is one line on
stderr naming the log file; a mistake before it is one line as before.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from enum import StrEnum
from pathlib import Path

import typer

from flows import interrupts, run_log, server
from flows.cli_text import echo
from junction.environment import PROJECT_ROOT, check_folder
from junction.errors import JunctionError, UnknownNameError

__all__ = ["WAREHOUSE_OPTION", "bench", "invoked_as", "parse_data_folders", "reports_root",
           "resume_command", "warehouse_root"]

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


class Runner(StrEnum):
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
        given.append((TAU2_SUITE, str(tau2_data.resolve()), f"--tau2-data {tau2_data}"))
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


def bench(
    suite: list[str] = typer.Option(None, "--suite", help="Suite name (repeatable; default: "
                                    "all; `junction suites` lists them)."),
    strategy: list[str] = typer.Option(None, "--strategy",
                                       help="Strategy (repeatable; default: the catalog's "
                                            "default plan, `junction strategies`)."),
    seed: list[int] = typer.Option(None, "--seed", help="Suite seed (repeatable; default 0). "
                                   "On a cross-fitted suite (tau2-banking) each seed is one "
                                   "repetition: its own draw of the folds."),
    repetitions: int = typer.Option(
        None, "--repetitions", min=1, metavar="R",
        help="Seeds 0..R-1: R repetitions of the cross-fitting fold draw (not with --seed)."),
    folds: int = typer.Option(
        None, "--folds", min=2, metavar="K",
        help="Folds of the learned strategies' cross-fitting on a cross-fitted suite "
             "(default 5)."),
    pool: str = typer.Option(
        None, "--pool", metavar="RULE",
        help="Candidate pools every strategy sees (one that owns its rule, learned_named or "
             "bm25_top_k, keeps it): bm25 (default), dense (all-MiniLM-L6-v2), hybrid (both, "
             "reciprocal rank fusion) or bm25_named (BM25, the documents naming a pooled "
             "tool added)."),
    fit_search: str = typer.Option(
        None, "--fit-search", metavar="SEARCH",
        help="How the learned strategies' fits search λ × τ: optimal (the exact selector on "
             "every grid point; default), or hybrid or local, about 4x faster and approximate, "
             "so they may fit other models "
             "(docs/measurement.md, \"Learned fit time\")."),
    budget_scale: list[float] = typer.Option(
        None, "--budget-scale", help="Token-budget multiplier (repeatable; default 0.5, 1, 2)."),
    size: int = typer.Option(None, "--size", min=1,
                             help="Tasks per suite (default: each suite's default size)."),
    full: bool = typer.Option(False, "--full", help="Every task of every suite (no subsampling)."),
    batch_size: int = typer.Option(100, "--batch-size", min=1, help="Tasks per work unit."),
    run_id: str = typer.Option(None, "--run-id", help="Name the run; if a run of this id "
                               "exists, complete it (same parameters only)."),
    runner: Runner = typer.Option(Runner.thread, "--runner", help="Task runner."),
    workers: int = typer.Option(None, "--workers", min=1,
                                help="Workers (threads or Dask processes)."),
    dask_address: str = typer.Option(None, "--dask-address",
                                     help="Existing Dask scheduler address."),
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
        help="Tasks per suite the language-model agent acts on (BFCL suites and "
             "tau2-banking: the suites a grader grades), at budget scale 1 "
             "(default: 1, for the budgeted strategies only; with --full: every task; with "
             "--size: 0). Given, the agent acts for every strategy and reference. 0 runs no "
             "agent."),
    agent_strategy: list[str] = typer.Option(
        None, "--agent-strategy", metavar="NAME",
        help="A strategy the agent acts for (repeatable; among the run's strategies). "
             "Default: every strategy with --agent-size or --full, the budgeted ones without."),
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
    agent_context_tokens: int = typer.Option(
        None, "--agent-context-tokens", metavar="N",
        help="The --agent-url server's context window in tokens (default: as the server "
             "reports it)."),
    agent_timeout: float = typer.Option(
        None, "--agent-timeout", metavar="S",
        help="Seconds one generation on the --agent-url server may take (default 600)."),
    agent_check_timeout: float = typer.Option(
        None, "--agent-check-timeout", metavar="S",
        help="Seconds each check of the --agent-url server before the run (its model list, "
             "its window) may take (default 10, one retry)."),
    agent_threads: int = typer.Option(
        None, "--agent-threads", metavar="N", min=1,
        help="llama.cpp threads of the embedded agent (default: the CPUs shared among the "
             "unit workers: 1 with 2 workers on 2 cores, 2 with --workers 1). The same "
             "answers on any count."),
    data: list[str] = typer.Option(
        None, "--data", metavar="SUITE=PATH",
        help="The data folder of SUITE, a suite of third-party data never shipped "
             "(repeatable; `junction suites` lists them, column data; default: the suite's "
             "environment variable)."),
    tau2_data: Path = typer.Option(
        None, "--tau2-data", metavar="PATH",
        help="Alias of --data tau2-banking=PATH: a tau2-bench checkout or its "
             "banking_knowledge folder (default: $JUNCTION_TAU2_DATA)."),
    warehouse: str = WAREHOUSE_OPTION,
    reports: str = typer.Option(None, "--reports", help="Reports folder (default ./reports)."),
) -> None:
    """Run the benchmark flow and write the report.

    With no options: every suite and every strategy of the default plan at budget scales
    0.5, 1 and 2 on each suite's default benchmark sample, a strategy with a catalog cap or
    scale (the judge, the references: `junction strategies`) within it; the references on
    the suites they read; the language-model agent on 1 task per suite it can be graded on
    (BFCL, tau2-banking) for every strategy that respects the budget (the references' agent
    outcome: `make bench-agent`, `make bench-tau2-agent`).
    """
    output_root = warehouse_root(warehouse)  # a file named: one line, before anything
    reports_folder = reports_root(reports, writable=True)
    if run_id and "://" not in output_root:  # a held run id: refused before anything loads
        from junction.evidence.locks import check_run_free

        check_run_free(Path(output_root), run_id)
    from flows.plan import RunPlan, unreadable_named_folders
    from flows.preflight import prepare_run
    from junction.evidence.store import TraceStore

    data_folders = parse_data_folders(data, tau2_data)
    if repetitions is not None and seed:
        raise JunctionError("--repetitions R means seeds 0..R-1; give it or --seed, not both")
    if repetitions is not None:
        seed = list(range(repetitions))
    plan = RunPlan.build(
        suites=suite or None, strategies=strategy or None, seeds=seed or None,
        budget_scales=budget_scale or None, size=size, full=full,
        batch_size=batch_size, output_root=output_root,
        reports_root=reports_folder, runner=runner.value,
        workers=workers, dask_address=dask_address,
        suite_files=[str(p.resolve()) for p in suite_file or []] or None,
        strategy_size=_strategy_option(strategy_size, "--strategy-size", int),
        strategy_scales=_strategy_scales(strategy_scale),
        agent_size=agent_size, agent_strategies=agent_strategy or None,
        agent_model=agent_model if agent_url else _agent_model(agent_model),
        agent_url=agent_url, agent_concurrency=agent_concurrency,
        agent_context_tokens=agent_context_tokens, agent_timeout=agent_timeout,
        agent_check_timeout=agent_check_timeout, agent_threads=agent_threads,
        **({} if folds is None else {"folds": folds}),
        **({} if pool is None else {"pool": pool}),
        **({} if fit_search is None else {"fit_search": fit_search}),
        data_folders=data_folders,
    )  # every check that needs no suite data: one error before anything starts
    given_id, run_id = run_id, prepare_run(plan, run_id)  # suite files too: before the lock
    for name, reason in unreadable_named_folders(plan).items():  # the run goes on without
        echo(f"warning: {name} is left out of this run: {reason}", err=True)
    store = TraceStore(plan.output_root)
    known = bool(given_id) and store.read_run_meta(run_id) is not None
    if given_id:
        typer.echo(f"{'resuming' if known else 'starting new'} run {run_id}")
    with store.run_lock(run_id):  # before Prefect is imported: a second writer is told now
        if known:  # a resumed run's unit file that cannot be read is run again
            for path in store.unreadable_unit_files(run_id):
                echo(f"warning: unit file {path} of run {run_id} cannot be read (corrupt or "
                     "truncated); its unit runs again", err=True)
        result = _run(plan, run_id)
    typer.echo(f"run {result['run_id']}: {result['tasks']} task evaluations in "
               f"{result['units']} units ({result['units_skipped']} already done)")
    typer.echo(f"report: {result['report']}")
    if result.get("report"):  # the same report as a page, for a browser
        typer.echo(f"page:   {Path(result['report']).with_name('report.html')}")


def _run_with_progress(plan, run_id: str) -> dict:
    """Run a prepared plan (its run lock held) with a progress bar of units."""
    from rich.progress import Progress

    import flows.runners as fb

    with Progress(transient=False) as progress:
        bar = progress.add_task("benchmark units", total=None)
        interrupts.on_exit(progress.stop)

        def advance(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        return fb.run_prepared(plan, run_id, progress=advance)


def _run(plan, run_id: str) -> dict:
    """Run the prepared plan with its log, signal handling and server watch in place.
    Faults become one ``JunctionError`` line naming the log; an interrupt exits here, and
    so does a fault that follows a Ctrl-C (a Dask worker the signal reached as it
    started, say): it is the interruption's."""
    log = run_log.log_path(run_id)
    interrupts.arm(run_id, resume_command(sys.argv, run_id))
    try:
        import prefect  # noqa: F401 - configures Prefect's logging, then routed to the log

        run_log.route_to(log)
        server.send_stderr_to(log)
        server.watch(lambda pid, code: _server_exited(pid, code, run_id, log))
        return _run_with_progress(plan, run_id)
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
