"""Ending this process at once, as a stopped run does (``flows.stopper.RunStopper.exit_now``):
every process it started ended (``end_descendants``), file descriptor 2 pointed at the
run's log (``quiet_stderr``), the last line printed and ``os._exit`` (``finish``).

Nothing here keeps state: the terminal's descriptor is the caller's (the stopper's
duplicate of fd 2 as it was when the run was armed).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["EXIT_STATUS", "briefly", "end_descendants", "finish", "quiet_stderr"]

EXIT_STATUS = 130
"""128 + SIGINT: what a shell reports for a process that Ctrl-C ended."""


def end_descendants(grace_s: float = 1.0, rounds: int = 5) -> list[int]:
    """Terminate every process this one started, and theirs (a temporary server still
    starting, whose handle Prefect has not returned yet; Dask's workers), SIGKILL after
    ``grace_s`` seconds for any still alive; again while new ones appear (a Dask nanny
    in this process restarts a worker it lost), at most ``rounds`` times; multiprocessing's
    and loky's resource trackers are killed at once. Returns their
    PIDs. psutil finds them (``Process.children(recursive=True)``, ``wait_procs``)."""
    import psutil

    ended: list[int] = []
    for _ in range(rounds):
        try:
            children = psutil.Process().children(recursive=True)
        except psutil.Error:
            break
        if not children:
            break
        for child in children:  # trackers first, unheard: they ignore SIGTERM and would
            with contextlib.suppress(psutil.Error):  # print a leak report on the terminal
                if "resource_tracker" in " ".join(child.cmdline()):
                    child.kill()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.terminate()
        _, alive = psutil.wait_procs(children, timeout=grace_s)
        for child in alive:
            with contextlib.suppress(psutil.Error):
                child.kill()
        psutil.wait_procs(alive, timeout=grace_s)
        ended += [c.pid for c in children]
        time.sleep(0.2)  # room for a restart to show itself
    return ended


def quiet_stderr() -> None:
    """Point file descriptor 2 at the run's log (``flows.run_log.LOG_ENV``; else the null
    device), so what starts or reports from here on (a restarted worker) is logged; the
    last line still reaches the terminal through the descriptor given to ``finish``."""
    from flows.run_log import LOG_ENV

    with contextlib.suppress(OSError):
        sys.stderr.flush()
        fd = os.open(os.environ.get(LOG_ENV) or os.devnull,
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.dup2(fd, 2)
        os.close(fd)


def finish(line: str, status: int = EXIT_STATUS, terminal: int | None = None) -> None:
    """Flush stdout, print ``line`` on ``terminal`` (a file descriptor; default 2), flush
    and ``os._exit(status)``: no interpreter shutdown, so no Prefect exit hook waits on a
    server that is gone."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    from flows.cli_text import terminal_safe

    with contextlib.suppress(Exception):
        sys.stderr.flush()
        text = (terminal_safe(line) + "\n").encode("utf-8", "replace")
        os.write(terminal if terminal is not None else 2, text)
    os._exit(status)


def briefly(fn: Callable[[], None], timeout: float = 0.5) -> None:
    """Call ``fn`` in a daemon thread and wait for it at most ``timeout`` seconds (its
    exceptions are dropped: the process is ending)."""
    def body() -> None:
        with contextlib.suppress(Exception):
            fn()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
