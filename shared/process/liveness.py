"""Is a recorded process still the same process? (pid + start time, as PIDs get reused.)

A lock or health file records ``pid`` and ``create_time`` (seconds since the epoch, as psutil
reports it). A pid that exists with another start time is a different, newer process: the
recorded owner is dead. Standard library only on Linux (``/proc``); psutil elsewhere.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

_TOLERANCE_S = 1.0
_boot_time: float | None = None


def _linux_boot_time() -> float:
    global _boot_time
    if _boot_time is None:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    _boot_time = float(line.split()[1])
                    break
            else:
                _boot_time = 0.0
    return _boot_time


def process_create_time(pid: int) -> float | None:
    """Start time of ``pid`` in epoch seconds, or None if no such process."""
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                raw = f.read()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return None
        # The command name may contain spaces and parentheses: split after the last ')'.
        fields = raw[raw.rfind(b")") + 2 :].split()
        ticks = int(fields[19])
        return _linux_boot_time() + ticks / os.sysconf("SC_CLK_TCK")
    try:
        import psutil  # type: ignore[import-untyped,unused-ignore]  # no stubs installed

        return float(psutil.Process(pid).create_time())
    except Exception:  # noqa: BLE001 - NoSuchProcess, AccessDenied, ZombieProcess alike
        return None


def own_start_time() -> float | None:
    """When this process started, in epoch seconds to a clock tick (10 ms), or None off Linux.

    Unlike :func:`process_create_time` (whose boot time has whole seconds), this measures the
    process's age on the boot clock the kernel stamps ``starttime`` with, so it is as precise as
    the tick: a hook learns when the agent ran it, not when its imports were done (~15 ms later).
    """
    if not sys.platform.startswith("linux") or not hasattr(time, "CLOCK_BOOTTIME"):
        return None
    try:
        with open("/proc/self/stat", "rb") as f:
            raw = f.read()
        ticks = int(raw[raw.rfind(b")") + 2 :].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - age if 0.0 <= age < 60.0 else None


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
