"""How donebell recognizes its own entries in an agent's config files, and the command it writes.

A managed entry is a command handler (or a notify program's argv) whose program is an executable
named ``donebell`` (``donebell.exe``) and whose arguments are exactly one of the hook subcommands
(``hook <agent>[-<event>]``): a shell string ``"<abs donebell> hook <agent>-<event>"``, an argv
list, or the exec form that runs it through ``/bin/sh`` with TERM and HUP ignored. What each agent
writes where is the agent's (``workers/agents/<name>/managed.py`` or ``install.py``).

Recognition ignores the directory, so an entry written by an older install (another venv, a moved
checkout) is still found, replaced by ``install`` and removed by ``uninstall``; anything with extra
arguments or another program name is the user's and is never touched.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from donebell.shared import platform

PROGRAM_NAMES = ("donebell", "donebell.exe")


#: Seconds the agent waits for a hook; donebell's hooks return in tens of milliseconds.
HOOK_TIMEOUT = 30
#: The PermissionRequest hooks may wait for the phone (``approval_wait_seconds``, at most
#: ``APPROVAL_WAIT_MAX``): their timeout is longer than any allowed wait, so a hook is never killed
#: before the answer, and changing the wait needs no reinstall (nor Codex's re-trust).
PERMISSION_HOOK_TIMEOUT = 600  # tests/test_approvals.py: longer than APPROVAL_WAIT_MAX


class ExecutableNotFound(Exception):
    """No installed ``donebell`` console script was found next to Python or on PATH."""


def donebell_executable() -> str:
    """Absolute path of the ``donebell`` console script of THIS installation.

    The one beside the running interpreter comes first (a venv's ``bin``/``Scripts``), so a
    different ``donebell`` earlier on PATH (pipx, another venv) is not wired by mistake.
    """
    here = Path(sys.executable).parent
    names = ("donebell.exe", "donebell") if platform.on_windows() else ("donebell",)
    for folder in (here, here / "Scripts", here / "bin"):
        for name in names:
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return os.path.abspath(candidate)
    found = shutil.which("donebell")
    if found:
        return os.path.abspath(found)
    raise ExecutableNotFound(
        f"cannot find the donebell command next to {sys.executable} or on PATH; install the package first"
    )


def is_donebell_program(program: object) -> bool:
    """True if ``program`` names an executable called donebell (any directory, either OS)."""
    if not isinstance(program, str) or not program:
        return False
    names = {posixpath.basename(program).lower(), ntpath.basename(program).lower()}
    return bool(names & set(PROGRAM_NAMES))


def shell_command(executable: str, *args: str) -> str:
    """A command line for a hook that runs through a shell, quoted for this OS."""
    if platform.on_windows():
        return subprocess.list2cmdline([executable, *args])
    return shlex.join([executable, *args])


def split_command(command: object) -> list[str] | None:
    """A shell command string split into words, or None if it does not split cleanly."""
    if not isinstance(command, str):
        return None
    windows_style = "\\" in command or platform.on_windows()
    try:
        words = shlex.split(command, posix=not windows_style)
    except ValueError:
        return None
    if windows_style:
        words = [w[1:-1] if len(w) >= 2 and w[0] == w[-1] and w[0] in "\"'" else w for w in words]
    return words


def is_managed_argv(argv: object, args: tuple[str, ...]) -> bool:
    """``argv`` is ``[<…/donebell>, *args]`` exactly."""
    return (
        isinstance(argv, list)
        and len(argv) == 1 + len(args)
        and all(isinstance(a, str) for a in argv)
        and is_donebell_program(argv[0])
        and tuple(argv[1:]) == args
    )


#: The exec-form Claude hook starts through ``/bin/sh`` with SIGTERM and SIGHUP ignored, so the
#: signal Claude 2.1.332 sends ~25 ms after starting a print-mode StopFailure hook cannot land
#: during Python's start-up; the ignored disposition survives ``exec`` (docs/hooks.md, "Signals").
SIGNAL_SHIELD_SHELL = "/bin/sh"
SIGNAL_SHIELD_SCRIPT = 'trap \'\' TERM HUP; exec "$0" "$@"'


def handler_argv(handler: Any) -> list[Any] | None:
    """The program and arguments a command handler runs, with the signal-shield shell unwrapped."""
    if not isinstance(handler, dict):
        return None
    command = handler.get("command")
    if "args" not in handler:
        return split_command(command)
    extra = handler["args"]
    if not isinstance(extra, list):
        return None
    if command == SIGNAL_SHIELD_SHELL and extra[:2] == ["-c", SIGNAL_SHIELD_SCRIPT]:
        return extra[2:]
    return [command, *extra]


def is_managed_handler(handler: Any, args: tuple[str, ...]) -> bool:
    """A hook handler object that runs ``donebell <args>`` (shell or exec form)."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    return is_managed_argv(handler_argv(handler), args)
