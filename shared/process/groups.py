"""Start a process as the leader of a group of its own, and kill that group: the one place for both.

Three kinds of process are started this way: the supervisor's roles, the remote scanner's
one-shot scan children and the hooks' detached kicks and chained notifiers. Each gets a group of
its own so that a signal meant for the starter (a Ctrl-C in its terminal) does not reach it, and
so that it can be killed together with whatever it started.

POSIX: a new session (``setsid``), whose id is the leader's pid. How the group is killed is the
platform seam's ``process_groups`` mechanism: ``posix-session`` sends SIGKILL to the group;
``psutil-tree`` (Windows, which has no process groups to signal, and portable mode anywhere) kills
the leader's descendants. How a child relates to the starter's console on Windows is chosen per
kind in :data:`WINDOWS_CREATION_FLAGS`. A detached start (``detached_start``) is
``os.posix_spawnp`` with ``setsid`` (``posix-spawn``) or ``subprocess`` (``subprocess``).

Every donebell process started here runs :func:`own_python` (``python -P -m donebell...``) in
:data:`NEUTRAL_CWD`: a hook runs in the agent's working folder, and plain ``python -m`` would put
that folder first on ``sys.path``, so a ``brotli.py`` in the repository the agent works on would be
imported by httpx and run as donebell, outside the agent's sandbox. ``-P`` keeps the folder off
``sys.path``; the neutral folder also disarms relative ``PYTHONPATH`` entries. ``PYTHONPATH``
itself is kept: it is the user's explicit choice (``-I`` would also drop a ``pip --user`` install).

The hooks import this module (``spawn_detached``), so it imports only ``os`` and ``sys`` at the
top: ``subprocess``, ``signal`` and ``psutil`` would each cost the hook milliseconds of start-up.
"""

from __future__ import annotations

import os
import sys

from donebell.shared import platform

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import Any, Literal

    Kind = Literal["signalable", "windowless", "detached"]

# The Win32 process-creation flags, spelled here so the table below reads the same on every
# platform (``subprocess`` defines them only on Windows).
CREATE_NEW_PROCESS_GROUP = 0x00000200
DETACHED_PROCESS = 0x00000008
CREATE_NO_WINDOW = 0x08000000

#: Where every donebell child process starts: the root folder, never the caller's (the agent's) cwd.
NEUTRAL_CWD = os.path.abspath(os.sep)


def own_python(module: str, *args: str) -> list[str]:
    """The argv that runs ``module`` of THIS installation: no folder of the caller's on ``sys.path``."""
    return [sys.executable, "-P", "-m", module, *args]


#: How a child relates to the starter's console on Windows, per kind of child.
WINDOWS_CREATION_FLAGS: dict[str, int] = {
    # A role shares the supervisor's console, because CTRL_BREAK_EVENT (its polite stop) only
    # reaches processes attached to the sender's console; its own group keeps Ctrl-C away from it.
    "signalable": CREATE_NEW_PROCESS_GROUP,
    # A remote scan child is never signalled, only killed; a hidden console of its own keeps a
    # window from flashing up when the scanner runs as a service without one.
    "windowless": CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW,
    # A hook's kick or chained notifier outlives the hook and belongs to no console at all
    # (CREATE_NO_WINDOW would be ignored next to DETACHED_PROCESS, so it is not added).
    "detached": DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP,
}


def popen_options(kind: Kind, *, windows: bool | None = None) -> dict[str, Any]:
    """The ``subprocess.Popen`` keywords that start a ``kind`` child as its own group's leader."""
    on_windows = platform.on_windows() if windows is None else windows
    if on_windows:
        return {"creationflags": WINDOWS_CREATION_FLAGS[kind]}
    return {"start_new_session": True}


def start(
    argv: list[str],
    kind: Kind,
    *,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = NEUTRAL_CWD,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (no shell) as the leader of a new process group in ``cwd``; other fds are closed."""
    import subprocess

    return subprocess.Popen(
        argv, stdin=stdin, stdout=stdout, stderr=stderr, close_fds=True, env=env, cwd=cwd, **popen_options(kind)
    )


def spawn_detached(argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None) -> int:
    """Start ``argv`` (looked up on PATH if it has no slash) detached, never waited for; its pid.

    Its stdio is the null device on 0, 1 and 2: a hook's stdout is a pipe the agent reads until
    EOF, so a child that inherited it would hold the agent's turn open for its whole life. On
    POSIX ``os.posix_spawnp`` starts it (no ``subprocess`` import on the hook path). ``cwd`` None
    keeps the caller's folder (a chained notifier expects the agent's). Raises ``OSError`` if it
    cannot be started (missing program, permission).
    """
    if not argv:
        raise ValueError("empty argv")
    environment = dict(os.environ if env is None else env)
    if cwd is not None:
        with _InFolder(cwd) as moved:
            if moved:
                return _spawn_here(argv, environment, cwd)
        return _spawn_here(argv, environment, cwd, posix=False)
    return _spawn_here(argv, environment, None)


class _InFolder:
    """``with _InFolder(folder) as moved``: this process sits in ``folder`` for the block, then back.

    ``posix_spawnp`` has no working-folder action, so the spawn happens from inside the folder.
    ``moved`` is False (and nothing changed) when the current folder cannot be held open to
    return to; the caller then starts the child another way. A hook is single-threaded here.
    """

    def __init__(self, folder: str) -> None:
        self.folder, self.back = folder, -1

    def __enter__(self) -> bool:
        if not _posix_spawn():
            return False
        try:
            self.back = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return False
        try:
            os.chdir(self.folder)
        except OSError:
            os.close(self.back)
            self.back = -1
            return False
        return True

    def __exit__(self, *_exc: object) -> None:
        if self.back >= 0:
            try:
                os.fchdir(self.back)
            finally:
                os.close(self.back)


def _spawn_here(argv: list[str], environment: dict[str, str], cwd: str | None, *, posix: bool = True) -> int:
    """posix_spawnp from the current folder where it can be used, else ``subprocess`` in ``cwd``."""
    if posix and _posix_spawn():
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ]
        try:
            return os.posix_spawnp(argv[0], argv, environment, file_actions=actions, setsid=True)
        except NotImplementedError:  # no POSIX_SPAWN_SETSID on this platform
            pass
    import subprocess

    null = subprocess.DEVNULL
    return start(argv, "detached", stdin=null, stdout=null, stderr=null, env=environment, cwd=cwd).pid


def kill_group(leader: int) -> None:
    """SIGKILL every process in the group ``leader`` leads (Windows: every descendant of it).

    The leader itself is left to its ``Popen`` (:func:`kill_tree`), which knows whether it was
    reaped. Call this only while the leader is unreaped or its group still has members: a freed
    group id may be taken by an unrelated process.
    """
    if not group_signals():
        _kill_descendants(leader)
        return
    import signal

    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a child started by :func:`start` and everything in its group."""
    kill_group(proc.pid)
    try:
        proc.kill()
    except OSError:
        pass  # already gone


def group_signals() -> bool:
    """Whether a started child leads a POSIX process group that a signal reaches as a whole
    (``posix-session``); otherwise its descendants are found and killed one by one."""
    return platform.mechanism("process_groups") == "posix-session"


def _posix_spawn() -> bool:
    return platform.mechanism("detached_start") == "posix-spawn" and hasattr(os, "posix_spawnp")


def _kill_descendants(pid: int) -> None:
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return
    for child in children:
        try:
            child.kill()  # psutil checks the start time first: a reused pid is left alone
        except psutil.Error:
            pass
