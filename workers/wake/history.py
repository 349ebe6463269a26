"""A thread's wake history for ``donebell explain`` (read-only; see ``iter_wake_records``)."""

from __future__ import annotations

import time
from typing import Any

from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import iter_wake_records

__all__ = ["iter_wake_records", "render_wakes", "wake_history"]  # iter_wake_records: `donebell log`


def wake_history(state: StateDir, ident: str) -> list[dict[str, Any]]:
    """The wake records of a Codex thread or Claude session (or of one reply message id)."""
    return [r for r in iter_wake_records(state) if ident in (r.get("conversation_id"), r.get("message_id"))]


def render_wakes(records: list[dict[str, Any]]) -> list[str]:
    lines = []
    for record in records:
        what = f"{record['decision']} from the phone" if record.get("decision") else "wake"
        head = f"• {what} {record.get('message_id')} for turn {str(record.get('turn_id') or '?')[:8]}: {record.get('status')}"
        if record.get("reason"):
            head += f" ({record['reason']})"
        if record.get("new_turn"):
            head += f"; new turn {str(record['new_turn'])[:8]}"
        if record.get("delivery"):  # delivered into the open session, held, expired or resumed
            head += f" [{record['delivery']}]"
        lines.append(head)
        for step in record.get("history") or []:
            at = step.get("at")
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if isinstance(at, (int, float)) else "?"
            reason = f" {step['reason']}" if step.get("reason") else ""
            lines.append(f"    {stamp}  {step.get('status')}{reason}")
    return lines
