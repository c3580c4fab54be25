"""The edge: Prefect flows (``flows.benchmark``) and the command line (``flows.cli``), thin
orchestration around the ``junction`` library."""

import contextlib

from flows.environment import configure_prefect_env
from junction.errors import JunctionError

with contextlib.suppress(JunctionError):  # a state folder that is a file: one line where
    configure_prefect_env()  # it is used (flows.cli.main says it before any command)
