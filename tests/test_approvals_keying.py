"""One tap answers one exact call (issue 34 items 1, 2 and 10), through the real hook subprocess.

The recorded Claude Code PermissionRequest and Notification payloads (tests/fixtures/approvals/)
against a transcript built from a real one (the recorded print-mode run's records), changed only
in the calls its assistant message asks for: two Bash calls in one message, a Read and a Bash,
a result flushed late. The hook runs as the agent runs it (``donebell hook claude``) and waits for
the phone; the wake pipeline receives the taps in process, as in tests/test_approvals.py.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.workers.agents.registry import agent
from donebell.workers.kit.needs_answered import needs_answered
from support.ntfy_standin import NtfyStandin
from support.policy_kit import wire_bodies
from test_approvals import ALLOW, Phone, _printed
from test_needs_you import ASKING_LINES, World, recorded

pytestmark = pytest.mark.usefixtures("no_outside_config")

TUI = recorded("claude", "interactive-2.1.197-record")
PROMPT_ID = TUI["PermissionRequest"]["prompt_id"]
FIRST = {"command": "touch first.txt && echo first-ran", "description": "Create the first file"}
SECOND = {"command": "rm -rf ./build && echo second-ran", "description": "Remove the build folder"}
READ = {"file_path": "/tmp/notes.txt"}


def tool_use(call_id: str, name: str, tool_input: dict[str, Any]) -> bytes:
    """One assistant record of a message's ``tool_use`` block, shaped as the recorded transcript's."""
    record = json.loads(ASKING_LINES[6])
    record["message"]["content"] = [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}]
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def tool_result(call_id: str, text: str = "ok") -> bytes:
    record = json.loads(ASKING_LINES[7])
    record["promptId"] = PROMPT_ID
    record["message"]["content"] = [{"tool_use_id": call_id, "type": "tool_result", "content": text}]
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def asks(phone: Phone, tool_input: dict[str, Any], tool: str = "Bash") -> subprocess.Popen[bytes]:
    """The agent's PermissionRequest for ``tool_input``: the real hook process, waiting."""
    payload = {**TUI["PermissionRequest"], "tool_name": tool, "tool_input": tool_input}
    proc = subprocess.Popen(
        phone.hooks.argv("claude"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=phone.hooks.env()
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({**payload, "transcript_path": str(phone.transcript)}).encode())
    proc.stdin.close()
    return proc


def needs(phone: Phone, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    """The needs-you records, oldest first, once there are ``count``."""
    deadline = time.monotonic() + timeout
    while True:
        found = [r for k in phone.state.keys("outbox") if (r := phone.state.read("outbox", k))]
        found = sorted((r for r in found if r.get("notice") == "needs-you"), key=lambda r: r["created_at"])
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def transcript(phone: Phone, *records: bytes) -> None:
    phone.transcript.write_bytes(b"".join([*ASKING_LINES[:6], *records]))


@pytest.fixture()
def phone(tmp_path: Path) -> Phone:
    return Phone(tmp_path, approval_wait_seconds=6)


def test_two_calls_of_one_message_are_two_requests_and_one_tap_answers_one(phone: Phone) -> None:
    """Two Bash prompts from one assistant message, the transcript unchanged between the two
    hooks: the first's Allow answered the second too (it shared the first's key and printed its
    Allow after 0.1 s, a command never shown on the phone). Each call is its own request now,
    with its own push, and the second waits for its own answer (none: it prints nothing)."""
    transcript(phone, tool_use("toolu_first", "Bash", FIRST), tool_use("toolu_second", "Bash", SECOND))
    first = asks(phone, FIRST)
    [asked_first] = needs(phone, 1)
    assert phone.tap(phone.ticket(asked_first, "allow"))["status"] == "answered"  # type: ignore[index]
    assert json.loads(_printed(first)) == ALLOW
    started = time.monotonic()
    second = asks(phone, SECOND)
    assert _printed(second) == b""  # its own wait ran out: the agent's own dialog decides
    assert time.monotonic() - started > 5.0
    one, two = needs(phone, 2)
    assert one["key"] != two["key"] and one["tool_digest"] != two["tool_digest"]
    assert (one["tool_use_id"], two["tool_use_id"]) == ("toolu_first", "toolu_second")
    assert phone.state.answer_box().read(two["key"])["decision"] == "closed"  # type: ignore[index]


def test_the_same_call_asked_again_is_a_new_request_not_the_earlier_allow(phone: Phone) -> None:
    """The same command twice in one message (one digest, the transcript unchanged): once the
    first prompt was answered, the second is a request of its own, never answered by that tap."""
    transcript(phone, tool_use("toolu_a", "Bash", FIRST), tool_use("toolu_b", "Bash", FIRST))
    first = asks(phone, FIRST)
    [asked] = needs(phone, 1)
    phone.tap(phone.ticket(asked, "allow"))
    assert json.loads(_printed(first)) == ALLOW
    again = asks(phone, FIRST)
    assert _printed(again) == b""
    one, two = needs(phone, 2)
    assert one["key"] != two["key"] and one["tool_digest"] == two["tool_digest"]


def test_an_answer_naming_another_call_allows_nothing(phone: Phone) -> None:
    """The answer records the digest of the call it answers; the hook prints it only on a match."""
    transcript(phone, tool_use("toolu_first", "Bash", FIRST))
    proc = asks(phone, FIRST)
    [asked] = needs(phone, 1)
    phone.state.answer_box().answer(asked["key"], "allow", digest="0" * 16, message_id="planted")
    assert _printed(proc) == b""


def test_another_calls_result_is_no_answer_at_the_terminal(phone: Phone) -> None:
    """A Read (no prompt) and a Bash (a prompt) in one message: the Read's result lands while the
    Bash dialog is open. It was taken as "answered at the terminal" (the wait stopped, the phone's
    Allow was refused ``already-answered``); the phone's Allow is accepted now."""
    transcript(phone, tool_use("toolu_read", "Read", READ), tool_use("toolu_bash", "Bash", FIRST))
    proc = asks(phone, FIRST)
    [asked] = needs(phone, 1)
    with phone.transcript.open("ab") as f:
        f.write(tool_result("toolu_read", "notes"))
    time.sleep(1.5)  # three of the hook's looks at the terminal
    assert needs_answered(phone.state, asked, agent(asked.get("provider"))) is None
    reply = phone.tap(phone.ticket(asked, "allow"))
    assert reply is not None and reply["status"] == "answered", reply
    assert json.loads(_printed(proc)) == ALLOW


def test_a_call_not_in_the_transcript_yet_waits_for_what_ends_the_whole_wait(phone: Phone) -> None:
    """The Bash's tool_use not flushed yet when its hook runs: another call's result still does not
    answer it; the turn's end does."""
    transcript(phone, tool_use("toolu_read", "Read", READ))
    proc = asks(phone, FIRST)
    [asked] = needs(phone, 1)
    with phone.transcript.open("ab") as f:
        f.write(tool_result("toolu_read", "notes"))
    time.sleep(1.0)
    assert needs_answered(phone.state, asked, agent(asked.get("provider"))) is None and proc.poll() is None
    with phone.transcript.open("ab") as f:
        f.write(ASKING_LINES[8])  # the reply that ends the turn
    assert _printed(proc, timeout=10) == b""
    answer = phone.state.answer_box().read(asked["key"])
    assert answer is not None and "the turn ended" in answer["reason"], answer


def test_its_own_result_is_the_answer_at_the_terminal(phone: Phone) -> None:
    transcript(phone, tool_use("toolu_read", "Read", READ), tool_use("toolu_bash", "Bash", FIRST))
    proc = asks(phone, FIRST)
    [asked] = needs(phone, 1)
    with phone.transcript.open("ab") as f:
        f.write(tool_result("toolu_read") + tool_result("toolu_bash", "first-ran"))
    assert _printed(proc, timeout=10) == b""
    assert "this call's tool_result" in phone.state.answer_box().read(asked["key"])["reason"]  # type: ignore[index]


# ---- item 10: one request, one push, whatever order the hooks and the flushes come in ----------


def test_a_late_flushed_result_of_the_previous_call_makes_no_third_push(srv: NtfyStandin, tmp_path: Path) -> None:
    """Two dialogs in a row, Claude's flush late (a loaded machine): the first hook runs before
    its tool_use is written; the second before the first call's result and its own tool_use are.
    The second's permission_prompt then found "a tool_result after the request" (the first call's)
    and made a third push for two dialogs. Only the request's own call's result answers it."""
    world = World(tmp_path, srv.url)
    first = {**TUI["PermissionRequest"], "tool_input": FIRST}
    second = {**TUI["PermissionRequest"], "tool_input": SECOND}
    world.transcript.write_bytes(b"".join(ASKING_LINES[:6]))
    world.claude(first)  # its tool_use not flushed yet
    with world.transcript.open("ab") as f:
        f.write(tool_use("toolu_first", "Bash", FIRST))
    world.claude(TUI["Notification:permission_prompt"])
    world.claude(second)  # answered at the desk; the result and the next call not flushed yet
    with world.transcript.open("ab") as f:
        f.write(tool_result("toolu_first", "first-ran") + tool_use("toolu_second", "Bash", SECOND))
    world.claude(TUI["Notification:permission_prompt"])
    assert len(world.needs()) == 2
    world.deliver()
    assert [b["tags"][0] for b in wire_bodies(srv)] == ["raising_hand", "raising_hand"]


def test_the_notification_before_its_permission_request_is_still_one_request(srv: NtfyStandin, tmp_path: Path) -> None:
    """The order a loaded machine can give: the permission_prompt Notification's hook runs before
    the PermissionRequest's. One request, and its record gets the call (tool, digest) the
    PermissionRequest names."""
    world = World(tmp_path, srv.url, desk_grace_seconds=30)
    world.transcript.write_bytes(b"".join([*ASKING_LINES[:6], tool_use("toolu_first", "Bash", FIRST)]))
    world.claude(TUI["Notification:permission_prompt"])
    world.claude({**TUI["PermissionRequest"], "tool_input": FIRST})
    [record] = world.needs()
    assert (record["tool"], record["tool_use_id"]) == ("Bash", "toolu_first")
    assert record["summary"] == FIRST["description"] and isinstance(record["tool_digest"], str)
    assert record["sources"] == ["claude-permission_prompt", "claude-permissionrequest"]
