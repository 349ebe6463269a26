"""The ntfy JSON of a "needs you" record: the task waits for the user (docs/approvals.md).

Shape: first tag ``raising_hand``, priority 4 (it should wake the phone; quiet hours' silent mode
still lowers it to 1), the task's title as for a done task, and the message::

    needs your permission: Bash · <redacted one-line summary> · [<command> ·] [subagent <type> ·]
    <project/path · origin · #short-id>

The command text (``request_text``) is in the record only if ``include_message`` was on when the
hook ran, and shown only while it is on *now*, redacted again and cut to ``max_message_chars``, as
a done task's final message is. With ``approvals_enabled``, a permission prompt whose hook waits
for the phone (``approval_until`` still ahead) gets the two buttons ``Allow`` and ``Deny``
(``workers/wake/actions.py``).
"""

from __future__ import annotations

from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.keys import sequence_id
from donebell.shared.text.markdown_text import cut_chars, cut_utf8, fold_whitespace
from donebell.shared.text.redaction import redact
from donebell.workers.delivery.payload import (
    MESSAGE_MAX_BYTES,
    SEP,
    TITLE_MAX_BYTES,
    TITLE_MAX_CHARS,
    TitleLookup,
    _context_parts,
    _task_title,
    display_name,
    host_tag,
    project_name,
)

NEEDS_TAG = "raising_hand"
NEEDS_PRIORITY = 4
HEADLINES = {
    "permission": "needs your permission",
    "question": "asks you a question",
    "input": "needs your input",
}


def render_needs_you(record: dict[str, Any], settings: SettingsLike, title_lookup: TitleLookup) -> dict[str, Any]:
    provider = _text(record.get("provider"))
    project = project_name(_text(record.get("cwd")))
    task_title = _task_title(record, settings, title_lookup)
    title = task_title or project or display_name(record)
    headline = HEADLINES.get(_text(record.get("wants")), HEADLINES["input"])
    tool = _line(_text(record.get("tool")))
    parts = [f"{headline}: {tool}" if tool else headline]
    summary = _line(redact(_text(record.get("summary"))))
    if summary:
        parts.append(summary)
    command = _text(record.get("request_text"))
    if command and settings.include_message and settings.max_message_chars > 0:
        parts.append(cut_chars(_line(redact(command)), settings.max_message_chars))
    if record.get("agent_id"):  # a subagent's prompt blocks the root: say whose it is
        parts.append(f"subagent {_line(_text(record.get('agent_type'))) or _line(_text(record['agent_id']))}")
    parts.extend(p for p in _context_parts(record, settings, project, task_title) if p)
    tags = [NEEDS_TAG] + ([tag] if (tag := host_tag(record, settings)) else [])
    payload: dict[str, Any] = {
        "topic": settings.topic,
        "title": cut_utf8(cut_chars(title, TITLE_MAX_CHARS), TITLE_MAX_BYTES),
        "message": cut_utf8(SEP.join(parts), MESSAGE_MAX_BYTES),
        "tags": tags,
        "priority": NEEDS_PRIORITY,
        "sequence_id": _text(record.get("sequence_id")) or sequence_id(provider or "record", record["key"]),
    }
    if settings.approvals_enabled:
        from donebell.workers.wake.actions import approval_actions

        buttons = approval_actions(record, settings)
        if buttons:
            payload["actions"] = buttons
    return payload


def _line(text: str) -> str:
    return fold_whitespace(text)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
