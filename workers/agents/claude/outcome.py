"""What a Claude Code transcript says about its newest prompt: one forward fold, two users.

The SessionEnd hook (``donebell hook claude``) folds the bounded tail of the transcript once; the
local scanner's Claude tailer (``workers/agents/claude/tail.py``) folds every complete line as it is
appended and persists the fold in its cursor. Both then ask :func:`derive` the same question, so
the two fallbacks of a missed Stop/StopFailure can never disagree (docs/hooks.md, "SessionEnd and
transcript recovery").

The fold keeps, for the main chain only (``isSidechain`` records are a subagent's and never
count): the newest prompt (``promptId`` of a ``user`` record) and where it began; its phase
(``working`` after a user record, ``replied`` after an assistant record whose ``stop_reason``
ends a turn, ``failed`` after an ``isApiErrorMessage`` record); background work launched in the
transcript (a Bash ``backgroundTaskId``, an ``async_launched`` agent) and not yet reported back by
a ``<task-notification>`` prompt; whether a cron was scheduled (``CronCreate``,
``ScheduleWakeup``: like the Stop hook's ``session_crons``, it holds the session from then on);
and the newest ``goal_status`` marker. A partial reply that a
mid-stream retry followed (Claude 2.1.332 writes it with ``stop_reason: "end_turn"``) is undone
by the retry's ``isMeta`` user record of the same prompt: only the state at a quiet moment counts.
Standard library only: the hook path imports it.
"""

from __future__ import annotations

import os

from donebell.shared.bounded_read import parse_record, read_from, read_tail
from donebell.shared.keys import transcript_index_key
from donebell.shared.statedir import WATCH_CLAUDE, InvalidRecord
from donebell.workers.agents.claude.goal_status import TAIL_CAP, marker_of

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.statedir import StateDir

#: ``message.stop_reason`` values that hand control back (``tool_use`` / null: still going).
DONE_STOP_REASONS = ("end_turn", "stop_sequence", "max_tokens", "refusal")
#: Background work still running when the CLI exits is stopped with it (said in the notification).
KILLED_NOTE = "background work was stopped when Claude exited"
#: Longest reply line read back for its text (an assistant record of one text block).
REPLY_LINE_CAP = 1 << 20
_TASK_ID_OPEN = "<task-id>"
_TASK_ID_CLOSE = "</task-id>"
_MAX_TRACKED_TASKS = 64
#: Tools that schedule a later prompt in the session (the Stop payload's ``session_crons``).
CRON_TOOLS = ("CronCreate", "ScheduleWakeup")


def new_fold() -> dict[str, Any]:
    """The empty fold (JSON-serializable: the scanner stores it in its cursor as is)."""
    return {
        "prompt_id": None,
        "prompt_offset": None,
        "prompt_origin": None,
        "phase": "none",
        "error": None,
        "error_status": None,
        "reply_offset": None,
        "background": {},
        "goal": None,
        "goal_at_prompt": None,
        "crons": False,
        "entrypoint": None,
        "version": None,
        "records": 0,
    }


def feed(fold: dict[str, Any], record: dict[str, Any], offset: int) -> None:
    """Fold one decoded transcript record that starts at byte ``offset``."""
    if record.get("isSidechain") is True:
        return
    fold["records"] = int(fold.get("records") or 0) + 1
    kind = record.get("type")
    if isinstance(record.get("entrypoint"), str):
        fold["entrypoint"] = record["entrypoint"][:40]
    if isinstance(record.get("version"), str):
        fold["version"] = record["version"][:40]
    if kind == "user":
        _user(fold, record, offset)
    elif kind == "assistant":
        _assistant(fold, record, offset)
    elif kind == "attachment":
        marker = marker_of(record)
        if marker is not None:
            marker["offset"] = offset
            fold["goal"] = marker


