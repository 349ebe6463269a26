"""Wake tickets (HMAC-SHA256, single authority of a Continue button) and the buttons in the payload."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared.config.model import Settings
from donebell.shared.statedir import StateDir
from donebell.shared.wake_ticket import KEY_FILE, TicketRefused, issue, load_key, rotate_key, verify
from donebell.workers.delivery.payload import render
from support.delivery_kit import outbox_record
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")


def state_dir(tmp_path: Path, name: str = "state") -> StateDir:
    return StateDir(tmp_path / name).ensure()


def ticket(state: StateDir, ttl: float = 60.0, **kw: Any) -> str:
    args: dict[str, Any] = {"provider": "codex", "conversation_id": "019a-thread", "turn_id": "turn-1", "action": 0}
    args.update(kw)
    return issue(load_key(state), ttl_seconds=ttl, **args)[0]


def test_key_is_created_once_owner_only_and_rotation_keeps_the_host(tmp_path: Path) -> None:
    state = state_dir(tmp_path)
    first = load_key(state)
    path = Path(state.path(*KEY_FILE))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_key(state) == first and len(first.secret) == 32
    old = ticket(state)
    assert verify(load_key(state), old).turn_id == "turn-1"
    rotated = rotate_key(state)
    assert rotated.host_id == first.host_id and rotated.secret != first.secret
    with pytest.raises(TicketRefused) as refused:
        verify(rotated, old)
    assert refused.value.reason == "bad-signature"


def test_round_trip_and_claims(tmp_path: Path) -> None:
    state = state_dir(tmp_path)
    text = ticket(state, provider="claude", conversation_id="sess", turn_id="prompt-9", action=2)
    t = verify(load_key(state), text)
    assert (t.provider, t.conversation_id, t.turn_id, t.action, len(t.nonce)) == ("claude", "sess", "prompt-9", 2, 32)
    assert verify(load_key(state), text).nonce == t.nonce  # verification alone claims nothing
    assert "continue" not in text  # no prompt in a ticket


def test_every_single_byte_tamper_is_refused(tmp_path: Path) -> None:
    state = state_dir(tmp_path)
    key = load_key(state)
    text = ticket(state)
    for i in range(len(text)):
        for repl in {"A", "x", "_"} - {text[i]}:
            tampered = text[:i] + repl + text[i + 1 :]
            with pytest.raises(TicketRefused) as refused:
                verify(key, tampered)
            assert refused.value.reason in ("bad-signature", "malformed", "other-host"), (i, repl)


def test_expired_other_host_and_junk(tmp_path: Path) -> None:
    state = state_dir(tmp_path)
    key = load_key(state)
    reasons = {}
    reasons["expired"] = ticket(state, ttl=0.001)
    other = state_dir(tmp_path, "other-host")
    reasons["other-host"] = ticket(other)
    for name, text in reasons.items():
        with pytest.raises(TicketRefused) as refused:
            verify(key, text, at=os.path.getmtime(state.path(*KEY_FILE)) + 5)
        assert refused.value.reason == name
    for junk in ("", "continue", "dbw1.x.y", "dbw1..", "dbw1.e30.AAAA", "a" * 5000, "dbw1.\u00e9.x", "{}"):
        with pytest.raises(TicketRefused) as refused:
            verify(key, junk)
        assert refused.value.reason == "malformed", junk


def wake_settings(**kw: Any) -> Settings:
    base = {"topic": "t1", "origin": "laptop", "server": "http://127.0.0.1:9", "wake_enabled": True}
    return Settings(**{**base, "wake_topic": "replies-1", "wake_token": "tk_writeonly", **kw})


def test_payload_buttons_carry_a_ticket_and_no_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(tmp_path / "state"))
    rec = outbox_record(turn_id="turn-7")
    actions = [
        {"label": "Continue", "prompt": "SECRET-PROMPT-A"},
        {"label": "Run tests", "prompt": "SECRET-PROMPT-B"},
    ]
    payload = render(rec, wake_settings(wake_actions=actions))
    assert "SECRET-PROMPT" not in json.dumps(payload)
    buttons = payload["actions"]
    assert [b["label"] for b in buttons] == ["Continue", "Run tests"]
    assert all(b["action"] == "http" and b["method"] == "POST" for b in buttons)
    assert buttons[0]["url"] == "http://127.0.0.1:9/replies-1"
    assert buttons[0]["headers"] == {"Authorization": "Bearer tk_writeonly"}
    key = load_key(StateDir(tmp_path / "state"))
    claims = [verify(key, b["body"]) for b in buttons]
    assert [(c.conversation_id, c.turn_id, c.action) for c in claims] == [
        (rec["thread_id"], "turn-7", 0),
        (rec["thread_id"], "turn-7", 1),
    ]
    assert claims[0].nonce != claims[1].nonce
    # without a token the buttons carry no Authorization header; with wake off there are none
    assert "headers" not in render(rec, wake_settings(wake_token=None))["actions"][0]
    assert "actions" not in render(rec, wake_settings(wake_enabled=False))


def test_no_buttons_for_tests_remote_threads_and_beyond_three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(tmp_path / "state"))
    assert "actions" not in render(outbox_record(test=True), wake_settings())
    assert "actions" not in render(outbox_record(source="remote-scanner"), wake_settings())
    three = [{"label": f"b{i}", "prompt": "p"} for i in range(3)]
    linked = render(
        outbox_record(), wake_settings(wake_actions=three, include_task_link=True, include_task_link_action=True)
    )
    assert [a["label"] for a in linked["actions"]] == ["Open task", "b0", "b1"]


def test_the_ntfy_standin_accepts_the_buttons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, srv: NtfyStandin
) -> None:
    """Published for real: ntfy's action validation passes, and the button comes back as the app sees it."""
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(tmp_path / "state"))
    payload = render(outbox_record(), wake_settings(server=srv.url))
    reply = httpx.post(srv.url + "/", json=payload, timeout=5)
    assert reply.status_code == 200, reply.text
    (button,) = reply.json()["actions"]
    assert (button["action"], button["method"], button["url"]) == ("http", "POST", f"{srv.url}/replies-1")
    assert button["body"] == payload["actions"][0]["body"]
