"""Stopping a ``junction bench`` run on SIGINT or SIGTERM: in order, once, in seconds.

The command line ``arm``s this module for one run id. Then:

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
  (``end_descendants``: a server still starting, Dask's workers) and the process ends
  with ``os._exit(130)`` after flushing its streams. The last line goes to the
  terminal's stderr as it was when the run was armed, even while file descriptor 2 is
  the run's log (``flows.server`` points it there while the server starts).

Exit status 130 is the shell's convention for a process ended by SIGINT (128 + 2). The
module does nothing until armed, so a flow run from a library call or a test behaves as
before. Unit writes are atomic (``TraceStore``: temporary name, then rename), so the only
thing an abrupt end could leave is a hidden ``.*.tmp`` file, which ``exit_now`` removes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from junction.errors import JunctionError

__all__ = [
    "EXIT_STATUS",
    "RunInterrupted",
    "abandonable",
    "arm",
    "armed",
    "disarm",
    "end_descendants",
    "exit_now",
    "mark_interrupted",
    "on_exit",
    "reinstall",
    "resume_command",
    "stop_requested",
    "track",
    "unit_write",
]

EXIT_STATUS = 130
"""128 + SIGINT: what a shell reports for a process that Ctrl-C ended."""

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_SIGNAL_NUMBERS = frozenset(int(sig) for sig in _SIGNALS)
_WRITE_GRACE_S = 1.0


class RunInterrupted(JunctionError):
    """The run stopped on SIGINT or SIGTERM after ``done`` of ``total`` units."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"interrupted after {done} of {total} units")
        self.done, self.total = done, total


@dataclass
class _Run:
    run_id: str
    resume: str
    grace_s: float
    root: str | None = None
    reports: str | None = None
    meta: dict[str, Any] | None = None
    done: int = 0
    total: int | None = None
    before_exit: list[Callable[[], None]] = field(default_factory=list)


_stop = threading.Event()
_arrived = threading.Event()
"""Set by ``stop_requested`` when the wakeup pipe shows a SIGINT or SIGTERM that Python's
handler (``_on_signal``) has not run for yet."""
_wakeup: tuple[int, int] | None = None
"""The pipe (read end, write end) that CPython's C-level signal handler writes each signal
number to (``signal.set_wakeup_fd``) while armed; kept open for the process's life, so a
thread reading it never meets a closed or reused descriptor."""
_wakeup_lock = threading.Lock()
_closing = threading.Event()
_writes = threading.Condition()
_active_writes = 0
_abandonable = 0
"""Threads inside ``abandonable`` now (read by ``_on_signal``; changed under ``_writes``)."""
_exiting = threading.Lock()
_run: _Run | None = None
_terminal: int | None = None
"""A duplicate of file descriptor 2 as it was when the run was armed: the user's terminal,
where the last line goes even while fd 2 is sent to the run's log (``flows.server``)."""


def arm(run_id: str, resume: str, grace_s: float = 5.0) -> None:
    """Handle SIGINT and SIGTERM for run ``run_id`` (call from the main thread).

    ``resume``: the command that resumes the run, printed in the last line;
    ``grace_s``: seconds after the first signal before the process exits at once."""
    global _run, _terminal
    _stop.clear()
    _arrived.clear()
    _closing.clear()
    _run = _Run(run_id, resume, grace_s)
    if _terminal is None:
        _terminal = os.dup(2)  # fd 2 may go to the run's log meanwhile (flows.server)
    _watch_wakeup()
    reinstall()


def disarm() -> None:
    """Stop handling signals (the previous handlers come back: Python's defaults)."""
    global _run
    _run = None
    for sig in _SIGNALS:
        signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                      else signal.SIG_DFL)
    if _wakeup is not None and threading.current_thread() is threading.main_thread():
        previous = signal.set_wakeup_fd(-1)
        if previous not in (-1, _wakeup[1]):
            signal.set_wakeup_fd(previous)  # not ours (an asyncio loop's): left in place


def _watch_wakeup() -> None:
    """Point CPython's signal wakeup descriptor at ``_wakeup``'s pipe (emptied first), so
    ``stop_requested`` sees a signal the moment it reaches the process. Left as it is when
    another wakeup descriptor is set (an asyncio loop's, which owns it) or off the main
    thread (``signal.set_wakeup_fd`` raises ``ValueError`` there): then only Python's
    handler sets the stop."""
    global _wakeup
    if threading.current_thread() is not threading.main_thread():
        return
    if _wakeup is None:
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        _wakeup = (read_end, write_end)
    _drain_wakeup()
    previous = signal.set_wakeup_fd(_wakeup[1], warn_on_full_buffer=False)
    if previous not in (-1, _wakeup[1]):
        signal.set_wakeup_fd(previous)


def _drain_wakeup() -> bytes:
    """The signal numbers written to the wakeup pipe since the last read (one byte each)."""
    if _wakeup is None:
        return b""
    data = b""
    while True:
        try:
            chunk = os.read(_wakeup[0], 512)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


