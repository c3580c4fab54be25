"""``RunStopper``: one ``junction bench`` run's handling of SIGINT and SIGTERM, as one
object created per run (``flows.interrupts.arm``; the sequence it follows is described
there).

It holds everything a stop needs: the stop flag and the signal wakeup pipe that sets it
from any thread, the grace timer, the gate that lets unit writes finish and refuses new
ones (``unit_write``), the count of threads in work a stop may drop (``abandonable``), the
run's progress (``track``) and a duplicate of the terminal's file descriptor. ``exit_now``
ends the process: the run's record (``mark_interrupted``) and temporary
files, the report being written (``junction.evidence.reports.remove_unfinished_report``),
then ``flows.process_exit``.

Signal handlers are the process's, so one stopper at a time is armed: the one process-wide
slot is ``RunStopper.current()`` (set by ``arm``, cleared by ``disarm``), which the flow's
threads read (``flows.interrupts``); nothing else lives outside the object.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

from flows.process_exit import EXIT_STATUS, briefly, end_descendants, finish, quiet_stderr

__all__ = ["SIGNALS", "WRITE_GRACE_S", "RunStopper", "mark_interrupted"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals a run handles."""

_SIGNAL_NUMBERS = frozenset(int(sig) for sig in SIGNALS)

WRITE_GRACE_S = 1.0
"""Seconds ``exit_now`` waits for unit writes already under way."""


