"""Notification truth (issue 14, items 1-7): wrong, lost or duplicated notifications, reproduced
through the real commands: real rollouts and hook processes, ``worker local-scanner|delivery
--once`` processes and the ntfy stand-in. Each test pins the outcome docs/reliability.md lists.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key, sequence_id
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence

#: An event_msg that names a lifecycle event but is not shaped like one (item 1).
MALFORMED_LIFECYCLE = {
    "payload-string": b'{"timestamp":"2026-12-01T00:00:00.000Z","type":"event_msg","payload":"task_started"}\n',
    "type-not-string": b'{"timestamp":"2026-12-01T00:00:00.000Z","type":"event_msg",'
    b'"payload":{"type":["task_started"],"turn_id":"t-next"}}\n',
}


def _append(turn: Turn, data: bytes, *, backdate: float = 1.0) -> None:
    with open(turn.rollout, "ab") as f:
        f.write(data)
    then = time.time() - backdate
    os.utime(turn.rollout, (then, then))


def _event(payload: dict[str, Any]) -> bytes:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    return json.dumps({"timestamp": stamp, "type": "event_msg", "payload": payload}).encode() + b"\n"


def _child_rollout(rig: Rig, root: Turn, tail: bytes) -> None:
    """A finished subagent of ``root`` (session_meta names the parent), then ``tail``."""
    child = str(uuid.uuid4())
    turn = str(uuid.uuid4())
    meta = {
        "type": "session_meta",
        "payload": {"id": child, "parent_thread_id": root.thread_id, "thread_source": "subagent", "cwd": "/work/p"},
    }
    lines = json.dumps(meta).encode() + b"\n"
    lines += _event({"type": "task_started", "turn_id": turn})
    lines += _event({"type": "task_complete", "turn_id": turn, "last_agent_message": "child done"})
    path = root.rollout.with_name(f"rollout-2026-12-01T00-00-00-{child}.jsonl")
    path.write_bytes(lines + tail)


def _wait_reason(rig: Rig, key: str) -> str | None:
    record = rig.state.read("pending", key)
    history = ((record or {}).get("probe") or {}).get("history") or [{}]
    reason = history[-1].get("reason")
    return str(reason) if reason is not None else None


@pytest.mark.parametrize("mode", ["strict", "balanced"])
@pytest.mark.parametrize("case", MALFORMED_LIFECYCLE)
def test_a_malformed_lifecycle_record_after_the_root_completion_is_invalid_evidence(
    make_rig: Callable[..., Rig], standin: NtfyStandin, case: str, mode: str
) -> None:
    """Item 1, root: an event_msg naming task_started whose payload is a string (or whose type is not a
    string) after the root's task_complete holds the turn through the grace, then `unverifiable`."""
    rig = make_rig(idle_probe_grace_seconds=2.0, idle_detection_mode=mode)
    turn = rig.new_turn(complete=True)
    _append(turn, MALFORMED_LIFECYCLE[case])

    assert rig.hook_stop(turn).rc == 0
    assert rig.deliver_once().rc == 0
    assert rig.where(turn.key) == ["pending"], "released at once on malformed lifecycle evidence"
    assert _wait_reason(rig, turn.key) == "malformed-after-completion"
    time.sleep(2.2)
    rig.settle([turn.key], scan=False)

    assert rig.where(turn.key) == ["suppressed"]
    receipt = rig.state.read("suppressed", turn.key)
    assert receipt is not None and receipt["reason"] == "unverifiable"
    assert standin.messages(rig.topic) == []


@pytest.mark.parametrize("mode", ["strict", "balanced"])
@pytest.mark.parametrize("case", MALFORMED_LIFECYCLE)
def test_a_malformed_lifecycle_record_in_a_child_rollout_holds_the_root(
    make_rig: Callable[..., Rig], standin: NtfyStandin, case: str, mode: str
) -> None:
    """Item 1, child: a finished child whose rollout then gets a malformed lifecycle record is not
    finished: the root holds (`child-invalid`, fail closed in both modes) past the probe grace."""
    rig = make_rig(idle_probe_grace_seconds=1.0, idle_detection_mode=mode)
    turn = rig.new_turn(complete=True)
    _child_rollout(rig, turn, MALFORMED_LIFECYCLE[case])

    assert rig.hook_stop(turn).rc == 0
    assert rig.deliver_once().rc == 0
    time.sleep(1.2)
    assert rig.deliver_once().rc == 0

    assert rig.where(turn.key) == ["pending"], "the root was released with an unreadable child"
    assert _wait_reason(rig, turn.key) == "child-invalid"
    assert standin.messages(rig.topic) == []


def test_a_codex_stop_whose_agent_id_is_its_own_session_id_does_not_silence_the_root(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 3: `agent_id == session_id` is not a sub-agent's Stop (a sub-agent's id is never its root's):
    no `subagent` receipt on the root's key; hook plus scanner notify the root turn once."""
    rig = make_rig()
    turn = rig.new_turn()
    payload = rig.stop_payload(turn)
    payload["agent_id"] = turn.thread_id
    assert rig.run("hook", "codex-stop", stdin=json.dumps(payload).encode()).rc == 0
    assert rig.where(turn.key) == ["pending"], "the root's own key got a receipt from its Stop"
    rig.complete(turn)

    rig.settle([turn.key])

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}