def reinstall() -> None:
    """Install the handlers again if armed: Prefect's flow engine replaces the SIGTERM
    handler for a flow run's duration (``prefect.utilities.engine.capture_sigterm``), so
    the flow calls this first. No-op off the main thread or when not armed."""
    if _run is None or threading.current_thread() is not threading.main_thread():
        return
    for sig in _SIGNALS:
        signal.signal(sig, _on_signal)


def _on_signal(signum: int, frame) -> None:
    """First signal: ask the run to stop and start the grace timer; second: exit now. The
    first exits now too while no unit is planned yet (``track``'s total) or a thread is
    inside ``abandonable``. The exit runs in a thread of its own, so no lock the main
    thread holds is needed."""
    if _run is None:
        return
    if _stop.is_set() or _run.total is None or _abandonable:
        why = ("a second signal" if _stop.is_set() else "the run was still starting"
               if _run.total is None else "a learned unit's work (its fit) is dropped; the "
               "resumed run redoes it")
        _stop.set()
        threading.Thread(target=_exit_at_once, args=(why,), name="junction-exit",
                         daemon=True).start()
        return
    _stop.set()
    timer = threading.Timer(_run.grace_s, exit_now)
    timer.daemon = True
    timer.start()


def _exit_at_once(why: str) -> None:
    """``exit_now``, after one record in the run's log saying why it did not wait."""
    import logging

    with contextlib.suppress(Exception):
        logging.getLogger("junction.bench").warning("interrupt: the run ends at once: %s",
                                                    why)
    exit_now()


def armed() -> bool:
    """Whether a command line armed this module for a run (``arm``)."""
    return _run is not None


def resume_command() -> str | None:
    """The command that resumes the armed run, as ``arm`` was given it (None: not armed)."""
    return None if _run is None else _run.resume


def stop_requested() -> bool:
    """Whether a signal asked the run to stop (always False when not armed).

    True from the moment SIGINT or SIGTERM reaches the process, not only once Python's
    handler has run: that handler runs in the main thread when it next holds the GIL
    (milliseconds, more on a loaded machine), and meanwhile a worker thread could start a
    unit. The C-level handler writes the signal number to the wakeup pipe at once
    (``signal.set_wakeup_fd``, see ``_watch_wakeup``); this reads it, under a lock so two
    threads cannot both miss one byte."""
    if _stop.is_set() or _arrived.is_set():
        return True
    if _run is None or _wakeup is None:
        return False
    with _wakeup_lock:
        if any(number in _SIGNAL_NUMBERS for number in _drain_wakeup()):
            _arrived.set()
    return _arrived.is_set()


def track(root: str | None = None, meta: dict[str, Any] | None = None,
          done: int | None = None, total: int | None = None,
          reports: str | None = None) -> None:
    """Record the run's progress (traces root, its run.json dict, units done and total,
    reports root) for ``exit_now``; no-op when not armed."""
    if _run is None:
        return
    if root is not None:
        _run.root = root
    if reports is not None:
        _run.reports = reports
    if meta is not None:
        _run.meta = meta
    if done is not None:
        _run.done = done
    if total is not None:
        _run.total = total


def on_exit(fn: Callable[[], None]) -> None:
    """Call ``fn`` (with a 0.5 s limit) before ``exit_now`` prints its line, e.g. to stop
    a progress display; no-op when not armed."""
    if _run is not None:
        _run.before_exit.append(fn)


@contextlib.contextmanager
def unit_write() -> Iterator[bool]:
    """Wrap a unit's writes: yields False (write nothing: the unit is discarded) once the
    process has begun to exit, else True, and ``exit_now`` waits for the block to end."""
    global _active_writes
    with _writes:
        if _closing.is_set():
            allowed = False
        else:
            allowed = True
            _active_writes += 1
    try:
        yield allowed
    finally:
        if allowed:
            with _writes:
                _active_writes -= 1
                _writes.notify_all()


@contextlib.contextmanager
def abandonable() -> Iterator[None]:
    """Mark work that a stop may drop: it writes nothing, and a resumed run redoes it to
    the same result (a learned strategy's unit: its model fit, then its selections). A
    first signal while any thread is inside exits at once (``exit_now``) rather than
    waiting for it; a no-op when not armed."""
    global _abandonable
    if _run is None:
        yield
        return
    with _writes:
        _abandonable += 1
    try:
        yield
    finally:
        with _writes:
            _abandonable -= 1


def mark_interrupted(meta: dict[str, Any], done: int, total: int | None) -> dict[str, Any]:
    """``meta`` (a run.json dict) marked ``interrupted`` at this time, with the units done."""
    meta.update(finished_at=datetime.now(UTC).isoformat(), status="interrupted",
                error=None, units_done=done, units_total=total)
    meta.pop("suites", None)
    return meta


