"""The delivery guarantee: outbox before the request, receipt before removal, recovery, privacy, auth."""

from __future__ import annotations

import base64
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from donebell.shared.ntfy.client import ConfigProblem, auth_for, check_sendable
from donebell.shared.records import new_receipt, to_outbox
from donebell.shared.statedir import StateDir, now
from support.delivery_kit import TOPIC, Env, wire_bodies
from support.ntfy_standin import NtfyStandin

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptStatus

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOKEN = "tk_" + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o"  # ntfy's shape: tk_ + 29 lowercase alphanumerics
PASSWORD = "correct-horse-battery"


def test_outbox_exists_during_request_and_receipt_precedes_removal(srv: NtfyStandin, tmp_path: Path) -> None:
    """While the request is in flight the record is in outbox/ and has no receipt; after the 2xx it is in sent/."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    srv.faults.delay(0.3)  # stored on arrival, answered 0.3 s later
    role = env.role()
    worker = threading.Thread(target=role.pass_at, args=(now(),))
    worker.start()
    srv.wait_for_requests(1)
    assert env.state.exists("outbox", rec["key"]) and not env.state.exists("sent", rec["key"])
    worker.join(5)
    assert env.state.locate(rec["key"]) == "sent"
    receipt = env.state.read("sent", rec["key"])
    assert receipt is not None and receipt["message_id"] == srv.messages()[0]["id"]
    role.teardown()


def test_accept_then_drop_is_retried_with_the_same_sequence_id(srv: NtfyStandin, tmp_path: Path) -> None:
    """ntfy stored the message but never answered: the retry carries the same sequence_id."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    srv.faults.accept_then_drop()
    role = env.role()
    role.pass_at(now())
    kept = env.state.read("outbox", rec["key"])
    assert kept is not None and kept["last_error"].startswith("dropped:")
    role.pass_at(kept["next_attempt_at"] + 0.01)
    messages = srv.messages()
    assert len(messages) == 2  # the duplicate ntfy >= 2.16 shows as one updated notification
    assert {m["sequence_id"] for m in messages} == {rec["sequence_id"]}
    assert env.state.locate(rec["key"]) == "sent"
    role.teardown()


