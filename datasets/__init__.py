"""Suite builders: every suite Junction can run, by name.

The folder is ``datasets``; it installs under the import name ``junction_datasets``
(setuptools ``package-dir`` in pyproject.toml), so it never shadows Hugging Face's
``datasets`` package.

``build_suite(name, seed, size)`` returns a ``SuiteBuild`` (the tasks plus how many source
rows were loaded and skipped, with reasons); unknown names raise ``UnknownNameError``
listing the valid ones. ``size=None`` means the suite's full size. A builder may return a
plain ``list[BenchmarkTask]`` (nothing skipped) or a ``SuiteBuild``.

Suites with a training part (``SuiteInfo.family`` set: the BFCL suites) build their
evaluation part unless told otherwise (a cross-fitted suite, ``SuiteInfo.cross_fit``:
τ-Knowledge, builds every task, and learned strategies fit per fold on the others,
``junction.learned.crossfit``); ``training_tasks(name)`` builds the training part
that learned strategies fit on (``datasets/split.py``: one rule for every family). Suites
of one family share one learned model: the four BFCL tool suites are ``bfcl-tools`` (one
tool lane, so a model learns abstention from the irrelevance rows beside the others).

- ``registry``: ``SuiteBuild`` and ``build_suite`` (the records live in
  ``junction.suites``); ``split``: the train / evaluation rule;
- ``toy``: the coupling and synthetic suites; ``bfcl``: the BFCL suites;
  ``tau2_banking``: τ-Knowledge; ``jsonl``: a suite from a JSON Lines file.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from junction_datasets import bfcl as _bfcl
from junction_datasets import tau2_banking as _tau2
from junction_datasets.registry import (
    SUITES,
    SuiteBuild,
    SuiteInfo,
    build_suite,
    get_suite,
    register_suite,
    suite_names,
)
from junction_datasets.toy import coupling_suite, synthetic_suite

from junction.errors import UnknownNameError
from junction.tasks import BenchmarkTask

__all__ = [
    "CALIBRATION_SEED",
    "CALIBRATION_SIZE",
    "CALIBRATION_SUITE",
    "SUITES",
    "TRAINING_SEED",
    "SuiteBuild",
    "SuiteInfo",
    "build_suite",
    "calibration_tasks",
    "family_all_tasks",
    "family_training_tasks",
    "get_suite",
    "register_suite",
    "suite_family",
    "suite_names",
    "training_source",
]

CALIBRATION_SUITE = "synthetic"
CALIBRATION_SEED = 1
"""Seed of the calibration split (the benchmark runs seed 0 unless told otherwise)."""
CALIBRATION_SIZE = 8
"""Tasks in the calibration split (64 judged pairs at 4 per lane; scored once, then cached)."""


register_suite(SuiteInfo("coupling", coupling_suite, None, description="hand-made coupling task"))
register_suite(SuiteInfo(
    "synthetic", lambda seed=0, size=None: synthetic_suite(seed=seed, size=size or 200),
    default_size=60, description="seeded synthetic tasks, 6 contexts + 6 tools, planted coupling",
))

# BFCL suites (datasets/bfcl/); the data package is read only when a suite is built.
# the default benchmark's size per suite: sized so the default run fits its time budget
# (docs/measurement.md, "The default benchmark (`make bench`)"); 40 tasks per BFCL suite
# in the default run
BFCL_DEFAULT_SIZE = 40
BFCL_AGENT_NOTE = (
    "For an agent sample that decides, run `make bench-agent`: 20 evaluation tasks of each "
    "of bfcl-multiple, bfcl-live-multiple, bfcl-irrelevance and bfcl-memory, the agent on "
    "every one, for exact, adaptive_split, fixed_split, learned_exact and bfcl_listed at "
    "budget scale 1 (its time on a 2-core machine is in docs/agent.md).")
"""The BFCL suites' ``agent_sample_note`` (the Makefile's bench-agent target,
``BENCH_AGENT_TASKS`` there): the report prints it where too few of their tasks decide an
agent verdict."""
for _name, _build, _what, _family in (
    ("bfcl-multiple", _bfcl.multiple_suite, "BFCL multiple: 1 gold tool, row + distractors",
     "bfcl-tools"),
    ("bfcl-live-multiple", _bfcl.live_multiple_suite, "BFCL live_multiple: user-made tools",
     "bfcl-tools"),
    ("bfcl-parallel-multiple", _bfcl.parallel_multiple_suite, "BFCL parallel_multiple: 2-5 calls",
     "bfcl-tools"),
    ("bfcl-irrelevance", _bfcl.irrelevance_suite, "BFCL irrelevance: no tool fits, abstain",
     "bfcl-tools"),
    ("bfcl-memory", _bfcl.memory_suite, "BFCL memory: answer from prior-conversation turns",
     "bfcl-memory"),
):
    register_suite(SuiteInfo(
        _name, _build, BFCL_DEFAULT_SIZE, _bfcl.POOL_LIMIT, _what, family=_family,
        reference_set=_bfcl.REFERENCE_SET, agent_sample_note=BFCL_AGENT_NOTE,
        reference_note=_bfcl.MEMORY_REFERENCE_NOTE if _name == "bfcl-memory" else ""))
# Pages: run by name (`--suite bfcl-memory-pages`) with the page strategies
# (judge_top_k, bm25_top_k); the default benchmark's strategies admit whole turns, not pages.
register_suite(SuiteInfo(
    "bfcl-memory-pages", _bfcl.memory_pages_suite, _bfcl.DEFAULT_SIZE, _bfcl.PAGE_POOL_LIMIT,
    "BFCL memory as pages: one chunked HTML page of prior conversations per scenario",
    in_default_run=False, family="bfcl-memory-pages",
))
register_suite(SuiteInfo(
    "bfcl-subtasks", _bfcl.subtask_suite, _bfcl.DEFAULT_SIZE, None,
    "BFCL parallel_multiple: admit the on-topic sub-task, reject the off-topic one and the echo",
    in_default_run=False,
))
# τ-Knowledge (datasets/tau2_banking.py): data named by the user, never shipped.

register_suite(SuiteInfo(
    _tau2.SUITE, _tau2.banking_suite, _tau2.DEFAULT_SIZE, _tau2.POOL_LIMIT,
    "τ-Knowledge banking: 698 policy documents, 58 agent tools, gold on both and on pairs",
    family="tau2-banking", unavailable=_tau2.unavailable_reason, cross_fit=True,
    data_env=_tau2.DATA_ENV, reference_set=_tau2.REFERENCE_SET, finding=True,
    prompt_layout="junction.agent.tau2_grading:TAU2_LAYOUT",
    agent_sample_note="`make bench-tau2-agent` runs a larger τ-Knowledge sample (every task "
                      "with `--agent-url` on a server).",
))
for _n, _size in ((50, 20), (100, 10), (200, 3)):  # the exact solver runs here; enumeration
    register_suite(SuiteInfo(                      # could not
        f"synthetic-{_n}",
        lambda seed=0, size=None, _n=_n: synthetic_suite(
            seed=seed, size=size or 20, n_contexts=_n // 2, n_tools=_n // 2,
            density=10 / _n, suite=f"synthetic-{_n}"),
        default_size=_size, pool_limit=None,
        description=f"seeded synthetic tasks, {_n // 2} contexts + {_n // 2} tools, "
                    f"about 5 interactions per candidate (density 10/{_n}), planted coupling",
    ))


def calibration_tasks() -> list[BenchmarkTask]:
    """The calibration split: ``CALIBRATION_SIZE`` tasks of ``CALIBRATION_SUITE`` built with
    ``CALIBRATION_SEED``, the split strategies that calibrate (``judge_admission``'s floor)
    learn from; the default benchmark never evaluates it."""
    return build_suite(CALIBRATION_SUITE, seed=CALIBRATION_SEED, size=CALIBRATION_SIZE).tasks


TRAINING_SEED = 0
"""Seed the training parts are built with (distractor draws), whatever the run's seed: a
learned model is the same for every run of a commit."""


def suite_family(suite: str) -> str | None:
    """The family of a registered suite, or None (no training part, or not registered:
    a suite file's own name)."""
    info = SUITES.get(suite)
    return None if info is None else info.family


def family_training_tasks(family: str,
                          data_folders: Mapping[str, str] | None = None) -> list[BenchmarkTask]:
    """The training part of every suite of ``family``, in suite-name order
    (``TRAINING_SEED``, every row; ``data_folders`` as in ``build_suite``);
    ``UnknownNameError`` for a family no suite has.

    No task returned here is in any suite's evaluation part (``split_of``).
    """
    names = [n for n in suite_names() if SUITES[n].family == family]
    if not names:
        families = sorted({i.family for i in SUITES.values() if i.family})
        raise UnknownNameError(f"unknown suite family {family!r}; valid: {', '.join(families)}")
    tasks: list[BenchmarkTask] = []
    for name in names:
        tasks.extend(build_suite(name, seed=TRAINING_SEED, size=None, split="train",
                                 data_folders=data_folders).tasks)
    return tasks


def family_all_tasks(family: str,
                     data_folders: Mapping[str, str] | None = None) -> list[BenchmarkTask]:
    """Every task of a cross-fitted ``family`` (``SuiteInfo.cross_fit``: split ``"all"``,
    ``TRAINING_SEED``; ``data_folders`` as in ``build_suite``), which cross-fitting deals
    into folds (``junction.learned.crossfit``); ``UnknownNameError`` for a family with no
    cross-fitted suite."""
    names = [n for n in suite_names() if SUITES[n].family == family and SUITES[n].cross_fit]
    if not names:
        crossed = sorted({i.family for i in SUITES.values() if i.family and i.cross_fit})
        raise UnknownNameError(f"suite family {family!r} is not cross-fitted; cross-fitted: "
                               f"{', '.join(crossed) or 'none'}")
    tasks: list[BenchmarkTask] = []
    for name in names:
        tasks.extend(build_suite(name, seed=TRAINING_SEED, size=None, split="all",
                                 data_folders=data_folders).tasks)
    return tasks


def _cross_fitted(family: str) -> bool:
    return any(i.family == family and i.cross_fit for i in SUITES.values())


def training_source(data_folders: Mapping[str, str] | None = None,
                    fit_search: str = "optimal"):
    """The ``TrainingSource`` learned strategies fit on (``suite_family``,
    ``family_training_tasks``; for a cross-fitted family ``family_all_tasks``, dealt into
    folds), reading the suites' data from ``data_folders`` (suite name -> folder, as in
    ``build_suite``; None: each suite's ``data_env``), its fits searching λ × τ by
    ``fit_search`` (``junction.learned.grid.SEARCHES``). The same folders and search give
    the same object, so learned strategies of one process share their fitted models (the
    fit cache is keyed by the source, ``junction.strategies.learned``). Raises
    ``UnknownNameError`` for an unknown ``fit_search``."""
    return _training_source(tuple(sorted((data_folders or {}).items())), fit_search)


@functools.cache
def _training_source(folders: tuple[tuple[str, str], ...], fit_search: str):
    from junction.strategies.learned import TrainingSource

    given = dict(folders)
    return TrainingSource(family=suite_family,
                          tasks=functools.partial(family_training_tasks, data_folders=given),
                          all_tasks=functools.partial(family_all_tasks, data_folders=given),
                          cross_fitted=_cross_fitted, fit_search=fit_search)
