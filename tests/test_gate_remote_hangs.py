"""Real hangs on a remote watch root: a hung FUSE share, a FIFO named like a rollout and a dead probe
worker each end as a bounded probe decision, never a gate pass that waits on the share."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.title import thread_title
from donebell.workers.gate import run_gate_pass
from fixtures.gate.kit import (
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    fast_settings,
)
from support.hung_mount import HungMount
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


def test_hanging_probe_on_a_watch_root_is_cut_off_and_ends_unverifiable_in_strict(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe worker that never answers (a killable hang) is probed once: every pass stays short, the
    candidate waits remote-unresponsive, the killed worker is reaped, and after the probe grace strict
    says unverifiable."""
    monkeypatch.setenv("DONEBELL_TEST_FAULT", "gate-remote-worker:hang")
    root = tmp_path / "hang-root"
    rollout = remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_text("")
    key = submit_remote_candidate(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(
        watch_roots=[str(root)], watch_remote_timeout_seconds=1.0, idle_probe_grace_seconds=30.0,
        unknown_retry_max_seconds=0.5,
    )  # fmt: skip
    started = time.monotonic()
    while last_record(state, key)["last"].get("reason") != "remote-unresponsive":
        assert time.monotonic() - started < 10, "no remote-unresponsive decision"
        t0 = time.monotonic()
        result = run_gate_pass(state, settings, time.time())
        assert time.monotonic() - t0 < PASS_LIMIT
        time.sleep(0.05)
    assert time.monotonic() - started >= 1.0  # the worker had its whole budget
    out = last_record(state, key)
    assert out["folder"] == "pending" and out["record"]["probe"]["wait_kind"] == "unknown"
    assert out["record"]["probe"]["waiting_for"]["root"] == str(root)
    wait_probe_workers_gone(root)  # a sleeping worker is killable: none is left behind
    # Past the grace, the root's trouble still stands (retry after one budget): strict suppresses.
    result = run_gate_pass(state, settings, time.time() + 60)
    out = last_record(state, key)
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
    rollout = remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    os.mkfifo(rollout)
    key = submit_remote_candidate(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(watch_roots=[str(root)], idle_probe_grace_seconds=5.0, unknown_retry_max_seconds=0.5)
    deadline = time.monotonic() + 10
    while last_record(state, key)["last"].get("reason") in (None, "remote-unresponsive"):
        assert time.monotonic() < deadline, "the FIFO probe never answered"
        run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert last_record(state, key)["last"]["reason"] != "remote-unresponsive"
    deadline = time.monotonic() + 10
    while state.locate(key) == "pending":
        assert time.monotonic() < deadline
        run_gate_pass(state, settings, time.time() + 60)
        time.sleep(0.05)
    assert last_record(state, key)["reason"] == "unverifiable"


def test_dead_probe_worker_is_a_probe_error_not_a_hang(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that dies mid-probe (killed, crashed) ends that probe at once as remote-probe-error."""
    monkeypatch.setenv("DONEBELL_TEST_FAULT", "gate-remote-worker:hang")
    root = tmp_path / "hang-root"
    rollout = remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    rollout.write_text("")
    key = submit_remote_candidate(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    settings = fast_settings(watch_roots=[str(root)], watch_remote_timeout_seconds=60.0)
    run_gate_pass(state, settings, time.time())
    deadline = time.monotonic() + 10
    while not probe_workers(root):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    for proc in probe_workers(root):
        proc.kill()
    while last_record(state, key)["last"].get("reason") != "remote-probe-error":
        assert time.monotonic() < deadline, "the dead worker was not noticed"
        run_gate_pass(state, settings, time.time())
        time.sleep(0.05)
    assert "exited without answering" in last_record(state, key)["last"]["evidence"]


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
