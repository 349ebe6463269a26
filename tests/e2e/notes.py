"""What the e2e product's notifications look like: the origin and tags its config sets, the short
strict timings it runs with, and `Note` with the `done`/`failed`/`stopped` shapes a phone shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from donebell.shared.text.short_id import short_id

JSON = dict[str, Any]
ORIGIN = "e2e"
DONE_TAGS = ["white_check_mark"]
FAILED_TAGS = ["x"]
STOPPED_TAGS = ["stop_sign"]

#: Short timings that keep strict semantics: a 0.5 s quiet window (the product default is 2 s),
#: unknown evidence retried quickly but for long enough that a slow CI machine is not "unverifiable".
FAST_CONFIG: JSON = {
    "idle_detection_mode": "strict",
    "idle_grace_seconds": 0.5,
    "idle_probe_grace_seconds": 30.0,
    "unknown_retry_max_seconds": 1.0,
    "include_message": True,
    "origin": ORIGIN,
}


@dataclass(frozen=True, order=True)
class Note:
    """One expected (or received) notification: what a phone would show."""

    title: str
    message: str
    tags: tuple[str, ...] = tuple(DONE_TAGS)

    @classmethod
    def of(cls, msg: JSON) -> Note:
        return cls(str(msg.get("title", "")), str(msg.get("message", "")), tuple(msg.get("tags") or ()))


def done(title: str, final: str, ident: str) -> Note:
    """A finished task: `<final message> · e2e · #<short id>` with the default tag."""
    return Note(title, f"{final} · {ORIGIN} · #{short_id(ident)}", tuple(DONE_TAGS))


def failed(title: str, error: str, ident: str) -> Note:
    return Note(title, f"failed: {error} · {ORIGIN} · #{short_id(ident)}", tuple(FAILED_TAGS))


def stopped(title: str, ident: str) -> Note:
    return Note(title, f"stopped · {ORIGIN} · #{short_id(ident)}", tuple(STOPPED_TAGS))