CLAUDE = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "claude" / "print-tool"
CLAUDE_PROMPT = "b522e1c8-ef06-4602-a43c-969646624918"


def _claude_prompt_lines(session: str, prompt: str) -> bytes:
    """The recorded print-tool prompt (user, tool use, final answer) as prompt ``prompt`` of ``session``."""
    renamed: dict[str, str] = {}
    out = b""
    for raw in (CLAUDE / "bcd90786-c5dc-4556-ab76-41b75d464f9d.jsonl").read_bytes().splitlines():
        obj = json.loads(raw)
        if obj.get("type") not in ("user", "assistant", "attachment"):
            continue
        for name in ("uuid", "parentUuid"):
            if isinstance(obj.get(name), str):
                obj[name] = renamed.setdefault(obj[name], str(uuid.uuid4()))
        obj["sessionId"] = session
        if obj.get("promptId") == CLAUDE_PROMPT:
            obj["promptId"] = prompt
        out += json.dumps(obj).encode() + b"\n"
    return out


def _claude_payload(event: str, session: str, prompt: str, transcript: Path) -> bytes:
    lines = (CLAUDE / "hooks.jsonl").read_text().splitlines()
    payload = next(p for p in (json.loads(line)["payload"] for line in lines) if p["hook_event_name"] == event)
    payload.update(session_id=session, prompt_id=prompt, transcript_path=str(transcript), cwd=str(transcript.parent))
    return json.dumps(payload).encode()


def test_a_late_user_prompt_submit_of_an_earlier_prompt_does_not_supersede_the_later_one(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 2: prompt A, then prompt B (UserPromptSubmit and Stop), then A's UserPromptSubmit again (late
    or repeated): it is stale, like a late Stop, so B's candidate stays and is notified exactly once."""
    rig = make_rig()
    session, first, second = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    folder = rig.claude_dir / "projects" / "-work-p"
    folder.mkdir(parents=True)
    transcript = folder / f"{session}.jsonl"

    def hook(event: str, prompt: str) -> None:
        assert rig.run("hook", "claude", stdin=_claude_payload(event, session, prompt, transcript)).rc == 0

    hook("UserPromptSubmit", first)
    transcript.write_bytes(_claude_prompt_lines(session, first))
    hook("Stop", first)
    hook("UserPromptSubmit", second)
    with open(transcript, "ab") as f:
        f.write(_claude_prompt_lines(session, second))
    hook("Stop", second)
    hook("UserPromptSubmit", first)  # late / repeated
    later = event_key("claude", session, second)
    assert rig.where(later) == ["pending"], "the stale UserPromptSubmit superseded the later prompt"
    then = time.time() - 1
    os.utime(transcript, (then, then))
    time.sleep(0.6)  # the Claude settle after the latest Stop

    rig.settle([later], scan=False)

    assert rig.where(later) == ["sent"]
    assert rig.where(event_key("claude", session, first)) == ["suppressed"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {sequence_id("claude", later): 1}


def test_a_rollout_rewritten_in_place_to_the_same_size_is_restarted(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 6: after a notified turn the rollout is truncated and rewritten (same inode) to exactly its
    old size with a new turn: the cursor's last line no longer matches, so the scanner restarts the
    file and notifies the new turn once (the old one is not repeated)."""
    rig = make_rig()
    first = rig.new_turn(complete=True)
    rig.settle([first.key])
    history = first.rollout.read_bytes()
    meta = history[: history.index(b"\n") + 1]
    second = rig.next_turn(first, complete=True)
    rewritten = meta + first.rollout.read_bytes()[len(history) :]
    assert len(rewritten) == len(history)
    inode = first.rollout.stat().st_ino
    with open(first.rollout, "r+b") as f:
        f.truncate(0)
        f.write(rewritten)
    os.utime(first.rollout, (time.time() - 1, time.time() - 1))
    assert (first.rollout.stat().st_ino, first.rollout.stat().st_size) == (inode, len(history))

    rig.settle([second.key])

    assert rig.where(first.key) == rig.where(second.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {first.sequence_id: 1, second.sequence_id: 1}
    assert any("restarting" in str(line.get("msg")) for line in rig.log())


@pytest.mark.parametrize("skew", [600.0, 86400.0], ids=["10-minutes", "one-day"])
def test_a_scanner_only_turn_is_reported_when_the_agent_clock_is_off(
    make_rig: Callable[..., Rig], standin: NtfyStandin, skew: float
) -> None:
    """Item 7: no hook; the agent stamps its records ``skew`` seconds behind this machine's clock. The
    scanner met the rollout mid-turn (its cursor exists); the task_complete appended afterwards is live
    whatever its timestamp says, so the turn is notified once (only the first replay is time-bounded)."""
    rig = make_rig()
    turn = rig.new_turn(at=time.time() - skew)
    assert rig.scan_once().rc == 0
    assert rig.counts()["pending"] == 0
    rig.complete(turn)

    rig.settle([turn.key])

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