def message() -> str:
    """The one line for the user: how far the run got and the command that resumes it."""
    assert _run is not None
    if _run.total is None:
        return f"interrupted before any unit started; resume with `{_run.resume}`"
    return f"interrupted after {_run.done} of {_run.total} units; resume with `{_run.resume}`"


def exit_now(drain_s: float = 0.0, failed: str | None = None, line: str | None = None) -> None:
    """End the process now (once, from any thread): let running writes finish (up to 1 s),
    mark the run interrupted (or, given ``failed``, failed with that reason), remove its
    temporary files, stop the temporary Prefect server (``drain_s``: seconds its event
    and log workers may take to send what they hold), print ``line`` (default:
    ``message()``) on stderr and ``os._exit`` with 130 (1 when failed)."""
    if _run is None:
        return
    if not _exiting.acquire(blocking=False):  # another thread is ending the process:
        while True:  # wait for its os._exit rather than race it to another exit status
            threading.Event().wait(60)
    run = _run
    _stop.set()
    with _writes:
        _closing.set()
        _writes.wait_for(lambda: _active_writes == 0, timeout=_WRITE_GRACE_S)
    run.done = _units_on_disk(run, run.done)
    _write_meta(run, failed)
    _remove_temporary_files(run)
    _remove_report_temporaries(run)
    from flows import server

    for fn in run.before_exit:
        _briefly(fn)
    _briefly(lambda: server.stop(drain_s=drain_s), timeout=drain_s + 0.5)
    _quiet_stderr()  # what is started or reports from here on (a restarted worker) is logged
    end_descendants()
    finish(line or message(), EXIT_STATUS if failed is None else 1)


def _quiet_stderr() -> None:
    """Point file descriptor 2 at the run's log (``flows.run_log.LOG_ENV``; else the null
    device): the last line still reaches the terminal through ``_terminal``."""
    from flows.run_log import LOG_ENV

    with contextlib.suppress(OSError):
        sys.stderr.flush()
        fd = os.open(os.environ.get(LOG_ENV) or os.devnull,
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.dup2(fd, 2)
        os.close(fd)


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


def finish(line: str, status: int = EXIT_STATUS) -> None:
    """Flush stdout, print ``line`` on stderr, flush and ``os._exit(status)``: no
    interpreter shutdown, so no Prefect exit hook waits on a server that is gone."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    from flows.cli_text import terminal_safe

    with contextlib.suppress(Exception):
        sys.stderr.flush()
        text = (terminal_safe(line) + "\n").encode("utf-8", "replace")
        os.write(_terminal if _terminal is not None else 2, text)
    os._exit(status)


def _write_meta(run: _Run, failed: str | None) -> None:
    """Mark the run interrupted (or failed) unless it has not started or already ended."""
    if run.root is None or run.meta is None or run.meta.get("status") != "running":
        return
    from junction.evidence.store import TraceStore

    meta = mark_interrupted(dict(run.meta), run.done, run.total)
    if failed is not None:
        meta.update(status="failed", error=failed)
    with contextlib.suppress(Exception):  # exiting: a failure here must not stop the exit
        TraceStore(run.root).write_run_meta(run.run_id, meta)


def _units_on_disk(run: _Run, counted: int) -> int:
    """The run's unit trace files on a local root (a unit that finished while the
    process was exiting counts; resumed units too: they are among the total), else
    ``counted``."""
    if run.root is None or "://" in run.root or run.total is None:
        return counted
    from junction.evidence.store import TraceStore

    return len(TraceStore(run.root).trace_files(run.run_id)) or counted


def _remove_temporary_files(run: _Run) -> None:
    """Remove the run's half-written unit files (local roots; the run's lock is held, so
    no other process writes them)."""
    if run.root is None or "://" in run.root:
        return
    from junction.evidence.store import TraceStore

    with contextlib.suppress(Exception):  # exiting: a failure here must not stop the exit
        TraceStore(run.root).remove_partial_files(run.run_id)


def _remove_report_temporaries(run: _Run) -> None:
    """Remove the hidden folder of a report this process was writing
    (``reports/.<run>.tmp-<pid>``, ``junction.evidence.reports.write_report``); an earlier
    report moved aside (``.<run>.old-<pid>``) goes back in place if the new one was not
    yet renamed there, else is removed."""
    if run.reports is None:
        return
    import shutil
    from pathlib import Path

    with contextlib.suppress(Exception):  # exiting: a failure here must not stop the exit
        final = Path(run.reports) / run.run_id
        shutil.rmtree(final.parent / f".{final.name}.tmp-{os.getpid()}", ignore_errors=True)
        aside = final.parent / f".{final.name}.old-{os.getpid()}"
        if aside.exists() and not final.exists():
            aside.rename(final)
        shutil.rmtree(aside, ignore_errors=True)


def _briefly(fn: Callable[[], None], timeout: float = 0.5) -> None:
    """Call ``fn`` in a daemon thread and wait for it at most ``timeout`` seconds."""
    def body() -> None:
        with contextlib.suppress(Exception):
            fn()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