class RunStopper:
    """Stopping run ``run_id`` on SIGINT or SIGTERM (module docstring).

    ``resume``: the command that resumes the run, printed in the last line and recorded in
    run.json (``flows.run_record.start_run``); ``grace_s``: seconds after the first signal
    before the process exits at once. Created unarmed: ``arm`` (main thread) installs the
    handlers, ``disarm`` removes them and releases the stopper's descriptors."""

    _current: ClassVar[RunStopper | None] = None

    def __init__(self, run_id: str, resume: str, grace_s: float = 5.0) -> None:
        self.run_id, self.resume, self.grace_s = run_id, resume, grace_s
        self.root: str | None = None
        self.reports: str | None = None
        self.meta: dict[str, Any] | None = None
        self.done = 0
        self.total: int | None = None
        self.before_exit: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._arrived = threading.Event()
        """Set by ``stop_requested`` when the wakeup pipe shows a signal that Python's
        handler (``_on_signal``) has not run for yet."""
        self._wakeup: tuple[int, int] | None = None
        """The pipe (read end, write end) that CPython's C-level signal handler writes each
        signal number to while armed (``signal.set_wakeup_fd``)."""
        self._wakeup_installed = False
        self._wakeup_lock = threading.Lock()
        self._writes = threading.Condition()
        self._closing = False
        self._active_writes = 0
        self._abandonable = 0
        """Threads inside ``abandonable`` now (read by ``_on_signal``; changed under
        ``_writes``)."""
        self._exiting = threading.Lock()
        self._disarmed = False
        self._terminal: int | None = None
        """A duplicate of file descriptor 2 as it was at ``arm``: the user's terminal,
        where the last line goes even while fd 2 is sent to the run's log
        (``flows.server``)."""

    @classmethod
    def current(cls) -> RunStopper | None:
        """The armed stopper of this process, or None."""
        return cls._current

    def arm(self) -> None:
        """Become this process's armed stopper and handle SIGINT and SIGTERM (call from
        the main thread; a stopper armed before is disarmed first)."""
        previous = RunStopper._current
        if previous is not None and previous is not self:
            previous.disarm()
        self._terminal = os.dup(2)  # fd 2 may go to the run's log meanwhile (flows.server)
        RunStopper._current = self
        self._watch_wakeup()
        self.reinstall()

    def disarm(self) -> None:
        """Stop handling signals (Python's default handlers come back) and close the
        stopper's descriptors, unless the process is already exiting through
        ``exit_now`` (which still needs them)."""
        if RunStopper._current is self:
            RunStopper._current = None
        self._disarmed = True
        main = threading.current_thread() is threading.main_thread()
        if main:
            for sig in SIGNALS:
                signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                              else signal.SIG_DFL)
        if self._wakeup is not None and self._wakeup_installed and main:
            previous = signal.set_wakeup_fd(-1)
            if previous != self._wakeup[1]:
                signal.set_wakeup_fd(previous)  # not ours (an asyncio loop's): left in place
            self._wakeup_installed = False
        if not self._exiting.acquire(blocking=False):
            return  # exit_now is ending the process with these descriptors
        with self._wakeup_lock:  # no stop_requested is reading the pipe meanwhile
            if self._wakeup is not None and not self._wakeup_installed:
                for fd in self._wakeup:
                    os.close(fd)
                self._wakeup = None
        if self._terminal is not None:
            os.close(self._terminal)
            self._terminal = None

    def _watch_wakeup(self) -> None:
        """Point CPython's signal wakeup descriptor at a pipe of this stopper, so
        ``stop_requested`` sees a signal the moment it reaches the process. Left as it is
        when another wakeup descriptor is set (an asyncio loop's, which owns it) or off the
        main thread (``signal.set_wakeup_fd`` raises ``ValueError`` there): then only
        Python's handler sets the stop."""
        if threading.current_thread() is not threading.main_thread():
            return
        if self._wakeup is None:
            read_end, write_end = os.pipe()
            os.set_blocking(read_end, False)
            os.set_blocking(write_end, False)
            self._wakeup = (read_end, write_end)
        previous = signal.set_wakeup_fd(self._wakeup[1], warn_on_full_buffer=False)
        if previous not in (-1, self._wakeup[1]):
            signal.set_wakeup_fd(previous)
        else:
            self._wakeup_installed = True

    def _drain_wakeup(self) -> bytes:
        """The signal numbers written to the wakeup pipe since the last read (one byte
        each); call under ``_wakeup_lock``."""
        if self._wakeup is None:
            return b""
        data = b""
        while True:
            try:
                chunk = os.read(self._wakeup[0], 512)
            except BlockingIOError:
                return data
            if not chunk:
                return data
            data += chunk

    def reinstall(self) -> None:
        """Install the handlers again: Prefect's flow engine replaces the SIGTERM handler
        for a flow run's duration (``prefect.utilities.engine.capture_sigterm``), so the
        flow calls this first. No-op off the main thread or once disarmed."""
        if self._disarmed or threading.current_thread() is not threading.main_thread():
            return
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """First signal: ask the run to stop and start the grace timer; second: exit now.
        The first exits now too while no unit is planned yet (``track``'s total) or a
        thread is inside ``abandonable``. The exit runs in a thread of its own, so no lock
        the main thread holds is needed."""
        if self._disarmed:
            return
        if self._stop.is_set() or self.total is None or self._abandonable:
            why = ("a second signal" if self._stop.is_set() else "the run was still starting"
                   if self.total is None else "a learned unit's work (its fit) is dropped; "
                   "the resumed run redoes it")
            self._stop.set()
            threading.Thread(target=self._exit_at_once, args=(why,), name="junction-exit",
                             daemon=True).start()
            return
        self._stop.set()
        timer = threading.Timer(self.grace_s, self.exit_now)
        timer.daemon = True
        timer.start()

    def _exit_at_once(self, why: str) -> None:
        """``exit_now``, after one record in the run's log saying why it did not wait."""
        import logging

        with contextlib.suppress(Exception):
            logging.getLogger("junction.bench").warning(
                "interrupt: the run ends at once: %s", why)
        self.exit_now()

    def stop_requested(self) -> bool:
        """Whether a signal asked the run to stop.

        True from the moment SIGINT or SIGTERM reaches the process, not only once Python's
        handler has run: that handler runs in the main thread when it next holds the GIL
        (milliseconds, more on a loaded machine), and meanwhile a worker thread could start
        a unit. The C-level handler writes the signal number to the wakeup pipe at once
        (``signal.set_wakeup_fd``, see ``_watch_wakeup``); this reads it, under a lock so
        two threads cannot both miss one byte."""
        if self._stop.is_set() or self._arrived.is_set():
            return True
        if self._disarmed:
            return False
        with self._wakeup_lock:
            if any(number in _SIGNAL_NUMBERS for number in self._drain_wakeup()):
                self._arrived.set()
        return self._arrived.is_set()

    def track(self, root: str | None = None, meta: dict[str, Any] | None = None,
              done: int | None = None, total: int | None = None,
              reports: str | None = None) -> None:
        """Record the run's progress (traces root, its run.json dict, units done and total,
        reports root) for ``exit_now``; None leaves a value as it was."""
        if root is not None:
            self.root = root
        if reports is not None:
            self.reports = reports
        if meta is not None:
            self.meta = meta
        if done is not None:
            self.done = done
        if total is not None:
            self.total = total

    def on_exit(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` (with a 0.5 s limit) before ``exit_now`` prints its line, e.g. to
        stop a progress display."""
        self.before_exit.append(fn)

    @contextlib.contextmanager
    def unit_write(self) -> Iterator[bool]:
        """Wrap a unit's writes: yields False (write nothing: the unit is discarded) once
        the process has begun to exit, else True, and ``exit_now`` waits for the block to
        end."""
        with self._writes:
            allowed = not self._closing
            if allowed:
                self._active_writes += 1
        try:
            yield allowed
        finally:
            if allowed:
                with self._writes:
                    self._active_writes -= 1
                    self._writes.notify_all()

    @contextlib.contextmanager
    def abandonable(self) -> Iterator[None]:
        """Mark work that a stop may drop: it writes nothing, and a resumed run redoes it
        to the same result (a learned strategy's unit: its model fit, then its
        selections). A first signal while any thread is inside exits at once
        (``exit_now``) rather than waiting for it."""
        with self._writes:
            self._abandonable += 1
        try:
            yield
        finally:
            with self._writes:
                self._abandonable -= 1

    def dropping_work(self) -> bool:
        """Whether some thread is inside ``abandonable`` now (a learned unit's fit)."""
        with self._writes:
            return self._abandonable > 0

    def message(self) -> str:
        """The one line for the user: how far the run got and the command that resumes
        it."""
        if self.total is None:
            return f"interrupted before any unit started; resume with `{self.resume}`"
        return (f"interrupted after {self.done} of {self.total} units; resume with "
                f"`{self.resume}`")

    def exit_now(self, drain_s: float = 0.0, failed: str | None = None,
                 line: str | None = None) -> None:
        """End the process now (once, from any thread; a no-op once disarmed): let running
        writes finish (up to ``WRITE_GRACE_S``), mark the run interrupted (or, given
        ``failed``, failed with that reason), remove its temporary files and the report it
        was writing, stop the temporary Prefect server (``drain_s``: seconds its event and
        log workers may take to send what they hold), end every process it started, print
        ``line`` (default: ``message()``) on the terminal and ``os._exit`` with 130 (1
        when failed)."""
        if self._disarmed:
            return
        if not self._exiting.acquire(blocking=False):  # another thread is ending the
            while True:  # process: wait for its os._exit rather than race it to another
                threading.Event().wait(60)  # exit status
        self._stop.set()
        with self._writes:
            self._closing = True
            self._writes.wait_for(lambda: self._active_writes == 0, timeout=WRITE_GRACE_S)
        self.done = self._units_on_disk(self.done)
        self._write_meta(failed)
        self._remove_temporary_files()
        self._remove_unfinished_report()
        from flows import server

        for fn in self.before_exit:
            briefly(fn)
        briefly(lambda: server.stop(drain_s=drain_s), timeout=drain_s + 0.5)
        quiet_stderr()
        end_descendants()
        finish(line or self.message(), EXIT_STATUS if failed is None else 1, self._terminal)

    def _write_meta(self, failed: str | None) -> None:
        """Mark the run interrupted (or failed) unless it has not started or already
        ended."""
        if self.root is None or self.meta is None or self.meta.get("status") != "running":
            return
        from junction.evidence.store import TraceStore

        meta = mark_interrupted(dict(self.meta), self.done, self.total)
        if failed is not None:
            meta.update(status="failed", error=failed)
        with contextlib.suppress(Exception):  # exiting: a failure must not stop the exit
            TraceStore(self.root).write_run_meta(self.run_id, meta)

    def _units_on_disk(self, counted: int) -> int:
        """The run's unit trace files on a local root (a unit that finished while the
        process was exiting counts; resumed units too: they are among the total), else
        ``counted``."""
        if self.root is None or "://" in self.root or self.total is None:
            return counted
        from junction.evidence.store import TraceStore

        return len(TraceStore(self.root).trace_files(self.run_id)) or counted

    def _remove_temporary_files(self) -> None:
        """Remove the run's half-written unit files (local roots; the run's lock is held,
        so no other process writes them)."""
        if self.root is None or "://" in self.root:
            return
        from junction.evidence.store import TraceStore

        with contextlib.suppress(Exception):  # exiting: a failure must not stop the exit
            TraceStore(self.root).remove_partial_files(self.run_id)

    def _remove_unfinished_report(self) -> None:
        """Undo a report of the run this process was writing
        (``junction.evidence.reports.remove_unfinished_report``)."""
        if self.reports is None:
            return
        from junction.evidence.reports import remove_unfinished_report

        with contextlib.suppress(Exception):  # exiting: a failure must not stop the exit
            remove_unfinished_report(Path(self.reports) / self.run_id)


def mark_interrupted(meta: dict[str, Any], done: int, total: int | None) -> dict[str, Any]:
    """``meta`` (a run.json dict) marked ``interrupted`` at this time, with the units done."""
    meta.update(finished_at=datetime.now(UTC).isoformat(), status="interrupted",
                error=None, units_done=done, units_total=total)
    meta.pop("suites", None)
    return meta
