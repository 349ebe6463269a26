"""Start a program detached from the hook: own session, stdio on the null device, never waited for.

The hook's stdout is a pipe the agent reads until EOF, so a child that inherited it would hold
the agent's turn open for its whole life: every detached child gets ``/dev/null`` on 0, 1 and 2.
An argv list is executed directly, never through a shell. On POSIX ``os.posix_spawn`` is used
(no ``subprocess`` import on the hook path); elsewhere ``subprocess.Popen`` with detached flags.
"""

from __future__ import annotations

import os
import sys


def spawn_detached(argv: list[str], *, env: dict[str, str] | None = None) -> int:
    """Start ``argv`` (looked up on PATH if it has no slash) detached; return its pid.

    Raises ``OSError`` if it cannot be started (missing program, permission); never waits.
    """
    if not argv:
        raise ValueError("empty argv")
    environment = dict(os.environ if env is None else env)
    if hasattr(os, "posix_spawnp"):
        try:
            return _posix_spawn(argv, environment)
        except NotImplementedError:  # no POSIX_SPAWN_SETSID on this platform
            pass
    return _popen(argv, environment)


def _posix_spawn(argv: list[str], env: dict[str, str]) -> int:
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    return os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsid=True)


def _popen(argv: list[str], env: dict[str, str]) -> int:
    import subprocess

    flags = 0
    if sys.platform == "win32":  # pragma: no cover - exercised only on Windows
        flags = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.CREATE_NO_WINDOW
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=sys.platform != "win32",
        creationflags=flags,
        env=env,
    )
    return proc.pid
