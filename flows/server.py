"""The temporary Prefect server of one process: started, watched, and stopped at once.

Without a configured server (``PREFECT_API_URL`` unset) each process runs its own
temporary server, a uvicorn child process. Junction starts it itself (``start``) so that:

- the child is forked by a thread with SIGINT blocked; the signal mask is inherited across
  ``exec`` (POSIX ``fork``/``execve``), so a Ctrl-C sent to the terminal's process group
  reaches only the ``junction`` process, which then shuts the run down in order instead of
  losing its server first;
- its stderr (uvicorn's and the server's own tracebacks, e.g. one at a stop that cuts a
  database write) can go to a file (``send_stderr_to``: the run's log) instead of the
  user's terminal;
- it can be watched (``watch``: a callback when it exits on its own, e.g. killed);
- it starts on a copy of a migrated database (``start``: the home's template), where
  Prefect would migrate a new file and register its block types at every start;
- it can be stopped without retries (``stop``): Prefect's events and API-log workers are
  drained with a time limit, then the server is terminated. Left to Prefect, the events
  worker of a process whose server has died retries about every 7 s and prints one
  traceback per try, and the interpreter's exit waits for it.

- this process never imports Prefect's server package (``prefect.server.api.server``,
  whose imports only the child needs; docs/measurement.md, "Prefect server start"): the
  child is started as Prefect's own ``SubprocessASGIServer`` starts it (the same uvicorn
  command line and environment), and once it answers, this process's ``PREFECT_API_URL``
  names it, so Prefect's clients, events and logs report to it as to a configured server
  (Prefect imports its server package only to start an ephemeral one when no URL is set).

Prefect API used beyond its documented surface (Prefect 3.9.1, kept to this module): the
uvicorn command line of ``prefect.server.api.server.SubprocessASGIServer._run_uvicorn_command``
and its server-side environment (``PREFECT_UI_ENABLED=0``, ``PREFECT__SERVER_EPHEMERAL=1``,
``PREFECT__SERVER_FINAL=1``: an ephemeral server, with the services such a server runs),
``prefect.context.refresh_global_settings_context`` (the settings every thread without a
settings context of its own reads, rebuilt from the environment), and the
``drain_all(timeout=...)`` class method of ``prefect.events.worker.EventsWorker`` and
``prefect.logging.handlers.APILogWorker`` (``prefect._internal.concurrency.services``). No
private (underscore) name is imported. The template relies on Prefect's migrate-on-start
being Alembic's upgrade to head, which does nothing on a copy of a database already at head
(the template's key changes with Prefect's version).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import fcntl
import hashlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import psutil

from junction.environment import state_dir

__all__ = [
    "RECORDING_SETTINGS",
    "api_url",
    "copy_template",
    "discarded_database_settings",
    "in_thread_without_sigint",
    "save_template",
    "send_stderr_to",
    "server_pid",
    "start",
    "stderr_to",
    "stop",
    "watch",
]

T = TypeVar("T")

_WATCH_INTERVAL_S = 0.2
_stopping = threading.Event()
_on_exit: Callable[[int, int], None] | None = None
_stderr_path: Path | None = None
_server: subprocess.Popen[bytes] | None = None
"""This process's temporary server (uvicorn), while ``start`` has started it and ``stop``
has not stopped it."""
_server_url: str | None = None
"""Its API URL (``http://127.0.0.1:<port>/api``), set with ``_server``."""


def send_stderr_to(path: Path | None) -> None:
    """Give the next server that ``start`` starts ``path`` (appended to) as its stderr;
    None: this process's stderr. The child takes file descriptor 2 at its fork, so fd 2
    points at ``path`` while the server starts (seconds); anything this process writes to
    stderr meanwhile lands there too."""
    global _stderr_path
    _stderr_path = path


@contextlib.contextmanager
def stderr_to(path: Path | None) -> Iterator[None]:
    """Within the block, file descriptor 2 is ``path`` (appended to; None: unchanged), so
    processes started meanwhile write their stderr there."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as handle:
        os.dup2(handle.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def start() -> None:
    """Start this process's temporary Prefect server on a database of its own.

    Unless ``PREFECT_API_DATABASE_CONNECTION_URL`` is set, the server gets its own SQLite
    file, ``PREFECT_HOME/ephemeral/<pid>.db`` (files of processes that have ended are
    removed at the next start): two temporary servers on one shared file race at the first
    migration (``index ... already exists``) and contend for its lock while both run.
    Junction keeps its own run records, so nothing of Prefect's per-run database needs to
    outlive the process. That file starts as a copy of the home's template,
    ``ephemeral/template-<key>.db`` (key: the installed Prefect distributions and their
    versions): the database of the first server on the home, migrated and filled with
    Prefect's block types, copied (SQLite's online backup) as soon as that server answered,
    before any run wrote to it. A server on a copy finds its schema current (no migration)
    and does not register block types (``PREFECT_SERVER_REGISTER_BLOCKS_ON_START`` false
    unless set in the environment): the two steps Prefect otherwise runs at every start on
    a new file (docs/measurement.md, "Prefect server start"). A template that cannot be read
    is replaced, never used; writing one removes the templates of other Prefect versions.
    The start holds an OS file lock in ``PREFECT_HOME``, so a user-configured shared
    database is still migrated by one process at a time, and one template is written at a
    time. The child is started with SIGINT blocked (module docstring). Does nothing when a
    server is configured or already running. Raises ``RuntimeError`` (Prefect's) when the
    server does not answer within ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``.
    """
    from prefect.settings import (
        PREFECT_API_DATABASE_CONNECTION_URL,
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        temporary_settings,
    )

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return  # a configured server, or this process's own, already running
    _stopping.clear()
    home = _home()
    updates: dict[Any, Any] = {}
    with _start_lock(home):
        database, copied = None, False
        if "PREFECT_API_DATABASE_CONNECTION_URL" not in os.environ:
            database = _process_database(home / "ephemeral")
            updates[PREFECT_API_DATABASE_CONNECTION_URL] = f"sqlite+aiosqlite:///{database}"
            template_settings = _copy_template(database, home)
            copied = template_settings is not None
            updates.update(template_settings or {})
            updates.update(discarded_database_settings())
        with temporary_settings(updates=updates), stderr_to(_stderr_path):
            _in_thread_without_sigint(_start_uvicorn)
        if database is not None and not copied:  # migrated, block types in, no run
            _save_template(database, home)
    _report_to(_server_url)
    atexit.unregister(stop)  # registered once, however many servers this process starts
    atexit.register(stop)
    _watch_running()


_SERVER_ENVIRONMENT = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
                       "PREFECT__SERVER_FINAL": "1"}
"""What Prefect's ``SubprocessASGIServer`` sets in its child's environment (Prefect 3.9.1):
no UI, and the server runs as an ephemeral one."""

_PORT_IN_USE = 3
"""uvicorn's exit status when it fails to start (``uvicorn.config.STARTUP_FAILURE``), a
taken port among the causes: ``SubprocessASGIServer.start`` tries another port on it, and
so does ``_start_uvicorn`` when the port is taken now (any other failure is raised)."""


def _start_uvicorn() -> None:
    """Start the server as ``SubprocessASGIServer`` does (its uvicorn command line, its
    environment and this context's Prefect settings as variables) on a free port of
    127.0.0.1, and wait for ``/api/health`` to answer 200, polling every 0.1 s for at most
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``. A start whose port another process
    took meanwhile is retried on another. Raises ``RuntimeError`` when it does not answer in
    time or exits, naming its exit status."""
    global _server, _server_url
    import httpx
    import prefect
    from prefect.settings import (
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        get_current_settings,
    )

    environment = {**os.environ, **_SERVER_ENVIRONMENT,
                   **get_current_settings().to_environment_variables(exclude_unset=True)}
    app_dir = str(Path(prefect.__file__).parent.parent)  # where ``prefect`` is installed
    timeout_s = PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()
    deadline = time.monotonic() + timeout_s
    with httpx.Client() as client:
        while True:
            port = _bindable()
            if port is None:
                raise RuntimeError("no TCP port of 127.0.0.1 is free for the temporary "
                                   "Prefect server")
            process = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "--app-dir", app_dir, "--factory",
                 "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port",
                 str(port), "--log-level", "error", "--lifespan", "on"], env=environment)
            url = f"http://127.0.0.1:{port}/api"
            _server, _server_url = process, url
            while time.monotonic() < deadline:
                code = process.poll()
                if code is not None:
                    break
                with contextlib.suppress(httpx.TransportError):
                    if client.get(f"{url}/health").status_code == 200:
                        return
                time.sleep(0.1)
            code = process.poll()
            if code == _PORT_IN_USE and _bindable(port) is None and time.monotonic() < deadline:
                continue  # another process took the port meanwhile: start on another
            _terminate(process)
            _server, _server_url = None, None
            raise RuntimeError(
                f"the temporary Prefect server did not answer within {timeout_s:g} s "
                f"(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS)" if code is None else
                f"the temporary Prefect server exited with status {code} while starting")


def _bindable(port: int = 0) -> int | None:
    """``port`` of 127.0.0.1 if it can be bound now, else None; 0: a port that is free now
    (the system's choice)."""
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return None
        return int(sock.getsockname()[1])


def _report_to(url: str | None) -> None:
    """Make ``url`` this process's ``PREFECT_API_URL`` (None: unset it): in the
    environment (what a worker process inherits, and what a thread with no settings
    context of its own reads, through Prefect's global settings context, rebuilt here).
    Raises ``RuntimeError`` when the caller's own settings context (a
    ``temporary_settings`` block it is in) would hide it: Prefect's client would then
    start an ephemeral server of its own."""
    import prefect.context
    from prefect.settings import PREFECT_API_URL

    if url is None:
        os.environ.pop("PREFECT_API_URL", None)
    else:
        os.environ["PREFECT_API_URL"] = url
    prefect.context.refresh_global_settings_context()
    if url is not None and PREFECT_API_URL.value() != url:
        stop()
        raise RuntimeError("the temporary Prefect server was started inside a Prefect "
                           "settings context that sets no PREFECT_API_URL; start it "
                           "outside one, or set PREFECT_API_URL to a running server")


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 5 s (Prefect's ``SubprocessASGIServer.stop``); reaped."""
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


RECORDING_SETTINGS = (
    ("PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED",
     "PREFECT_API_SERVICES_TASK_RUN_RECORDER_ENABLED"),
    ("PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED",
     "PREFECT_API_SERVICES_EVENT_PERSISTER_ENABLED"),
    ("PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED", "PREFECT_API_SERVICES_TRIGGERS_ENABLED"),
    ("PREFECT_SERVER_EVENTS_STREAM_OUT_ENABLED",),
    ("PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED",),
)
"""The services of Prefect's server that only record or forward what a run did (each row:
the setting's Prefect 3 name, then its older alias): the task run recorder (task runs and
their states, written from the client's events), the event persister, the triggers of
automations (reactive triggers and their actions), and the event and log streams out to
subscribers (the UI's live views). An ephemeral server runs each of them
(``prefect.server.api.server.create_app``, ``RunInEphemeralServers``; Prefect 3.9.1)."""


def discarded_database_settings() -> dict[Any, Any]:
    """The Prefect settings a temporary server starts with when its database is discarded
    after the run (``start``; the test suite's harness): every service in
    ``RECORDING_SETTINGS`` off. Nobody reads that database (an ephemeral server serves no
    UI, and Junction keeps its own run records: traces, ``run.json``), so the server would
    spend its CPU writing task runs and events that are deleted with the file; orchestration
    (flow run states, the API the flow calls) is untouched. A setting the user set in the
    environment (either name) stands. Cost before and after: docs/measurement.md, "Prefect
    server start"."""
    import prefect.settings

    return {getattr(prefect.settings, names[0]): False for names in RECORDING_SETTINGS
            if not set(names) & os.environ.keys()}


def copy_template(database: Path) -> dict[Any, Any] | None:
    """Copy the Prefect home's template database (``start``) to ``database``, a new
    SQLite file for a server about to start, holding the home's start lock. Returns the
    Prefect settings that server should start with (block registration off, and the memo
    of it, ``_MEMO_SETTING_NAMES``; each unless the user set it), or None when no template
    is ready or the copy failed (the server then migrates ``database`` itself;
    ``save_template`` keeps it for the next start)."""
    home = _home()
    with _start_lock(home):
        return _copy_template(database, home)


def save_template(database: Path) -> bool:
    """Make ``database`` the Prefect home's template, holding the home's start lock: the
    database of a server that migrated it and registered block types and has answered,
    before any run wrote to it. Returns whether it was copied."""
    home = _home()
    with _start_lock(home):
        return _save_template(database, home)


def _home() -> Path:
    """``PREFECT_HOME`` as the environment gives it, else ``state_dir()/prefect``; made."""
    home = Path(os.environ.get("PREFECT_HOME", str(state_dir() / "prefect")))
    home.mkdir(parents=True, exist_ok=True)
    return home


@contextlib.contextmanager
def _start_lock(home: Path) -> Iterator[None]:
    """The home's start lock (an OS file lock, ``flock``): one server start, migration or
    template write at a time per Prefect home. Not re-entrant."""
    with open(home / ".junction-server-start.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _copy_template(database: Path, home: Path) -> dict[Any, Any] | None:
    from prefect.settings import (
        PREFECT_API_BLOCKS_REGISTER_ON_START,
        PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION,
    )

    template = _template_path(home / "ephemeral")
    if not (_template_ready(template) and _copy_database(template, database)):
        return None
    return {setting: False for setting, names in (
        (PREFECT_API_BLOCKS_REGISTER_ON_START, _BLOCKS_SETTING_NAMES),
        (PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION, _MEMO_SETTING_NAMES),
    ) if not names & os.environ.keys()}  # a setting the user set stands


def _save_template(database: Path, home: Path) -> bool:
    template = _template_path(home / "ephemeral")
    template.parent.mkdir(parents=True, exist_ok=True)
    if not _copy_database(database, template):
        return False
    for old in template.parent.glob("template-*.db"):
        if old != template:  # another Prefect's: never copied by this one
            old.unlink(missing_ok=True)
    return True


_BLOCKS_SETTING_NAMES = frozenset({"PREFECT_SERVER_REGISTER_BLOCKS_ON_START",
                                    "PREFECT_API_BLOCKS_REGISTER_ON_START"})
"""The environment names of Prefect's block-registration setting (Prefect 3's name and
its older alias); if either is set, the user's value stands."""

_MEMO_SETTING_NAMES = frozenset({"PREFECT_SERVER_MEMOIZE_BLOCK_AUTO_REGISTRATION",
                                 "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION"})
"""The environment names of Prefect's setting that memoizes block registration: before
registering, the server imports every Prefect collection (``prefect_dask``, and with it
Dask's ``distributed``) to hash the block registry together with the database URL, and
skips the registration when the hash matches the one its memo file holds. A server on a
copy of the template has a database URL of its own (``start``), so the hash never
matches, and registration is off there anyway: the copy turns the memo off too, unless
the user set it (``prefect.server.api.server._memoize_block_auto_registration``,
Prefect 3.9.1)."""

_TEMPLATE_TABLES = ("alembic_version", "block_type")
"""A template is used only if each of these tables has a row: Prefect's schema version
(written by its migrations) and its block types (written by block registration)."""


def _template_path(folder: Path) -> Path:
    """``folder/template-<key>.db``: key = the first 16 hex digits of the SHA-256 of the
    installed distributions named ``prefect*`` (Prefect and its collections, which
    decide the schema and the block types), as sorted ``name==version`` lines."""
    from importlib.metadata import distributions

    installed = sorted({f"{(d.metadata['Name'] or '').lower()}=={d.version}"
                        for d in distributions()
                        if (d.metadata["Name"] or "").lower().startswith("prefect")})
    key = hashlib.sha256("\n".join(installed).encode()).hexdigest()[:16]
    return folder / f"template-{key}.db"


def _template_ready(path: Path) -> bool:
    """True when ``path`` is an SQLite file whose ``_TEMPLATE_TABLES`` each hold a row."""
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(path)) as con:
            return all(con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] > 0
                       for table in _TEMPLATE_TABLES)
    except sqlite3.Error:
        return False


def _copy_database(source: Path, dest: Path) -> bool:
    """Copy the SQLite database ``source`` to ``dest`` by SQLite's online backup (a
    consistent copy while another process writes ``source``), through ``<pid>.*.tmp``
    beside ``dest`` and an atomic rename, so ``dest`` is never half-written (a temporary
    file left by a killed process is removed with its PID's files). The copy is in
    SQLite's rollback-journal mode, and ``dest``'s old ``-wal``/``-shm``/``-journal``
    files are removed first: a write-ahead log left beside the old file must not be
    replayed into the new one. Returns whether it copied: a copy that fails (a full disk,
    an unreadable file) leaves ``dest`` as it was, and the start goes on without the
    template (the server then migrates its own file, as on a new home)."""
    tmp = dest.with_name(f"{os.getpid()}.{dest.name}.tmp")
    try:
        with contextlib.closing(sqlite3.connect(source)) as src, \
                contextlib.closing(sqlite3.connect(tmp)) as out:
            src.backup(out)
            out.execute("PRAGMA journal_mode=DELETE")
        for suffix in ("-wal", "-shm", "-journal"):
            dest.with_name(dest.name + suffix).unlink(missing_ok=True)
        os.replace(tmp, dest)
        return True
    except (sqlite3.Error, OSError):
        return False
    finally:
        tmp.unlink(missing_ok=True)


def _in_thread_without_sigint(fn: Callable[[], None]) -> None:
    """Call ``fn`` in a thread whose signal mask blocks SIGINT (a child it forks inherits
    the mask), in the caller's context (Prefect's settings are a context variable); the
    calling thread keeps handling signals while it waits."""
    failure: list[BaseException] = []
    context = contextvars.copy_context()

    def body() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            fn()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=context.run, args=(body,), name="junction-server-start",
                              daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)  # short joins: a signal handler runs between them
    if failure:
        raise failure[0]


def api_url() -> str | None:
    """The temporary server's API URL while it runs (what a worker process sets as its
    ``PREFECT_API_URL`` to report to it), else None."""
    process = _server
    if process is None or process.poll() is not None:
        return None
    return _server_url


def in_thread_without_sigint(fn: Callable[[], T]) -> T:
    """``fn()`` called in a thread that blocks SIGINT, so every process it starts ignores
    the terminal's Ctrl-C (which the ``junction`` process handles for them); returns its
    result, raises its exception."""
    result: list[T] = []
    _in_thread_without_sigint(lambda: result.append(fn()))
    return result[0]


def server_pid() -> int | None:
    """The temporary server's PID, or None when this process runs none."""
    process = _server
    return None if process is None else process.pid


def watch(on_exit: Callable[[int, int], None] | None) -> None:
    """Call ``on_exit(pid, returncode)`` (from a daemon thread) if the temporary server
    exits while this process has not asked it to stop (``stop``); polled every 0.2 s.
    Takes effect for the server running now, or else the next one ``start`` starts;
    None stops watching."""
    global _on_exit
    _on_exit = on_exit
    _watch_running()


def _watch_running() -> None:
    process, on_exit = _server, _on_exit
    if process is None or on_exit is None or process.poll() is not None:
        return

    def loop() -> None:
        while not _stopping.wait(_WATCH_INTERVAL_S):
            code = process.poll()
            if code is not None:
                if not _stopping.is_set() and _on_exit is on_exit:
                    on_exit(process.pid, code)
                return

    threading.Thread(target=loop, name="junction-server-watch", daemon=True).start()


def stop(drain_s: float = 2.0) -> None:
    """Drain Prefect's events and API-log workers for at most ``drain_s`` seconds in all,
    then stop the temporary server (SIGTERM, SIGKILL after 5 s: Prefect's ``stop``).
    Never retries; safe to call when nothing runs or from any thread."""
    _stopping.set()
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    global _server, _server_url
    alive = (process := _server) is not None and process.poll() is None
    for worker in (EventsWorker, APILogWorker):
        if alive:  # a dead server answers nothing: drain nothing, stop at once
            worker.drain_all(timeout=drain_s / 2, at_exit=False)
        else:
            worker.drain_all(timeout=0, at_exit=True)
    if process is not None:
        _terminate(process)
        if _server is process:
            _server, _server_url = None, None
            _report_to(None)


def _process_database(folder: Path) -> Path:
    """``folder/<pid>.db`` for this process, after removing the files (and SQLite's
    ``-wal``/``-shm``/``-journal`` companions) of processes that no longer run."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        pid = path.name.split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            path.unlink(missing_ok=True)
    return folder / f"{os.getpid()}.db"


