"""Run parameters that do not change results: the one list, for the params hash and the report.

A benchmark run's parameters (``flows.benchmark.benchmark``) are of three kinds:

- parameters that change results: suites, strategies, seeds, budget scales, size, full,
  the per-strategy plan (``strategy_size``, ``strategy_scales``), suite files (they name
  the input files);
- ``RESULT_NEUTRAL_PARAMS``: they change no trace row (ids, paths, the runner, batching);
- of those, ``UNIT_LAYOUT_PARAMS`` still decide which unit files a run writes, so a resumed
  run must keep them.

``resume_params`` is what ``params_hash`` hashes (a resumed run must match it);
``report_params`` is what ``metrics.json`` records (byte-identical for the same inputs).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MACHINE_PATH_PARAMS",
    "RESULT_NEUTRAL_PARAMS",
    "UNIT_LAYOUT_PARAMS",
    "report_params",
    "resume_params",
]

RESULT_NEUTRAL_PARAMS: dict[str, str] = {
    "run_id": "names the run",
    "output_root": "where traces are written",
    "reports_root": "where reports are written",
    "write_reports": "whether a report is written",
    "runner": "thread pool or Dask",
    "workers": "how many workers run units",
    "dask_address": "which Dask scheduler runs units",
    "batch_size": "tasks per work unit: every task is evaluated on its own",
    "agent_concurrency": "how many requests a remote agent gets at once: each is answered "
                         "on its own, greedily",
    "agent_timeout": "how long one remote generation may take: an answer in time is the "
                     "same answer; one past it fails the run",
    "agent_check_timeout": "how long each check of a remote agent's server before the run "
                           "may take: the checks change no answer",
    "agent_threads": "llama.cpp threads of the embedded agent: greedy decoding gives the "
                     "same text on any thread count (AgentConfig.key leaves it out)",
}
"""Parameter name -> why no trace row depends on it."""

UNIT_LAYOUT_PARAMS = ("batch_size",)
"""Result-neutral, but they name a run's unit files (``seed0-scale1-000000-000100``): a run
resumed with another batch size would not find its finished units, run them again under new
names and duplicate their rows. ``params_hash`` keeps them."""

MACHINE_PATH_PARAMS = ("suite_files", "agent_model", "agent_url", "data_folders")
"""Change results, but as paths on one machine (the agent model is named in the traces by
its sha256, a remote one by ``agent_remote``; a data folder's suite by its tasks): the
report names each file suite (suite name, file name, tasks) and each built suite (its
source and tasks) in its ``suites`` section instead, so metrics.json leaves them out."""


def resume_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a resumed run must repeat: all but the result-neutral ones, except the
    unit layout."""
    return {k: v for k, v in params.items()
            if k not in RESULT_NEUTRAL_PARAMS or k in UNIT_LAYOUT_PARAMS}


def report_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters ``metrics.json`` records: neither result-neutral nor machine paths."""
    return {k: v for k, v in params.items()
            if k not in RESULT_NEUTRAL_PARAMS and k not in MACHINE_PATH_PARAMS}
