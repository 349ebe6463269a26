"""When the gate looks at a waiting candidate again: the one probe schedule (docs/gate.md).

``unknown_retry_max_seconds`` has one meaning everywhere: the longest single wait the gate
schedules for a candidate, whatever it waits for; ``0`` means *no cap*. Unknown and invalid
evidence is re-probed after 0.5 s, 1 s, 2 s, ... (doubling per attempt), within that cap and never
past the end of the probe grace; a wait a check chose itself (a quiet window, a child's orphan
timeout, a goal's poll) is held within the same cap. Waiting is also cut short by a change of a
watched file, so the cap bounds only how long a missed wake-up can cost.
"""

from __future__ import annotations

import math
from typing import Any

from donebell.shared.backoff import doubling

#: The first re-probe of unknown evidence; each further attempt doubles it.
BASE_SECONDS = 0.5
#: No evidence settles faster than this: a shorter re-probe would only spin the delivery loop.
MIN_SECONDS = 0.05
#: The clock-jump horizon never falls below this, so short caps in tests do not trip it.
MIN_HORIZON_SECONDS = 5.0


def attempts_of(record: dict[str, Any]) -> int:
    """How many times the gate has evaluated this candidate before (the schedule's step)."""
    return int((record.get("probe") or {}).get("attempts") or 0)


def cap_of(max_seconds: float) -> float:
    """The longest single wait ``unknown_retry_max_seconds`` allows (``0``: unbounded)."""
    return max_seconds if max_seconds > 0 else math.inf


def unknown_delay(attempts: int, max_seconds: float, *, until: float = math.inf) -> float:
    """The wait after ``attempts`` probes of unknown evidence.

    0.5 s doubled per attempt, at most ``max_seconds`` (the setting; 0: no cap) and ``until``
    (seconds left of the probe grace, or of an orphan timeout), never under :data:`MIN_SECONDS`.
    """
    return max(MIN_SECONDS, min(doubling(BASE_SECONDS, attempts), cap_of(max_seconds), until))


def capped(seconds: float, max_seconds: float) -> float:
    """A wait a check chose itself, held within the same cap (never negative)."""
    return max(0.0, min(seconds, cap_of(max_seconds)))


def clock_jump_horizon(max_seconds: float, idle_grace_seconds: float) -> float:
    """A stored next probe further ahead than this can only mean the clock went back.

    Every scheduled wait is within the cap (or the quiet window, or a few seconds of a check's own
    poll), so twice the largest of them is beyond any legitimate wait; with no cap there is no
    such bound and a jump is left to the wait's own end.
    """
    if max_seconds <= 0:
        return math.inf
    return 2 * max(max_seconds, idle_grace_seconds, MIN_HORIZON_SECONDS)


def first_seen(record: dict[str, Any], now: float) -> float:
    """When the gate first saw this candidate (the start of its probe grace)."""
    probe = record.get("probe") or {}
    value = probe.get("first_seen_at")
    if isinstance(value, (int, float)):
        return float(value)
    created = record.get("created_at")
    return float(created) if isinstance(created, (int, float)) else now
