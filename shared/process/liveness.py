"""Is a recorded process still the same process? (pid + start time, as PIDs get reused.)

A lock or health file records ``pid`` and ``create_time`` (seconds since the epoch, as psutil
reports it). A pid that exists with another start time is a different, newer process: the
recorded owner is dead.

How a start time is read is the platform seam's ``process_identity`` choice
(``shared/platform/__init__.py``), implemented here side by side:

* ``procfs`` (Linux): ``/proc/<pid>/stat`` field 22 (start in clock ticks since boot) plus the
  boot time from ``/proc/stat``; standard library only, so the hook can use it.
* ``psutil`` (macOS, Windows, and anywhere in portable mode): ``psutil.Process(pid).create_time()``,
  imported on first use (it costs the hook milliseconds, so only the kick pays it there).

Both give epoch seconds; records written by one and read by the other agree within a second
(:data:`_TOLERANCE_S`). Standard library only at import time: the hook path imports this module.
"""

from __future__ import annotations

import os
import time

from donebell.shared import platform

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_TOLERANCE_S = 1.0
_boot_time: list[float] = []


def process_create_time(pid: int) -> float | None:
    """Start time of ``pid`` in epoch seconds, or None if no such process."""
    if platform.mechanism("process_identity") == "procfs":
        return _procfs_create_time(pid)
    return _psutil_create_time(pid)


def own_start_time() -> float | None:
    """When this process started, in epoch seconds to a clock tick (10 ms), or None where the
    ``psutil`` mechanism would have to say it (as precise, but its import costs the hook).

    Unlike :func:`process_create_time` (whose boot time has whole seconds), this measures the
    process's age on the boot clock the kernel stamps ``starttime`` with, so it is as precise as
    the tick: a hook learns when the agent ran it, not when its imports were done (~15 ms later).
    """
    if platform.mechanism("process_identity") != "procfs" or not hasattr(time, "CLOCK_BOOTTIME"):
        return None
    ticks = start_ticks(os.getpid())
    if ticks is None:
        return None
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(ticks) / os.sysconf("SC_CLK_TCK")
    return time.time() - age if 0.0 <= age < 60.0 else None


def start_ticks(pid: int) -> str | None:
    """``pid``'s start in clock ticks since boot, as ``/proc/<pid>/stat`` writes it (what Claude
    Code records as ``procStart``); None where there is no procfs or no such process."""
    if platform.mechanism("process_identity") != "procfs":
        return None
    fields = _procfs_stat(pid)
    return fields[19].decode() if fields is not None and len(fields) > 19 else None


def pid_runs(pid: int) -> bool:
    """Whether a process with this pid exists (any user's). Never a signal on Windows, where
    ``os.kill`` would terminate the process."""
    if platform.mechanism("process_identity") == "procfs":
        return os.path.exists(f"/proc/{pid}")
    import psutil

    return bool(psutil.pid_exists(pid))


def command_line(pid: int) -> list[str] | None:
    """``pid``'s arguments (``/proc/<pid>/cmdline``, else psutil's), or None when unknown."""
    if platform.mechanism("process_identity") == "procfs":
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                raw = f.read(65536)
        except OSError:
            return None
        return [arg.decode("utf-8", "replace") for arg in raw.split(b"\0") if arg]
    import psutil

    try:
        return [str(arg) for arg in psutil.Process(pid).cmdline()]
    except (psutil.Error, OSError):
        return None


def current_process_identity() -> dict[str, Any]:
    """``{"pid", "create_time"}`` of this process, for owner and health records."""
    pid = os.getpid()
    return {"pid": pid, "create_time": process_create_time(pid)}


def is_alive(pid: object, create_time: object) -> bool:
    """True only if ``pid`` runs and started when the record says (pid reuse is death)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    actual = process_create_time(pid)
    if actual is None:
        return False
    if not isinstance(create_time, (int, float)):
        return True  # no start time recorded: the pid alone is the best evidence we have
    return abs(actual - float(create_time)) <= _TOLERANCE_S


def owner_alive(owner: dict[str, Any] | None) -> bool:
    """True if a lock owner / health record names a process that is still that process."""
    return bool(owner) and is_alive(owner.get("pid"), owner.get("create_time"))  # type: ignore[union-attr]


def _procfs_stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces and
    parentheses: split after the last ``)``); None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _procfs_create_time(pid: int) -> float | None:
    fields = _procfs_stat(pid)
    if fields is None or len(fields) <= 19:
        return None
    return _procfs_boot_time() + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _procfs_boot_time() -> float:
    if not _boot_time:
        found = 0.0
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    found = float(line.split()[1])
                    break
        _boot_time.append(found)
    return _boot_time[0]


def _psutil_create_time(pid: int) -> float | None:
    try:
        import psutil

        return float(psutil.Process(pid).create_time())
    except Exception:  # noqa: BLE001 - NoSuchProcess, AccessDenied, ZombieProcess alike
        return None
