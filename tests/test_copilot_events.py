"""The Copilot session-log fold (``workers/agents/copilot/events.py``) on hand-made records: what
counts as a task, as busy, as background work, and what bad lines do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from donebell.workers.agents.copilot.events import read_log


def write(path: Path, *records: tuple[str, dict[str, Any]], junk: bytes = b"") -> str:
    lines = [
        json.dumps({"type": t, "data": d, "timestamp": f"2026-12-06T18:00:{i:02d}.000Z"})
        for i, (t, d) in enumerate(records)
    ]
    path.write_bytes("\n".join(lines).encode() + b"\n" + junk)
    return str(path)


PROMPT = ("user.message", {"interactionId": "i1", "delivery": "idle"})
START, END = ("assistant.turn_start", {"turnId": "0"}), ("assistant.turn_end", {"turnId": "0"})


def test_a_missing_log_is_not_an_error(tmp_path: Path) -> None:
    log = read_log(str(tmp_path / "nope.jsonl"))
    assert not log.exists and log.error is None and log.tasks == []


def test_queued_and_subagent_messages_continue_the_task(tmp_path: Path) -> None:
    path = write(
        tmp_path / "e.jsonl",
        PROMPT,
        START,
        END,
        ("user.message", {"interactionId": "i2", "delivery": "queued"}),  # a Stop hook's block reason
        ("user.message", {"interactionId": "s1", "delivery": "idle", "source": "agent-x"}),  # a subagent
        START,
        END,
    )
    log = read_log(path)
    assert [t.interaction_id for t in log.tasks] == ["i1"] and not log.busy


def test_a_subagents_turn_does_not_make_the_root_busy(tmp_path: Path) -> None:
    sub = ("assistant.turn_start", {"turnId": "0", "parentToolCallId": "t"})
    assert not read_log(write(tmp_path / "e.jsonl", PROMPT, START, END, sub)).busy


def test_an_async_shell_holds_until_its_notification_or_stop_bash(tmp_path: Path) -> None:
    started: list[tuple[str, dict[str, Any]]] = [
        (
            "tool.execution_start",
            {"toolCallId": "c1", "toolName": "bash", "arguments": {"mode": "async", "shellId": "a"}},
        ),
        (
            "tool.execution_complete",
            {
                "toolCallId": "c1",
                "success": True,
                "result": {"content": "<command started in background with shellId: a>"},
            },
        ),
    ]
    assert read_log(write(tmp_path / "1.jsonl", PROMPT, START, *started, END)).background == ["shell a"]
    notified = ("system.notification", {"kind": {"type": "shell_completed", "shellId": "a"}})
    log = read_log(write(tmp_path / "2.jsonl", PROMPT, START, *started, END, notified))
    assert log.background == [] and log.busy  # its notification turn follows
    stopped = ("tool.execution_start", {"toolCallId": "c2", "toolName": "stop_bash", "arguments": {"shellId": "a"}})
    assert read_log(write(tmp_path / "3.jsonl", PROMPT, START, *started, stopped, END)).background == []


def test_a_detached_or_failed_shell_never_holds(tmp_path: Path) -> None:
    detached = (
        "tool.execution_start",
        {"toolCallId": "c1", "toolName": "bash", "arguments": {"mode": "async", "detach": True}},
    )
    done = ("tool.execution_complete", {"toolCallId": "c1", "success": True, "result": {"content": "started"}})
    assert read_log(write(tmp_path / "1.jsonl", PROMPT, START, detached, done, END)).background == []
    shell = ("tool.execution_start", {"toolCallId": "c1", "toolName": "bash", "arguments": {"mode": "async"}})
    failed = ("tool.execution_complete", {"toolCallId": "c1", "success": False})
    assert read_log(write(tmp_path / "2.jsonl", PROMPT, START, shell, failed, END)).background == []


def test_shutdown_ends_background_work_and_says_so(tmp_path: Path) -> None:
    agent = ("tool.execution_start", {"toolCallId": "c1", "toolName": "task", "arguments": {"mode": "background"}})
    done = (
        "tool.execution_complete",
        {"toolCallId": "c1", "success": True, "result": {"content": "agent_id: ab-1. You"}},
    )
    log = read_log(write(tmp_path / "e.jsonl", PROMPT, START, agent, done, END))
    assert log.background == ["agent ab-1"]
    log = read_log(write(tmp_path / "e.jsonl", PROMPT, START, agent, done, END, ("session.shutdown", {})))
    assert log.background == [] and log.lost_background and log.shutdown


def test_errors_and_aborts_belong_to_the_task(tmp_path: Path) -> None:
    log = read_log(write(tmp_path / "1.jsonl", PROMPT, START, ("session.error", {"message": "529 Overloaded"})))
    assert log.tasks[0].error == "529 Overloaded" and not log.busy
    log = read_log(write(tmp_path / "2.jsonl", PROMPT, START, ("abort", {"reason": "user_initiated"})))
    assert log.tasks[0].aborted and not log.busy


def test_junk_and_a_half_written_last_line_are_counted_not_fatal(tmp_path: Path) -> None:
    log = read_log(write(tmp_path / "e.jsonl", PROMPT, START, ("x", {}), END, junk=b'not json\n{"type": "user.mess'))
    assert log.invalid_lines == 1 and [t.interaction_id for t in log.tasks] == ["i1"] and not log.busy


def test_a_blocking_stop_hook_is_one_more_turn(tmp_path: Path) -> None:
    hook = ("hook.start", {"hookInvocationId": "h1", "hookType": "agentStop", "input": {}})
    running = read_log(write(tmp_path / "1.jsonl", PROMPT, START, END, hook))
    assert running.open_stop_hooks == {"h1"}
    block = ("hook.end", {"hookInvocationId": "h1", "hookType": "agentStop", "output": {"decision": "block"}})
    assert read_log(write(tmp_path / "2.jsonl", PROMPT, START, END, hook, block)).busy
