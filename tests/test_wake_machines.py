"""Bad input around several machines (docs/wake.md, "Several machines"): junk hellos, a damaged
peers file, a key file from before machines were recorded, a tap without a server time. The
end-to-end behaviour is in tests/test_real_ntfy_machines.py; these are the edges."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from donebell.shared import machine
from donebell.shared.config.model import Settings
from donebell.shared.ntfy.server_clock import SERVER_NOW, ServerClock, tap_age
from donebell.shared.statedir import StateDir, encode
from donebell.shared.statedir._wake import read_peers
from donebell.shared.wake_ticket import KEY_FILE, key_file, load_key
from donebell.workers.wake.machines import HELLO_PREFIX, hello_body
from donebell.workers.wake.pipeline import WakePipeline


def _pipe(tmp: Path) -> WakePipeline:
    settings = Settings(topic="donebell-notes-t", wake_enabled=True, wake_topic="donebell-replies-t")
    return WakePipeline(StateDir(tmp / "state").ensure(), settings, logging.getLogger("test-wake-machines"))


def _hello(host_id: str, host: str, origin: str) -> str:
    """Another machine's hello, as its wake role writes it."""
    return HELLO_PREFIX + json.dumps({"h": host_id, "m": "ef" * 16, "n": host, "o": origin})


def test_junk_hellos_are_counted_and_leave_nothing(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    junk = ["dbh1 {oops", "dbh1 []", 'dbh1 {"h": 7}', 'dbh1 {"h": ""}', "dbh1 " + "x" * 5000]
    for n, body in enumerate(junk):
        assert pipe.receive({"id": f"junk{n}", "message": body, "time": 1}) is None
    assert pipe.junk.total == len(junk)
    assert read_peers(pipe.state) == {} and list(pipe.queue.records()) == []


def test_a_hello_is_noted_once_and_this_machines_echo_is_not(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    assert pipe.receive({"id": "own1", "message": hello_body(pipe.key.host_id, "here"), "time": 1}) is None
    assert read_peers(pipe.state) == {} and not pipe.hello_due
    other = _hello("ab" * 16, "elsewhere-host", "elsewhere")
    pipe.receive({"id": "other1", "message": other, "time": 1})
    assert pipe.hello_due  # a machine new to this one: answered with this one's hello
    [peer] = read_peers(pipe.state).values()
    assert (peer["host"], peer["origin"], peer["via"]) == ("elsewhere-host", "elsewhere", "hello")
    pipe.hello_due = False
    pipe.receive({"id": "other2", "message": other, "time": 2})
    assert not pipe.hello_due  # known: no answer (no hello ping-pong)


def test_a_damaged_peers_file_reads_as_no_machines_and_is_rewritten(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    path = pipe.state.root / "wake" / "peers.json"
    for damage in (b"{not json", b"[1, 2]", b'{"peers": [1]}', b'{"peers": {"x": {"seen_at": "soon"}}}'):
        path.write_bytes(damage)
        assert read_peers(pipe.state) == {}
    pipe.receive({"id": "t1", "message": _hello("cd" * 16, "b-host", "b"), "time": 1})
    assert list(read_peers(pipe.state)) == ["cd" * 16]


def test_a_key_file_from_before_machines_were_recorded_is_adopted_not_replaced(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state").ensure()
    state.ensure_folder(KEY_FILE[0])
    old = {"schema": 1, "host_id": "11" * 16, "key": "22" * 32, "created_at": 1.0}
    state.write_file(state.path(*KEY_FILE), encode(old))
    key = load_key(state)
    assert (key.host_id, key.secret) == ("11" * 16, bytes.fromhex("22" * 32))
    assert (key_file(state) or {})["machine"] == machine.current()
    assert "key" not in (key_file(state) or {})  # the read-only view never carries the secret


def test_a_damaged_key_file_is_no_identity_for_doctor(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state").ensure()
    state.ensure_folder(KEY_FILE[0])
    state.write_file(state.path(*KEY_FILE), json.dumps(["not", "a", "key"]).encode())
    assert key_file(state) is None


def test_a_tap_without_a_server_time_is_not_judged_stale() -> None:
    assert tap_age({"time": 100}) is None and tap_age({SERVER_NOW: 100.0}) is None
    assert tap_age({"time": 100, SERVER_NOW: 160.5}) == 60.5
    assert tap_age({"time": 200, SERVER_NOW: 160.5}) == 0.0  # never negative
    clock = ServerClock()
    assert clock.now() is None and clock.offset() is None
    clock.heard_date_header("not a date")
    clock.heard(True)
    assert clock.now() is None
    clock.heard_date_header("Sun, 06 Dec 2026 20:00:00 GMT")
    assert clock.now() is not None and abs(clock.now() - 1796587200.0) < 5  # type: ignore[operator]
