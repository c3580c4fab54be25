"""The edge: the Prefect flow that runs a benchmark and the command line, around the
``junction`` library (which imports nothing from here).

- ``plan``: the run plan (``RunPlan``), one record of a run's parameters; ``preflight``:
  what a plan needs of this machine, checked before any work; ``sampling``: which tasks
  each strategy and the agent run on;
- ``benchmark``: the ``benchmark`` flow; ``runners``: its task runner and entry points;
  ``workers``: one unit of work and the per-process caches it draws on;
  ``run_record``: the run's ``runs/<run_id>.json``; ``run_log``: the run's log file;
- ``server``: the temporary Prefect server; ``environment``: Prefect's home, analytics and
  timeouts;
- ``interrupts``: stopping a run on SIGINT or SIGTERM, through ``stopper`` (one
  ``RunStopper`` per run) and ``process_exit`` (ending the process at once);
- ``cli``: the ``junction`` command line, with ``cli_run`` (``junction bench``),
  ``cli_admit``, ``cli_judge``, ``cli_models`` and ``cli_text`` (text at its edges).
"""

import contextlib

from flows.environment import configure_prefect_env
from junction.errors import JunctionError

with contextlib.suppress(JunctionError):  # a state folder that is a file: one line where
    configure_prefect_env()  # it is used (flows.cli.main says it before any command)
