"""Role processes: spawn one, notice its exit, stop it, and kill it with all its children.

Each role runs as ``donebell worker <role>`` (on Linux a fork of the preloaded supervisor,
:mod:`.role_fork`; elsewhere ``python -m donebell.supervisor.cli worker <role>``) in a process group of its own
(:mod:`donebell.shared.process.groups`, kind "signalable": it shares the supervisor's console on
Windows, so CTRL_BREAK reaches it), so that a signal to the
supervisor's terminal does not reach the roles directly and the supervisor can kill a role's
whole group. On POSIX an exit is noticed with ``waitid(WNOWAIT)``: the dead leader stays a
zombie, which keeps its pid (= the group id) reserved, so the ``killpg`` that sweeps the group's
leftovers can never hit an unrelated process; only then is the leader reaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import Any, Protocol

from donebell.shared import platform
from donebell.shared.process import groups
from donebell.shared.process.liveness import process_create_time
from donebell.shared.statedir import now
from donebell.supervisor import role_fork

_IS_WINDOWS = platform.on_windows()


class RoleProcess(Protocol):
    """What :class:`Child` needs of a started role: a ``subprocess.Popen`` or a :class:`.role_fork.ForkedRole`."""

    pid: int

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...

    def send_signal(self, signum: int) -> None: ...

    def kill(self) -> None: ...


class Child:
    """One running role process."""

    def __init__(self, role: str, popen: RoleProcess) -> None:
        self.role = role
        self.popen = popen
        self.pid = popen.pid
        self.create_time = process_create_time(popen.pid)
        self.started_at = now()
        self.started_mono = time.monotonic()
        self.returncode: int | None = None
        self.grouped = groups.group_signals()  # how it was started: asked at every turn of the loop

    def uptime(self) -> float:
        return time.monotonic() - self.started_mono

    def exited(self) -> bool:
        """True once the process has ended; its group's leftovers are then killed and it is reaped."""
        if self.returncode is not None:
            return True
        if self.grouped and hasattr(os, "waitid"):
            try:
                ended = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
            except ChildProcessError:
                ended = True  # already reaped: wait() below reports what it can
            if not ended:
                return False
            self._kill_group()  # the zombie leader still reserves the group id
        elif self.popen.poll() is None:
            return False
        self.returncode = self.popen.wait()
        return True

    def terminate(self) -> None:
        """Ask the role to stop (SIGTERM; CTRL_BREAK on Windows), between two passes."""
        with contextlib.suppress(OSError):
            if _IS_WINDOWS:
                self.popen.send_signal(signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined,unused-ignore]
            else:
                self.popen.send_signal(signal.SIGTERM)

    def descendants(self) -> list[Any]:
        """The role's child processes, recursively (psutil objects; empty if it is gone)."""
        import psutil  # loaded only when stopping or killing: the idle supervisor stays small

        try:
            return list(psutil.Process(self.pid).children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return []

    def kill_tree(self, known: list[Any] | None = None) -> None:
        """SIGKILL the role, its process group and every descendant (``known`` + current ones)."""
        victims = list(known or []) + self.descendants()
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self.popen.kill()
        self._kill_group()
        for proc in victims:
            # psutil checks the start time before signalling: a reused pid is left alone.
            with contextlib.suppress(Exception):
                proc.kill()

    def _kill_group(self) -> None:
        if self.returncode is not None:
            return  # once reaped, the group id (or the pid whose descendants are found) may be someone else's
        groups.kill_group(self.pid)

    def identity(self) -> dict[str, Any]:
        return {"pid": self.pid, "create_time": self.create_time, "started_at": self.started_at}


def worker_command(role: str) -> list[str]:
    """The argv that runs one role (the same as ``donebell worker <role>``)."""
    return groups.own_python("donebell.supervisor.cli", "worker", role)


def spawn(role: str) -> Child:
    """Start a role process in its own process group; stdout/stderr are the supervisor's.

    On Linux it is a fork of the (preloaded) supervisor, elsewhere :func:`worker_command`.
    """
    if role_fork.fork_enabled():
        return Child(role, role_fork.fork_role(role))
    return Child(role, groups.start(worker_command(role), "signalable", stdin=subprocess.DEVNULL))


def stop_pid(pid: int, create_time: float | None, grace: float) -> bool:
    """Stop a process we did not spawn (an orphan of a previous supervisor): TERM, wait, KILL.

    The start time is checked first, so a reused pid is never signalled. True if it was ours.
    """
    import psutil

    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 1.0:
            return False
        victims = [proc, *proc.children(recursive=True)]
        proc.terminate()
        _, alive = psutil.wait_procs([proc], timeout=grace)
        for p in (*alive, *victims[1:]):
            with contextlib.suppress(psutil.Error):
                p.kill()
    except psutil.Error:
        return False
    return True
