"""Stopping a ``junction bench`` run on SIGINT or SIGTERM: in order, once, in seconds.

The command line ``arm``s a ``flows.stopper.RunStopper`` for one run id; the flow's code
asks it through this module's functions, which do nothing while no run is armed. Then:

- the first SIGINT or SIGTERM sets a stop flag, seen by every thread from the moment the
  signal arrives (``stop_requested`` reads the signal wakeup pipe; Python's own handler
  runs later, in the main thread). The flow's submit loop reads it, submits nothing more,
  waits for the units already running (a unit not yet started returns at once), marks
  the run ``interrupted`` and raises ``RunInterrupted``; the command line then stops the
  temporary server and exits 130 with one line;
- the first signal exits at once instead (``exit_now``) when waiting would only delay
  the end: while the run starts (no unit planned yet: the server starting, suites
  loading) and while a unit runs a section whose work is dropped anyway
  (``abandonable``: a learned strategy's unit, whose model fit takes minutes and writes
  nothing; the resumed run fits again, to the same model);
- if neither has happened ``grace_s`` seconds after the first signal (a unit in a long
  call, a report being drawn), or at a second signal, the process exits at once
  (``exit_now``): units that are writing finish their write first (``unit_write``, a few
  milliseconds; a write started later is discarded), the run is marked ``interrupted``,
  temporary files of the run's writes and the hidden folder of a report being written
  are removed, the server is stopped, every process the command started is ended
  (``flows.process_exit.end_descendants``: a server still starting, Dask's workers) and
  the process ends with ``os._exit(130)`` after flushing its streams. The last line goes to the
  terminal's stderr as it was when the run was armed, even while file descriptor 2 is
  the run's log (``flows.server`` points it there while the server starts).

Exit status 130 is the shell's convention for a process ended by SIGINT (128 + 2). Nothing
happens until a run is armed, so a flow run from a library call or a test behaves as
before. Unit writes are atomic (``TraceStore``: temporary name, then rename), so the only
thing an abrupt end could leave is a hidden ``.*.tmp`` file, which ``exit_now`` removes.

Each job has its file: the stop itself (flag, grace timer, write gate, the exit's order)
is ``flows.stopper.RunStopper``; ending the process (its descendants, the last line) is
``flows.process_exit``; the report being written is undone by
``junction.evidence.reports.remove_unfinished_report``; the resume command is built by
``flows.cli_run.resume_command`` and kept by the stopper (``armed().resume``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from flows.process_exit import EXIT_STATUS
from flows.stopper import RunStopper, mark_interrupted
from junction.errors import JunctionError

__all__ = [
    "EXIT_STATUS",
    "RunInterrupted",
    "RunStopper",
    "abandonable",
    "arm",
    "armed",
    "disarm",
    "exit_now",
    "fail_now",
    "mark_interrupted",
    "on_exit",
    "reinstall",
    "stop_requested",
    "track",
    "unit_write",
]


class RunInterrupted(JunctionError):
    """The run stopped on SIGINT or SIGTERM after ``done`` of ``total`` units."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} units")
        self.done, self.total = done, total


def arm(run_id: str, resume: str, grace_s: float = 5.0) -> RunStopper:
    """Handle SIGINT and SIGTERM for run ``run_id`` (call from the main thread): a new
    ``RunStopper``, armed and returned.

    ``resume``: the command that resumes the run, printed in the last line;
    ``grace_s``: seconds after the first signal before the process exits at once."""
    stopper = RunStopper(run_id, resume, grace_s)
    stopper.arm()
    return stopper


def armed() -> RunStopper | None:
    """The stopper a command line armed for its run (``arm``), or None."""
    return RunStopper.current()


def disarm() -> None:
    """Stop handling signals (Python's default handlers come back); no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is not None:
        stopper.disarm()


def reinstall() -> None:
    """Install the armed run's handlers again (``RunStopper.reinstall``: Prefect's flow
    engine replaces the SIGTERM handler for a flow run's duration); no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is not None:
        stopper.reinstall()


def stop_requested() -> bool:
    """Whether a signal asked the armed run to stop (``RunStopper.stop_requested``: seen by
    every thread from the moment the signal arrives); always False when not armed."""
    stopper = RunStopper.current()
    return stopper is not None and stopper.stop_requested()


def track(root: str | None = None, meta: dict[str, Any] | None = None,
          done: int | None = None, total: int | None = None,
          reports: str | None = None) -> None:
    """Record the run's progress (traces root, its run.json dict, units done and total,
    reports root) for ``exit_now``; no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is not None:
        stopper.track(root=root, meta=meta, done=done, total=total, reports=reports)


def on_exit(fn: Callable[[], None]) -> None:
    """Call ``fn`` (with a 0.5 s limit) before ``exit_now`` prints its line, e.g. to stop
    a progress display; no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is not None:
        stopper.on_exit(fn)


@contextlib.contextmanager
def unit_write() -> Iterator[bool]:
    """Wrap a unit's writes: yields False (write nothing: the unit is discarded) once the
    process has begun to exit, else True, and ``exit_now`` waits for the block to end;
    yields True when not armed."""
    stopper = RunStopper.current()
    if stopper is None:
        yield True
        return
    with stopper.unit_write() as allowed:
        yield allowed


@contextlib.contextmanager
def abandonable() -> Iterator[None]:
    """Mark work that a stop may drop (``RunStopper.abandonable``: a learned strategy's
    unit); a first signal meanwhile exits at once. A no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is None:
        yield
        return
    with stopper.abandonable():
        yield


def exit_now(drain_s: float = 0.0, failed: str | None = None, line: str | None = None) -> None:
    """End the process now through the armed run's stopper (``RunStopper.exit_now``:
    exit status 130, or 1 given ``failed``); no-op when not armed."""
    stopper = RunStopper.current()
    if stopper is not None:
        stopper.exit_now(drain_s=drain_s, failed=failed, line=line)


def fail_now(error: JunctionError) -> None:
    """End the process now as a failed run when a unit failed while other units are inside
    ``abandonable`` (learned fits, minutes each: the run would otherwise wait for them
    behind a frozen progress bar): the run is marked failed with ``error``'s line, its
    traceback goes to the run's log, and the one line names the resume command and the log
    (``RunStopper.exit_now`` with ``failed``). No-op when not armed or when no such work
    runs: the caller then raises ``error`` as before."""
    stopper = RunStopper.current()
    if stopper is None or not stopper.dropping_work():
        return
    from flows import run_log

    run_log.log_exception(str(error), error)
    stopper.exit_now(drain_s=1.0, failed=str(error), line=(
        f"error: {error}; resume with `{stopper.resume}`; full traceback in "
        f"{run_log.log_path(stopper.run_id)}"))
