"""Desk grace for a "needs you" record: did the agent move on, i.e. was it answered at the terminal?

Neither agent tells a hook that its dialog was answered, so the answer is read from what the agent
writes once it goes on (docs/approvals.md):

* the file the request was recorded against (``answer_path``: the Claude transcript, a subagent's
  own transcript, or the Codex rollout) grew past ``answer_offset`` with a record that answers
  this very request (the agent's ``answered_in_file``: the result of the request's own call,
  allowed and ran or denied; or what ends the whole wait, a turn's end or abort, a new prompt).
  Another call's result never counts: one message can ask for several calls;
* the agent's own sign (``Policies.answered_at_terminal``; Claude Code: a new prompt in the
  session, its epoch past the record's);
* a done/failed candidate of the same turn written after the request (the turn went on to finish).

None means "still waiting as far as we can see": the notification goes.
"""

from __future__ import annotations

from typing import Any, Protocol

from donebell.shared.bounded_read import read_from
from donebell.shared.keys import event_key
from donebell.shared.statedir import InvalidRecord, StateDir

READ_CAP = 4 << 20
#: How much of the file before the request names its call (the waiting call is written just before).
BEFORE_CAP = 256 << 10


class AnswerEvidence(Protocol):
    """What an agent tells about its own answers (the part of ``protocols.Agent`` read here)."""

    @property
    def NAME(self) -> str: ...

    def answered_in_file(self, record: dict[str, Any], before: bytes, after: bytes) -> str | None: ...

    def answered_at_terminal(self, state: StateDir, record: dict[str, Any]) -> str | None: ...

    def conversation_of(self, record: dict[str, Any]) -> tuple[str | None, str | None]: ...


def needs_answered(state: StateDir, record: dict[str, Any], found: AnswerEvidence | None) -> str | None:
    """Why we believe the request was answered at the terminal, or None.

    ``found`` is the record's agent (the caller asks the registry: the kit names no agent).
    """
    if found is None:
        return None
    return (
        _file_moved_on(record, found)
        or found.answered_at_terminal(state, record)
        or _turn_finished(state, record, found)
    )


def _file_moved_on(record: dict[str, Any], found: AnswerEvidence) -> str | None:
    path, offset = record.get("answer_path"), record.get("answer_offset")
    if not isinstance(path, str) or not path or not isinstance(offset, int) or isinstance(offset, bool):
        return None
    try:  # bounded and non-blocking, like every read of an agent's file
        after = read_from(path, offset, READ_CAP)
        start = max(0, offset - BEFORE_CAP)
        before = read_from(path, start, offset - start)
    except OSError:
        return None
    if start > 0:  # the window begins mid-line: from its first whole line on
        before = before[before.find(b"\n") + 1 :]
    return found.answered_in_file(record, before, after)


def _turn_finished(state: StateDir, record: dict[str, Any], found: AnswerEvidence) -> str | None:
    """The same turn has a candidate (or a later state) created after the request: it finished."""
    conversation, turn = found.conversation_of(record)
    if not conversation or not turn:
        return None
    key = event_key(found.NAME, conversation, turn)
    folder = state.locate(key)
    if folder is None:
        return None
    try:
        other = state.read(folder, key)
    except InvalidRecord:
        return None
    # A receipt (sent/) keeps the request's own creation as candidate_created_at.
    born, asked = (other or {}).get("created_at"), record.get("candidate_created_at", record.get("created_at"))
    if isinstance(born, (int, float)) and isinstance(asked, (int, float)) and born >= asked:
        return f"the turn went on to finish ({folder}/)"
    return None
