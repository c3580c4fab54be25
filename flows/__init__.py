"""Prefect flows: thin orchestration around ``junction`` (see ``flows.benchmark``)."""

from junction.environment import configure_prefect_env

configure_prefect_env()
