"""The gate never reads a remote watch root from the delivery process: a hung share delays nothing local.

Remote candidates (source ``remote-scanner``, or paths under a ``watch_roots`` entry) are evaluated
by one probe worker process per root. The hangs here are real: a FUSE mount that answers INIT and
then nothing (``HungMount`` from the remote-scanner tests; "read" mode leaves the prober in an
unkillable kernel wait, like a dead hard NFS mount) and, without root, a FIFO named like a rollout
(``open()`` blocks until a writer comes).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from donebell.shared import ingest, records
from donebell.shared.config import Settings, WatchRoot
from donebell.shared.keys import event_key
from donebell.shared.short_id import short_id
from donebell.shared.statedir import StateDir
from donebell.workers.delivery.thread_title import thread_title
from donebell.workers.gate import _PERSISTENT, run_gate_pass
from donebell.workers.gate.remote import configured_roots, offline_verdict, remote_root
from donebell.workers.gate.remote_pool import SYNC_WINDOW_SECONDS
from fixtures.gate.kit import (
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    fast_settings,
    lines_of,
)
from support.delivery_kit import Env
from support.hung_mount import HungMount
from support.ntfy_standin import NtfyStandin

WORKER_MODULE = "donebell.workers.gate.remote_worker"
#: A pass may wait this long for remote answers; everything else in it is local work.
PASS_LIMIT = SYNC_WINDOW_SECONDS + 0.5


def _workers(root: Path | str) -> list[psutil.Process]:
    """Live (non-zombie) probe worker processes of ``root``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if WORKER_MODULE in cmdline and str(root) in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def _wait_gone(root: Path | str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _workers(root):
        assert time.monotonic() < deadline, f"probe workers of {root} still alive"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _pools() -> Iterator[None]:
    """Each test starts without probe workers; its own are killed afterwards (after any mount abort)."""
    _PERSISTENT.clear()
    yield
    for persistent in _PERSISTENT.values():
        pool = persistent.get("remote_pool")
        if pool is not None:
            pool.close()
    _PERSISTENT.clear()


def _submit_remote(state: StateDir, root: Path, thread: str, turn: str, rollout: Path, **extra: Any) -> str:
    """A candidate as the remote-scanner's child writes it: every path inside the root."""
    key = event_key("codex", thread, turn)
    values: dict[str, Any] = {
        "thread_id": thread,
        "turn_id": turn,
        "classification": "root",
        "root_thread_id": thread,
        "codex_home": str(root),
        "sqlite_home": str(root),
        "transcript_path": str(rollout),
        "origin": "wsl-test",
        "outcome": "done",
        **extra,
    }
    ingest.submit_candidate(state, records.new_candidate(key=key, provider="codex", source="remote-scanner", **values))
    return key


def _remote_rollout(root: Path, thread: str) -> Path:
    """Where the remote Codex wrote it: today's folder (the gate's bounded search finds it there too)."""
    return root / "sessions" / time.strftime("%Y/%m/%d", time.gmtime()) / f"rollout-2026-11-30T09-56-38-{thread}.jsonl"


def _last(state: StateDir, key: str) -> dict[str, Any]:
    folder = state.locate(key)
    assert folder is not None
    rec = state.read(folder, key)
    assert rec is not None
    history = (rec.get("probe") or {}).get("history") or rec.get("probe_history") or []
    return {"folder": folder, "record": rec, "reason": rec.get("reason"), "last": history[-1] if history else {}}


# --- identification and the offline verdict (no file access) ---------------------------------


def test_remote_candidates_are_recognized_by_source_or_by_a_path_under_a_watch_root() -> None:
    """Source remote-scanner, or a transcript/codex/sqlite path under a root or its sqlite folder, is
    remote (lexically: a sibling folder sharing the prefix is not); everything else is local."""
    settings = Settings.model_validate(
        {
            "topic": "t",
            "watch_roots": ["/mnt/wsl", WatchRoot(path="/srv/share/codex", sqlite_path="/srv/db/state_5.sqlite")],
        }
    )
    roots = configured_roots(settings)
    assert remote_root({"transcript_path": "/mnt/wsl/sessions/r.jsonl"}, roots) == "/mnt/wsl"
    assert remote_root({"sqlite_home": "/srv/db"}, roots) == "/srv/share/codex"
    assert remote_root({"codex_home": "/mnt/wsl2/.codex", "transcript_path": "/mnt/wslx/r.jsonl"}, roots) is None
    assert remote_root({"source": "codex-stop", "codex_home": "/home/u/.codex"}, roots) is None
    # A root removed from the config: its remote-scanner records stay remote, keyed by their home.
    gone = {"source": "remote-scanner", "sources": ["remote-scanner"], "codex_home": "/mnt/old"}
    assert remote_root(gone, roots) == "/mnt/old"


@pytest.mark.parametrize(
    ("mode", "at", "expected"),
    [("strict", 1.0, ("wait", "remote-unresponsive")), ("strict", 10.0, ("suppress", "unverifiable")),
     ("balanced", 10.0, ("promote", "balanced"))],
)  # fmt: skip
def test_unanswered_remote_evidence_follows_the_probe_grace(mode: str, at: float, expected: tuple[str, str]) -> None:
    """A root that does not answer is unknown evidence: it waits within idle_probe_grace_seconds, then
    strict suppresses it as unverifiable and balanced assumes it, as for an unreadable local rollout."""
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=5.0)
    record = {"key": "k", "provider": "codex", "created_at": 1000.0, "thread_id": "t", "probe": {}}
    verdict = offline_verdict(record, settings, 1000.0 + at, "remote-unresponsive", "no answer", root="/mnt/x")
    assert (verdict.action, verdict.reason) == expected
    if verdict.action == "wait":
        assert verdict.wait_kind == "unknown" and verdict.detail is not None
        assert verdict.detail["grace_deadline"] == 1005.0 and verdict.detail["root"] == "/mnt/x"
    subagent = {**record, "classification": "subagent"}
    assert offline_verdict(subagent, settings, 1001.0, "remote-unresponsive", "x").reason == "subagent"


