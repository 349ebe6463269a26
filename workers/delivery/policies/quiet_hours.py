"""Quiet hours: is a wall-clock instant inside the configured local-time window, and when does it end.

The window is two wall-clock times (``22:00-07:30``); it may cross midnight. It is evaluated in the
zone ``quiet_hours_tz`` (an IANA name) or the machine's own zone, with :mod:`zoneinfo`, so a DST
change moves the window's instants but never its wall-clock times: "07:30" is 07:30 on the
morning after a spring-forward night too. An end time that falls in a DST gap resolves to the
first instant after the gap; an ambiguous one (fall-back) to its first occurrence.
"""

from __future__ import annotations

import os
from datetime import date, datetime, time, timedelta, tzinfo

from donebell.shared.config.view import SettingsLike


def parse(window: str) -> tuple[time, time] | None:
    """``"22:00-07:30"`` -> (22:00, 07:30); None for an empty (off) setting."""
    text = window.strip()
    if not text:
        return None
    start, _, end = text.partition("-")
    return _clock(start), _clock(end)


def _clock(text: str) -> time:
    hour, _, minute = text.strip().partition(":")
    return time(int(hour), int(minute))


def zone(name: str) -> tzinfo:
    """The named IANA zone, else the machine's zone (``TZ``, then ``/etc/localtime``)."""
    from zoneinfo import ZoneInfo  # only with quiet hours set: ~0.7 MiB the service need not hold

    if name:
        return ZoneInfo(name)
    env = os.environ.get("TZ", "").lstrip(":")
    if env:
        try:
            return ZoneInfo(env)
        except (ValueError, OSError, LookupError):
            pass
    try:
        with open("/etc/localtime", "rb") as f:
            return ZoneInfo.from_file(f, key="localtime")
    except (OSError, ValueError):
        local = datetime.now().astimezone().tzinfo  # no zone database (Windows): today's offset
        assert local is not None
        return local


def window_end(at: float, settings: SettingsLike) -> float | None:
    """The end of the quiet window ``at`` lies in (epoch seconds), or None when outside / off."""
    window = parse(settings.quiet_hours)
    if window is None:
        return None
    start, end = window
    tz = zone(settings.quiet_hours_tz)
    local = datetime.fromtimestamp(at, tz)
    wall = local.time().replace(tzinfo=None)
    today = local.date()
    if start < end:
        inside = start <= wall < end
        end_day = today
    else:  # crosses midnight: inside after the start or before the end
        inside = wall >= start or wall < end
        end_day = today if wall < end else today + timedelta(days=1)
    if not inside:
        return None
    return _instant(end_day, end, tz, after=at)


def _instant(day: date, clock: time, tz: tzinfo, *, after: float) -> float:
    """The epoch time of ``clock`` on ``day`` in ``tz``, moved a day on if not after ``after``."""
    for extra in range(3):
        stamp = _wall_to_epoch(datetime.combine(day + timedelta(days=extra), clock), tz)
        if stamp > after:
            return stamp
    return after + 60.0  # unreachable for a valid window; never an instant in the past


def _wall_to_epoch(wall: datetime, tz: tzinfo) -> float:
    """The first instant whose wall-clock time in ``tz`` is ``wall`` or, in a DST gap, later.

    zoneinfo reads a wall time that does not exist (02:30 on a spring-forward night) with the
    offset before the jump, which lands an hour after the gap (03:30); the promise is the first
    instant after the gap (03:00), found between the two readings of ``fold``.
    """
    early = wall.replace(tzinfo=tz, fold=1).timestamp()
    late = wall.replace(tzinfo=tz, fold=0).timestamp()
    if early >= late:  # an existing time (fold=0 is its first occurrence) or an ambiguous one
        return late
    lo, hi = int(early), int(late)  # wall time crosses ``wall`` once in between: the gap's end
    while lo < hi:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, tz).replace(tzinfo=None) >= wall:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


def crosses_midnight(settings: SettingsLike) -> bool:
    window = parse(settings.quiet_hours)
    return window is not None and window[0] > window[1]
