"""Why a ready notification waits although delivery works: the send-time policies' holds.

A record the gate promoted sits in ``outbox/`` until the delivery role sends it; the notification
policies (docs/delivery.md) may hold it first: desk grace (``desk_grace_seconds`` after it became
ready), quiet hours (``policy.quiet_until``, written into the record by the delivery role), or a
digest that names it as a member (sent as one notification). ``log``, ``explain`` and ``status``
read the holds here, from the records and the configuration, so the user sees them where they
look, not only in ``notify.log``. Read-only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from donebell.shared.statedir import OUTBOX, InvalidRecord, StateDir

DIGEST_KIND = "digest"  # workers/delivery/policies/digest.py: a digest's ``kind`` in outbox/


@dataclass(frozen=True)
class Hold:
    """One outbox record's hold: what holds it and until when (None: until its digest is sent)."""

    why: str  # "quiet hours" | "desk grace" | "digest"
    until: float | None = None
    detail: str = ""

    def text(self) -> str:
        if self.why == "digest":
            return f"held for a digest: {self.detail}"
        clock = time.strftime("%H:%M:%S", time.localtime(self.until)) if self.until is not None else "?"
        return f"held by {self.why} until {clock}" + (f" ({self.detail})" if self.detail else "")

    def as_json(self) -> dict[str, Any]:
        return {"why": self.why, "until": self.until, "text": self.text()}


def _settings() -> Any:
    """The light settings view, or None when the config cannot be read (then no desk-grace hold)."""
    from donebell.shared.config.view import ConfigError, load

    try:
        return load().settings
    except (ConfigError, OSError):
        return None


def hold_of(record: dict[str, Any], at: float, settings: Any, digests: dict[str, dict[str, Any]]) -> Hold | None:
    """The hold on one outbox record at ``at``, or None (``digests``: member key -> digest record)."""
    key = record.get("key")
    if isinstance(key, str) and key in digests:
        digest = digests[key]
        members = digest.get("members") or []
        return Hold("digest", None, f"one notification for {len(members)} tasks ({digest.get('digest_of') or '?'})")
    if record.get("kind") == DIGEST_KIND or record.get("test") is True:
        return None
    raw_policy = record.get("policy")
    policy: dict[str, Any] = raw_policy if isinstance(raw_policy, dict) else {}
    quiet_until = policy.get("quiet_until")
    if isinstance(quiet_until, (int, float)) and not isinstance(quiet_until, bool) and quiet_until > at:
        return Hold("quiet hours", float(quiet_until), "quiet_hours")
    grace = float(getattr(settings, "desk_grace_seconds", 0) or 0) if settings is not None else 0.0
    first = not record.get("attempts") and not policy.get("passed")
    done = record.get("outcome") in (None, "done")
    promoted = record.get("promoted_at")
    if grace > 0 and first and (done or getattr(settings, "desk_grace_failures", False)):
        if isinstance(promoted, (int, float)) and promoted + grace > at:
            return Hold("desk grace", float(promoted + grace), f"desk_grace_seconds {grace:g}")
    return None


def outbox_holds(state: StateDir, at: float | None = None, settings: Any = None) -> dict[str, Hold]:
    """outbox key -> its hold, for every held record of ``outbox/``."""
    at = time.time() if at is None else at
    settings = _settings() if settings is None else settings
    records = []
    for key in state.keys(OUTBOX):
        try:
            record = state.read(OUTBOX, key)
        except (InvalidRecord, OSError):
            continue
        if record is not None:
            records.append(record)
    digests = {
        member: record
        for record in records
        if record.get("kind") == DIGEST_KIND
        for member in record.get("members") or []
        if isinstance(member, str)
    }
    holds = {}
    for record in records:
        hold = hold_of(record, at, settings, digests)
        if hold is not None:
            holds[str(record.get("key"))] = hold
    return holds
