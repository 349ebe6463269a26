"""The delivery policies' Copilot evidence, read from the session log (never on the hook path)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donebell.shared.bounded_read import parse_record, read_tail
from donebell.workers.agents.copilot.events import iso_ms, read_log

if TYPE_CHECKING:
    from donebell.shared.statedir import StateDir

#: How much of the log's end is searched for a permission request's outcome.
ANSWER_TAIL = 4 << 20


def _log_of(record: dict[str, Any]) -> str | None:
    path = record.get("answer_path") or record.get("transcript_path")
    return path if isinstance(path, str) and path else None


def task_seconds(record: dict[str, Any], state: StateDir) -> float | None:
    """From the task's prompt to its end, as the session log timed them (the gate stored both)."""
    started, ended = record.get("task_started_ms"), record.get("task_ended_ms")
    if isinstance(started, (int, float)) and isinstance(ended, (int, float)) and ended >= started:
        return (ended - started) / 1000.0
    return None


def user_returned(state: StateDir, record: dict[str, Any]) -> str | None:
    """A task started after the record's task: the user typed the next prompt."""
    path, interaction = _log_of(record), record.get("interaction_id")
    if path is None or not isinstance(interaction, str):
        return None
    log = read_log(path)
    task = log.task(interaction)
    newer = log.newer_than(task) if task is not None else None
    return f"a later prompt in the session (task {newer.interaction_id})" if newer else None


def answered_at_terminal(state: StateDir, record: dict[str, Any]) -> str | None:
    """The request's own call answered, a new prompt or an interrupt, logged after it was asked.
    During a session's first turn the log does not exist yet when the hook runs (the record's
    ``answer_offset`` is empty): only the log's own timestamps tell what came after the request."""
    path = _log_of(record)
    if path is None:
        return None
    try:
        lines = read_tail(path, ANSWER_TAIL).complete_lines()
    except OSError:
        return None
    return answered_by(record, lines)


def answered_in_file(record: dict[str, Any], before: bytes, after: bytes) -> str | None:
    """The ``permission.completed`` of the request's own call in ``after`` (what Copilot logged
    after the request), else :func:`answered_by`'s new prompt or interrupt. The own call is the
    first ``permission.requested`` of the record's ``tool_digest`` not already completed in
    ``before`` (the log lags the hooks, so it is usually in ``after``)."""
    digest = record.get("tool_digest")
    earlier, later = _answer_events(before.splitlines()), _answer_events(after.splitlines())
    done = {data.get("requestId") for kind, data, _at in earlier if kind == "permission.completed"}
    mine = [
        data.get("requestId")
        for kind, data, _at in earlier + later
        if kind == "permission.requested" and digest and call_digest(data.get("permissionRequest")) == digest
    ]
    waiting = [request for request in mine if request not in done]
    completed = {data.get("requestId") for kind, data, _at in later if kind == "permission.completed"}
    if waiting and waiting[0] in completed:
        return "the agent went on: this call's permission.completed after the request"
    return answered_by(record, after.splitlines())


#: Only lines holding one of these can answer a request (checked again on the parsed event).
_ANSWER_LINES = (b'"permission.', b'"user.message"', b'"abort"')


def answered_by(record: dict[str, Any], lines: list[bytes]) -> str | None:
    """Why the log shows this very request answered, or None, by the log's own timestamps: the
    ``permission.completed`` of the request's own call (the ``permission.requested`` whose call has
    the record's ``tool_digest``), a new prompt, or an interrupt, logged at or after the request.
    Another call's outcome never answers it: one turn can ask for several calls."""
    asked = record.get("promoted_at") or record.get("created_at")
    if not isinstance(asked, (int, float)):
        return None
    digest, calls = record.get("tool_digest"), {}
    for kind, data, at in _answer_events(lines):
        if kind == "permission.requested":
            calls[data.get("requestId")] = call_digest(data.get("permissionRequest"))
        if at is None or at < asked * 1000.0:
            continue
        if kind == "permission.completed" and digest and calls.get(data.get("requestId")) == digest:
            return "the agent went on: this call's permission.completed after the request"
        if kind == "user.message" and "source" not in data and data.get("delivery") != "queued":
            return "a new prompt in the session"
        if kind == "abort":
            return "the task was interrupted after the request"
    return None


def _answer_events(lines: list[bytes]) -> list[tuple[object, dict[str, Any], float | None]]:
    """``(type, data, epoch ms)`` of each log line that may answer a request, in order."""
    found = []
    for line in lines:
        if any(marker in line for marker in _ANSWER_LINES):
            event = parse_record(line) or {}
            data = event.get("data")
            found.append((event.get("type"), data if isinstance(data, dict) else {}, iso_ms(event.get("timestamp"))))
    return found


def call_digest(request: object) -> str | None:
    """The digest of a ``permission.requested``'s call as the hooks name it (a shell call: ``bash``
    and its command, :func:`~donebell.workers.agents.copilot.needs_you.request_text`); None for a
    kind the hooks name otherwise (such a request is answered by a new prompt or an interrupt)."""
    if not isinstance(request, dict) or request.get("kind") != "shell":
        return None
    command = request.get("fullCommandText")
    if not isinstance(command, str):
        return None
    from donebell.workers.kit.needs_you import tool_digest

    return tool_digest({"tool_name": "bash", "tool_input": {"command": command}})
