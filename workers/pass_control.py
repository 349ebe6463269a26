"""What a long pass consults while it works: its time budget, the stop request, the heartbeat.

A role's pass used to run to its end before the role looked at anything else: a gate pass over a
10,000-candidate backlog ran for minutes, its heartbeat aged past the supervisor's hang limit
(600 s: killed and restarted, starting over), and SIGTERM waited for it. :func:`run_role` installs
the role's stop flag and heartbeat here; a pass calls :func:`begin` with its budget, and its loops
call :func:`should_stop` (budget spent or SIGTERM; also beats the heartbeat at most once a second)
between units of work, leaving the rest for the next pass. Without ``run_role`` (tests calling a
role directly) nothing stops a pass early and nothing is beaten.

A pass's start is announced late (:func:`pass_starts`, issue 38): the role's health file says
``scanning`` at the pass's first heartbeat (:func:`heartbeat`, which a pass that lasts calls
between its units of work), not before it runs. An idle heartbeat pass (a millisecond) then writes
its health file once, at its end, instead of twice; a long pass shows ``scanning`` and keeps its
heartbeat fresh as before. No timer or signal is involved: the announcement is made by the pass's
own code, between two units of its work, never in the middle of one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

BEAT_EVERY_SECONDS = 1.0

_stopping: Callable[[], bool] = lambda: False  # noqa: E731 - replaced by install()
_beat: Callable[[], None] = lambda: None  # noqa: E731
_deadline: float | None = None
_last_beat = 0.0
_announce: Callable[[], None] | None = None  # the running pass's announcement, not made yet


def install(stopping: Callable[[], bool], beat: Callable[[], None]) -> None:
    """Called once by ``run_role``: how to know SIGTERM arrived, and how to beat the heartbeat."""
    global _stopping, _beat
    _stopping, _beat = stopping, beat


def pass_starts(announce: Callable[[], None]) -> None:
    """A pass starts: ``announce`` it (the health file's ``scanning``) at its first heartbeat.
    :func:`pass_ends` must follow, whatever the pass's outcome."""
    global _announce
    _announce = announce


def pass_ends() -> None:
    """The pass is over: an announcement not made yet never will be (its health is written next)."""
    global _announce
    _announce = None


def _take_announcement() -> Callable[[], None] | None:
    global _announce
    announce, _announce = _announce, None
    return announce


def begin(budget_seconds: float | None) -> None:
    """A pass starts; it should yield after ``budget_seconds`` (None: no budget, e.g. ``--once``)."""
    global _deadline
    _deadline = None if budget_seconds is None else time.monotonic() + budget_seconds


def budgeted() -> bool:
    """True when the current pass has a budget (a continuous role; ``--once`` makes one full pass)."""
    return _deadline is not None


def stop_requested() -> bool:
    return _stopping()


def heartbeat() -> None:
    """Beat the role's heartbeat if the last beat is a second old (cheap to call often)."""
    global _last_beat
    at = time.monotonic()
    if at - _last_beat >= BEAT_EVERY_SECONDS:
        _last_beat = at
        (_take_announcement() or _beat)()  # an announcement is a beat too


def should_stop() -> bool:
    """True when the pass should leave the rest for the next one; beats the heartbeat meanwhile."""
    heartbeat()
    return _stopping() or (_deadline is not None and time.monotonic() > _deadline)
