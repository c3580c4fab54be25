"""The edge: Prefect flows (``flows.benchmark``) and the command line (``flows.cli``), thin
orchestration around the ``junction`` library."""

from flows.environment import configure_prefect_env

configure_prefect_env()
