"""The ntfy server's clock: a tap's age is judged on the time the server stamped it, never on this
machine's clock (docs/wake.md, "Several machines": tap freshness)."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime
from typing import Any

#: The key under which a subscriber notes the server's "now" on each message it reads.
SERVER_NOW = "donebell_server_now"


class ServerClock:
    """The ntfy server's "now", from the newest server-stamped event and the monotonic time since."""

    def __init__(self) -> None:
        self._server: float | None = None
        self._at = 0.0

    def heard(self, server_time: object) -> None:
        if not isinstance(server_time, (int, float)) or isinstance(server_time, bool):
            return
        known = self.now()
        if known is None or server_time >= known:
            self._server, self._at = float(server_time), time.monotonic()

    def heard_date_header(self, value: str | None) -> None:
        try:
            self.heard(parsedate_to_datetime(value).timestamp() if value else None)
        except (TypeError, ValueError, IndexError):
            pass

    def now(self) -> float | None:
        return None if self._server is None else self._server + (time.monotonic() - self._at)

    def offset(self) -> float | None:
        """This machine's clock minus the server's (positive: this machine is ahead)."""
        server = self.now()
        return None if server is None else time.time() - server


def tap_age(message: dict[str, Any]) -> float | None:
    """Seconds between the tap (the server's stamp) and its reading (the server's clock), or None."""
    stamped, read_at = message.get("time"), message.get(SERVER_NOW)
    if not isinstance(stamped, (int, float)) or not isinstance(read_at, (int, float)):
        return None
    return max(0.0, float(read_at) - float(stamped))