@pytest.mark.parametrize("folder", ["sent", "dead"])
def test_record_with_receipt_is_removed_not_resent(folder: ReceiptStatus, srv: NtfyStandin, tmp_path: Path) -> None:
    """A crash between receipt and removal leaves both; the next pass removes the record and sends nothing."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    env.state.create(folder, new_receipt(rec, status=folder, reason="sent" if folder == "sent" else "max-attempts"))
    role = env.role()
    result = role.pass_at(now())
    assert not env.state.exists("outbox", rec["key"]) and env.state.exists(folder, rec["key"])
    assert srv.requests == [] and result.counters.get("recovered") == 1
    role.teardown()


def test_corrupt_outbox_file_is_dead_lettered_and_the_rest_delivered(srv: NtfyStandin, tmp_path: Path) -> None:
    """An unparsable or stray outbox file becomes a sanitized dead letter (bytes kept); the pass goes on."""
    env = Env(tmp_path, server=srv.url)
    bad_key = "f" * 64
    (env.state.folder("outbox") / f"{bad_key}.json").write_bytes(b'{"schema": 1, "key": "ff')
    (env.state.folder("outbox") / "notes.txt").write_bytes(b"stray")
    good = env.queue()
    role = env.role()
    result = role.pass_at(now())
    assert env.state.exists("sent", good["key"])
    assert sorted(p.name for p in env.state.folder("outbox").iterdir()) == []
    letters = [env.state.read("dead", p.stem) for p in env.state.folder("dead").glob("*.json")]
    assert [(d or {}).get("reason") for d in letters] == ["invalid-record"] * 2
    raws = sorted(r.read_bytes() for r in env.state.folder("dead").glob("*.raw"))
    assert raws == sorted([b'{"schema": 1, "key": "ff', b"stray"])
    assert result.counters.get("invalid") == 2
    role.teardown()


def test_privacy_gate_flipped_between_attempts(srv: NtfyStandin, tmp_path: Path) -> None:
    """Switching include_message off in the config file keeps the text out of every later retry."""
    env = Env(tmp_path, server=srv.url, include_message=True)
    rec = env.queue(last_message="my secret final answer")
    srv.faults.fail(503)
    role = env.role()
    role.pass_at(now())
    env.update_config(include_message=False)
    role.pass_at(now() + 3600)
    first, second = wire_bodies(srv)
    assert "my secret final answer" in first["message"]
    assert "secret" not in second["message"]
    assert first["sequence_id"] == second["sequence_id"] == rec["sequence_id"]
    assert env.state.locate(rec["key"]) == "sent"
    role.teardown()


def test_gate_runs_before_sending_in_the_same_pass(srv: NtfyStandin, tmp_path: Path) -> None:
    """A pass first lets the gate promote pending candidates, then sends them in that same pass."""
    env = Env(tmp_path, server=srv.url)
    promoted = env.queue()
    env.state.remove("outbox", promoted["key"])
    pending = {k: v for k, v in promoted.items() if k not in ("sequence_id", "promoted_at", "verdict")}
    pending["kind"] = "candidate"
    env.state.create("pending", pending)

    class Pass:
        def __init__(self, n: int) -> None:
            self.promoted, self.suppressed, self.waiting = n, 0, 0
            self.next_due: float | None = None
            self.watch_paths: list[Path] = []

    def promote_all(state: StateDir, settings: Any, at: float) -> Pass:
        keys = state.keys("pending")
        for key in keys:
            state.create("outbox", to_outbox(state.read("pending", key) or {}, verdict="idle"))
            state.remove("pending", key)
        return Pass(len(keys))

    role = env.role()
    role.gate = promote_all
    result = role.pass_at(now())
    assert env.state.locate(promoted["key"]) == "sent"
    assert result.counters["promoted"] == 1 and result.counters["sent"] == 1 and result.idle

    def broken(state: StateDir, settings: Any, at: float) -> Pass:
        raise RuntimeError("gate bug")

    late = env.queue()
    role.gate = broken
    result = role.pass_at(now())
    assert env.state.locate(late["key"]) == "sent"  # a broken gate never blocks the outbox
    assert result.degraded and "gate bug" in result.degraded
    role.teardown()


def test_bearer_and_basic_auth_reach_the_server(tmp_path: Path) -> None:
    """A token is sent as Bearer, a username/password as Basic, and the protected topic accepts both."""
    with NtfyStandin(
        tokens={TOKEN: "phil"}, users={"phil": PASSWORD}, default_access="deny-all", access={"phil": {TOPIC: "rw"}}
    ) as srv:
        env = Env(tmp_path, server=srv.url, token=TOKEN)
        env.queue()
        role = env.role()
        role.pass_at(now())
        env.write_config(server=srv.url, username="phil", password=PASSWORD)
        env.queue()
        role.pass_at(now())
        basic = base64.b64encode(f"phil:{PASSWORD}".encode()).decode()
        assert [r.header("Authorization") for r in srv.requests] == [f"Bearer {TOKEN}", f"Basic {basic}"]
        assert [r.status for r in srv.requests] == [200, 200]
        role.teardown()


def test_secrets_never_reach_state_logs_or_health(tmp_path: Path) -> None:
    """After auth failures through the real worker, no file in the state dir contains the token or password."""
    with NtfyStandin(tokens={TOKEN: "phil"}, users={"phil": PASSWORD}, default_access="deny-all") as srv:
        env = Env(tmp_path, server=srv.url, token=TOKEN)
        env.queue()
        run = env.run_cli("worker", "delivery", "--once")
        assert run.returncode == 0, run.stderr
        env.write_config(server=srv.url, username="phil", password=PASSWORD)
        env.queue()
        run = env.run_cli("worker", "delivery", "--once")
        assert run.returncode == 0, run.stderr
        env.write_config(server=srv.url.replace("http://", f"http://phil:{PASSWORD}@"))
        env.queue()
        run = env.run_cli("worker", "delivery", "--once")
        assert run.returncode == 0, run.stderr
        # Valid users without write access. An earlier record's retry may fall due during a later
        # run on a slow machine (a 4th 403), which changes nothing about what is checked here.
        statuses = [r.status for r in srv.requests]
        assert len(statuses) >= 3 and set(statuses) == {403}, statuses
        text = env.all_state_text() + run.stdout + run.stderr
        assert "403" in text  # the failures were recorded...
        for secret in (TOKEN, PASSWORD, base64.b64encode(f"phil:{PASSWORD}".encode()).decode()):
            assert secret not in text  # ...without any credential


def _non_loopback_ip() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent; this only picks the outgoing address
        except OSError:
            return None
        ip = str(s.getsockname()[0])
    return None if ip.startswith("127.") else ip


def test_credentials_over_plain_http_to_another_host_are_refused(tmp_path: Path) -> None:
    """Credentials over http:// to a non-loopback host are not sent: the record stays, the problem is reported."""
    ip = _non_loopback_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback address to reach the stand-in on")
    with NtfyStandin(host="0.0.0.0") as srv:
        server = f"http://{ip}:{srv.port}"
        env = Env(tmp_path, server=server, token=TOKEN)
        rec = env.queue()
        role = env.role()
        result = role.pass_at(now())
        assert srv.requests == []
        assert env.state.read("outbox", rec["key"]) == rec  # untouched: not an attempt, not a dead letter
        assert result.degraded and "allow_insecure_auth" in result.degraded and result.idle
        assert role.health_extra()["config_problem"]
        env.update_config(allow_insecure_auth=True)
        role.pass_at(now())
        assert env.state.locate(rec["key"]) == "sent"
        assert srv.requests[0].header("Authorization") == f"Bearer {TOKEN}"
        role.teardown()


