"""One backoff for the whole outbox when the *server* is the problem (5xx, timeouts, 429).

Each record has its own ``next_attempt_at``, which is right for a record-specific failure but
wrong for an outage: with 50 records queued and a server answering 500, every record retried on
its own schedule and the role made ~300 POSTs a minute. A failure that says "the server cannot take
anything now" (a 5xx, a transport failure: DNS, connect, TLS, timeout, dropped reply; or a 429)
instead puts the whole outbox behind :class:`ServerBackoff`: until ``until`` no record is sent;
then exactly one record goes as the probe. A success clears the state and the sweep drains the
rest; another failure grows the wait (the same exponential schedule and cap as a record's,
``retry_policy.backoff_seconds``, counted in consecutive failures).

Two kinds, one mechanism:

* ``unavailable`` (5xx, transport): the probe is the oldest due record; it is rewritten with its
  attempt counted, so it moves behind the others and one poisoned record cannot hold the queue;
* ``rate-limited`` (429): wait at least :data:`RATE_LIMIT_FLOOR_SECONDS`, doubling with every
  further 429, within ``retry_max_seconds`` (a ``Retry-After`` is honoured within the same cap);
  the record that met the 429 goes first when the wait ends (``head_key``), so order is kept.

The state lives in ``health/server-backoff.json`` (volatile, like health: a restart that loses it
costs one probe) and is shown by the delivery role's health (``server_backoff``) and ``status``.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from typing import Any

from donebell.shared.backoff import doubling
from donebell.shared.ntfy.retry import Decision, backoff_seconds
from donebell.shared.statedir import HEALTH, InvalidRecord, StateDir, encode

FILE = "server-backoff.json"
RATE_LIMIT_FLOOR_SECONDS = 5.0


def is_server_wide(decision: Decision) -> bool:
    """A failure of the server or the path to it, not of the record."""
    if decision.verdict != "retry":
        return False
    return decision.status is None or decision.status >= 500 or decision.status == 429


@dataclass
class ServerBackoff:
    failures: int = 0  # consecutive server-wide failures
    until: float = 0.0  # no record is sent before this (epoch s)
    kind: str = ""  # "unavailable" | "rate-limited" | "" (clear)
    error: str = ""  # the last failure, secret-free (already scrubbed by the sender)
    since: float | None = None  # first failure of this episode
    head_key: str | None = None  # rate-limited: the record to send first when the wait ends

    @classmethod
    def load(cls, state: StateDir) -> ServerBackoff:
        try:
            data = state.read_bytes(state.path(HEALTH, FILE), limit=1 << 16)
            doc = json.loads(data.decode("utf-8")) if data else {}
        except (InvalidRecord, OSError, ValueError, RecursionError):  # a damaged file: no wait known
            doc = {}
        out = cls()
        if isinstance(doc, dict):
            num = (int, float)
            if isinstance(doc.get("failures"), int) and not isinstance(doc.get("failures"), bool):
                out.failures = max(0, doc["failures"])
            if isinstance(doc.get("until"), num) and not isinstance(doc.get("until"), bool):
                out.until = float(doc["until"])
            if doc.get("kind") in ("unavailable", "rate-limited"):
                out.kind = doc["kind"]
            if isinstance(doc.get("error"), str):
                out.error = doc["error"][:300]
            if isinstance(doc.get("since"), num) and not isinstance(doc.get("since"), bool):
                out.since = float(doc["since"])
            if isinstance(doc.get("head_key"), str):
                out.head_key = doc["head_key"]
        return out

    def save(self, state: StateDir) -> None:
        try:
            state.write_file(state.path(HEALTH, FILE), encode(asdict(self)), durable=False)
        except OSError:
            pass  # a full disk: the state is lost, which costs one probe

    def holds(self, at: float, cap: float) -> bool:
        """True while nothing may be sent; a wait beyond the cap (clock went back) is cut to it."""
        if self.until > at + cap + 1.0:
            self.until = at + cap
        return self.kind != "" and self.until > at

    def observe(self, key: str, decision: Decision, at: float, cap: float, rng: random.Random) -> bool:
        """Account one attempt's outcome; True if the whole outbox must now wait."""
        if decision.verdict == "sent" or not is_server_wide(decision):
            self.clear()
            return False
        self.failures += 1
        self.since = self.since or at
        self.error = decision.error
        delay = backoff_seconds(
            self.failures, cap, ntfy_code=decision.ntfy_code, retry_after=decision.retry_after, rng=rng
        )
        if decision.status == 429:
            self.kind, self.head_key = "rate-limited", key
            if decision.retry_after is None:
                delay = max(delay, min(cap, doubling(RATE_LIMIT_FLOOR_SECONDS, self.failures - 1)))
        else:
            self.kind, self.head_key = "unavailable", None
        self.until = at + delay
        return True

    def clear(self) -> None:
        self.failures, self.until, self.kind, self.error, self.since, self.head_key = 0, 0.0, "", "", None, None

    def health(self) -> dict[str, Any] | None:
        """The delivery role's ``server_backoff`` health field (None when clear)."""
        if not self.kind:
            return None
        return {
            "kind": self.kind,
            "until": self.until,
            "failures": self.failures,
            "since": self.since,
            "last_error": self.error,
            "text": self.text(),
        }

    def text(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.until))
        if self.kind == "rate-limited":
            return f"rate limited by the server until {when}; the outbox waits and keeps its order"
        return (
            f"server unavailable ({self.error[:80]}); the whole outbox is backing off until {when}, "
            f"one probe at a time ({self.failures} failure(s) in a row)"
        )
