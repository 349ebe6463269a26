""" "Needs you" notifications (issue 28 item 1): the real recorded PermissionRequest / Notification
payloads of Claude Code and Codex through the real hook subprocess, the real delivery role and its
policies, to the ntfy stand-in. Fixtures: tests/fixtures/approvals/ (recorded on the real CLIs) and
a real Claude transcript (tests/fixtures/gate/claude/print-tool.jsonl) cut before its tool result.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import now
from support.hooks_harness import HookEnv
from support.ntfy_standin import NtfyStandin
from support.policy_kit import policy_env, receipt, wire_bodies

FIXTURES = Path(__file__).parent / "fixtures"
APPROVALS = FIXTURES / "approvals"
TRANSCRIPT = FIXTURES / "gate" / "claude" / "print-tool.jsonl"
COMMAND = "touch approval-marker.txt && echo approval-ran"
#: The transcript's lines with its one call made the recorded prompts' call (the hook's
#: tool_input is the tool_use block's input): its tool_result (line 7) answers that very request.
ASKING_LINES = [
    line.replace(
        b'"input":{"command":"echo hi","description":"Print hi"}',
        json.dumps(
            {"input": {"command": COMMAND, "description": "Create the approval marker file"}}, separators=(",", ":")
        )[1:-1].encode(),
    )
    for line in TRANSCRIPT.read_bytes().splitlines(keepends=True)
]


def recorded(agent: str, scenario: str) -> dict[str, dict[str, Any]]:
    """The hook payloads of one recorded run, by event name (the last one of each wins)."""
    out: dict[str, dict[str, Any]] = {}
    for line in (APPROVALS / agent / scenario / "hooks.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "payload" in entry:
            key = entry["event"]
            if key == "Notification":
                key = f"Notification:{entry['payload']['notification_type']}"
            out[key] = entry["payload"]
    return out


class World:
    """A config + state dir shared by the hook subprocesses and an in-process delivery role."""

    def __init__(self, root: Path, server: str, **config: Any) -> None:
        self.env = policy_env(root, server, **config)
        self.hooks = HookEnv(root)
        self.transcript = root / "transcript.jsonl"
        lines = ASKING_LINES
        self.before_answer, self.answer = lines[:7], lines[7]  # up to the tool_use; its tool_result
        self.transcript.write_bytes(b"".join(self.before_answer))

    def claude(self, payload: dict[str, Any], **changes: Any) -> dict[str, Any]:
        sent = {**payload, "transcript_path": str(self.transcript), **changes}
        self.hooks.claude(sent)
        return sent

    def codex(self, payload: dict[str, Any]) -> None:
        result = self.hooks.run("codex-permission", stdin={**payload, "transcript_path": str(self.transcript)})
        assert (result.returncode, result.stdout) == (0, b""), result  # no decision: Codex's own path goes on

    def needs(self) -> list[dict[str, Any]]:
        state = self.env.state
        return [r for k in state.keys("outbox") if (r := state.read("outbox", k)) and r.get("notice") == "needs-you"]

    def deliver(self, at: float | None = None) -> None:
        role = self.env.role()
        role.pass_at(now() if at is None else at)
        role.teardown()


@pytest.fixture()
def world(srv: NtfyStandin, tmp_path: Path) -> World:
    return World(tmp_path, srv.url)


def test_claude_permission_prompt_is_one_raising_hand_notification(world: World, srv: NtfyStandin) -> None:
    """PreToolUse, PermissionRequest and the permission_prompt Notification 6 s later (the recorded
    TUI run) are one request: one notification, tag raising_hand, priority 4, tool and summary, no command."""
    events = recorded("claude", "interactive-2.1.197-record")
    world.claude(events["PreToolUse"])
    asked = world.claude(events["PermissionRequest"])
    world.claude(events["Notification:permission_prompt"])
    world.claude(events["PermissionRequest"])  # the same prompt again
    [record] = world.needs()
    assert (record["provider"], record["session_id"], record["wants"], record["tool"]) == (
        "claude",
        asked["session_id"],
        "permission",
        "Bash",
    )
    assert record["request_text"] is None  # include_message is off: the command is never stored
    world.deliver()
    [body] = wire_bodies(srv)
    assert body["tags"][0] == "raising_hand" and body["priority"] == 4
    assert body["title"] == "work"  # the project (cwd) names the task when thread titles are off
    assert body["message"].startswith("needs your permission: Bash · Create the approval marker file")
    assert COMMAND not in json.dumps(body)
    assert body["sequence_id"] == record["sequence_id"]
    assert receipt(world.env, record["key"])[1]["notice"] == "needs-you"  # type: ignore[index]


def test_command_text_only_with_include_message_and_redacted(srv: NtfyStandin, tmp_path: Path) -> None:
    world = World(tmp_path, srv.url, include_message=True)
    request = recorded("claude", "print-2.1.332-record")["PermissionRequest"]
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    tool_input = {**request["tool_input"], "command": f"GH_TOKEN={secret} gh release create v1"}
    world.claude(request, tool_input=tool_input)
    world.deliver()
    [body] = wire_bodies(srv)
    assert "gh release create v1" in body["message"]
    assert secret not in json.dumps(body) and secret not in world.env.all_state_text()


def test_answered_at_the_desk_within_the_grace_sends_nothing(srv: NtfyStandin, tmp_path: Path) -> None:
    """A prompt answered at the terminal (the tool result lands in the transcript) before the desk
    grace ends is dropped as answered-at-desk; one nobody answered is pushed after the grace."""
    world = World(tmp_path, srv.url, desk_grace_seconds=0.5)
    tui = recorded("claude", "interactive-2.1.197-record")
    world.claude(tui["PermissionRequest"])
    [answered] = world.needs()
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"".join(world.before_answer))
    world.claude(
        tui["PermissionRequest"], session_id="c0ffee00-0000-4000-8000-000000000002", transcript_path=str(other)
    )
    waiting = next(r for r in world.needs() if r["key"] != answered["key"])
    world.deliver()
    assert wire_bodies(srv) == []  # both held by the grace
    with world.transcript.open("ab") as f:
        f.write(world.answer)  # the user pressed "Yes" at the terminal: the command ran
    time.sleep(0.6)
    world.deliver()
    folder, rec = receipt(world.env, answered["key"])
    assert (folder, rec and rec["reason"]) == ("suppressed", "answered-at-desk")
    assert "tool_result" in rec["policy_evidence"]  # type: ignore[index]
    assert receipt(world.env, waiting["key"])[0] == "sent"
    assert [b["tags"][0] for b in wire_bodies(srv)] == ["raising_hand"]


def test_the_next_request_after_an_answer_is_a_new_notification(world: World, srv: NtfyStandin) -> None:
    request = recorded("claude", "print-2.1.332-record")["PermissionRequest"]
    world.claude(request)
    with world.transcript.open("ab") as f:  # answered, and the model asks for the next call
        f.write(world.answer)
        f.write(world.before_answer[6].replace(b"toolu_32bfd87461764b979d0a6b89", b"toolu_second000000000000000"))
    world.claude(request)
    world.claude(request)
    assert len(world.needs()) == 2
    world.deliver()
    assert len(wire_bodies(srv)) == 2


def test_a_subagents_prompt_counts_named_as_the_subagents(world: World, srv: NtfyStandin) -> None:
    request = recorded("claude", "print-2.1.332-record")["PermissionRequest"]
    world.claude(request, agent_id="a9d049bb26e145e5c", agent_type="general-purpose")
    [record] = world.needs()
    assert record["agent_id"] == "a9d049bb26e145e5c"
    world.deliver()
    [body] = wire_bodies(srv)
    assert "subagent general-purpose" in body["message"] and body["tags"][0] == "raising_hand"


@pytest.mark.parametrize(
    ("kind", "headline"),
    [("elicitation_dialog", "asks you a question"), ("agent_needs_input", "needs your input")],
)
def test_claude_question_notifications(world: World, srv: NtfyStandin, kind: str, headline: str) -> None:
    base = recorded("claude", "interactive-2.1.197-record")["Notification:permission_prompt"]
    world.claude(base, notification_type=kind, message="Claude Code needs your input")
    world.deliver()
    [body] = wire_bodies(srv)
    assert body["message"].startswith(f"{headline} · Claude Code needs your input"), body["message"]


def test_codex_permission_request_is_one_notification(world: World, srv: NtfyStandin) -> None:
    request = recorded("codex", "exec-approve-for-me-record")["PermissionRequest"]
    world.codex(request)
    world.codex(request)  # the same request again
    [record] = world.needs()
    assert (record["thread_id"], record["turn_id"]) == (request["session_id"], request["turn_id"])
    world.deliver()
    [body] = wire_bodies(srv)
    assert body["tags"][0] == "raising_hand" and body["priority"] == 4
    assert body["message"].startswith("needs your permission: Bash · Create the approval marker file")
    assert body["sequence_id"].startswith("codex-")


def test_quiet_hours_hold_a_needs_you_notification(srv: NtfyStandin, tmp_path: Path) -> None:
    world = World(tmp_path, srv.url, quiet_hours="00:00-23:59", quiet_hours_tz="UTC")
    world.claude(recorded("claude", "print-2.1.332-record")["PermissionRequest"])
    [record] = world.needs()
    world.deliver()
    assert wire_bodies(srv) == []
    assert world.env.state.read("outbox", record["key"])["policy"]["quiet_until"]  # type: ignore[index]


def test_idle_notifications_and_a_disabled_claude_write_no_needs_you(world: World) -> None:
    """What donebell did before stays: idle_prompt is an accelerator only; enable_claude_code off ignores all."""
    base = recorded("claude", "interactive-2.1.197-record")["Notification:permission_prompt"]
    world.claude(base, notification_type="idle_prompt")
    assert world.needs() == []
    world.env.update_config(enable_claude_code=False)
    world.claude(recorded("claude", "print-2.1.332-record")["PermissionRequest"])
    assert world.needs() == []


def test_a_broken_payload_never_hurts_the_agent(world: World) -> None:
    for stdin in (b"{not json", b'{"hook_event_name": "PermissionRequest"}'):
        for args in (("claude",), ("codex-permission",)):
            result = world.hooks.run(*args, stdin=stdin)
            assert (result.returncode, result.stdout) == (0, b""), result
    assert world.needs() == []


def test_a_fifo_planted_as_the_transcript_never_blocks_the_hook(world: World, tmp_path: Path) -> None:
    """The hook reads the transcript without blocking: a FIFO is refused unread, the record still written."""
    fifo = tmp_path / "planted.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    world.claude(recorded("claude", "print-2.1.332-record")["PermissionRequest"], transcript_path=str(fifo))
    assert time.monotonic() - started < 20  # the harness's own timeout is 60 s; a blocked open never returns
    [record] = world.needs()
    assert record["answer_offset"] == 0 and record["tool"] == "Bash"


def test_the_notification_after_a_lazy_transcript_flush_is_the_same_request(world: World, srv: NtfyStandin) -> None:
    """Claude flushes its transcript lazily: the tool_use line can land between the PermissionRequest
    and the permission_prompt Notification ~6 s later (seen in the real TUI). Still one request."""
    tui = recorded("claude", "interactive-2.1.197-record")
    world.transcript.write_bytes(b"".join(world.before_answer[:6]))  # the tool_use not written yet
    world.claude(tui["UserPromptSubmit"] if "UserPromptSubmit" in tui else _prompt(tui["PermissionRequest"]))
    world.claude(tui["PermissionRequest"])
    with world.transcript.open("ab") as f:
        f.write(world.before_answer[6])  # now the flush arrives
    world.claude(tui["Notification:permission_prompt"])
    assert len(world.needs()) == 1
    with world.transcript.open("ab") as f:
        f.write(world.answer)  # answered: a later prompt of the same prompt is a new request
    world.claude(tui["Notification:permission_prompt"])
    assert len(world.needs()) == 2


def _prompt(payload: dict[str, Any]) -> dict[str, Any]:
    """The UserPromptSubmit that opened ``payload``'s prompt (the recorded run's own ids)."""
    keep = ("session_id", "transcript_path", "cwd", "prompt_id", "permission_mode")
    return {**{k: payload[k] for k in keep}, "hook_event_name": "UserPromptSubmit", "prompt": "do it"}
