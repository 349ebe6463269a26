"""``donebell log``'s ``tapped`` lines: every reply from the phone and what became of it.

A Continue tap that started a turn, an Allow or Deny that answered a permission prompt, and a tap
that was refused are all shown, one line each from the wake record (``wake/replies/``, read-only):
a user who tapped a button can see that it worked, not only when it did not.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.statedir import StateDir
from donebell.shared.text.short_id import short_id
from donebell.workers.wake.history import iter_wake_records

#: What a final status means, for one line.
_OUTCOME = {
    "confirmed": "started a new turn",
    "answered": "answered the permission prompt",
    "unconfirmed": "a turn was requested but did not start within 5 minutes",
}


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def wake_records(state: StateDir, limit: int | None) -> list[dict[str, Any]]:
    """The wake records, the ``limit`` most recently changed (all with None), oldest change first."""
    try:
        records = sorted(iter_wake_records(state), key=lambda r: _number(r.get("updated_at")))
    except OSError:
        return []
    return records[-limit:] if limit is not None else records


def _button(record: dict[str, Any], labels: list[str]) -> str:
    decision = record.get("decision")
    if isinstance(decision, str) and decision:
        return decision.capitalize()  # Allow / Deny of a needs-you notification
    action = record.get("action")
    if isinstance(action, int) and 0 <= action < len(labels):
        return labels[action]
    return f"button {action + 1}" if isinstance(action, int) and action >= 0 else "a button"


def _labels() -> list[str]:
    """The configured button labels (``wake_actions``), or none when the config cannot be read."""
    try:
        from donebell.shared.config.model import load

        return [str(action.get("label") or "") for action in load().settings.wake_actions]
    except Exception:  # noqa: BLE001 - a label is a nicety: the line says "button N" without it
        return []


def taps(state: StateDir, limit: int | None) -> list[dict[str, Any]]:
    """The ``tapped`` events (``log_command.Event`` fields) of the ``limit`` most recently changed
    wake records."""
    records = wake_records(state, limit)
    labels = _labels() if records else []
    return [tap_event(record, labels) for record in records]


def tap_event(record: dict[str, Any], labels: list[str]) -> dict[str, Any]:
    """The ``tapped`` event of one wake record."""
    status = str(record.get("status") or "received")
    outcome = _OUTCOME.get(status, status)
    if record.get("reason"):
        outcome += f" ({record['reason']})"
    if status == "confirmed" and record.get("new_turn"):
        outcome += f" {str(record['new_turn'])[:8]}"
    if record.get("delivery"):
        outcome += f" [{record['delivery']}]"
    conversation = record.get("conversation_id")
    button = _button(record, labels)
    return {
        "at": _number(record.get("updated_at")) or _number(record.get("created_at")),
        "kind": "tapped",
        "detail": f"{button} from the phone: {outcome}"[:300],
        "provider": str(record["provider"]) if record.get("provider") not in (None, "unknown") else None,
        "id": short_id(conversation) if isinstance(conversation, str) and conversation else None,
        "key": str(record.get("key")) if record.get("key") else None,
    }
