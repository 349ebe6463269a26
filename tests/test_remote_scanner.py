"""The remote-scanner role: one-shot children per root, their budget, their own cursor namespace.

A hung remote root is a real hung mount: a FUSE file system (spoken directly on /dev/fuse) that
answers INIT and then never answers again. In "queue" mode requests stay queued and a SIGKILL
frees the waiting process; in "read" mode the server takes each request and never replies, which
leaves the caller in an unkillable wait, like a dead NFS server. Needs root and /dev/fuse.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psutil
from donebell.shared.config import Settings
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from donebell.workers.scanners.remote import RemoteScannerRole, RootRun
from donebell.workers.scanners.remote_root_summary import SUMMARY_KEY
from donebell.workers.scanners.remote_scan_child import root_hash
from support.hung_mount import HungMount
from support.scanner_kit import IDS, fixture_lines, make_index, records, rollout_path, today_folder

WORKER = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "remote-scanner"]


def _config(isolated_env: dict[str, Path], **values: Any) -> None:
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps(values))


def _good_root(tmp_path: Path) -> Path:
    root = tmp_path / "wsl-root"
    rollout_path(root, "simple-exec").write_bytes(b"".join(fixture_lines("simple-exec")))
    return root


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
    from donebell.shared.config import WatchRoot

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


# --- quick runs: an idle root costs a stat pass, not a scan -------------------------------------


def _child(
    state: StateDir, root: Path, *, python_flags: tuple[str, ...] = (), **env: str
) -> tuple[dict[str, Any], str]:
    """One real child run over ``root``: its JSON result and its stderr."""
    spec = {"path": str(root), "origin": "share", "budget": 30, "replay_seconds": 300, "scope": "hot"}
    spec["cursor_folder"] = f"watch/remote/{root_hash(str(root))}"
    done = subprocess.run(
        [sys.executable, *python_flags, "-m", "donebell.workers.scanners.remote_scan_child"]
        + ["--state-dir", str(state.root), "--spec", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_idle_root_runs_quick_and_any_change_runs_the_full_scan(state: StateDir, tmp_path: Path) -> None:
    """After a clean full scan an unchanged root gets a quick run; an appended turn, a new rollout in a
    hot folder, an index change, a new day's folder and the half-hourly safety net each run the full scan."""
    root = _good_root(tmp_path)
    first, _ = _child(state, root)
    assert (first["mode"], first["full_reason"], len(records(state, "pending"))) == (
        "full",
        "no summary of a clean full scan",
        1,
    )
    quick, _ = _child(state, root)
    assert (quick["mode"], quick["files_watched"], quick["index_status"]) == ("quick", 1, "missing")
    [path] = [p for p in today_folder(root).iterdir()]
    lines = fixture_lines("simple-exec")[1:]
    old_turn = IDS["simple-exec"][1].encode()
    path.write_bytes(path.read_bytes() + b"".join(line.replace(old_turn, b"turn-2") for line in lines))
    changed, _ = _child(state, root)
    assert (changed["mode"], changed["full_reason"]) == ("full", "rollout changed")
    assert len(records(state, "pending")) == 2 and _child(state, root)[0]["mode"] == "quick"
    rollout_path(root, "tool-exec-command").write_bytes(b"".join(fixture_lines("tool-exec-command")))
    assert _child(state, root)[0]["full_reason"] == "new rollout" and len(records(state, "pending")) == 3
    make_index(root, [])
    assert _child(state, root)[0]["full_reason"] == "thread index changed"
    assert _child(state, root)[0]["mode"] == "quick"
    assert _child(state, root, DONEBELL_CLOCK_OFFSET="1801")[0]["full_reason"] == "periodic full scan"
    midnight = (int(time.time() // 86400) + 2) * 86400  # UTC: the hot days change there
    assert _child(state, root, DONEBELL_CLOCK_OFFSET=str(midnight - 300 - time.time()))[0]["mode"] == "full"
    assert (
        _child(state, root, DONEBELL_CLOCK_OFFSET=str(midnight + 300 - time.time()))[0]["full_reason"] == "day changed"
    )


def test_quick_run_imports_neither_the_engine_nor_orjson_nor_sqlite(state: StateDir, tmp_path: Path) -> None:
    """A quick run stays on the standard library and StateDir; the full scan is what loads the engine."""
    root = _good_root(tmp_path)
    heavy = ("donebell.workers.scanners.scan_engine", "orjson", "sqlite3", "argparse", "hashlib", "pathlib", "typing")

    def loaded(stderr: str) -> set[str]:
        return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}

    full, full_imports = _child(state, root, python_flags=("-X", "importtime"))
    quick, quick_imports = _child(state, root, python_flags=("-X", "importtime"))
    assert (full["mode"], quick["mode"]) == ("full", "quick")
    assert {"donebell.workers.scanners.scan_engine", "orjson", "sqlite3"} <= loaded(full_imports)
    site = loaded(
        subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True).stderr
    )
    assert [m for m in heavy if m in loaded(quick_imports) - site] == []


