"""systemd's notify protocol over a raw AF_UNIX datagram socket (no dependency).

``Type=notify`` units get ``$NOTIFY_SOCKET``: a filesystem path, or an abstract socket name
written with a leading ``@``. ``WatchdogSec=`` adds ``$WATCHDOG_USEC`` (and ``$WATCHDOG_PID``, the
pid the watchdog is meant for); the service must send ``WATCHDOG=1`` more often than that, and
systemd's own advice is every half interval. Without ``$NOTIFY_SOCKET`` every call is a no-op,
so the same code runs under launchd, Task Scheduler and a terminal.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping


class Notifier:
    """Sends ``READY=1``, ``WATCHDOG=1``, ``STOPPING=1``, ``STATUS=...`` to systemd if it listens."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env: Mapping[str, str] = os.environ if environ is None else environ
        raw = env.get("NOTIFY_SOCKET", "")
        # An abstract socket's name starts with a NUL byte; systemd writes it as '@'.
        self.address: str | None = ("\0" + raw[1:] if raw.startswith("@") else raw) or None
        self.watchdog_interval = _watchdog_interval(env)

    @property
    def enabled(self) -> bool:
        return self.address is not None and hasattr(socket, "AF_UNIX")

    def send(self, *assignments: str) -> bool:
        """Send one datagram of ``KEY=value`` lines; False if there is no socket or it failed."""
        address = self.address
        if address is None or not hasattr(socket, "AF_UNIX"):
            return False
        message = "\n".join(assignments).encode("utf-8")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(message, address)
        except OSError:
            return False  # systemd going away must never hurt the supervisor
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *((f"STATUS={status}",) if status else ()))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``$WATCHDOG_USEC``), or None if not asked."""
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None  # the watchdog belongs to another process (e.g. a wrapper that exec'd us)
    return usec / 2_000_000