@pytest.mark.parametrize(
    "server,ok",
    [
        ("http://127.0.0.1:8080", True),
        ("http://localhost", True),
        ("http://[::1]:80", True),
        ("https://ntfy.example", True),
        ("http://ntfy.example", False),
        ("http://10.0.0.5", False),
        ("http://u:pw@ntfy.example", False),
    ],
)
def test_insecure_auth_rule(server: str, ok: bool, tmp_path: Path) -> None:
    """Credentials (token or URL user-info) go over http:// only to loopback; https:// is always fine."""
    env = Env(tmp_path, server=server, **({} if "@" in server else {"token": TOKEN}))
    settings = env.settings()
    if ok:
        check_sendable(settings, auth_for(settings))
    else:
        with pytest.raises(ConfigProblem):
            check_sendable(settings, auth_for(settings))
        env.update_config(allow_insecure_auth=True)
        check_sendable(env.settings(), auth_for(env.settings()))


def test_unaccounted_pending_record_cannot_keep_a_worker_spinning(srv: NtfyStandin, tmp_path: Path) -> None:
    """A record that arrived mid-pass forces another pass, but one the gate never accounts for stops doing so."""
    env = Env(tmp_path, server=srv.url)
    rec = env.queue()
    env.state.remove("outbox", rec["key"])
    env.state.create("pending", {**rec, "kind": "candidate"})

    class Blind:
        promoted = suppressed = waiting = 0
        next_due: float | None = None
        watch_paths: list[Path] = []

    role = env.role(once=False, until_idle=True)
    role.gate = lambda state, settings, at: Blind()
    results = [role.pass_at(now()) for _ in range(25)]
    assert [r.next_in for r in results[:20]] == [0.0] * 20 and not any(r.idle for r in results[:20])
    assert results[-1].idle and results[-1].next_in is None
    role.teardown()
