"""A run's log file: where Prefect's log records and every traceback of a bench go.

``junction bench`` prints at most one line per fault on stderr; what a maintainer needs
behind that line (Prefect's task and flow run records, full tracebacks, records of a
thread that died) is appended to ``state_dir()/logs/<run_id>.log`` (``log_path``), which
the line names. ``route_to`` moves every logging handler that writes to stderr (Prefect's
console handlers on the root, ``prefect._internal``, ``uvicorn`` and ``fastapi`` loggers,
configured by its ``logging.yml`` when ``prefect`` is imported) to that file, keeping the
loggers' levels (``PREFECT_LOGGING_LEVEL``, WARNING by default from ``flows.cli``) and
Prefect's API handlers; call it after importing Prefect.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import cast

from junction.environment import state_dir

__all__ = ["LOG_ENV", "log_exception", "log_path", "route_to", "route_worker"]

LOG_ENV = "JUNCTION_RUN_LOG"
"""The environment variable ``route_to`` sets to the log's path, so a worker process started
after it (a local Dask cluster's) can send its records there too (``route_worker``)."""

_routed: set[str] = set()

_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s"
_LOGGER = "junction.bench"


def log_path(run_id: str) -> Path:
    """``state_dir()/logs/<run_id>.log`` (its folder made); a resumed run appends."""
    folder = state_dir() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{run_id}.log"


def route_to(path: Path) -> None:
    """Send every record that would reach stderr through ``logging`` to ``path`` instead,
    and log uncaught exceptions of threads there (``threading.excepthook``); sets
    ``LOG_ENV`` for the processes this one starts. Once per process and path."""
    os.environ[LOG_ENV] = str(path)
    if str(path) in _routed:
        return
    _routed.add(str(path))
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)]
    for logger in loggers:
        to_stderr = [h for h in logger.handlers if _writes_to_stderr(h)]
        for h in to_stderr:
            logger.removeHandler(h)
        if to_stderr and not logger.propagate:  # the others reach the root's
            logger.addHandler(handler)
    logging.getLogger().addHandler(handler)

    def excepthook(args: threading.ExceptHookArgs) -> None:
        # a thread's uncaught exception always has its value (``sys.exc_info()``)
        exc_info = cast(
            "tuple[type[BaseException], BaseException, TracebackType | None]",
            (args.exc_type, args.exc_value, args.exc_traceback))
        logging.getLogger(_LOGGER).error(
            "uncaught exception in thread %s", getattr(args.thread, "name", "?"),
            exc_info=exc_info)

    threading.excepthook = excepthook


def route_worker() -> None:
    """In a worker process started with ``LOG_ENV`` set (a local Dask cluster of a
    ``junction bench``), ``route_to`` that log, once; nothing elsewhere. Appends from
    several processes are whole lines (``O_APPEND`` writes of one record each)."""
    path = os.environ.get(LOG_ENV)
    if path and path not in _routed:
        route_to(Path(path))


def _writes_to_stderr(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return (isinstance(handler, logging.StreamHandler)
            and not isinstance(handler, logging.FileHandler)
            and stream in (sys.stderr, sys.__stderr__))


def log_exception(message: str, exc: BaseException) -> None:
    """Log ``message`` with ``exc``'s full traceback (to the run's log once routed)."""
    logging.getLogger(_LOGGER).error(message, exc_info=(type(exc), exc, exc.__traceback__))
