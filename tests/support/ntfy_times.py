"""ntfy's time values as pure functions: durations, the publish delay (`X-Delay`) and poll's `since`.

Split from `ntfy_rules` (server/server.go, util/time.go, v2.13); see docs/agent-facts.md, "ntfy".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .ntfy_errors import err
from .ntfy_go import INTEGER, go_trim, is_random_id, parse_go_duration

DELAY_MIN_SECONDS, DELAY_MAX_SECONDS = 10, 3 * 24 * 3600

_NTFY_DURATION = re.compile(r"(?i)^([0-9]+)\s*(d|days?|h|hours?|m|mins?|minutes?|s|secs?|seconds?)$")


def parse_ntfy_duration(s: str) -> float | None:
    """`util.ParseDuration`: a Go duration, or `2d`, `30min`, `1 hour`."""
    d = parse_go_duration(s)
    if d is not None:
        return d
    m = _NTFY_DURATION.match(s)
    # ntfy switches on the unit's first byte as typed: the (?i) regex admits "2D", the switch not.
    unit = {"d": 86400, "h": 3600, "m": 60, "s": 1}.get(m[2][0]) if m else None
    return None if m is None or unit is None else int(m[1]) * unit


def parse_delay(value: str, now: float) -> int:
    """`util.ParseFutureTime` plus the 10 s / 3 day bounds. Natural language ("10am") is not
    emulated and gets 40004."""
    s = go_trim(value)
    when: float | None = None
    if INTEGER.match(s) and int(s) >= int(now):
        when = int(s)
    elif (d := parse_ntfy_duration(s)) is not None:
        when = now + d
    if when is None:
        raise err(40004)
    if int(when) < int(now) + DELAY_MIN_SECONDS:
        raise err(40005)
    if int(when) > int(now) + DELAY_MAX_SECONDS:
        raise err(40006)
    return int(when)


@dataclass(frozen=True)
class Since:
    kind: str  # "all", "none", "latest", "id" or "time"
    value: str | int = ""


def parse_since(value: str, poll: bool, now: float) -> Since:
    """`parseSince`: empty (all with poll, else none), all, none, latest, a message ID, a Unix
    time or a Go duration; anything else is 40008."""
    if value == "":
        return Since("all" if poll else "none")
    if value in ("all", "latest", "none"):
        return Since(value)
    if is_random_id(value):
        return Since("id", value)  # even an all-digit 12-char value counts as an ID, as in ntfy
    if INTEGER.match(value):
        return Since("time", int(value))
    if (d := parse_go_duration(value)) is not None:
        return Since("time", math.floor(now - d))
    raise err(40008)
