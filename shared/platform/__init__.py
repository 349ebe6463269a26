"""The platform seam: the only code that asks which operating system donebell runs on.

Every capability that differs by platform has its implementations side by side in one small
module: Linux, macOS, Windows, and a portable one that uses only what every platform has (stat
polling, psutil, non-blocking probes). Most of those modules are here; a capability that is the
whole job of a module elsewhere lives in that module, so the hook path loads one module for it,
not two: process identity in ``shared/process/liveness.py``, process groups and detached starts
in ``shared/process/groups.py``, parent death in ``shared/process/orphans.py``, where files live
in ``shared/paths.py``, the hook's payload decoding in ``workers/kit/hook_context.py``, the
approval wait in ``workers/kit/approval_lean.py``, the role start in ``supervisor/role_fork.py``.
This package alone chooses, per capability, which implementation runs (:func:`mechanism`);
nothing outside it reads ``sys.platform`` or ``os.name`` (``tests/test_platform_seam.py`` parses
every code folder and fails on one).

``DONEBELL_FORCE_PORTABLE=1`` makes every switchable capability use its portable implementation
on any platform, so the paths macOS and Windows take are exercised on Linux (the CI runs the
end-to-end suite again that way). ``donebell doctor`` shows what runs (:func:`mechanisms`).

Two capabilities are conventions of the host, not mechanisms, and have no portable
implementation: where files live (``shared/paths.py``) and which service manager starts the
supervisor (:mod:`.service`). Forcing portable mode keeps them, so a forced run still finds the
same configuration and state as a native one.

Standard library ``os`` and ``sys`` only, chosen lazily: the hook path imports this package.
"""

from __future__ import annotations

import os
import sys

#: The variable that forces every switchable capability onto its portable implementation.
FORCE_PORTABLE_ENV = "DONEBELL_FORCE_PORTABLE"

#: Per capability: the implementation each host uses natively, and the portable one (None: the
#: capability is a convention of the host and portable mode keeps the native one).
_CHOICES: dict[str, tuple[dict[str, str], str | None]] = {
    "file_watch": ({"linux": "inotify"}, "poll"),
    "process_identity": ({"linux": "procfs"}, "psutil"),
    "process_groups": ({"linux": "posix-session", "macos": "posix-session"}, "psutil-tree"),
    "role_start": ({"linux": "fork"}, "exec"),
    "detached_start": ({"linux": "posix-spawn", "macos": "posix-spawn"}, "subprocess"),
    "parent_death": ({"linux": "prctl"}, "ppid-check"),
    "file_locked": ({"linux": "proc-locks"}, "lock-probe"),
    "atomic_replace": ({"linux": "rename", "macos": "rename"}, "rename-retry"),
    "hook_stdin": ({"linux": "utf-8", "macos": "utf-8"}, "utf-8-or-utf-16"),
    "approval_wait": ({"linux": "dnotify-sleep"}, "poll"),
    "file_lock": ({"linux": "flock", "macos": "flock", "windows": "msvcrt"}, None),
    "locations": ({"linux": "xdg", "macos": "library", "windows": "appdata", "other": "xdg"}, None),
    "service_manager": ({"linux": "systemd", "macos": "launchd", "windows": "task-scheduler", "other": "none"}, None),
}
#: Every capability of the seam, in the order doctor shows them.
CAPABILITIES: tuple[str, ...] = tuple(_CHOICES)


def host() -> str:
    """The operating system: ``linux``, ``macos``, ``windows`` or ``other`` (never forced)."""
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    if sys.platform == "win32":
        return "windows"
    return "other"


def on_windows() -> bool:
    """Windows conventions (no POSIX modes or signals, ``.exe`` programs, cmd quoting)."""
    return host() == "windows"


def portable_forced() -> bool:
    """Whether ``DONEBELL_FORCE_PORTABLE`` asks for the portable implementations."""
    return os.environ.get(FORCE_PORTABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def mechanism(capability: str) -> str:
    """The implementation ``capability`` uses in this process (``KeyError`` for an unknown one)."""
    native, portable = _CHOICES[capability]
    if portable is not None and portable_forced():
        return portable
    return native.get(host(), portable if portable is not None else native["linux"])


def native_mechanism(capability: str, on: str) -> str:
    """The implementation ``capability`` uses natively on host ``on`` (for the docs' table)."""
    native, portable = _CHOICES[capability]
    return native.get(on, portable if portable is not None else native["linux"])


def mechanisms() -> dict[str, str]:
    """Every capability and the implementation it uses here (``donebell doctor``)."""
    return {capability: mechanism(capability) for capability in CAPABILITIES}


def describe() -> str:
    """The OS, its release and the machine, e.g. ``Linux 6.1.0-18-amd64 x86_64`` (for reports)."""
    import platform as stdlib_platform  # absolute: the standard library's, imported only here

    return f"{stdlib_platform.system()} {stdlib_platform.release()} {stdlib_platform.machine()}"


def under_wsl() -> bool:
    """Linux inside Windows (WSL): its kernel release names Microsoft."""
    import platform as stdlib_platform

    return host() == "linux" and "microsoft" in stdlib_platform.release().lower()