def _user(fold: dict[str, Any], record: dict[str, Any], offset: int) -> None:
    prompt_id = record.get("promptId")
    content = (record.get("message") or {}).get("content") if isinstance(record.get("message"), dict) else None
    if isinstance(prompt_id, str) and prompt_id and prompt_id != fold.get("prompt_id"):
        fold.update(
            prompt_id=prompt_id[:200],
            prompt_offset=offset,
            prompt_origin=_origin(record, content),
            error=None,
            error_status=None,
            reply_offset=None,
            goal_at_prompt=fold.get("goal"),
        )
        if isinstance(content, str) and content.lstrip().startswith("<task-notification>"):
            _task_reported(fold, content)
    result = record.get("toolUseResult")
    if isinstance(result, dict):
        task = result.get("backgroundTaskId")
        if isinstance(task, str) and task:
            _task_started(fold, task, "shell")
        elif result.get("isAsync") is True and isinstance(result.get("agentId"), str):
            _task_started(fold, result["agentId"], "subagent")
    fold["phase"] = "working"  # a prompt, a tool result or a retry's isMeta record: the turn goes on


def _text_of(record: dict[str, Any]) -> str | None:
    """The first text block of an assistant record's message (the synthetic "API Error: …")."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
    return None


def _assistant(fold: dict[str, Any], record: dict[str, Any], offset: int) -> None:
    if record.get("isApiErrorMessage") is True:
        error = record.get("error")
        status = record.get("apiErrorStatus")
        error = error[:100] if isinstance(error, str) and error else "unknown"
        if error == "unknown":  # the message names what StopFailure calls unknown (api_error.py)
            from donebell.workers.agents.claude.api_error import error_kind

            error = error_kind(error, _text_of(record), status=status if isinstance(status, int) else None)
        fold.update(
            phase="failed",
            error=error,
            error_status=status if isinstance(status, int) else None,
            reply_offset=offset,
        )
        return
    message = record.get("message")
    reason = message.get("stop_reason") if isinstance(message, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") in CRON_TOOLS for b in content
    ):
        fold["crons"] = True  # the Stop hook's session_crons would list it from now on
    if reason in DONE_STOP_REASONS:
        fold.update(phase="replied", reply_offset=offset)
    else:
        fold["phase"] = "working"  # tool_use, or null: a partial block still streaming


def _origin(record: dict[str, Any], content: object) -> str:
    origin = record.get("origin")
    if isinstance(origin, dict) and isinstance(origin.get("kind"), str):
        return str(origin["kind"])[:40]
    if isinstance(content, str) and content.lstrip().startswith("<task-notification>"):
        return "task-notification"
    return "human"


def _task_started(fold: dict[str, Any], task_id: str, kind: str) -> None:
    tasks = dict(fold.get("background") or {})
    tasks[task_id[:100]] = kind
    while len(tasks) > _MAX_TRACKED_TASKS:
        tasks.pop(next(iter(tasks)))
    fold["background"] = tasks


def _task_reported(fold: dict[str, Any], content: str) -> None:
    tasks = dict(fold.get("background") or {})
    start = content.find(_TASK_ID_OPEN)
    while start >= 0:
        end = content.find(_TASK_ID_CLOSE, start)
        if end < 0:
            break
        tasks.pop(content[start + len(_TASK_ID_OPEN) : end].strip(), None)
        start = content.find(_TASK_ID_OPEN, end)
    fold["background"] = tasks


def derive(fold: dict[str, Any], *, exited: bool) -> dict[str, Any] | None:
    """The newest prompt's outcome, or None while it is not over (or there is no prompt).

    ``{"prompt_id", "outcome": "done"|"failed", "error", "note", "reply_offset"}``. ``exited``:
    the CLI is known to have exited (SessionEnd, or the print-mode wind-down rule of the
    scanner), so background work still listed as running was stopped with it.
    """
    prompt_id, phase = fold.get("prompt_id"), fold.get("phase")
    if not prompt_id:
        return None
    out: dict[str, Any] = {"prompt_id": prompt_id, "reply_offset": fold.get("reply_offset"), "note": None}
    if phase == "failed":
        return {**out, "outcome": "failed", "error": fold.get("error") or "unknown"}
    if phase != "replied" or fold.get("crons"):
        return None  # a scheduled prompt keeps the session busy, as the Stop hook rules too
    if fold.get("background"):
        if not exited:
            return None  # its <task-notification> prompt will come, with a turn of its own
        out["note"] = KILLED_NOTE
    return {**out, "outcome": "done", "error": None}


def background_kinds(fold: dict[str, Any]) -> set[str]:
    return set((fold.get("background") or {}).values())


def fold_lines(fold: dict[str, Any], window: bytes, offset: int, start: int, end: int) -> None:
    """Feed the complete lines ``window[start:end]`` (``window`` begins at file byte ``offset``)."""
    pos = start
    while pos < end:
        newline = window.find(b"\n", pos, end)
        stop = end if newline < 0 else newline
        record = parse_record(window[pos:stop])
        if record is not None:
            feed(fold, record, offset + pos)
        pos = stop + 1


def tail_fold(path: str | None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """``(fold, scan)`` of the bounded tail (``transcript.TAIL_CAP``) of a transcript.

    The SessionEnd hook's view: the fold starts at the first complete line of the window, so a
    prompt that began before the window still counts once one of its later user records (a tool
    result) is inside it. ``scan["status"]``: ``read`` | ``missing`` | ``no-path``.
    """
    if not path:
        return None, {"status": "no-path"}
    try:
        tail = read_tail(path, TAIL_CAP)
    except OSError:
        return None, {"status": "missing"}
    start, end = tail.complete_region()
    fold = new_fold()
    fold_lines(fold, tail.data, tail.offset, start, end)
    return fold, {"status": "read", "size": tail.size, "window": len(tail.data)}


def reply_text(path: str, offset: object, limit: int) -> str | None:
    """The text blocks of the assistant record at ``offset`` (the final reply), joined, or None."""
    if not isinstance(offset, int) or offset < 0:
        return None
    try:
        data = read_from(path, offset, REPLY_LINE_CAP)
    except OSError:
        return None
    newline = data.find(b"\n")
    record = parse_record(data if newline < 0 else data[:newline])
    message = record.get("message") if record else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    else:
        return None
    text = text.strip()
    return text[:limit] if text else None


def transcript_index(state: StateDir, path: str) -> dict[str, Any] | None:
    """The local scanner's cursor of ``path`` when it still describes this very file, else None.

    The cursor (``watch/claude/``, workers/agents/claude/tail.py) doubles as the transcript's index: its
    fold holds the newest goal marker and the newest prompt's first byte for everything up to its
    ``offset``, so a reader need not look further back than that (docs/hooks.md).
    """
    try:
        record = state.read(WATCH_CLAUDE, transcript_index_key(path))
        st = os.stat(path)
    except (InvalidRecord, OSError):
        return None
    if record is None or record.get("path") != path or (record.get("dev"), record.get("ino")) != (st.st_dev, st.st_ino):
        return None
    fold = record.get("fold")
    if not isinstance(fold, dict) or record.get("folded_from") != 0 or not isinstance(record.get("offset"), int):
        return None  # first seen mid-file: an older marker may lie before what it folded
    return record


def goal_from_index(
    state: StateDir, path: str | None, scan: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The newest goal marker before the hook's tail window, from the index; ``scan`` if unknown."""
    if not path or scan.get("status") != "not-in-window":
        return None, scan
    window_start = int(scan.get("size") or 0) - int(scan.get("window") or 0)
    record = transcript_index(state, path)
    if record is None or int(record["offset"]) < window_start:
        return None, scan  # the scanner has not folded up to the window yet
    goal = record["fold"].get("goal")
    if isinstance(goal, dict) and isinstance(goal.get("offset"), int) and goal["offset"] < window_start:
        return dict(goal), {**scan, "status": "found-in-index"}
    return None, {**scan, "status": "none-in-index"}
