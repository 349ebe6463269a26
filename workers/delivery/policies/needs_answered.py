"""Desk grace for a "needs you" record: did the agent move on, i.e. was it answered at the terminal?

Neither agent tells a hook that its dialog was answered, so the answer is read from what the agent
writes once it goes on (docs/approvals.md):

* the file the request was recorded against (``answer_path``: the Claude transcript, a subagent's
  own transcript, or the Codex rollout) grew past ``answer_offset`` with a record that only comes
  after the answer: a tool result (allowed and ran, or denied), a Codex command's end or review
  outcome, a turn's end or abort, a new user message;
* Claude: a new prompt in the session (its epoch moved past the record's);
* a done/failed candidate of the same turn written after the request (the turn went on to finish).

None means "still waiting as far as we can see": the notification goes.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.bounded_read import read_from
from donebell.shared.keys import claude_session_key, event_key
from donebell.shared.statedir import InvalidRecord, StateDir

#: Records an agent writes only after the blocked call was answered (allowed, denied or reviewed).
ANSWER_MARKERS = (
    b'"type":"tool_result"',  # Claude: the call ran or was refused
    b'"function_call_output"',  # Codex: the call's output (declined calls get one too)
    b'"exec_command_end"',
    b'"task_complete"',
    b'"turn_aborted"',
    b'"user_message"',
)
READ_CAP = 4 << 20


def needs_answered(state: StateDir, record: dict[str, Any]) -> str | None:
    """Why we believe the request was answered at the terminal, or None."""
    return _file_moved_on(record) or _claude_new_prompt(state, record) or _turn_finished(state, record)


def _file_moved_on(record: dict[str, Any]) -> str | None:
    path, offset = record.get("answer_path"), record.get("answer_offset")
    if not isinstance(path, str) or not path or not isinstance(offset, int) or isinstance(offset, bool):
        return None
    try:  # bounded and non-blocking, like every read of an agent's file
        tail = read_from(path, offset, READ_CAP)
    except OSError:
        return None
    for marker in ANSWER_MARKERS:
        if marker in tail:
            name = marker.decode().split(":")[-1].strip('"')
            return f"the agent went on: a {name} after the request"
    return None


def _claude_new_prompt(state: StateDir, record: dict[str, Any]) -> str | None:
    session_id = record.get("session_id")
    if record.get("provider") != "claude" or not isinstance(session_id, str) or not session_id:
        return None
    try:
        session = state.read("claude", claude_session_key(session_id))
    except InvalidRecord:
        return None
    epoch, current = record.get("claude_epoch"), (session or {}).get("epoch")
    if isinstance(epoch, int) and isinstance(current, int) and current > epoch:
        return f"a new prompt in the session (epoch {current} > {epoch})"
    return None


def _turn_finished(state: StateDir, record: dict[str, Any]) -> str | None:
    """The same turn has a candidate (or a later state) created after the request: it finished."""
    if record.get("provider") == "claude":
        conversation, turn = record.get("session_id"), record.get("prompt_id")
    else:
        conversation, turn = record.get("thread_id"), record.get("turn_id")
    if not isinstance(conversation, str) or not isinstance(turn, str) or not conversation or not turn:
        return None
    key = event_key("claude" if record.get("provider") == "claude" else "codex", conversation, turn)
    folder = state.locate(key)
    if folder is None:
        return None
    try:
        other = state.read(folder, key)
    except InvalidRecord:
        return None
    born, asked = (other or {}).get("created_at"), record.get("created_at")
    if isinstance(born, (int, float)) and isinstance(asked, (int, float)) and born >= asked:
        return f"the turn went on to finish ({folder}/)"
    return None
