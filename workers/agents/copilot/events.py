"""Copilot CLI's session log, ``$COPILOT_HOME/session-state/<session>/events.jsonl``, folded into what
the gate, the scanner and the wake role ask (docs/agent-facts.md, "Copilot CLI").

A record is ``{"type", "data", "id", "timestamp" (ISO, ms), "parentId"}``. What counts:

* a **task** starts with a root ``user.message`` delivered while the agent was idle
  (``delivery: "idle"``, no ``source``: a subagent's has ``source: "agent-<parent>"``); a queued one
  (a Stop hook's block reason, a message typed during a turn) and a ``<system_notification>`` turn
  continue the task they arrive in (the notification turn even reuses its ``interactionId``);
* the root is **busy** from a root ``assistant.turn_start`` (no ``parentToolCallId``), a root
  ``user.message`` or a ``system.notification`` of finished background work until the next root
  ``assistant.turn_end``; an ``abort``, a ``session.error`` or ``session.shutdown`` ends it;
* **background work**: a ``bash`` call with ``mode: "async"`` and no ``detach`` that started
  (``tool.execution_complete`` success) until ``system.notification`` ``shell_completed`` for its
  ``shellId`` (or a ``stop_bash`` of it); a ``task`` call with ``mode: "background"`` until
  ``agent_idle`` / ``agent_completed`` for its agent; ``session.shutdown`` ends all of it (the CLI
  is gone);
* a root ``agentStop`` hook still running (``hook.start`` without its ``hook.end``): a Stop hook may
  yet block; one that did (``hook.end`` ``output.decision: "block"``) starts one more turn.

Not on the hook path: the log lags the hooks (written in batches), so only the gate, the scanner
and the wake role read it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from donebell.shared.bounded_read import read_tail

#: How much of a session log is read (its end): a day of busy work is a few MiB.
LOG_CAP = 32 << 20
#: ``system.notification`` kinds that announce a turn about finished background work.
NOTIFY_KINDS = frozenset({"shell_completed", "shell_detached_completed", "agent_idle", "agent_completed"})
_SHELL_STARTED = re.compile(r"started in background with shellId: ([\w.-]+)")
_AGENT_STARTED = re.compile(r"agent_id: ([0-9A-Za-z_-]+)")


@dataclass
class Task:
    """One root task: the interaction a user's prompt started, and what happened in it."""

    interaction_id: str
    started_ms: float
    error: str | None = None
    aborted: bool = False
    last_reply: str | None = None
    last_turn_end_ms: float | None = None


@dataclass
class SessionLog:
    """The session as its log shows it now."""

    path: str
    exists: bool = False
    error: str | None = None
    size: int = 0
    mtime: float = 0.0
    last_ms: float = 0.0
    partial: bool = False  # the file is longer than LOG_CAP: its start was not read
    tasks: list[Task] = field(default_factory=list)
    busy: bool = False
    shells: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    shutdown: bool = False
    lost_background: bool = False  # work still running when the CLI shut down
    open_stop_hooks: set[str] = field(default_factory=set)
    saw_stop_hooks: bool = False
    invalid_lines: int = 0
    cwd: str | None = None  # the project folder (``session.start`` / ``session.resume`` ``context.cwd``)

    def task_at(self, signal_ms: float) -> Task | None:
        """The task in force at ``signal_ms`` (the newest one started at or before it)."""
        found = None
        for task in self.tasks:
            if task.started_ms <= signal_ms:
                found = task
        return found

    def task(self, interaction_id: str) -> Task | None:
        return next((t for t in self.tasks if t.interaction_id == interaction_id), None)

    def newer_than(self, task: Task) -> Task | None:
        """A task started after ``task``, or None."""
        index = self.tasks.index(task)
        return self.tasks[index + 1] if index + 1 < len(self.tasks) else None

    @property
    def background(self) -> list[str]:
        return [f"shell {s}" for s in sorted(self.shells)] + [f"agent {a}" for a in sorted(self.agents)]


