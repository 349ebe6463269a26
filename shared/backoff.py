"""The one doubling formula behind every retry schedule in the program.

The gate's probe schedule (:mod:`donebell.workers.kit.probe_schedule`), the delivery retry table
(:mod:`donebell.shared.ntfy.retry`), the outbox's server-wide hold
(:mod:`donebell.workers.delivery.server_backoff`), a remote root's error backoff
(:mod:`donebell.workers.gate.remote_pool`), the wake subscription's reconnects and the
supervisor's restart backoff start from different bases and caps, but grow the same way; they
share this arithmetic so that none of them can drift into a subtly different curve.
"""

from __future__ import annotations

#: Beyond 2**30 steps every base used here is decades long; the bound keeps the float finite.
MAX_DOUBLINGS = 30


def doubling(base: float, step: int) -> float:
    """``base`` doubled ``step`` times (``step`` 0 is ``base`` itself; a negative step counts as 0)."""
    return float(base * 2.0 ** min(max(step, 0), MAX_DOUBLINGS))
