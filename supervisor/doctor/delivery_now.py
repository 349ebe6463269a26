"""``doctor``'s ``delivery`` line: notifications waiting in ``outbox/``, described as things are now.

An outbox record's ``last_error`` is what the server said at the *last attempt*, which may be
minutes old: the user may have fixed the token since, or broken it another way. Doctor has just
asked the server itself (the ``server`` and ``access`` checks), so the line says what those found
now: what blocks the queue, or, for a refusal (401/403) the server no longer makes, that the
next retry goes through. Otherwise it quotes the stored error as the last attempt's, with its age.
"""

from __future__ import annotations

import time
from typing import Any

from donebell.shared.statedir import now
from donebell.workers.kit.install.checks import FAIL, OK, WARN, Check

#: A notification failing this long makes the line FAIL.
FAILING_DELIVERY_AGE = 600.0
RETRY_STEP = "fix the cause above (server, token, network); they are retried automatically"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _ago(at: float | None) -> str:
    if at is None:
        return "earlier"
    seconds = max(0, round(now() - at))
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"


def delivery_check(failing: list[dict[str, Any]], present: list[Check]) -> Check:
    """The ``delivery`` check for the ``failing`` outbox records, given doctor's checks of now."""
    count = len(failing)
    oldest = min(_number(r.get("promoted_at")) or _number(r.get("created_at")) or now() for r in failing)
    word = FAIL if now() - oldest > FAILING_DELIVERY_AGE else WARN
    last = failing[-1]
    details = {"waiting": count, "last_attempt_error": str(last.get("last_error"))[:200]}
    blocking = next((c for c in present if c.name in ("server", "access") and c.status == FAIL), None)
    if blocking is not None:  # what blocks them now, found by asking the server a moment ago
        return Check(
            "delivery",
            word,
            f"{count} notification(s) waiting: {blocking.summary}",
            blocking.next_step or RETRY_STEP,
            details,
        )
    refused = last.get("last_http_status") in (401, 403)  # what the access check asks about
    if refused and any(c.name == "access" and c.status == OK for c in present):
        due = [t for t in (_number(r.get("next_attempt_at")) for r in failing) if t is not None]
        when = f" (next at {time.strftime('%H:%M:%S', time.localtime(min(due)))})" if due else ""
        return Check(
            "delivery",
            WARN,
            f"{count} notification(s) waiting after a failed attempt ({_ago(_number(last.get('last_attempt_at')))}); "
            f"the server accepts donebell's credentials now, so they go out at the next retry{when}",
            "nothing to fix now: `donebell status` shows the outbox drain",
            details,
        )
    summary = (
        f"{count} notification(s) waiting; the last attempt ({_ago(_number(last.get('last_attempt_at')))}) failed: "
        f"{details['last_attempt_error']}"
    )
    return Check("delivery", word, summary, RETRY_STEP, details)
