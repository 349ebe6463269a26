"""A hung remote share in a real delivery role: local candidates are still delivered on time, a
stuck root recovers once the share answers again, and the process stops on SIGTERM."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import StateDir
from donebell.shared.text.short_id import short_id
from donebell.workers.gate import run_gate_pass
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
from support.remote_gate_kit import (
    PASS_LIMIT,
    last_record,
    probe_workers,
    remote_rollout,
    submit_remote_candidate,
    wait_probe_workers_gone,
)

#: Each test starts without probe workers; its own are killed afterwards (after any mount abort).
pytestmark = pytest.mark.usefixtures("probe_pools")


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
        remote_key = submit_remote_candidate(env.state, hung.path, PARENT_THREAD, PARENT_TURN,
                                    remote_rollout(hung.path, PARENT_THREAD))  # fmt: skip
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
            while last_record(env.state, remote_key)["last"].get("reason") != "remote-unresponsive":
                assert time.monotonic() - started < 10
                t0 = time.monotonic()
                role.pass_at(time.time())
                slowest = max(slowest, time.monotonic() - t0)
                time.sleep(0.05)
            assert slowest < PASS_LIMIT
            [root_health] = role.health_extra()["gate_remote"]
            assert root_health["state"] == "unresponsive" and root_health["lingering_pids"]
            assert len(probe_workers(hung.path)) == 1  # the stuck one; no second probe while it lives
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
            out = last_record(env.state, remote_key)
            assert out["folder"] == "suppressed" and out["reason"] == "unverifiable"
            assert len(srv.messages()) == 1
        finally:
            role.teardown()
            hung.abort()
        wait_probe_workers_gone(hung.path)


def test_stuck_root_recovers_once_the_share_answers_again(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """After the hang ends (the stuck worker dies), the root is probed again and its candidate promoted."""
    mount = tmp_path / "wsl"
    with HungMount(mount, take_requests=True) as hung:
        key = submit_remote_candidate(state, mount, SIMPLE_THREAD, SIMPLE_TURN, remote_rollout(mount, SIMPLE_THREAD))
        settings = fast_settings(
            watch_roots=[str(mount)], watch_remote_timeout_seconds=0.5, unknown_retry_max_seconds=0.2
        )
        deadline = time.monotonic() + 10
        while last_record(state, key)["last"].get("reason") != "remote-unresponsive":
            assert time.monotonic() < deadline
            run_gate_pass(state, settings, time.time())
            time.sleep(0.05)
        hung.abort()  # the share is gone; the folder underneath comes back readable
    wait_probe_workers_gone(mount)
    rollout = remote_rollout(mount, SIMPLE_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in lines_of("simple-exec.jsonl")))
    deadline = time.monotonic() + 30  # the root's probe backoff, plus a worker start on a loaded machine
    while state.locate(key) == "pending":
        assert time.monotonic() < deadline, last_record(state, key)["last"]
        result = run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert state.locate(key) == "outbox"
    # A new worker answered (the stuck one died with the hang). Under load a fresh worker can miss
    # the 0.5 s probe window once while it starts, and a third one is started: still a recovery.
    assert result.remote[0]["state"] == "ready" and result.remote[0]["workers_started"] >= 2


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
        submit_remote_candidate(
            env.state, hung.path, PARENT_THREAD, PARENT_TURN, remote_rollout(hung.path, PARENT_THREAD)
        )
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
        wait_probe_workers_gone(hung.path)
