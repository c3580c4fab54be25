"""The run plan: one frozen, self-validating record of a benchmark run's parameters.

``RunPlan`` is what the command line builds from its options and what the ``benchmark``
flow takes. It fills the default plan in (the ``DEFAULT_*`` constants below, each with its
reason), refuses a plan that cannot run with one ``JunctionError`` line naming the field,
and owns the params hash a resumed run must repeat.

What each field is beyond its value is declared on the field (a ``ParamPolicy`` in its
``Annotated`` metadata): result-neutral (no trace row depends on it), a unit-layout
parameter a resumed run keeps all the same, a machine path metrics.json leaves out, or
recorded in ``params`` only when not its default. The lists the params hash and the report
read are derived from those markers (``RESULT_NEUTRAL_PARAMS``, ``UNIT_LAYOUT_PARAMS``,
``MACHINE_PATH_PARAMS``, ``REPORT_LEFT_OUT``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from junction_datasets import SUITES, get_suite, suite_names
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from junction.candidates import DEFAULT_POOL_RULE, check_pool_rule
from junction.environment import PROJECT_ROOT, usable_cpus
from junction.errors import JunctionError, UnknownNameError
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
    "ParamPolicy",
    "RunPlan",
    "StrategyStep",
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

RUNNERS = ("thread", "dask")
"""Task runners: a thread pool in this process, or Dask (local processes or a scheduler)."""


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


class RunPlan(BaseModel):
    """A benchmark run's parameters, defaults filled in and checked.

    Fields (the recorded ``params`` of run.json, in this order):

    - ``suites``/``strategies``: registry names, sorted (default: ``default_suites()``, or
      none when ``suite_files`` are given; the catalog's default strategies)
    - ``seeds``: suite seeds (default [0]); ``budget_scales``: multipliers of every task's
      own token budget (default ``DEFAULT_BUDGET_SCALES``)
    - ``size``: tasks per suite (None: the suite's registered ``default_size``,
      ``junction_datasets.SuiteInfo``); ``full``: every task
    - ``strategy_size``: strategy -> at most this many tasks per suite (the suite's own
      sample of that size); ``strategy_scales``: strategy -> its budget scales (a subset of
      ``budget_scales``). None: the default plan (``DEFAULT_STRATEGY_SIZE`` without
      ``size``/``full``, ``DEFAULT_STRATEGY_SCALES`` without budget scales), limited to the
      strategies that run; ``{}``: no limit
    - ``batch_size``: tasks per work unit; ``output_root``/``reports_root``: traces and
      reports; ``runner``/``workers``/``dask_address``: the task runner
    - ``suite_files``: JSON Lines suite files (``junction_datasets.jsonl``), sorted
    - ``agent_size``: tasks per suite the agent acts on (a suite an agent grader grades)
      (None given: 1, or every task with ``full`` (stored None), or 0 with an explicit
      ``size``); ``agent_model``: a GGUF
      path or embedded model name (None: the default), or with ``agent_url`` (an
      OpenAI-compatible base URL) the server's model id; ``agent_concurrency``: requests in
      flight to that server; ``agent_context_tokens``: its context window in tokens (None:
      as the server reports it, ``junction.agent.remote.RemoteAgent.context_window``;
      recorded in ``params`` only when given); ``agent_timeout``: seconds one generation
      on that server may take (None: ``RemoteAgentConfig.timeout_s``); ``agent_check_timeout``:
      seconds each check of that server before the run may take (None:
      ``RemoteAgentConfig.check_timeout_s``, short so that a server that never answers is
      one line in seconds); each in ``params`` only when given; ``agent_threads``:
      llama.cpp threads of the embedded agent (None: ``default_agent_threads``: the CPUs
      shared among the run's unit workers); in ``params`` only when given
    - ``agent_strategies``: the strategies the agent acts on, sorted (None given:
      ``default_agent_strategies`` in the default agent sample, else every strategy of the
      run); recorded in ``params`` only when it leaves some strategy out
    - ``folds``: folds of a cross-fitted suite's learned strategies (default 5)
    - ``pool``: the pool rule every strategy's candidate pools come from
      (``junction.candidates.POOL_RULES``: bm25, dense, hybrid; default bm25), recorded on
      every trace; in ``params`` only when not bm25
    - ``data_folders``: suite name -> the absolute folder a suite of third-party data reads
      (``SuiteInfo.data_env``; given, else that environment variable when the plan is
      built), for the run's suites only; the flow hands it to every suite build and learned
      fit, in this process or a worker. A folder given for a suite the default plan then
      leaves out because that folder cannot be read is refused (its reason, one line). In
      ``params`` only when not empty; never in ``metrics.json`` (a machine path,
      ``MACHINE_PATH_PARAMS``)
    - ``fit_search``: how the learned strategies' fits search λ × τ
      (``junction.learned.grid.SEARCHES``: optimal, the exact selector and the default, or
      the faster approximate hybrid and local, which may fit other models); in ``params``
      only when not optimal

    Each field's ``ParamPolicy`` (in its annotation) says whether it is result-neutral, a
    unit-layout parameter, a machine path, and when ``params`` leaves it out.

    Raises ``UnknownNameError`` (suite, strategy, runner, pool rule) or ``JunctionError`` naming the
    field and its value for a plan that cannot run (a suite whose data is absent, a seed
    outside [0, ``MAX_SEED``], a scale that is not finite and > 0, a cap or scale for a
    strategy the run does not run, ...); ``pydantic.ValidationError`` for a value of the
    wrong type. ``RunPlan.build`` turns the latter into one ``JunctionError`` line too.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    suites: list[str]
    strategies: list[str]
    seeds: list[StrictInt]
    budget_scales: list[float]
    size: StrictInt | None
    full: bool
    strategy_size: dict[str, StrictInt]
    strategy_scales: dict[str, list[float]]
    batch_size: Annotated[StrictInt, ParamPolicy(
        neutral="tasks per work unit: every task is evaluated on its own",
        unit_layout=True)] = DEFAULT_BATCH_SIZE
    output_root: Annotated[str, ParamPolicy(
        neutral="where traces are written")] = DEFAULT_WAREHOUSE
    reports_root: Annotated[str, ParamPolicy(
        neutral="where reports are written")] = DEFAULT_REPORTS
    runner: Annotated[str, ParamPolicy(neutral="thread pool or Dask")] = "thread"
    workers: Annotated[StrictInt | None, ParamPolicy(
        neutral="how many workers run units")] = None
    dask_address: Annotated[str | None, ParamPolicy(
        neutral="which Dask scheduler runs units")] = None
    suite_files: Annotated[list[str], ParamPolicy(machine_path=True)] = Field(
        default_factory=list)
    agent_size: StrictInt | None = None
    agent_model: Annotated[str | None, ParamPolicy(machine_path=True)] = None
    agent_url: Annotated[str | None, ParamPolicy(machine_path=True)] = None
    agent_concurrency: Annotated[StrictInt, ParamPolicy(
        neutral="how many requests a remote agent gets at once: each is answered on its "
                "own, greedily")] = 1
    agent_context_tokens: Annotated[StrictInt | None, ParamPolicy(omit_default=True)] = None
    agent_timeout: Annotated[float | None, ParamPolicy(
        neutral="how long one remote generation may take: an answer in time is the same "
                "answer; one past it fails the run",
        omit_default=True)] = None
    agent_check_timeout: Annotated[float | None, ParamPolicy(
        neutral="how long each check of a remote agent's server before the run may take: "
                "the checks change no answer",
        omit_default=True)] = None
    agent_threads: Annotated[StrictInt | None, ParamPolicy(
        neutral="llama.cpp threads of the embedded agent: greedy decoding gives the same "
                "text on any thread count (AgentConfig.key leaves it out)",
        omit_default=True)] = None
    agent_strategies: Annotated[list[str], ParamPolicy(omit_same_as="strategies")] = Field(
        default_factory=list)
    folds: Annotated[StrictInt, ParamPolicy(omit_default=True)] = DEFAULT_FOLDS
    pool: Annotated[str, ParamPolicy(omit_default=True)] = DEFAULT_POOL_RULE
    data_folders: Annotated[dict[str, str], ParamPolicy(
        machine_path=True, omit_default=True)] = Field(default_factory=dict)
    fit_search: Annotated[str, ParamPolicy(omit_default=True)] = OPTIMAL_SEARCH

    @classmethod
    def build(cls, **given: Any) -> RunPlan:
        """``RunPlan(**given)``, a type error also raised as one ``JunctionError`` line
        naming the field (for callers that print errors as one line, like the CLI)."""
        try:
            return cls(**given)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "plan"
            raise JunctionError(f"{field}: {first['msg']} (got {first.get('input')!r})") \
                from None

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
        """Refuse a plan that cannot run (one line naming the field and value)."""
        for name in self.suites:
            reason = get_suite(name).unavailable_reason(self.data_folders)
            if reason is not None:
                raise JunctionError(reason)
        for name in self.strategies:
            strategy_info(name)
        if self.runner not in RUNNERS:
            raise UnknownNameError(f"unknown runner {self.runner!r}; valid runners: "
                                   f"{', '.join(sorted(RUNNERS))}")
        check_pool_rule(self.pool)
        check_search(self.fit_search)
        if self.folds < MIN_FOLDS:
            raise JunctionError(f"folds must be an integer >= {MIN_FOLDS}, got {self.folds}")
        if self.batch_size < 1:
            raise JunctionError(f"batch_size must be >= 1, got {self.batch_size}")
        for scale in self.budget_scales:
            if not (math.isfinite(scale) and scale > 0):
                raise JunctionError(f"budget scale must be a finite number > 0, got {scale:g}")
        for seed in self.seeds:
            if not 0 <= seed <= MAX_SEED:
                raise JunctionError(f"seed must be an integer in [0, {MAX_SEED}], got {seed}")
        self._check_strategy_limits()
        if self.agent_size is not None and not _is_count(self.agent_size, 0):
            raise JunctionError(f"agent_size must be an integer >= 0, got {self.agent_size!r}")
        if self.agent_threads is not None:
            if not _is_count(self.agent_threads, 1):
                raise JunctionError(f"agent_threads must be an integer >= 1, got "
                                    f"{self.agent_threads!r}")
            if self.agent_url is not None:
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
        for name, n in self.strategy_size.items():
            if not _is_count(n, 1):
                raise JunctionError(f"strategy_size for {name} must be an integer >= 1, "
                                    f"got {n!r}")
        for name, scales in self.strategy_scales.items():
            if not scales:
                raise JunctionError(f"strategy_scales for {name} is empty; give at least one "
                                    "of the run's budget scales")
            for scale in scales:
                if scale not in self.budget_scales:
                    raise JunctionError(
                        f"strategy_scales for {name}: {scale:g} is not a budget scale of this "
                        f"run ({', '.join(f'{x:g}' for x in self.budget_scales)})")

    def _check_remote_agent(self) -> None:
        """A remote agent's static checks; the server's model list is checked by
        ``flows.preflight.prepare_run``, which may reach the server."""
        from junction.agent.prompt import AgentError
        from junction.agent.remote import RemoteAgentConfig, check_agent_url

        if not _is_count(self.agent_concurrency, 1):
            raise JunctionError(f"agent_concurrency must be an integer >= 1, got "
                                f"{self.agent_concurrency!r}")
        room = RemoteAgentConfig.max_tokens + 1
        if self.agent_context_tokens is not None and not _is_count(self.agent_context_tokens,
                                                                   room + 1):
            raise JunctionError(f"agent_context_tokens must be an integer > {room} (the "
                                f"agent's {room - 1} generated tokens and one), got "
                                f"{self.agent_context_tokens!r}")
        for name in ("agent_timeout", "agent_check_timeout"):
            value = getattr(self, name)
            if value is not None and not (
                    isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value) and value > 0):
                raise JunctionError(f"{name} must be a number of seconds > 0, got {value!r}")
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


def _is_count(value: Any, least: int) -> bool:
    """Whether ``value`` is an int (not a bool) >= ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


# --------------------------------------------------------------------------- field policy

def field_policy(name: str) -> ParamPolicy:
    """The ``ParamPolicy`` of ``RunPlan`` field ``name`` (from its annotation; none: the
    default, a field that changes results and is always recorded)."""
    return next((m for m in RunPlan.model_fields[name].metadata
                 if isinstance(m, ParamPolicy)), ParamPolicy())


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
