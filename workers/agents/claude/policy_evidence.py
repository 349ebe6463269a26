"""Claude Code's evidence for the delivery policies (``workers/delivery/policies/``).

* task time: from the transcript, the timestamp of the prompt's user record (``promptId``) to the
  newest timestamped record of that prompt; without the transcript, the session record's time of
  that prompt (UserPromptSubmit) to the candidate's capture;
* desk return: the session record (``claude/``), advanced by every UserPromptSubmit: a prompt
  epoch above the candidate's, or another current prompt written after the verdict;
* a "needs you" request answered at the terminal: a new prompt in the session.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any

from donebell.shared.keys import claude_session_key
from donebell.shared.statedir import CLAUDE, InvalidRecord, StateDir

#: A transcript larger than this is read from its tail only (the prompt is then usually inside).
TRANSCRIPT_CAP = 16 << 20


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    prompt_id = record.get("prompt_id")
    if not isinstance(prompt_id, str) or not prompt_id:
        return None
    span = _transcript_span(record.get("transcript_path"), prompt_id)
    if span is not None:
        return span
    session_id = record.get("session_id")
    if not isinstance(session_id, str):
        return None
    try:
        session = state.read(CLAUDE, claude_session_key(session_id))
    except InvalidRecord:
        return None
    started, ended = _number((session or {}).get("updated_at")), _number(record.get("created_at"))
    if session and session.get("prompt_id") == prompt_id and started is not None and ended is not None:
        return max(0.0, ended - started)
    return None


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    session = _session(state, record)
    if session is None:
        return None
    newer, epoch = _newer_prompt(record, session), record.get("claude_epoch")
    if newer is not None and isinstance(epoch, int) and epoch > 0:  # epoch 0: no prompt seen yet
        return newer
    updated, promoted = session.get("updated_at"), record.get("promoted_at")
    if (
        session.get("prompt_id") not in (None, record.get("prompt_id"))
        and isinstance(updated, (int, float))
        and isinstance(promoted, (int, float))
        and updated > promoted
    ):
        return "another prompt became current after the verdict"
    return None


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    session = _session(state, record)
    return _newer_prompt(record, session) if session is not None else None


def _session(state: StateDir, record: dict[str, Any]) -> dict[str, Any] | None:
    """The Claude session record (``claude/``) of ``record``'s session; None if none or damaged."""
    session_id = record.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    try:
        return state.read(CLAUDE, claude_session_key(session_id))
    except InvalidRecord:
        return None


def _newer_prompt(record: dict[str, Any], session: dict[str, Any]) -> str | None:
    epoch, current = record.get("claude_epoch"), session.get("epoch")
    if isinstance(epoch, int) and isinstance(current, int) and current > epoch:
        return f"a new prompt in the session (epoch {current} > {epoch})"
    return None


def _transcript_span(path: object, prompt_id: str) -> float | None:
    """Seconds from the prompt's user record to the last timestamped record before the next prompt."""
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - TRANSCRIPT_CAP))
            data = f.read(TRANSCRIPT_CAP)
    except OSError:
        return None
    needle = prompt_id.encode()
    start: float | None = None
    last: float | None = None
    for line in data.splitlines():
        if start is None and needle not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        stamp = _iso(obj.get("timestamp"))
        if start is None:
            if obj.get("type") == "user" and obj.get("promptId") == prompt_id and stamp is not None:
                start = last = stamp
            continue
        other = obj.get("promptId")
        if obj.get("type") == "user" and isinstance(other, str) and other != prompt_id:
            break  # the next prompt began
        if stamp is not None and last is not None and stamp > last:
            last = stamp
    return None if start is None or last is None else last - start


def _iso(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(value: object) -> float | None:
    """A finite-looking number as float, else None (bools and NaN are not numbers here)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None
