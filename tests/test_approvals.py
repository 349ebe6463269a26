"""Allow / Deny from the phone (issue 28 item 2): the real PermissionRequest hook subprocess waits,
the wake role's pipeline receives the tapped ticket, and the hook prints the agent's answer, or
nothing. Every rule of the decision table in docs/approvals.md has its test here; the recorded
payloads are the real CLIs' (tests/fixtures/approvals/)."""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.config.model import APPROVAL_WAIT_MAX
from donebell.shared.ntfy.subscribe import clear_card
from donebell.shared.process.liveness import current_process_identity
from donebell.shared.statedir import now
from donebell.shared.wake_ticket import TicketKey, issue_answer, load_key, verify
from donebell.workers.agents.claude.install import claude_group
from donebell.workers.agents.codex.managed import codex_permission_group
from donebell.workers.kit.install.managed import PERMISSION_HOOK_TIMEOUT
from donebell.workers.wake.history import render_wakes
from donebell.workers.wake.pipeline import WakePipeline
from support.hooks_harness import HookEnv
from support.ntfy_standin import NtfyStandin
from support.policy_kit import policy_env
from test_needs_you import ASKING_LINES, recorded

pytestmark = pytest.mark.usefixtures("no_outside_config")

APPROVALS = {
    "token": "tk_approvals_test",
    "wake_enabled": True,
    "wake_topic": "donebell-replies-test",
    "approvals_enabled": True,
    "approval_wait_seconds": 8,
}
ALLOW = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}


