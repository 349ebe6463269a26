"""The text form of ``donebell explain``: one story per record, its events in time order.

Each record opens with what it is (a Codex turn, a Claude prompt, or a ``donebell test``
notification, named as such) and where it is now; then every event with its time, oldest first:
captured, each gate decision, ready for delivery, sent / suppressed / dead; then what it waits for
now (the gate's reason, a notification policy's hold, a retry). Above the records stand the full
thread and session ids, with the command that resumes each, since the ``#…`` on the phone and the
shortened turn ids are not enough to open the task again.
"""

from __future__ import annotations

import time
from typing import Any

from donebell.shared.statedir import DEAD, OUTBOX, SENT, SUPPRESSED
from donebell.workers.agents.registry import agent


def clock(ts: object) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts))) if isinstance(ts, (int, float)) else "?"


def ago(seconds: float) -> str:
    seconds = abs(seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def short(ident: object) -> str:
    return f"{ident[:8]}…" if isinstance(ident, str) and len(ident) > 12 else str(ident)


def resume_lines(items: list[dict[str, Any]]) -> list[str]:
    """The full id of every thread or session among ``items``, with the command that resumes it."""
    seen: dict[str, str] = {}
    for item in items:
        found = agent(item.get("provider"))
        ident = found.conversation_of(item)[0] if found is not None else None
        if found is not None and ident and ident not in seen:
            command = found.RESUME_COMMAND.format(id=ident)
            seen[ident] = f"  {found.CONVERSATION_NOUN} {ident}  (resume: `{command}`)"
    return list(seen.values())


def title(item: dict[str, Any]) -> str:
    """What the record is, in words a user knows."""
    if item.get("test"):
        return "test notification (`donebell test`)"
    found = agent(item.get("provider"))
    turn = found.conversation_of(item)[1] if found is not None else None
    if found is not None and turn:
        return f"{found.TURN_LABEL} {short(turn)}"
    if item.get("turn_id"):
        return f"turn {short(item['turn_id'])}"
    if item.get("members"):
        return f"digest of {len(item['members'])} task(s)"
    return f"{item.get('provider') or 'record'} {short(item.get('key'))}"


def events(item: dict[str, Any]) -> list[tuple[float, str]]:
    """``(time, text)`` of every dated event of one record, oldest first."""
    found: list[tuple[float, str]] = []

    def at(ts: object, text: str) -> None:
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            found.append((float(ts), text))

    if item.get("captured_known", True):
        at(item.get("created_at"), f"captured ({', '.join(item['sources']) or 'no source'})")
    for entry in item["history"]:
        repeat = f" (×{entry['count']}, last {clock(entry.get('last_at'))})" if entry.get("count") else ""
        text = f"gate: {entry.get('decision', '?')} {entry.get('reason', '?')}: {entry.get('evidence', '')}{repeat}"
        at(entry.get("at"), text)
    verdict = f" (verdict {item['verdict']})" if item.get("verdict") and not item.get("test") else ""
    at(item.get("promoted_at"), f"ready: moved to the outbox{verdict}")
    if item["folder"] == SENT:
        reply = f" (HTTP {item['http_status']}, message id {item['message_id']})" if item.get("message_id") else ""
        at(item.get("sent_at") or item.get("finished_at"), f"sent{reply}")
    elif item["folder"] == SUPPRESSED:
        at(item.get("finished_at"), f"suppressed: {item.get('reason')}")
    elif item["folder"] == DEAD:
        at(item.get("failed_at") or item.get("finished_at"), f"dead: {item.get('reason')}")
    return sorted(found, key=lambda event: event[0])


def now_lines(item: dict[str, Any], now: float) -> list[str]:
    """What the record waits for now (nothing once it has a receipt)."""
    lines = []
    if item.get("hold"):
        lines.append(f"  now: {item['hold']['text']}")
    if item["folder"] == OUTBOX:
        attempts = item.get("attempts") or 0
        error = f"; last error {item['last_error']}" if item.get("last_error") else ""
        lines.append(f"  now: in the outbox, {attempts} attempt(s){error}")
    if item.get("waiting"):
        lines.append(f"  now: {item['waiting']}")
        if isinstance(item.get("next_probe_at"), (int, float)):
            lines.append(f"  next probe in {ago(max(0.0, item['next_probe_at'] - now))}")
    return lines


def render(
    ident: str,
    items: list[dict[str, Any]],
    session: dict[str, Any] | None,
    now: float,
    policy_text: Any,
    ladder_lines: Any,
) -> str:
    lines = [f"{ident}: {len(items)} record(s)", *resume_lines(items)]
    if session is not None:
        lines.append(
            f"  Claude session: prompt epoch {session.get('epoch')}, current prompt {short(session.get('prompt_id'))}"
        )
    for item in sorted(items, key=lambda i: (i.get("created_at") or 0.0, str(i.get("key")))):
        head = f"• {title(item)} [{item['folder']}]"
        if item.get("reason"):
            head += f" reason {item['reason']}"
        if item.get("verdict") and not item.get("test"):
            head += f" verdict {item['verdict']}"
        head += f"; outcome {item.get('outcome') or '-'}"
        lines += [head, f"    key {item['key']}"]
        lines += [f"    {clock(ts)}  {text}" for ts, text in events(item)]
        lines.extend(ladder_lines(item.get("ladder") or []))
        if policy_text(item):
            lines.append(f"  policy: {policy_text(item)}")
        lines.extend(now_lines(item, now))
    return "\n".join(lines) + "\n"
