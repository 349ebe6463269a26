"""Refusals of unsigned junk on the reply topic: bounded log lines, every one counted."""

from __future__ import annotations

import logging
import time


class JunkLimiter:
    """Refusals of unsigned junk: at most one log line per ``every`` seconds, the rest counted."""

    def __init__(self, log: logging.Logger, every: float = 60.0) -> None:
        self.log, self.every = log, every
        self.suppressed = 0
        self.total = 0
        self._last = float("-inf")

    def refused(self, reason: str, message_id: str) -> None:
        self.total += 1
        at = time.monotonic()
        if at - self._last < self.every:
            self.suppressed += 1
            return
        extra = f" ({self.suppressed} more since the last line)" if self.suppressed else ""
        self.log.warning("wake reply %s refused: %s%s", message_id, reason, extra)
        self._last, self.suppressed = at, 0