def iso_ms(value: object) -> float | None:
    """``2026-12-06T18:45:22.497Z`` -> epoch milliseconds; None if it is not such a time."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None


def read_log(path: str) -> SessionLog:
    """Read and fold the log at ``path`` (bounded, never blocks on a FIFO)."""
    log = SessionLog(path)
    try:
        window = read_tail(path, LOG_CAP)
        log.mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return log
    except OSError as exc:
        log.error = f"{type(exc).__name__}: {exc}"[:200]
        return log
    log.exists, log.size, log.partial = True, window.size, window.partial
    folder = _Fold(log)
    for line in window.complete_lines():
        try:
            record = json.loads(line)
        except ValueError:
            log.invalid_lines += 1
            continue
        if isinstance(record, dict):
            folder.add(record)
    return log


class _Fold:
    """One pass over the records, in order."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.calls: dict[str, tuple[str, str | None]] = {}  # toolCallId -> ("shell"|"agent", id)

    def add(self, record: dict[str, Any]) -> None:
        kind, data = record.get("type"), record.get("data")
        if not isinstance(kind, str) or not isinstance(data, dict):
            return
        at = iso_ms(record.get("timestamp"))
        if at is not None:
            self.log.last_ms = max(self.log.last_ms, at)
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, data, at or self.log.last_ms)

    @property
    def current(self) -> Task | None:
        return self.log.tasks[-1] if self.log.tasks else None

    def user_message(self, data: dict[str, Any], at: float) -> None:
        if data.get("source"):  # a subagent's prompt
            return
        interaction = data.get("interactionId")
        if data.get("delivery") != "queued" and isinstance(interaction, str) and interaction:
            self.log.tasks.append(Task(interaction, at))
        self.log.busy = True

    def turn_start(self, data: dict[str, Any], at: float) -> None:
        if not data.get("parentToolCallId"):
            self.log.busy = True
            if self.current is not None:
                self.current.aborted = False

    def turn_end(self, data: dict[str, Any], at: float) -> None:
        if not data.get("parentToolCallId"):
            self.log.busy = False
            if self.current is not None:
                self.current.last_turn_end_ms = at

    def message(self, data: dict[str, Any], at: float) -> None:
        text = data.get("content")
        if not data.get("parentToolCallId") and isinstance(text, str) and text.strip() and self.current:
            self.current.last_reply = text

    def tool_start(self, data: dict[str, Any], at: float) -> None:
        call, name, args = data.get("toolCallId"), data.get("toolName"), data.get("arguments")
        if not isinstance(call, str) or not isinstance(args, dict):
            return
        if name == "bash" and args.get("mode") == "async" and not args.get("detach"):
            shell = args.get("shellId")
            self.calls[call] = ("shell", shell if isinstance(shell, str) else None)
        elif name == "task" and args.get("mode") == "background":
            self.calls[call] = ("agent", None)
        elif name == "stop_bash" and isinstance(args.get("shellId"), str):
            self.log.shells.discard(args["shellId"])

    def tool_complete(self, data: dict[str, Any], at: float) -> None:
        started = self.calls.pop(str(data.get("toolCallId")), None)
        if started is None or data.get("success") is not True:
            return
        result = data.get("result")
        text = result.get("content") if isinstance(result, dict) else None
        text = text if isinstance(text, str) else ""
        kind, named = started
        pattern = _SHELL_STARTED if kind == "shell" else _AGENT_STARTED
        found = pattern.search(text)
        ident = found.group(1) if found else named or str(data.get("toolCallId"))
        (self.log.shells if kind == "shell" else self.log.agents).add(ident)

    def notification(self, data: dict[str, Any], at: float) -> None:
        kind = data.get("kind")
        if not isinstance(kind, dict) or kind.get("type") not in NOTIFY_KINDS:
            return
        self.log.shells.discard(str(kind.get("shellId")))
        self.log.agents.discard(str(kind.get("agentId")))
        self.log.busy = True  # its turn follows

    def hook_start(self, data: dict[str, Any], at: float) -> None:
        hook_input = data.get("input")
        if data.get("hookType") == "agentStop" and not (isinstance(hook_input, dict) and hook_input.get("agentId")):
            self.log.saw_stop_hooks = True
            self.log.open_stop_hooks.add(str(data.get("hookInvocationId")))

    def hook_end(self, data: dict[str, Any], at: float) -> None:
        invocation = str(data.get("hookInvocationId"))
        if invocation not in self.log.open_stop_hooks:
            return
        self.log.open_stop_hooks.discard(invocation)
        output = data.get("output")
        if isinstance(output, dict) and output.get("decision") == "block":
            self.log.busy = True  # the block's reason is the next turn's prompt

    def error(self, data: dict[str, Any], at: float) -> None:
        self.log.busy = False
        if self.current is not None:
            message = data.get("message") or data.get("errorType") or "API error"
            self.current.error = str(message)[:300]

    def abort(self, data: dict[str, Any], at: float) -> None:
        self.log.busy = False
        if self.current is not None:
            self.current.aborted = True

    def shutdown(self, data: dict[str, Any], at: float) -> None:
        self.log.lost_background = bool(self.log.shells or self.log.agents)
        self.log.shells.clear()
        self.log.agents.clear()
        self.log.open_stop_hooks.clear()
        self.log.busy, self.log.shutdown = False, True

    def resume(self, data: dict[str, Any], at: float) -> None:
        self.log.shutdown = self.log.lost_background = False
        context = data.get("context")
        cwd = context.get("cwd") if isinstance(context, dict) else None
        if isinstance(cwd, str) and cwd:
            self.log.cwd = cwd[:4096]


_HANDLERS = {
    "user.message": _Fold.user_message,
    "assistant.turn_start": _Fold.turn_start,
    "assistant.turn_end": _Fold.turn_end,
    "assistant.message": _Fold.message,
    "tool.execution_start": _Fold.tool_start,
    "tool.execution_complete": _Fold.tool_complete,
    "system.notification": _Fold.notification,
    "hook.start": _Fold.hook_start,
    "hook.end": _Fold.hook_end,
    "session.error": _Fold.error,
    "abort": _Fold.abort,
    "session.shutdown": _Fold.shutdown,
    "session.start": _Fold.resume,
    "session.resume": _Fold.resume,
}
