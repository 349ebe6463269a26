"""Start a role by forking the supervisor, whose preloaded modules the roles then share.

Each role is still a process of its own: its own session and process group, its own lock and
health file, restarted by the supervisor like before. What changes is how it starts. ``exec`` of
``python -m donebell.supervisor.cli worker <role>`` gives every role a fresh interpreter that
imports its own copy of the same modules (~12 MiB of interpreter and ~10-18 MiB of imports
each). A fork of the supervisor after :func:`preload` shares those pages copy-on-write: a role
only pays for the pages it writes (docs/benchmarks.md, "Memory of the service").

Only on Linux (the platform seam's ``role_start``: ``fork``, or ``exec`` elsewhere and in
portable mode): macOS system frameworks are not fork-safe without an exec, and Windows has no
fork. ``DONEBELL_ROLE_START=exec`` forces the exec path anywhere (a debugging knob and the
comparison in ``benchmarks/bench_footprint.py``).

The child never returns into the supervisor's loop: it resets the supervisor's signal handling,
closes every inherited descriptor but stdio (the supervisor's lock must not outlive it in a
role), drops the supervisor's ``atexit`` handlers, runs ``cli.main(["worker", role])``, runs its
own ``atexit`` handlers as an interpreter exit would, and leaves with ``os._exit``.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import signal
import sys
import traceback

from donebell.shared import platform
from donebell.shared.process import groups
from donebell.workers.role import ROLES

#: Modules a role imports during its passes rather than at import time, preloaded too so that
#: every role shares them: one a role imports itself is that role's own copy (ctypes, which every
#: role's waker loads, was ~1.7 MiB in each). ``tests/test_role_imports.py`` fails on a module a
#: role's ``--once`` pass imports that is not preloaded, but for the agents' gates (the delivery
#: role imports one on its agent's first candidate: an idle service stays ~0.6 MiB smaller).
#: Missing ones are skipped: a role imports what it needs anyway.
LAZY_IN_PASSES = (
    "donebell.supervisor.cli",
    "donebell.workers.gate.gate_pass",  # the delivery role's gate, on its first candidate
    "donebell.shared.statedir._batch",
    "donebell.shared.statedir._upkeep",
    "donebell.shared.httpx_without_cli",  # httpx itself, without its CLI (click, pygments)
    "httpx",
    "httpcore",  # httpx imports its transport on the first client
    "h11",
    "certifi",
    "encodings.idna",
    "sqlite3",
    "setproctitle",
    "orjson",
    "filelock",  # every role's lock (with asyncio, ~1.8 MiB: shared, not copied per role)
    # every role, as it starts (the CLI's dispatch, its config reading, its waker's inotify)
    "donebell.shared.text.scrubbed_output",
    "donebell.shared.state_dir_check",
    "donebell.shared.config.schema",
    "donebell.shared.config.rules",
    "ctypes",  # ~1.7 MiB in each role that imported it itself
    "ctypes.util",
    # the local scanner's and maintenance's agents (registry order), and what their scans load
    "donebell.workers.agents.codex.local_scan",
    "donebell.workers.agents.claude.local_scan",
    "donebell.workers.agents.claude.retention",
    "donebell.workers.agents.copilot.local_scan",
    "donebell.workers.agents.codex.writer_lock",
    "donebell.workers.agents.codex.db",
    "donebell.shared.platform.locked",
    "glob",
)

#: Signals the supervisor handles; a forked role starts with the default action for each.
_SUPERVISOR_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGCHLD", "SIGHUP") if hasattr(signal, name)
)


def fork_enabled() -> bool:
    """Whether roles start by fork (Linux, unless ``DONEBELL_ROLE_START=exec``)."""
    if os.environ.get("DONEBELL_ROLE_START", "").strip().lower() == "exec":
        return False
    return platform.mechanism("role_start") == "fork" and hasattr(os, "fork")


def preload(roles: list[str]) -> None:
    """Import what ``roles`` run, then freeze the heap so the roles' garbage collector never
    writes to (and so never un-shares) the supervisor's objects."""
    gc.disable()  # no collection while importing: it would leave freed holes in pages the roles share
    for name in (*(ROLES[r].split(":")[0] for r in roles if r in ROLES), *LAZY_IN_PASSES):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a role that cannot import reports it itself, in its own process
            continue
    if "delivery" in roles:  # its TLS context is built once here, then shared by the forked role
        try:
            from donebell.shared.ntfy.client import tls_context

            tls_context()
        except Exception:  # noqa: BLE001 - the role builds it itself (and reports a failure) when it starts
            pass
    gc.freeze()
    gc.enable()


class ForkedRole:
    """The ``subprocess.Popen`` subset :class:`.children.Child` uses, for a forked role."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.returncode = -1  # reaped elsewhere: the status is lost
                break
            except InterruptedError:
                continue
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_role(role: str) -> ForkedRole:
    """Fork a role process (its own session); raises ``OSError`` if the fork fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    # Blocked across the fork: a signal meant for the supervisor must not run its handlers in
    # the child before they are reset.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISOR_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        raise
    if pid == 0:
        _become_role(role, old_mask)  # never returns
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return ForkedRole(pid)


def _become_role(role: str, old_mask: object) -> None:
    code = 70
    try:
        os.setsid()
        atexit._clear()  # the supervisor's exit handlers are not the role's
        signal.set_wakeup_fd(-1)
        for signum in _SUPERVISOR_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        _stdin_from_null()
        os.chdir(groups.NEUTRAL_CWD)  # as an exec'd role: never the folder `donebell run` was started in
        os.closerange(3, _max_fd())
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # type: ignore[arg-type]
        gc.enable()
        from donebell.supervisor import cli

        code = cli.main(["worker", role])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:  # noqa: BLE001 - the child must never fall back into the supervisor's loop
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()  # what an interpreter exit runs (e.g. the gate's remote pool kills its workers)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _stdin_from_null() -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if null != 0:
        os.close(null)


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 4096
