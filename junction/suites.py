"""The suite catalog: one ``SuiteInfo`` record per registered suite, and what the code
reads from it instead of testing suite names.

A suite is registered by the suite builders (``junction_datasets``: ``register_suite``);
``SUITES`` loads the entry points of ``junction.registry.PLUGINS`` on its first lookup
(``junction.registry.Catalog``; pyproject.toml names the builders there), so the report,
the agent and the run plan find every record without importing the builders themselves.
What a code path once decided from a suite's name is a field here:

- ``prompt_layout``: the agent's prompt layout for the suite's tasks (None: BFCL's);
- ``reference_set``: which reference strategies run on it (a strategy record's
  ``reference_set`` equal to it);
- ``agent_sample_note``: the make target that runs its larger agent sample, as a sentence;
- ``finding``: the suite the report's first screen leads with when a run left it out;
- ``reference_note``: a sentence the report prints under its reference rows;
- ``data_env``: the environment variable naming its data folder (``--data SUITE=PATH``
  names it on the command line).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from junction.registry import PLUGINS, Catalog
from junction.tasks import BenchmarkTask

__all__ = [
    "SUITES",
    "BuiltSuite",
    "SuiteInfo",
    "finding_suite",
    "get_suite",
    "register_suite",
    "suite_names",
]


class BuiltSuite(Protocol):
    """What a suite builder returns besides a bare task list: a record with the built
    ``tasks`` (the builders' own, ``junction_datasets.registry.SuiteBuild``, which also
    counts the rows loaded and skipped)."""

    @property
    def tasks(self) -> list[BenchmarkTask]: ...


@dataclass(frozen=True)
class SuiteInfo:
    """A registered suite, its one record: its builder, its size in the default benchmark
    (``default_size``: tasks sampled without ``size`` or ``full``; None: every task), the
    candidate-pool limit per lane its strategies use (None: the whole pool; a pair
    ``(contexts, tools)``: one limit per lane), whether the
    default benchmark (no ``--suite``) runs it, and the family whose training part learned
    strategies fit on (None: no training part; the builder then takes no ``split``)."""

    name: str
    build: Callable[..., BuiltSuite | list[BenchmarkTask]]
    default_size: int | None
    pool_limit: int | tuple[int | None, int | None] | None = 8
    """``junction.candidates.PoolLimit``, spelled out (that module is a layer above)."""
    description: str = ""
    in_default_run: bool = True
    family: str | None = None
    unavailable: Callable[..., str | None] | None = None
    """One line saying why the suite cannot be built now (its data is absent), or None;
    called with the suite's data folder (``data=``) when ``data_env`` is set."""
    data_env: str | None = None
    """For a suite read from a folder the user names (third-party data, never shipped): the
    environment variable that names it when a run does not (``data_folder``); the builder
    then takes the folder as ``path`` and ``unavailable`` as ``data``. None: no folder."""
    cross_fit: bool = False
    """Learned strategies are cross-fitted on this suite (``junction_datasets.split``):
    every task is evaluated, by a model fitted on the other folds; its default part is
    then ``"all"``, not ``"eval"``. Only for a suite that is its family's only suite."""
    prompt_layout: str | None = None
    """``"module:attribute"`` of the ``junction.agent.prompt.PromptLayout`` its agent gets
    (None: BFCL's layout, ``junction.agent.prompt.BFCL_LAYOUT``)."""
    reference_set: str | None = None
    """The reference strategies that run on it: those whose catalog record has this
    ``reference_set`` (``junction.strategies.catalog.StrategyInfo``); None: none."""
    agent_sample_note: str = ""
    """A sentence naming the make target that runs its larger agent sample: the report
    prints it when too few of the suite's tasks decide an agent verdict ("" for none)."""
    finding: bool = False
    """The suite the report's first screen leads with (``finding_suite``): when a run
    left it out, the report says why."""
    reference_note: str = ""
    """A sentence the report prints under the suite's reference rows ("" for none)."""

    def default_split(self) -> str:
        """The part a benchmark evaluates: ``"all"`` for a cross-fitted suite, else
        ``"eval"`` (a fixed split's evaluation rows; ignored without a family)."""
        return "all" if self.cross_fit else "eval"

    def data_folder(self, data_folders: Mapping[str, str] | None = None) -> str | None:
        """The data folder this suite reads: ``data_folders[name]``, else ``$data_env``
        (an empty value counts as unset), else None; always None without ``data_env``."""
        if self.data_env is None:
            return None
        given = (data_folders or {}).get(self.name)
        return given if given else os.environ.get(self.data_env) or None

    def unavailable_reason(self, data_folders: Mapping[str, str] | None = None) -> str | None:
        """Why the suite cannot run now (one line), or None when it can; a suite with a
        data folder is checked on ``data_folder(data_folders)``."""
        if self.unavailable is None:
            return None
        if self.data_env is None:
            return self.unavailable()
        return self.unavailable(data=self.data_folder(data_folders))


SUITES: Catalog[SuiteInfo] = Catalog("suite", entry_points=PLUGINS)
"""The registered suites (module docstring)."""


def register_suite(info: SuiteInfo, *, replace: bool = False) -> None:
    """Add a suite to the registry under ``info.name``. A name already registered is replaced
    only with ``replace=True`` (a plug-in's replacement is recorded in the run);
    ``junction.registry.PluginError`` or ``ValueError`` otherwise
    (``junction.registry.Catalog.register``)."""
    SUITES.register(info.name, info, replace=replace)


def suite_names() -> list[str]:
    """Registered suite names, sorted."""
    return SUITES.names()


def get_suite(name: str) -> SuiteInfo:
    """The ``SuiteInfo`` for ``name``; ``UnknownNameError`` listing valid names otherwise."""
    return SUITES.get_record(name)


def finding_suite() -> str | None:
    """The suite whose record says ``finding`` (the first in name order), or None."""
    return next((n for n in suite_names() if SUITES[n].finding), None)
