"""An overall deadline for one delivery attempt (connect, send, headers and body together).

httpx's timeouts bound each network operation, not the exchange: a server that sends its headers
and then one byte a second resets the read timeout with every byte and holds the delivery role
for as long as it likes (minutes, or for ever). :class:`AttemptDeadline` bounds the whole attempt.
It remembers the client's current socket (httpx's trace hook reports every new connection; the
client keeps one) and a watchdog thread shuts that socket down when an armed attempt passes its
deadline; the blocked read then fails at once, and the attempt ends as a counted, retryable
``timeout``. Shutting the socket down (not closing it) is what wakes a thread blocked in ``recv``.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class AttemptDeadline:
    """One watchdog per client; at most one attempt is armed at a time (the role is serial)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._deadline: float | None = None
        self._fired = False
        self._thread: threading.Thread | None = None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx ``trace`` extension: note the socket of every new connection."""
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with self._cond:
                    self._sock = sock

    @contextmanager
    def armed(self, seconds: float) -> Iterator[AttemptDeadline]:
        """Within the block, the attempt's socket is shut down ``seconds`` from now."""
        with self._cond:
            self._fired = False
            self._deadline = time.monotonic() + seconds
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="donebell-attempt-deadline", daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield self
        finally:
            with self._cond:
                self._deadline = None

    @property
    def fired(self) -> bool:
        """True if the last armed attempt was cut off by its deadline."""
        return self._fired

    def _watch(self) -> None:
        with self._cond:
            while True:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._deadline = None
                self._fired = True
                if self._sock is not None:
                    try:
                        self._sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass  # already closed: the attempt is ending anyway