def test_a_locked_index_or_a_corrupt_summary_means_a_full_scan(state: StateDir, tmp_path: Path) -> None:
    """A quick run is never trusted after a full scan that met a locked index, nor on a summary that
    does not parse (which the next full scan rewrites)."""
    import sqlite3

    root = _good_root(tmp_path)
    db = make_index(root, [])
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert _child(state, root)[0]["index_status"] == "locked"
        again, _ = _child(state, root)
        assert (again["mode"], again["full_reason"]) == ("full", "thread index was locked")
    finally:
        holder.rollback()
        holder.close()
    assert _child(state, root)[0]["mode"] == "full" and _child(state, root)[0]["mode"] == "quick"
    summary = state.record_path(f"watch/remote/{root_hash(str(root))}", SUMMARY_KEY)
    summary.write_bytes(b'{"schema": 1, "kind": "remote-root-')
    assert _child(state, root)[0]["full_reason"] == "no summary of a clean full scan"
    assert _child(state, root)[0]["mode"] == "quick"


def test_role_records_each_runs_mode_in_health(state: StateDir, isolated_env: dict[str, Path], tmp_path: Path) -> None:
    """The role passes the cursor folder in the spec and shows each root's last mode and why it was full."""
    root = _good_root(tmp_path)
    _config(isolated_env, watch_roots=[str(root)])
    for expected in ("full", "quick"):
        subprocess.run([*WORKER, "--once"], check=True, capture_output=True, timeout=60)
        [info] = (state.read_health("remote-scanner") or {})["roots"]
        assert (info["status"], info["mode"]) == ("ok", expected)
    assert info["full_reason"] is None and info["files_watched"] == 1


def test_summary_helpers_mirror_the_engines(tmp_path: Path) -> None:
    """The quick check's index signature and name filter see what the engine sees (the name filter
    may only accept more); file stats and hot days are one shared definition (rollout_files)."""
    from donebell.workers.scanners import remote_root_summary as quick
    from donebell.workers.scanners.scan_discovery import ThreadIndex, is_rollout_name

    make_index(tmp_path / "db", [])
    sig = ThreadIndex(tmp_path / "db").signature()
    assert quick.index_signature(str(tmp_path / "db")) == [None if s is None else list(s) for s in sig]
    names = ["rollout-a.jsonl", "rollout-.jsonl", "rollout-a.jsonl.tmp", "xrollout-a.jsonl", "rollout-a\n.jsonl"]
    assert all(quick.maybe_rollout(n) for n in names + ["rollout-a.jsonl\n"] if is_rollout_name(n))


def test_file_signature_is_that_of_regular_files_only(tmp_path: Path) -> None:
    """A regular file has a [dev, ino, size, mtime_ns] signature; a FIFO, a folder or a missing
    path has none (both scanners use this one definition)."""
    from donebell.workers.scanners.rollout_files import file_sig

    regular, fifo, folder = tmp_path / "r.jsonl", tmp_path / "f.jsonl", tmp_path / "d.jsonl"
    regular.write_bytes(b"x\n")
    os.mkfifo(fifo)
    folder.mkdir()
    st = regular.stat()
    assert file_sig(str(regular)) == [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    for path in (fifo, folder, tmp_path / "missing", regular / "under-a-file"):
        assert file_sig(str(path)) is None, path


def test_hot_days_cover_utc_and_local_today_and_yesterday_across_dst(tmp_path: Path) -> None:
    """Hot folders are today's and yesterday's dates in UTC and local time, whatever the DST change."""
    from donebell.workers.scanners.rollout_files import hot_day_folders

    saved = os.environ.get("TZ")
    try:
        for tz in ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "UTC"):
            os.environ["TZ"] = tz
            time.tzset()
            for start in (1710054000, 1711846800, 1730595600, 1735689600):  # around DST changes, new year
                for at in range(start - 2 * 86400, start + 2 * 86400, 1800):
                    want = set()
                    for moment in (datetime.fromtimestamp(at, UTC), datetime.fromtimestamp(at)):
                        for delta in (0, 1):
                            want.add(
                                str(
                                    tmp_path.joinpath(
                                        "sessions", *(moment - timedelta(days=delta)).strftime("%Y/%m/%d").split("/")
                                    )
                                )
                            )
                    got = hot_day_folders(str(tmp_path), at)
                    assert set(got) == want and len(got) == len(want), (tz, at)
                    assert got[0].endswith(datetime.fromtimestamp(at, UTC).strftime("%Y/%m/%d")), (tz, at)
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


def test_summary_key_is_the_hash_of_its_label() -> None:
    """The summary's key is sha256 of a fixed label, a 64-hex name StateDir lists like a cursor's."""
    import hashlib

    from donebell.shared.keys import is_event_key

    assert SUMMARY_KEY == hashlib.sha256(b"donebell/remote-root-summary").hexdigest() and is_event_key(SUMMARY_KEY)
