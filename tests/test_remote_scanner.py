"""The remote-scanner role: one-shot children per root, their budget, their own cursor namespace.

A hung remote root is a real hung mount: a FUSE file system (spoken directly on /dev/fuse) that
answers INIT and then never answers again. In "queue" mode requests stay queued and a SIGKILL
frees the waiting process; in "read" mode the server takes each request and never replies, which
leaves the caller in an unkillable wait, like a dead NFS server. Needs root and /dev/fuse.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import psutil
from donebell.shared.config.model import Settings
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.scanners.remote import RemoteScannerRole, RootRun
from donebell.workers.scanners.remote_root_summary import SUMMARY_KEY
from donebell.workers.scanners.remote_scan_child import root_hash
from support.hung_mount import HungMount
from support.remote_scanner_kit import WORKER, _config, _good_root
from support.scanner_kit import IDS, fixture_lines, make_index, records, rollout_path, today_folder


def _scan_children(needle: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if "donebell.workers.scanners.remote_scan_child" in cmdline and any(needle in part for part in cmdline):
            if proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def test_remote_root_candidates_carry_origin_and_their_own_cursors(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """A root's rollouts, found via its own index (paths of the other system re-rooted), become
    remote-scanner candidates labelled with the root's origin, with cursors under watch/remote/<hash>/."""
    root = tmp_path / "wsl-root"
    old = root / "sessions" / "2025" / "01" / "15"
    old.mkdir(parents=True)
    path = rollout_path(root, "tool-exec-command", old)
    path.write_bytes(b"".join(fixture_lines("tool-exec-command")))
    foreign = "/home/u/.codex/sessions/2025/01/15/" + path.name  # as the distro's Codex wrote it
    make_index(root / "sqlite", [{"id": IDS["tool-exec-command"][0], "rollout_path": foreign}])
    _config(
        isolated_env,
        watch_roots=[
            {"path": str(root), "origin": "wsl-ubuntu", "sqlite_path": str(root / "sqlite" / "state_5.sqlite")}
        ],
    )
    done = subprocess.run([*WORKER, "--once"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    [rec] = records(state, "pending")
    assert rec["key"] == event_key("codex", *IDS["tool-exec-command"])
    assert (rec["source"], rec["origin"], rec["codex_home"]) == ("remote-scanner", "wsl-ubuntu", str(root))
    assert rec["sqlite_home"] == str(root / "sqlite") and rec["transcript_path"] == str(path)
    namespace = state.root / "watch" / "remote" / root_hash(str(root))
    cursors = [p for p in namespace.glob("*.json") if p.stem != SUMMARY_KEY]  # + the root's scan summary
    assert len(cursors) == 1 and (namespace / f"{SUMMARY_KEY}.json").exists()
    assert not (state.root / "watch" / "local").exists()
    health = state.read_health("remote-scanner") or {}
    [info] = health["roots"]
    assert info["status"] == "ok" and info["index_status"] == "ok" and health["cycles_completed"] == 1


def test_hung_root_is_cut_off_at_its_budget_while_another_root_completes(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """A root on a hung mount is killed once its child has run for watch_remote_timeout_seconds and is
    recorded timed_out; the healthy root's candidate is written in the same cycle; no child is left."""
    good = _good_root(tmp_path)
    with HungMount(tmp_path / "hung", take_requests=False) as hung:
        _config(
            isolated_env,
            watch_roots=[str(hung.path), {"path": str(good), "origin": "share"}],
            watch_remote_timeout_seconds=1.5,
        )
        started = time.monotonic()
        done = subprocess.run([*WORKER, "--once"], capture_output=True, timeout=60)
        elapsed = time.monotonic() - started
        assert done.returncode == 0, done.stderr
        assert 1.5 <= elapsed < 1.5 + 5
        assert _scan_children(str(hung.path)) == []
    health = state.read_health("remote-scanner") or {}
    by_path = {r["path"]: r for r in health["roots"]}
    assert by_path[str(hung.path)]["status"] == "timed_out" and by_path[str(hung.path)]["timed_out"] == 1
    assert by_path[str(good)]["status"] == "ok" and health["timed_out_total"] == 1
    assert "timed_out" in health["degraded_reason"]
    assert [r["origin"] for r in records(state, "pending")] == ["share"]


def test_unkillable_hang_never_blocks_the_role_nor_piles_up_children(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """A child stuck in an unkillable wait is marked stuck, not restarted while it lives, and the role's
    passes stay short; once the mount goes away the child ends and the root is scanned again."""
    with HungMount(tmp_path / "dead-nfs", take_requests=True) as hung:
        settings = Settings(watch_roots=[str(hung.path)], watch_remote_timeout_seconds=1.0, watch_scan_seconds=0.2)
        role = RemoteScannerRole(state, settings, argparse.Namespace(once=False, root_index=None, scan_scope="hot"))
        role.setup()
        try:
            run = role.runs[0]
            deadline = time.monotonic() + 10
            while run.info["status"] != "stuck" and time.monotonic() < deadline:
                t0 = time.monotonic()
                result = role.run_pass()
                assert time.monotonic() - t0 < 1.5  # bounded by the reap wait, never by the mount
                time.sleep(result.next_in or 0.05)
            assert run.info["status"] == "stuck" and run.lingering
            for _ in range(10):  # well past watch_scan_seconds: still the one child
                role.run_pass()
                time.sleep(0.1)
            assert run.info["runs"] == 1 and "stuck" in (role.run_pass().degraded or "")
            hung.abort()
            deadline = time.monotonic() + 10
            while run.info["runs"] < 2 or run.proc is not None:
                assert time.monotonic() < deadline, run.info
                role.run_pass()
                time.sleep(0.05)
            assert run.info["status"] == "ok" and run.info["timed_out"] == 1
        finally:
            role.teardown()


def test_budget_kill_takes_the_childs_own_children(tmp_path: Path) -> None:
    """Killing a run over budget kills its whole process group, grandchildren included."""
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time, pathlib;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(p.pid)); time.sleep(60)"
    )
    from donebell.shared.config.model import WatchRoot

    run = RootRun(WatchRoot(path=str(tmp_path)), [sys.executable, "-c", script], budget=1.0)
    run.spawn()
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    grandchild = psutil.Process(int(pid_file.read_text()))
    while run.poll(time.monotonic(), 60.0) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert run.info["status"] == "timed_out" and run.info["last_seconds"] >= 1.0
    assert _gone(grandchild, 5)


def _gone(proc: psutil.Process, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_unreachable_root_is_reported_unavailable(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """A root whose folder does not exist (a stopped WSL distro) is recorded unavailable, not failed."""
    today_folder(tmp_path / "fine")
    _config(isolated_env, watch_roots=[str(tmp_path / "gone"), str(tmp_path / "fine")])
    subprocess.run([*WORKER, "--once"], check=True, capture_output=True, timeout=60)
    statuses = [r["status"] for r in (state.read_health("remote-scanner") or {})["roots"]]
    assert statuses == ["unavailable", "ok"]
