"""The run plan: one frozen, self-validating record of a benchmark run's parameters.

``RunPlan`` is what the command line builds from its options and what the ``benchmark``
flow takes. It fills the default plan in (the ``DEFAULT_*`` constants below, each with its
reason), refuses a plan that cannot run with one ``JunctionError`` line naming the field,
and owns the params hash a resumed run must repeat.

Everything about a field is declared once, on the field: its type and constraints
(pydantic: ``ge``, ``gt``, finite, ``min_length``), its help (``description``), what it is
beyond its value (a ``ParamPolicy`` in its ``Annotated`` metadata: result-neutral, no trace
row depends on it; a unit-layout parameter a resumed run keeps all the same; a machine path
metrics.json leaves out; recorded in ``params`` only when not its default) and how it is
typed at the command line (a ``Cli`` marker: flag, value name, environment variable). The
lists the params hash and the report read are derived from the policy markers
(``RESULT_NEUTRAL_PARAMS``, ``UNIT_LAYOUT_PARAMS``, ``MACHINE_PATH_PARAMS``,
``REPORT_LEFT_OUT``); ``junction bench`` and ``junction serve`` make their options from the
rest (``flows.cli_run.plan_options``).
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from junction_datasets import SUITES, get_suite, suite_names
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from junction.agent.remote import RemoteAgentConfig
from junction.candidates import DEFAULT_POOL_RULE, check_pool_rule
from junction.environment import PROJECT_ROOT, usable_cpus
from junction.errors import JunctionError
from junction.learned.crossfit import DEFAULT_FOLDS, MIN_FOLDS
from junction.learned.grid import OPTIMAL_SEARCH, check_search
from junction.strategies import STRATEGIES, default_strategies, strategy_info
from junction.units import AgentSpec, StrictInt, UnitSpec

__all__ = [
    "AGENT_SCALE",
    "DEFAULT_AGENT_SIZE",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BUDGET_SCALES",
    "DEFAULT_REPORTS",
    "DEFAULT_STRATEGY_SCALES",
    "DEFAULT_STRATEGY_SIZE",
    "DEFAULT_WAREHOUSE",
    "FLOW_ARGUMENTS",
    "MACHINE_PATH_PARAMS",
    "MAX_SEED",
    "REPORT_LEFT_OUT",
    "RESULT_NEUTRAL_PARAMS",
    "RUNNERS",
    "UNIT_LAYOUT_PARAMS",
    "Cli",
    "ParamPolicy",
    "RunPlan",
    "Runner",
    "StrategyStep",
    "cli_default",
    "cli_option",
    "default_agent_strategies",
    "default_suites",
    "field_policy",
    "new_run_id",
    "params_hash",
    "report_params",
    "resume_params",
    "skipped_default_suites",
    "unreadable_named_folders",
]

DEFAULT_BUDGET_SCALES = (0.5, 1.0, 2.0)
"""The budget grid (× each task's own budget) when no scale is given: half, the task's own
and double, so a report shows how each strategy degrades and saturates."""

DEFAULT_STRATEGY_SIZE: dict[str, int] = {
    n: i.default_size for n, i in sorted(STRATEGIES.items()) if i.default_size is not None}
"""Per-strategy task caps without ``size`` or ``full``: the catalog's ``default_size``
(``junction.strategies.catalog`` says why, e.g. the judge scores every candidate)."""

DEFAULT_STRATEGY_SCALES: dict[str, list[float]] = {
    n: list(i.default_scales) for n, i in sorted(STRATEGIES.items())
    if i.default_scales is not None}
"""Per-strategy budget scales without an explicit scale: the catalog's ``default_scales``
(the references ignore the budget, so one scale says all they can)."""

DEFAULT_AGENT_SIZE = 1
"""Tasks per suite the language-model agent acts on in the default plan (each suite an agent
grader grades: BFCL, tau2-banking): one, so the
default run shows the agent path working within its time budget; such a sample never
decides a verdict (``junction.evidence.verdicts``' minimum of deciding tasks), and
``make bench-agent`` runs one that does. ``full`` runs every task; an explicit ``size``
alone runs none. In the default plan the agent acts on the budgeted strategies only
(``default_agent_strategies``)."""

def default_agent_strategies(strategies: list[str]) -> list[str]:
    """The strategies the default plan's agent acts on: those of ``strategies`` that respect
    the budget, sorted. The references are left out: on one task per suite their agent
    outcome decides nothing, and bfcl_listed on bfcl-memory (the whole prior conversation,
    about 7,800 prompt tokens) alone costs minutes of the default run's time budget;
    ``make bench-agent`` measures them (docs/measurement.md, "The default benchmark
    (`make bench`)")."""
    return [s for s in sorted(strategies) if strategy_info(s).respects_budget]


AGENT_SCALE = 1.0
"""The budget scale the agent runs at (the run's smallest scale if it has no scale 1): the
task's own budget, where the report's agent table compares strategies."""

DEFAULT_BATCH_SIZE = 100
"""Tasks per work unit: large enough that Prefect's per-task overhead stays small beside
the work (bench/perf/flow_overhead.py), small enough that an interrupted run loses little."""

DEFAULT_WAREHOUSE = str(PROJECT_ROOT / "warehouse")
"""Where traces go when neither ``--warehouse`` nor ``$JUNCTION_WAREHOUSE`` says."""
DEFAULT_REPORTS = str(PROJECT_ROOT / "reports")
"""Where reports go when ``--reports`` does not say."""

MAX_SEED = 2**63 - 1
"""Seeds are stored as the traces' int64 ``seed`` column."""

Runner = Literal["thread", "dask"]
"""Task runners: a thread pool in this process, or Dask (local processes or a scheduler)."""
RUNNERS: tuple[str, ...] = get_args(Runner)
"""``Runner``'s names."""


def default_suites(data_folders: Mapping[str, str] | None = None) -> list[str]:
    """Every registered suite the default benchmark runs (``SuiteInfo.in_default_run``),
    less those whose data is absent (``skipped_default_suites``; ``data_folders``: suite
    name -> data folder, else ``SuiteInfo.data_env``)."""
    return [name for name in suite_names() if SUITES[name].in_default_run
            and SUITES[name].unavailable_reason(data_folders) is None]


def skipped_default_suites(data_folders: Mapping[str, str] | None = None) -> dict[str, str]:
    """Default suites left out of this run because their data is absent: name -> why
    (``data_folders`` as in ``default_suites``)."""
    return {name: reason for name in suite_names() if SUITES[name].in_default_run
            and (reason := SUITES[name].unavailable_reason(data_folders)) is not None}


def unreadable_named_folders(plan: RunPlan) -> dict[str, str]:
    """Default suites the default plan ``plan`` leaves out although a data folder was named
    for them (by the suite's environment variable, ``SuiteInfo.data_env``): name -> why,
    one line naming the file (and, for a JSON file that does not parse, its line and
    column). Empty for a plan that names its suites or suite files: there a folder that
    cannot be read is refused (``RunPlan``). A folder given by a flag is refused too."""
    if plan.suite_files or plan.suites != default_suites(plan.data_folders):
        return {}
    return {name: reason for name, reason in skipped_default_suites(plan.data_folders).items()
            if SUITES[name].data_folder(plan.data_folders) is not None}


def _data_folders(given: Mapping[str, str] | None) -> dict[str, str]:
    """Suite name -> absolute data folder for every suite that reads one
    (``SuiteInfo.data_env``): ``given``, else the suite's environment variable; a suite
    with neither is left out. ``JunctionError`` for a name that reads no data folder."""
    given = dict(given or {})
    for name in given:
        if get_suite(name).data_env is None:
            raise JunctionError(f"data_folders names {name!r}, which reads no data folder; "
                                "suites that do: " + ", ".join(
                                    n for n in suite_names() if SUITES[n].data_env))
    folders = {name: info.data_folder(given) for name, info in SUITES.items()}
    return {n: os.path.abspath(f) for n, f in sorted(folders.items()) if f}


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYmmddTHHMMSSZ-<8 hex>``: sortable by time, unique per call."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def params_hash(params: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the parameters a resumed run must repeat
    (``resume_params``)."""
    return hashlib.sha256(json.dumps(resume_params(params), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class ParamPolicy:
    """What a ``RunPlan`` field is beyond its value: a marker in the field's ``Annotated``
    metadata (``field_policy`` reads it). A field without one changes results, is always
    in ``params`` and in metrics.json, and a resumed run must repeat it."""

    neutral: str | None = None
    """Why no trace row depends on the field (given: it is result-neutral, so
    ``params_hash`` and metrics.json leave it out)."""

    unit_layout: bool = False
    """Result-neutral, but it names a run's unit files (``seed0-scale1-000000-000100``): a
    run resumed with another batch size would not find its finished units, run them again
    under new names and duplicate their rows. ``params_hash`` keeps it."""

    machine_path: bool = False
    """Changes results, but as a path on one machine (the agent model is named in the
    traces by its sha256, a remote one by ``agent_remote``; a data folder's suite by its
    tasks): the report names each file suite (suite name, file name, tasks) and each built
    suite (its source and tasks) in its ``suites`` section instead, so metrics.json leaves
    it out."""

    omit_default: bool = False
    """In ``params`` only when not the field's default, so a plan from before the field
    existed keeps its ``params_hash`` (a resumed run)."""

    omit_same_as: str | None = None
    """In ``params`` only when it differs from this other field (``agent_strategies``: only
    when it leaves a strategy out)."""


class StrategyStep(BaseModel):
    """What one strategy runs in a plan: its budget scales (sorted) and its task cap per
    suite (None: every task of each suite's sample)."""

    model_config = ConfigDict(frozen=True)

    scales: tuple[float, ...]
    max_tasks: int | None


def default_agent_threads(workers: int | None) -> int:
    """llama.cpp threads of the embedded agent when the plan gives none: the CPUs this
    process may use, shared among the run's unit workers (``workers``; None: the thread
    runner's default of 4, ``flows.runners.task_runner``), at least 1. One agent thread
    per core runs beside a busy worker on each core; with one worker the agent has every
    core (prompt evaluation is about twice as fast on two threads as on one here:
    docs/measurement.md, "The agent near the hardware")."""
    return max(1, usable_cpus() // max(1, workers if workers is not None else 4))


@dataclass(frozen=True)
class Cli:
    """How a ``RunPlan`` field is typed at the command line: a marker in the field's
    ``Annotated`` metadata (``cli_option`` reads it). ``junction bench`` and ``junction
    serve`` each make one option per field from it (``flows.cli_run.plan_options``), its
    help the field's ``description`` and its default the field's (``cli_default``)."""

    flag: str
    """The option, ``--suite``; a list or dict field's is repeatable."""

    metavar: str | None = None
    """The value's name in the help (``STRATEGY=N``); None: typer's."""

    env: str | None = None
    """The environment variable the command line reads when the option is not given (then
    the field's default): its option's default is None, and a scheduled run
    (``junction serve``) reads it when the deployment is made."""


FinitePositive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""A number that is finite and > 0 (a budget scale, seconds)."""

_AGENT_ROOM = RemoteAgentConfig.max_tokens + 1
"""A remote agent's context window must exceed this: its generated tokens and one."""


class RunPlan(BaseModel):
    """A benchmark run's parameters, defaults filled in and checked.

    Each field is one option of ``junction bench`` and ``junction serve``, declared once on
    the field: its type and constraints (pydantic), its help (``description``), its
    ``ParamPolicy`` (result-neutral, unit layout, machine path, when ``params`` leaves it
    out) and its ``Cli`` marker (flag, value name, environment variable). The recorded
    ``params`` of run.json are the fields, in this order.

    A field left None or empty means the default plan (``_fill_defaults``): the default
    suites (``default_suites``; none when ``suite_files`` are given) and strategies, seed
    0, ``DEFAULT_BUDGET_SCALES``, each suite's registered ``default_size``; per-strategy caps
    and scales from the catalog (``DEFAULT_STRATEGY_SIZE`` without ``size``/``full``,
    ``DEFAULT_STRATEGY_SCALES`` without budget scales; ``{}``: no limit); ``agent_size`` 1
    (every task with ``full``, stored None; 0 with an explicit ``size``), for
    ``default_agent_strategies`` only in the default agent sample, else every strategy;
    ``data_folders`` from each suite's environment variable (``SuiteInfo.data_env``) when
    the plan is built, kept for the run's suites only.

    Raises ``UnknownNameError`` (suite, strategy, pool rule, fit search) or
    ``JunctionError`` naming the field and its value for a plan that cannot run (a suite
    whose data is absent, a cap or scale for a strategy the run does not run, an agent
    option without its agent, ...); ``pydantic.ValidationError`` for a value of the wrong
    type or outside its constraints. ``RunPlan.build`` turns the latter into one
    ``JunctionError`` line naming the field and its option.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    suites: Annotated[list[str], Cli("--suite", "NAME")] = Field(
        default_factory=list, description="Suite name (repeatable; default: every suite of "
        "the default run whose data is present; `junction suites` lists them).")
    strategies: Annotated[list[str], Cli("--strategy", "NAME")] = Field(
        default_factory=list, description="Strategy (repeatable; default: the catalog's "
        "default plan, `junction strategies`).")
    seeds: Annotated[list[Annotated[StrictInt, Field(ge=0, le=MAX_SEED)]],
                     Cli("--seed", "SEED")] = Field(
        default_factory=list, description="Suite seed (repeatable; default 0). On a "
        "cross-fitted suite (tau2-banking) each seed is one repetition: its own draw of the "
        "folds.")
    budget_scales: Annotated[list[FinitePositive],
                             Cli("--budget-scale", "F")] = Field(
        default_factory=list, description="Token-budget multiplier of every task's own "
        "budget (repeatable; default 0.5, 1, 2).")
    size: Annotated[StrictInt | None, Field(ge=1), Cli("--size", "N")] = Field(
        None, description="Tasks per suite (default: each suite's default size).")
    full: Annotated[bool, Cli("--full")] = Field(
        False, description="Every task of every suite (no subsampling).")
    strategy_size: Annotated[dict[str, Annotated[StrictInt, Field(ge=1)]],
                             Cli("--strategy-size", "STRATEGY=N")] = Field(
        default_factory=dict, description="At most N tasks per suite for STRATEGY "
        "(repeatable). Default without --size/--full: the catalog's caps (`junction "
        "strategies`); with either: none. `none` lifts every cap.")
    strategy_scales: Annotated[dict[str, Annotated[list[float], Field(min_length=1)]],
                               Cli("--strategy-scale", "STRATEGY=F")] = Field(
        default_factory=dict, description="Run STRATEGY at budget scale F only (repeatable; "
        "F among --budget-scale). Default without --budget-scale: the catalog's scales "
        "(`junction strategies`); with it: none. `none` runs every strategy at every scale.")
    batch_size: Annotated[StrictInt, Field(ge=1), ParamPolicy(
        neutral="tasks per work unit: every task is evaluated on its own",
        unit_layout=True), Cli("--batch-size", "N")] = Field(
        DEFAULT_BATCH_SIZE, description="Tasks per work unit.")
    output_root: Annotated[str, ParamPolicy(neutral="where traces are written"),
                           Cli("--warehouse", "PATH|URL", env="JUNCTION_WAREHOUSE")] = Field(
        DEFAULT_WAREHOUSE, description="Traces root: a folder or an fsspec URL (default: "
        "$JUNCTION_WAREHOUSE or ./warehouse).")
    reports_root: Annotated[str, ParamPolicy(neutral="where reports are written"),
                            Cli("--reports", "PATH", env="JUNCTION_REPORTS")] = Field(
        DEFAULT_REPORTS, description="Reports folder (default: $JUNCTION_REPORTS or "
        "./reports).")
    runner: Annotated[Runner, ParamPolicy(neutral="thread pool or Dask"),
                      Cli("--runner")] = Field("thread", description="Task runner.")
    workers: Annotated[StrictInt | None, Field(ge=1), ParamPolicy(
        neutral="how many workers run units"), Cli("--workers", "N")] = Field(
        None, description="Workers (threads or Dask processes).")
    dask_address: Annotated[str | None, ParamPolicy(
        neutral="which Dask scheduler runs units"), Cli("--dask-address", "ADDRESS")] = Field(
        None, description="Existing Dask scheduler address.")
    suite_files: Annotated[list[str], ParamPolicy(machine_path=True),
                           Cli("--suite-file", "PATH")] = Field(
        default_factory=list, description="JSON Lines suite file (repeatable).")
    agent_size: Annotated[StrictInt | None, Field(ge=0), Cli("--agent-size", "N")] = Field(
        None, description="Tasks per suite the language-model agent acts on (the suites an "
        "agent grader grades: BFCL, tau2-banking), at budget scale 1 (default: 1, for the "
        "budgeted strategies only; with --full: every task; with --size: 0). Given, the agent "
        "acts for every strategy and reference. 0 runs no agent.")
    agent_model: Annotated[str | None, ParamPolicy(machine_path=True),
                           Cli("--agent-model", "PATH|NAME")] = Field(
        None, description="The agent's GGUF file or embedded model name (default: the "
        "embedded Qwen2.5-Coder-0.5B-Instruct); with --agent-url, the model id the server "
        "serves.")
    agent_url: Annotated[str | None, ParamPolicy(machine_path=True),
                         Cli("--agent-url", "URL")] = Field(
        None, description="An OpenAI-compatible server's base URL (http://host:port/v1): the "
        "agent's prompts go there. The API key, if any, comes from $JUNCTION_AGENT_API_KEY.")
    agent_concurrency: Annotated[StrictInt, Field(ge=1), ParamPolicy(
        neutral="how many requests a remote agent gets at once: each is answered on its "
                "own, greedily"), Cli("--agent-concurrency", "N")] = Field(
        1, description="Requests in flight to --agent-url at once.")
    agent_context_tokens: Annotated[StrictInt | None, Field(gt=_AGENT_ROOM), ParamPolicy(
        omit_default=True), Cli("--agent-context-tokens", "N")] = Field(
        None, description="The --agent-url server's context window in tokens, more than "
        f"{_AGENT_ROOM} (the agent's {_AGENT_ROOM - 1} generated tokens and one) (default: as "
        "the server reports it).")
    agent_timeout: Annotated[FinitePositive | None, ParamPolicy(
        neutral="how long one remote generation may take: an answer in time is the same "
                "answer; one past it fails the run",
        omit_default=True), Cli("--agent-timeout", "S")] = Field(
        None, description="Seconds one generation on the --agent-url server may take "
        "(default 600).")
    agent_check_timeout: Annotated[FinitePositive | None, ParamPolicy(
        neutral="how long each check of a remote agent's server before the run may take: "
                "the checks change no answer",
        omit_default=True), Cli("--agent-check-timeout", "S")] = Field(
        None, description="Seconds each check of the --agent-url server before the run (its "
        "model list, its window) may take (default 10, one retry).")
    agent_threads: Annotated[StrictInt | None, Field(ge=1), ParamPolicy(
        neutral="llama.cpp threads of the embedded agent: greedy decoding gives the same "
                "text on any thread count (AgentConfig.key leaves it out)",
        omit_default=True), Cli("--agent-threads", "N")] = Field(
        None, description="llama.cpp threads of the embedded agent (default: the CPUs shared "
        "among the unit workers: 1 with 2 workers on 2 cores, 2 with --workers 1). The same "
        "answers on any count.")
    agent_strategies: Annotated[list[str], ParamPolicy(omit_same_as="strategies"),
                                Cli("--agent-strategy", "NAME")] = Field(
        default_factory=list, description="A strategy the agent acts for (repeatable; among "
        "the run's strategies). Default: every strategy with --agent-size or --full, the "
        "budgeted ones without.")
    folds: Annotated[StrictInt, Field(ge=MIN_FOLDS), ParamPolicy(omit_default=True),
                     Cli("--folds", "K")] = Field(
        DEFAULT_FOLDS, description="Folds of the learned strategies' cross-fitting on a "
        "cross-fitted suite.")
    pool: Annotated[str, ParamPolicy(omit_default=True), Cli("--pool", "RULE")] = Field(
        DEFAULT_POOL_RULE, description="Candidate pools every strategy sees (one that owns "
        "its rule, learned_named, learned_coverage or bm25_top_k, keeps it): bm25, dense "
        "(all-MiniLM-L6-v2), "
        "hybrid (both, reciprocal rank fusion) or bm25_named (BM25, the documents naming a "
        "pooled tool added).")
    data_folders: Annotated[dict[str, str], ParamPolicy(machine_path=True, omit_default=True),
                            Cli("--data", "SUITE=PATH")] = Field(
        default_factory=dict, description="The data folder of SUITE, a suite of third-party "
        "data never shipped (repeatable; `junction suites` lists them, column data; default: "
        "the suite's environment variable).")
    fit_search: Annotated[str, ParamPolicy(omit_default=True),
                          Cli("--fit-search", "SEARCH")] = Field(
        OPTIMAL_SEARCH, description="How the learned strategies' fits search λ × τ: optimal "
        "(the exact selector on every grid point), or hybrid or local, about 4x faster and "
        "approximate, so they may fit other models (docs/measurement.md, \"Learned fit "
        "time\").")

    @classmethod
    def build(cls, **given: Any) -> RunPlan:
        """``RunPlan(**given)``, a type or constraint error also raised as one
        ``JunctionError`` line naming the field, its option and the value (for callers
        that print errors as one line, like the CLI)."""
        try:
            return cls(**given)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "plan"
            name = str(first["loc"][0]) if first["loc"] else ""
            option = f" ({cli.flag})" if (cli := cli_option(name)) is not None else ""
            raise JunctionError(f"{field}{option}: {first['msg']} (got "
                                f"{first.get('input')!r})") from None

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, given: Any) -> Any:
        """The default plan: what a field left None (or absent) means."""
        if not isinstance(given, dict):
            return given
        p = dict(given)
        size, full = p.get("size"), bool(p.get("full", False))
        suite_files = sorted(p.get("suite_files") or [])
        strategies = sorted(p.get("strategies") or default_strategies())
        budget_scales = p.get("budget_scales")
        strategy_size, strategy_scales = p.get("strategy_size"), p.get("strategy_scales")
        if strategy_size is None:
            strategy_size = ({} if size is not None or full else
                             {k: v for k, v in DEFAULT_STRATEGY_SIZE.items() if k in strategies})
        if strategy_scales is None:
            strategy_scales = ({} if budget_scales else
                               {k: v for k, v in DEFAULT_STRATEGY_SCALES.items()
                                if k in strategies})
        agent_size = p.get("agent_size")
        agent_strategies = p.get("agent_strategies")
        if agent_size is None and not full:  # None with full: every task
            agent_size = 0 if size is not None else DEFAULT_AGENT_SIZE
            if size is None and agent_strategies is None:
                agent_strategies = default_agent_strategies(strategies)
        folders = _data_folders(p.get("data_folders"))
        suites = sorted(p.get("suites") or ([] if suite_files else default_suites(folders)))
        for name in p.get("data_folders") or {}:  # a folder given for a suite it drops
            if (name not in suites and not p.get("suites")
                    and (reason := get_suite(name).unavailable_reason(folders)) is not None):
                raise JunctionError(reason)
        p.update(
            suites=suites, data_folders={k: v for k, v in folders.items() if k in suites},
            strategies=strategies, seeds=p.get("seeds") or [0],
            budget_scales=budget_scales or list(DEFAULT_BUDGET_SCALES), size=size, full=full,
            strategy_size={k: strategy_size[k] for k in sorted(strategy_size)},
            strategy_scales={k: sorted(strategy_scales[k]) for k in sorted(strategy_scales)},
            suite_files=suite_files, agent_size=agent_size,
            agent_strategies=sorted(strategies if agent_strategies is None
                                    else agent_strategies))
        for key, default in (("batch_size", DEFAULT_BATCH_SIZE),
                             ("output_root", DEFAULT_WAREHOUSE),
                             ("reports_root", DEFAULT_REPORTS), ("runner", "thread"),
                             ("agent_concurrency", 1)):
            if p.get(key) is None:
                p[key] = default
        return p

    @model_validator(mode="after")
    def _check(self) -> RunPlan:
        """Refuse a plan that cannot run (one line naming the field and value): what the
        fields' own constraints cannot say (registry names, one field against another)."""
        for name in self.suites:
            reason = get_suite(name).unavailable_reason(self.data_folders)
            if reason is not None:
                raise JunctionError(reason)
        for name in self.strategies:
            strategy_info(name)
        check_pool_rule(self.pool)
        check_search(self.fit_search)
        self._check_strategy_limits()
        if self.agent_threads is not None and self.agent_url is not None:
            raise JunctionError("agent_threads applies to the embedded agent only, not "
                                "to a remote one (--agent-url)")
        if (self.agent_url is not None or self.agent_concurrency != 1
                or self.agent_context_tokens is not None or self.agent_timeout is not None
                or self.agent_check_timeout is not None):
            self._check_remote_agent()
        return self

    def _check_strategy_limits(self) -> None:
        for what, names in (("strategy_size", self.strategy_size),
                            ("strategy_scales", self.strategy_scales),
                            ("agent_strategies", self.agent_strategies)):
            for name in names:
                if name not in self.strategies:
                    raise JunctionError(f"{what} names {name!r}, which this run does not run; "
                                        f"strategies: {', '.join(self.strategies)}")
        for name, scales in self.strategy_scales.items():
            for scale in scales:
                if scale not in self.budget_scales:
                    raise JunctionError(
                        f"strategy_scales for {name}: {scale:g} is not a budget scale of this "
                        f"run ({', '.join(f'{x:g}' for x in self.budget_scales)})")

    def _check_remote_agent(self) -> None:
        """A remote agent's static checks; the server's model list is checked by
        ``flows.preflight.prepare_run``, which may reach the server."""
        from junction.agent.prompt import AgentError
        from junction.agent.remote import check_agent_url

        if self.agent_url is None:
            given = ("agent_concurrency" if self.agent_concurrency != 1
                     else "agent_context_tokens" if self.agent_context_tokens is not None
                     else "agent_timeout" if self.agent_timeout is not None
                     else "agent_check_timeout")
            raise JunctionError(f"{given} applies to a remote agent only (--agent-url)")
        check_agent_url(self.agent_url)
        if not self.agent_model:
            raise AgentError(f"--agent-url {self.agent_url} needs --agent-model, the model "
                             "id the server serves")

    def params(self) -> dict[str, Any]:
        """The parameters a run records in run.json (``params``), as plain JSON values;
        a field whose ``ParamPolicy`` says so only when not its default
        (``agent_context_tokens``, ``agent_timeout``, ``agent_check_timeout``,
        ``agent_threads`` only when given, ``data_folders`` only when not empty, ``folds``
        only when not ``DEFAULT_FOLDS``: run.json's ``cross_fit`` records the folds of every
        cross-fitted run, ``pool`` only when not ``DEFAULT_POOL_RULE``) or only when it
        differs from another field (``agent_strategies``: when it leaves a strategy out), so
        a plan from before they existed keeps its ``params_hash`` (a resumed run)."""
        exclude = set()
        for name, policy in FIELD_POLICY.items():
            value = getattr(self, name)
            if (policy.omit_default and value == type(self).model_fields[name].get_default(
                    call_default_factory=True)) or (
                    policy.omit_same_as is not None
                    and value == getattr(self, policy.omit_same_as)):
                exclude.add(name)
        return self.model_dump(exclude=exclude or None)

    def params_hash(self) -> str:
        """``params_hash`` of ``params()``: what a resumed run must repeat."""
        return params_hash(self.params())

    def agent_spec(self) -> AgentSpec:
        """The agent the plan's units use (``AgentSpec``)."""
        return AgentSpec(model=self.agent_model, url=self.agent_url,
                         concurrency=self.agent_concurrency,
                         context_tokens=self.agent_context_tokens,
                         timeout_s=self.agent_timeout,
                         check_timeout_s=self.agent_check_timeout,
                         threads=(None if self.agent_url is not None else
                                  self.agent_threads or default_agent_threads(self.workers)))

    def unit_spec(self, run_id: str, **unit: Any) -> UnitSpec:
        """The ``UnitSpec`` of one unit of run ``run_id``: the unit's own fields, by name
        (``suite``, ``strategy``, ``seed``, ``scale``, ``unit``, ``pool_limit``,
        ``agent_task_ids``, ``repetition``, ``fold``), and the plan's traces root, agent,
        pool rule, data folders, fit search and (for a fold) fold count. Raises pydantic's
        ``ValidationError`` naming a missing or mistyped field."""
        fold = unit.get("fold")
        return UnitSpec(root=self.output_root, run_id=run_id, agent=self.agent_spec(),
                        folds=self.folds if fold is not None else None, pool=self.pool,
                        data_folders=self.data_folders, fit_search=self.fit_search, **unit)

    def steps(self) -> dict[str, StrategyStep]:
        """Per strategy (sorted): the scales it runs and its task cap, the plan the flow
        follows and the report states."""
        return {s: StrategyStep(scales=tuple(sorted(self.strategy_scales.get(
                    s, self.budget_scales))), max_tasks=self.strategy_size.get(s))
                for s in self.strategies}

    def suite_size(self, name: str) -> int | None:
        """Tasks the plan samples from registered suite ``name`` (None: every task)."""
        if self.full:
            return None
        return self.size if self.size is not None else get_suite(name).default_size

    def agent_scale(self) -> float:
        """The scale the agent runs at: ``AGENT_SCALE`` if some strategy runs it (or no
        strategy runs any), else the smallest scale of the plan."""
        scales = sorted({x for step in self.steps().values() for x in step.scales})
        return AGENT_SCALE if AGENT_SCALE in scales or not scales else scales[0]


# --------------------------------------------------------------------------- field policy

def field_policy(name: str) -> ParamPolicy:
    """The ``ParamPolicy`` of ``RunPlan`` field ``name`` (from its annotation; none: the
    default, a field that changes results and is always recorded)."""
    return next((m for m in RunPlan.model_fields[name].metadata
                 if isinstance(m, ParamPolicy)), ParamPolicy())


def cli_option(name: str) -> Cli | None:
    """The ``Cli`` marker of ``RunPlan`` field ``name`` (None: not a field, or none)."""
    field = RunPlan.model_fields.get(name)
    return None if field is None else next(
        (m for m in field.metadata if isinstance(m, Cli)), None)


def cli_default(name: str) -> Any:
    """The command-line default of ``RunPlan`` field ``name``: None where the plan fills
    the default in (a list or dict, a None default) or an environment variable gives it
    (``Cli.env``), else the field's default (``--batch-size`` 100)."""
    field = RunPlan.model_fields[name]
    cli = cli_option(name)
    default = field.get_default(call_default_factory=True)
    if (cli is not None and cli.env) or isinstance(default, (list, dict)):
        return None
    return default


FIELD_POLICY: dict[str, ParamPolicy] = {name: field_policy(name) for name in RunPlan.model_fields}
"""``RunPlan`` field -> its ``ParamPolicy``, in field order."""

FLOW_ARGUMENTS: dict[str, str] = {"run_id": "names the run",
                                  "write_reports": "whether a report is written"}
"""The ``benchmark`` flow's arguments beside the plan (``flows.benchmark.benchmark``), both
result-neutral: name -> why no trace row depends on it."""

RESULT_NEUTRAL_PARAMS: dict[str, str] = {
    **FLOW_ARGUMENTS,
    **{name: p.neutral for name, p in FIELD_POLICY.items() if p.neutral is not None}}
"""Parameter name -> why no trace row depends on it: the flow's own arguments and every
field whose ``ParamPolicy`` gives ``neutral``."""

UNIT_LAYOUT_PARAMS: tuple[str, ...] = tuple(
    name for name, p in FIELD_POLICY.items() if p.unit_layout)
"""Result-neutral, but they name a run's unit files (``ParamPolicy.unit_layout``):
``params_hash`` keeps them."""

MACHINE_PATH_PARAMS: tuple[str, ...] = tuple(
    name for name, p in FIELD_POLICY.items() if p.machine_path)
"""Change results, but as paths on one machine (``ParamPolicy.machine_path``):
metrics.json leaves them out."""

REPORT_LEFT_OUT: frozenset[str] = frozenset(RESULT_NEUTRAL_PARAMS) | frozenset(
    MACHINE_PATH_PARAMS)
"""The parameters metrics.json leaves out (neither result-neutral nor machine paths are
recorded there): what the flow hands the report
(``junction.evidence.reports.write_report``'s ``params_left_out``)."""


def resume_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a resumed run must repeat: all but the result-neutral ones, except the
    unit layout."""
    return {k: v for k, v in params.items()
            if k not in RESULT_NEUTRAL_PARAMS or k in UNIT_LAYOUT_PARAMS}


def report_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters ``metrics.json`` records: neither result-neutral nor machine paths
    (``REPORT_LEFT_OUT``)."""
    return {k: v for k, v in params.items() if k not in REPORT_LEFT_OUT}