class Phone:
    """A state dir and config shared by the hook subprocess and an in-process wake pipeline."""

    def __init__(self, root: Path, **config: Any) -> None:
        self.env = policy_env(root, "http://127.0.0.1:9", **{**APPROVALS, **config})
        self.hooks = HookEnv(root)
        self.transcript = root / "transcript.jsonl"
        lines = ASKING_LINES
        self.answer_line = lines[7]  # the tool_result: the prompt answered at the terminal
        self.transcript.write_bytes(b"".join(lines[:7]))
        self.state = self.env.state
        self.wake_running()

    def wake_running(self) -> None:
        """The wake role's health, as a running one writes it (this process stands in for it)."""
        beat = {"role": "wake", **current_process_identity(), "state": "ready", "heartbeat_seconds": 10.0}
        beat["subscription"] = "subscribed"  # the hook waits only while the role can receive a tap
        self.state.write_health("wake", {**beat, "heartbeat_at": now()})

    def ask(self, agent: str = "claude") -> subprocess.Popen[bytes]:
        """The agent runs its PermissionRequest hook: the real ``donebell hook`` process."""
        if agent == "claude":
            payload = {**recorded("claude", "interactive-2.1.197-record")["PermissionRequest"]}
            args: tuple[str, ...] = ("claude",)
        else:
            payload = {**recorded("codex", "exec-approve-for-me-record")["PermissionRequest"]}
            args = ("codex-permission",)
        payload["transcript_path"] = str(self.transcript)
        proc = subprocess.Popen(
            self.hooks.argv(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.hooks.env()
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        return proc

    def request(self, timeout: float = 20.0) -> dict[str, Any]:
        """The needs-you record the hook wrote (it waits for the phone meanwhile)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for key in self.state.keys("outbox"):
                found = self.state.read("outbox", key)
                if found and found.get("notice") == "needs-you":
                    return found
            time.sleep(0.02)
        raise AssertionError("no needs-you record")

    def ticket(self, asked: dict[str, Any], decision: str, key: TicketKey | None = None, **changes: Any) -> str:
        claims: dict[str, Any] = {
            "provider": asked["provider"],
            "conversation_id": asked.get("session_id") or asked.get("thread_id"),
            "turn_id": asked.get("prompt_id") or asked.get("turn_id") or "-",
            "request": asked["key"],
            "digest": asked["tool_digest"],
            "decision": decision,
            "expires_at": asked["approval_until"],
            **changes,
        }
        body, _ = issue_answer(key or load_key(self.state), **claims)
        return body

    def tap(self, body: str, message_id: str = "tap1") -> dict[str, Any] | None:
        pipe = WakePipeline(self.state, self.env.settings(), logging.getLogger("test-approvals"))
        return pipe.receive({"id": message_id, "message": body, "time": int(time.time())})


@pytest.fixture()
def phone(tmp_path: Path) -> Phone:
    return Phone(tmp_path)


def _printed(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> bytes:
    assert proc.wait(timeout=timeout) == 0
    assert proc.stdout is not None
    return proc.stdout.read()


def test_allow_tapped_prints_the_one_shape_every_agent_obeys(phone: Phone) -> None:
    proc = phone.ask()
    request = phone.request()
    reply = phone.tap(phone.ticket(request, "allow"))
    assert reply is not None and reply["status"] == "answered"
    assert render_wakes([reply])[0].startswith("• allow from the phone tap1")  # explain's audit line
    assert json.loads(_printed(proc)) == ALLOW


def test_deny_is_honoured_with_a_message_that_says_whose(phone: Phone) -> None:
    proc = phone.ask("codex")
    request = phone.request()
    phone.tap(phone.ticket(request, "deny"))
    out = json.loads(_printed(proc))
    decision = out["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "Denied from the phone (donebell)."}
    assert out["hookSpecificOutput"]["hookEventName"] == "PermissionRequest" and len(out) == 1


def test_no_answer_within_the_wait_prints_nothing_and_a_late_tap_is_refused(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=5)
    started = time.monotonic()
    proc = phone.ask()
    request = phone.request()
    assert _printed(proc) == b""  # the agent's own dialog decides: never an allow by default
    assert 4.5 < time.monotonic() - started < 15
    reply = phone.tap(phone.ticket(request, "allow", expires_at=now() + 60))
    assert reply is not None and (reply["status"], reply["reason"]) == ("refused", "already-answered")


def test_a_replayed_forged_tampered_or_cross_request_ticket_answers_nothing(phone: Phone, tmp_path: Path) -> None:
    proc = phone.ask()
    request = phone.request()
    deny = phone.ticket(request, "deny")
    forged = phone.ticket(request, "allow", key=TicketKey(load_key(phone.state).host_id, b"k" * 32))
    assert phone.tap(forged, "forged") is None  # a bad signature: counted as junk, no record, no answer
    head, claims, mac = phone.ticket(request, "deny").split(".")
    tampered = f"{head}.{claims[:-2]}{'A' if claims[-2] != 'A' else 'B'}{claims[-1]}.{mac}"
    assert phone.tap(tampered, "tampered") is None or phone.state.answer_box().read(request["key"]) is None
    other = phone.ticket(request, "allow", request="0" * 64)
    cross = phone.tap(other, "cross")
    assert cross is not None and cross["reason"] == "unknown-request"
    wrong_call = phone.tap(phone.ticket(request, "allow", digest="f" * 16), "digest")
    assert wrong_call is not None and wrong_call["reason"] == "unknown-request"
    assert phone.state.answer_box().read(request["key"]) is None  # nothing answered yet
    assert phone.tap(deny, "first")["status"] == "answered"  # type: ignore[index]
    replay = phone.tap(deny, "again")
    assert replay is None or replay["reason"] == "replay"
    other_button = phone.tap(phone.ticket(request, "allow"), "lateallow")
    assert other_button is not None and other_button["reason"] == "already-answered"
    assert json.loads(_printed(proc))["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_the_desk_wins_and_the_phones_late_allow_is_refused(phone: Phone) -> None:
    proc = phone.ask()
    request = phone.request()
    time.sleep(0.3)
    with phone.transcript.open("ab") as f:
        f.write(phone.answer_line)  # answered at the terminal: the call's result is written
    assert _printed(proc, timeout=10) == b""
    answer = phone.state.answer_box().read(request["key"])
    assert answer is not None and answer["decision"] == "closed" and "terminal" in answer["reason"]
    late = phone.tap(phone.ticket(request, "allow"))
    assert late is not None and (late["status"], late["reason"]) == ("refused", "already-answered")


@pytest.mark.parametrize(
    "config", [{"approvals_enabled": False}, {"wake_enabled": False}], ids=["approvals-off", "wake-off"]
)
def test_a_hook_not_configured_for_approvals_returns_at_once(tmp_path: Path, config: dict[str, Any]) -> None:
    phone = Phone(tmp_path, **config)
    started = time.monotonic()
    assert _printed(phone.ask()) == b""
    assert time.monotonic() - started < 5
    assert "approval_until" not in phone.request()


def test_no_wait_while_the_wake_role_is_not_running(phone: Phone) -> None:
    phone.state.write_health("wake", {"role": "wake", "pid": 2**22 + 7, "create_time": 1.0, "heartbeat_at": now()})
    started = time.monotonic()
    assert _printed(phone.ask()) == b""
    assert time.monotonic() - started < 5


def test_the_push_carries_allow_and_deny_bound_to_the_request(phone: Phone, monkeypatch: pytest.MonkeyPatch) -> None:
    from donebell.workers.delivery.needs_payload import render_needs_you

    monkeypatch.setenv("DONEBELL_STATE_DIR", str(phone.state.root))  # as the delivery role runs
    proc = phone.ask()
    request = phone.request()
    body = render_needs_you(request, phone.env.settings(), lambda _r: None)
    labels = [a["label"] for a in body["actions"]]
    assert labels == ["Allow", "Deny"]
    key = load_key(phone.state)
    for action, decision in zip(body["actions"], ("allow", "deny"), strict=True):
        assert action["action"] == "http" and action["url"].endswith("/donebell-replies-test")
        ticket = verify(key, action["body"])
        assert (ticket.request, ticket.digest, ticket.decision) == (request["key"], request["tool_digest"], decision)
        assert ticket.expires_at <= request["approval_until"]
    phone.tap(body["actions"][1]["body"])
    _printed(proc)
    off = render_needs_you(
        request, phone.env.settings().model_copy(update={"approvals_enabled": False}), lambda _r: None
    )
    assert "actions" not in off


def test_install_lets_the_hooks_wait_longer_than_any_allowed_wait() -> None:
    assert PERMISSION_HOOK_TIMEOUT > APPROVAL_WAIT_MAX + 30
    assert codex_permission_group("/x/donebell")["hooks"][0]["timeout"] == PERMISSION_HOOK_TIMEOUT
    assert (
        claude_group("PermissionRequest", "/x/donebell", exec_form=True)["hooks"][0]["timeout"]
        == PERMISSION_HOOK_TIMEOUT
    )
    assert claude_group("Stop", "/x/donebell", exec_form=True)["hooks"][0]["timeout"] == 30


def test_a_tap_after_the_desk_answered_clears_the_card(phone: Phone, srv: NtfyStandin) -> None:
    """The desk won: the late tap is refused, and the push that still offers the buttons is
    dismissed on the phone (ntfy 2.16's clear, by its sequence_id; the stand-in models it)."""
    proc = phone.ask()
    request = phone.request()
    with phone.transcript.open("ab") as f:
        f.write(phone.answer_line)
    assert _printed(proc, timeout=10) == b""
    pipe = WakePipeline(phone.state, phone.env.settings(), logging.getLogger("test-approvals"))
    pipe.clear_card = lambda sid: clear_card(srv.url, "donebell-tests", sid, {}, 5.0)
    late = pipe.receive({"id": "late", "message": phone.ticket(request, "allow"), "time": int(time.time())})
    assert late is not None and (late["reason"], late["card"]) == ("already-answered", "cleared")
    [event] = [e for e in srv.events("donebell-tests") if e.get("event") == "message_clear"]
    assert event["sequence_id"] == request["sequence_id"]


def test_a_server_that_cannot_clear_is_said_so(phone: Phone) -> None:
    from donebell.shared.ntfy.subscribe import clear_card as clear

    assert clear("http://127.0.0.1:9", "donebell-tests", "codex-abc", {}, 2.0).startswith("not cleared:")