def test_probe_worker_runs_without_pydantic(tmp_path: Path) -> None:
    """The probe worker imports the gate without pydantic or httpx (a small process, quick to start)."""
    import subprocess
    import sys

    code = (
        "import sys, donebell.workers.gate.remote_worker, donebell.workers.delivery.thread_title;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_settings', 'httpx')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "[]"


# --- a healthy remote root ----------------------------------------------------------------------


def test_healthy_remote_candidate_is_promoted_by_its_probe_worker_with_the_title(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """A readable root's candidate is judged in the root's worker within the pass, promoted with its
    root and thread title stored, and none of its paths is handed to the delivery's wake-up watch."""
    root = tmp_path / "share"
    world = CodexWorld(root, state)
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.add_thread(SIMPLE_THREAD)
    world.sql("state_5", "UPDATE threads SET title = 'Fix the parser' WHERE id = ?", (SIMPLE_THREAD,))
    key = _submit_remote(state, root, SIMPLE_THREAD, SIMPLE_TURN, world.rollout_path(SIMPLE_THREAD))
    settings = fast_settings(watch_roots=[str(root)], include_thread_title=True)
    result = run_gate_pass(state, settings, time.time())
    deadline = time.monotonic() + 10
    while state.locate(key) == "pending":  # a loaded machine may start the worker after the window
        assert time.monotonic() < deadline
        time.sleep(0.05)
        result = run_gate_pass(state, settings, time.time())
    out = _last(state, key)
    assert out["folder"] == "outbox" and out["record"]["verdict"] == "idle"
    assert out["record"]["remote_root"] == str(root) and out["record"]["thread_title"] == "Fix the parser"
    assert out["record"]["stats"] == {"duration_ms": 1444, "total_tokens": 110}
    [health] = result.remote
    assert (health["root"], health["answered"], health["workers_started"]) == (str(root), 1, 1)
    assert not [p for p in result.watch_paths if str(p).startswith(str(root))]


# --- real hangs ---------------------------------------------------------------------------------


def test_hanging_probe_on_a_watch_root_is_cut_off_and_ends_unverifiable_in_strict(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe worker that never answers (a killable hang) is probed once: every pass stays short, the
    candidate waits remote-unresponsive, the killed worker is reaped, and after the probe grace strict
    says unverifiable."""
    monkeypatch.setenv("DONEBELL_TEST_FAULT", "gate-remote-worker:hang")
    root = tmp_path / "hang-root"
    rollout = _remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_text("")
    key = _submit_remote(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(
        watch_roots=[str(root)], watch_remote_timeout_seconds=1.0, idle_probe_grace_seconds=30.0,
        unknown_retry_max_seconds=0.5,
    )  # fmt: skip
    started = time.monotonic()
    while _last(state, key)["last"].get("reason") != "remote-unresponsive":
        assert time.monotonic() - started < 10, "no remote-unresponsive decision"
        t0 = time.monotonic()
        result = run_gate_pass(state, settings, time.time())
        assert time.monotonic() - t0 < PASS_LIMIT
        time.sleep(0.05)
    assert time.monotonic() - started >= 1.0  # the worker had its whole budget
    out = _last(state, key)
    assert out["folder"] == "pending" and out["record"]["probe"]["wait_kind"] == "unknown"
    assert out["record"]["probe"]["waiting_for"]["root"] == str(root)
    _wait_gone(root)  # a sleeping worker is killable: none is left behind
    # Past the grace, the root's trouble still stands (retry after one budget): strict suppresses.
    result = run_gate_pass(state, settings, time.time() + 60)
    out = _last(state, key)
    assert out["folder"] == "suppressed" and out["reason"] == "unverifiable"
    assert "remote-unresponsive" in out["last"]["evidence"]
    [health] = result.remote
    assert health["timeouts"] == 1 and health["workers_started"] == 1


def test_fifo_rollout_on_a_watch_root_is_unreadable_evidence_not_a_hang(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """A FIFO named like a rollout is refused at once by the probe (never blocks it) and, being
    unreadable evidence, ends unverifiable in strict after the probe grace."""
    root = tmp_path / "fifo-root"
    rollout = _remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    os.mkfifo(rollout)
    key = _submit_remote(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(watch_roots=[str(root)], idle_probe_grace_seconds=5.0, unknown_retry_max_seconds=0.5)
    deadline = time.monotonic() + 10
    while _last(state, key)["last"].get("reason") in (None, "remote-unresponsive"):
        assert time.monotonic() < deadline, "the FIFO probe never answered"
        run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert _last(state, key)["last"]["reason"] != "remote-unresponsive"
    deadline = time.monotonic() + 10
    while state.locate(key) == "pending":
        assert time.monotonic() < deadline
        run_gate_pass(state, settings, time.time() + 60)
        time.sleep(0.05)
    assert _last(state, key)["reason"] == "unverifiable"


def test_dead_probe_worker_is_a_probe_error_not_a_hang(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies mid-probe (killed, crashed) ends that probe at once as remote-probe-error."""
    monkeypatch.setenv("DONEBELL_TEST_FAULT", "gate-remote-worker:hang")
    root = tmp_path / "hang-root"
    rollout = _remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_text("")
    key = _submit_remote(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(watch_roots=[str(root)], watch_remote_timeout_seconds=60.0)
    run_gate_pass(state, settings, time.time())
    deadline = time.monotonic() + 10
    while not _workers(root):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for proc in _workers(root):
        proc.kill()
    while _last(state, key)["last"].get("reason") != "remote-probe-error":
        assert time.monotonic() < deadline, "the dead worker was not noticed"
        run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert "exited without answering" in _last(state, key)["last"]["evidence"]


def test_send_time_title_lookup_never_opens_a_remote_root(tmp_path: Path) -> None:
    """thread_title() of a remote record returns the stored title even when its SQLite home hangs."""
    with HungMount(tmp_path / "hung", take_requests=False) as hung:
        record = {"thread_id": SIMPLE_THREAD, "source": "remote-scanner", "sqlite_home": str(hung.path),
                  "codex_home": str(hung.path), "thread_title": "Stored title"}  # fmt: skip
        found: list[str | None] = []
        lookup = threading.Thread(target=lambda: found.append(thread_title(record)), daemon=True)
        lookup.start()
        lookup.join(2.0)
        assert not lookup.is_alive() and found == ["Stored title"]
        marked = {"thread_id": SIMPLE_THREAD, "source": "scanner", "remote_root": str(hung.path),
                  "sqlite_home": str(hung.path)}  # fmt: skip
        assert thread_title(marked) is None  # marked remote by the gate, no stored title: no lookup


def _env(tmp_path: Path, srv: NtfyStandin, root: Path, **config: Any) -> Env:
    return Env(
        tmp_path / "env", server=srv.url, watch_roots=[str(root)], watch_remote_timeout_seconds=1.0,
        idle_grace_seconds=0, unknown_retry_max_seconds=0.5, **config,
    )  # fmt: skip


def test_unkillable_remote_hang_never_delays_local_delivery_in_the_role(
    isolated_env: dict[str, Path], srv: NtfyStandin, tmp_path: Path
) -> None:
    """With a remote candidate whose root hangs in an unkillable wait, the delivery role still promotes
    and sends a local candidate at once; the remote one waits remote-unresponsive (explain, health)
    with exactly one stuck worker, then ends unverifiable in strict after the probe grace."""
    with HungMount(tmp_path / "dead-nfs", take_requests=True) as hung:
        env = _env(tmp_path, srv, hung.path, idle_probe_grace_seconds=4.0, include_thread_title=True)
        local = CodexWorld(isolated_env["codex_home"], env.state)
        remote_key = _submit_remote(env.state, hung.path, PARENT_THREAD, PARENT_TURN,
                                    _remote_rollout(hung.path, PARENT_THREAD))  # fmt: skip
        local.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
        local_key = local.submit(SIMPLE_THREAD, SIMPLE_TURN)
        role = env.role()
        try:
            started = time.monotonic()
            slowest = 0.0
            while env.state.locate(local_key) != "sent":
                assert time.monotonic() - started < 3.0, "the local candidate was not delivered in time"
                t0 = time.monotonic()
                role.pass_at(time.time())
                slowest = max(slowest, time.monotonic() - t0)
            assert slowest < PASS_LIMIT
            [message] = srv.wait_for_messages(1, timeout=5)
            assert f"#{short_id(SIMPLE_THREAD)}" in message["message"]
            while _last(env.state, remote_key)["last"].get("reason") != "remote-unresponsive":
                assert time.monotonic() - started < 10
                t0 = time.monotonic()
                role.pass_at(time.time())
                slowest = max(slowest, time.monotonic() - t0)
                time.sleep(0.05)
            assert slowest < PASS_LIMIT
            [root_health] = role.health_extra()["gate_remote"]
            assert root_health["state"] == "unresponsive" and root_health["lingering_pids"]
            assert len(_workers(hung.path)) == 1  # the stuck one; no second probe while it lives
            explained = env.run_cli("explain", PARENT_THREAD)
            assert explained.returncode == 0 and "remote-unresponsive" in explained.stdout, explained.stdout
            assert "probe grace ends" in explained.stdout
            for _ in range(5):  # later passes skip the root: no new worker, still short
                t0 = time.monotonic()
                result = role.pass_at(time.time())
                assert time.monotonic() - t0 < PASS_LIMIT
            assert result.degraded and str(hung.path) in result.degraded
            assert role.health_extra()["gate_remote"][0]["workers_started"] == 1
            role.pass_at(time.time() + 30)  # past idle_probe_grace_seconds
            out = _last(env.state, remote_key)
            assert out["folder"] == "suppressed" and out["reason"] == "unverifiable"
            assert len(srv.messages()) == 1
        finally:
            role.teardown()
            hung.abort()
        _wait_gone(hung.path)


def test_stuck_root_recovers_once_the_share_answers_again(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """After the hang ends (the stuck worker dies), the root is probed again and its candidate promoted."""
    mount = tmp_path / "wsl"
    with HungMount(mount, take_requests=True) as hung:
        key = _submit_remote(state, mount, SIMPLE_THREAD, SIMPLE_TURN, _remote_rollout(mount, SIMPLE_THREAD))
        settings = fast_settings(
            watch_roots=[str(mount)], watch_remote_timeout_seconds=0.5, unknown_retry_max_seconds=0.2
        )
        deadline = time.monotonic() + 10
        while _last(state, key)["last"].get("reason") != "remote-unresponsive":
            assert time.monotonic() < deadline
            run_gate_pass(state, settings, time.time())
            time.sleep(0.05)
        hung.abort()  # the share is gone; the folder underneath comes back readable
    _wait_gone(mount)
    rollout = _remote_rollout(mount, SIMPLE_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines_of("simple-exec.jsonl")))
    deadline = time.monotonic() + 10
    while state.locate(key) == "pending":
        assert time.monotonic() < deadline, _last(state, key)["last"]
        result = run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert state.locate(key) == "outbox"
    assert result.remote[0]["state"] == "ready" and result.remote[0]["workers_started"] == 2


def test_delivery_process_with_a_hung_remote_root_delivers_locally_and_stops_on_sigterm(
    isolated_env: dict[str, Path], srv: NtfyStandin, tmp_path: Path
) -> None:
    """`donebell worker delivery` (a real process) sends the local notification on time with an
    unkillable remote hang pending, reports the root in its health file, and still exits on SIGTERM."""
    import signal

    with HungMount(tmp_path / "dead-nfs", take_requests=True) as hung:
        env = _env(tmp_path, srv, hung.path, idle_probe_grace_seconds=300.0)
        env.update_config(**{**env.config, "watch_roots": [{"path": str(hung.path), "origin": "wsl-hung"}]})
        local = CodexWorld(isolated_env["codex_home"], env.state)
        _submit_remote(env.state, hung.path, PARENT_THREAD, PARENT_TURN, _remote_rollout(hung.path, PARENT_THREAD))
        local.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
        local_key = local.submit(SIMPLE_THREAD, SIMPLE_TURN)
        proc = env.popen_cli("worker", "delivery")
        try:
            srv.wait_for_messages(1, timeout=5)
            deadline = time.monotonic() + 10
            while env.state.locate(local_key) != "sent":  # the receipt follows the accepted POST
                assert time.monotonic() < deadline
                time.sleep(0.02)
            health_path = env.state.root / "health" / "delivery.json"
            while True:
                health = json.loads(health_path.read_text()) if health_path.exists() else {}
                roots = health.get("gate_remote") or []
                if roots and roots[0]["state"] == "unresponsive" and health["state"] == "degraded":
                    break  # (between passes: during one, the state reads "scanning")
                assert time.monotonic() < deadline, health
                time.sleep(0.05)
            assert str(hung.path) in health["degraded_reason"] and roots[0]["lingering_pids"]
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(5) == 0  # the stuck prober is another process: delivery is free to go
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            hung.abort()
        _wait_gone(hung.path)


def test_off_mode_promotes_a_remote_candidate_without_probing_its_root(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """idle_detection_mode off reads no evidence: a remote candidate on a blocking path is promoted at
    once, marked with its root, and no probe worker is started."""
    root = tmp_path / "fifo-root"
    rollout = _remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    os.mkfifo(rollout)
    key = _submit_remote(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    result = run_gate_pass(state, fast_settings(watch_roots=[str(root)], idle_detection_mode="off"), time.time())
    out = _last(state, key)
    assert out["folder"] == "outbox" and out["record"]["verdict"] == "off"
    assert out["record"]["remote_root"] == str(root) and result.remote == [] and not _workers(root)


def test_settings_sent_to_a_probe_worker_carry_no_secret() -> None:
    """The settings piped to a probe worker omit the token and password (and never appear in argv)."""
    from donebell.workers.gate.remote import settings_wire

    token, password = "tk_" + "a1" * 15, "hunter2-pw"
    wire = settings_wire(Settings.model_validate({"topic": "t", "token": token, "username": "u", "password": password}))
    text = json.dumps(wire)
    assert token not in text and password not in text and "token" not in wire and "password" not in wire
    assert wire["username"] == "u" and wire["idle_detection_mode"] == "strict"
