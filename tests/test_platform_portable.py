"""The platform seam's portable implementations (issue 39), each run here on real files and real
processes: what macOS and Windows run, and what ``DONEBELL_FORCE_PORTABLE=1`` switches Linux to.
Only Windows' own errors (a sharing violation) are injected: no Windows runs here."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from donebell.shared import platform
from donebell.shared.platform import files, locked
from donebell.shared.platform.watch import new_file_watch
from donebell.shared.process import groups, liveness
from donebell.shared.process.orphans import die_with_parent
from donebell.shared.waker import Waker
from donebell.workers.kit.hook_context import PayloadError, decode_object
from support.process_tree import TREE, gone, tree_pids
from support.waiting import wait_for

HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"


@pytest.fixture()
def portable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platform.FORCE_PORTABLE_ENV, "1")


# --- file watching ----------------------------------------------------------------------------


@pytest.mark.parametrize("forced", [False, True])
def test_the_waker_wakes_on_a_change_in_either_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: bool
) -> None:
    """A line appended to a watched folder's file wakes the waiter early (inotify, or stat polling)."""
    if forced:
        monkeypatch.setenv(platform.FORCE_PORTABLE_ENV, "1")
    folder = tmp_path / "watched"
    folder.mkdir()
    target = folder / "rollout.jsonl"
    target.write_text("one\n")
    waker = Waker(poll_interval=0.05)
    try:
        assert waker.mechanism == ("poll" if forced else "inotify")
        waker.watch([folder, target])
        assert waker.wait(0.2) is False  # nothing changed
        threading.Timer(0.3, lambda: target.write_text("one\ntwo\n")).start()
        started = time.monotonic()
        assert waker.wait(20.0) is True
        assert time.monotonic() - started < 10.0
        waker.interrupt()
        assert waker.wait(5.0) is True
    finally:
        waker.close()


def test_the_portable_waker_selects_on_sockets_only(tmp_path: Path, portable: None) -> None:
    """Windows' select accepts sockets only: in portable mode everything the waker waits on is one
    (its trigger was a pipe, which no role on Windows could have waited on)."""
    waker = Waker(poll_interval=0.05)
    try:
        waker.watch([tmp_path])
        selected = [waker._trigger_r.fileno()] + ([waker._watch.fd] if waker._watch.fd >= 0 else [])
        assert selected and all(stat.S_ISSOCK(os.fstat(fd).st_mode) for fd in selected)
        assert isinstance(waker._trigger_r, socket.socket)
        waker.interrupt()
        waker.interrupt()
        assert waker.wait(5.0) is True and waker.wait(0.1) is False  # both interrupts drained at once
    finally:
        waker.close()


def test_the_poll_watch_sees_a_write_inside_a_watched_folder(tmp_path: Path, portable: None) -> None:
    """Only the folder is watched (as the scanners watch a day's rollout folder): an append to a
    file in it leaves the folder's own mtime alone, and must still be seen (inotify reports it)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    rollout = folder / "rollout.jsonl"
    rollout.write_text("one\n")
    before = os.stat(folder).st_mtime_ns
    watch = new_file_watch()
    watch.watch([str(folder)])
    assert watch.changed() is False
    with open(rollout, "a") as f:
        f.write('{"type":"task_complete"}\n')
    assert os.stat(folder).st_mtime_ns == before  # the folder itself did not change
    assert watch.changed() is True and watch.changed() is False


def test_the_poll_watch_sees_a_new_file_and_a_deleted_one(tmp_path: Path, portable: None) -> None:
    watch = new_file_watch()
    assert watch.mechanism == "poll" and watch.fd == -1
    path = tmp_path / "late.json"
    watch.watch([str(path)])
    assert watch.changed() is False
    path.write_text("{}")
    assert watch.changed() is True and watch.changed() is False
    path.unlink()
    assert watch.changed() is True


# --- is it locked by another process ----------------------------------------------------------


@pytest.mark.parametrize("forced", [False, True])
def test_a_held_lock_is_seen_in_either_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: bool) -> None:
    if forced:
        monkeypatch.setenv(platform.FORCE_PORTABLE_ENV, "1")
    lock = tmp_path / "thread.lock"
    lock.touch()
    assert locked.held_by_another(str(lock)) is False
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert locked.held_by_another(str(lock)) is True
    finally:
        holder.kill()
        holder.wait()
    assert locked.held_by_another(str(lock)) is False
    assert locked.held_by_another(str(tmp_path / "missing.lock")) is False


@pytest.mark.parametrize("forced", [False, True])
def test_a_fifo_in_place_of_the_lock_never_blocks(tmp_path: Path, forced: bool) -> None:
    """A FIFO planted where the writer lock should be: the answer is "not held", at once (the old
    fallback opened it without O_NONBLOCK and hung until a writer came)."""
    fifo = tmp_path / "thread.lock"
    os.mkfifo(fifo)
    code = "import sys; from donebell.shared.platform import locked; print(locked.held_by_another(sys.argv[1]), locked._probe(sys.argv[1]))"
    env = {**os.environ, platform.FORCE_PORTABLE_ENV: "1" if forced else "0"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, env=env, timeout=30
    )
    assert result.stdout.split() == ["False", "False"], result.stderr


# --- process identity, groups, parent death ---------------------------------------------------


def test_procfs_and_psutil_agree_on_a_start_time(portable: None) -> None:
    """Records written by one mechanism are read by the other within the 1 s tolerance."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        by_psutil = liveness.process_create_time(child.pid)
        assert by_psutil is not None
        if platform.host() == "linux":
            native = liveness._procfs_create_time(child.pid)
            assert native is not None and abs(native - by_psutil) < 1.0
        assert liveness.start_ticks(child.pid) is None  # portable: no clock ticks to compare
        assert liveness.pid_runs(child.pid) is True
        assert liveness.own_start_time() is None  # the hook then stamps the time it ran
    finally:
        child.kill()
        child.wait()
    assert liveness.pid_runs(child.pid) is False
    assert liveness.process_create_time(child.pid) is None


def test_the_portable_group_kill_finds_the_descendants(tmp_path: Path, portable: None) -> None:
    """psutil-tree: a detached start (subprocess) and its grandchild, killed by walking the tree."""
    assert not groups.group_signals()
    pids_file = tmp_path / "pids"
    pid = groups.spawn_detached([sys.executable, "-c", TREE, str(pids_file)], cwd=groups.NEUTRAL_CWD)
    try:
        leader, grandchild = tree_pids(pids_file)
        assert leader == pid
        groups.kill_group(pid)
        wait_for(lambda: gone(grandchild), timeout=10, what="the grandchild killed by the tree walk")
    finally:
        if not gone(pid):
            os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_the_portable_parent_check_exits_when_the_parent_isgone(portable: None) -> None:
    """ppid-check: a helper whose recorded parent is not its parent leaves at once (exit 3)."""
    code = "import sys; from donebell.shared.process.orphans import die_with_parent; die_with_parent(int(sys.argv[1])); print('alive')"
    env = {**os.environ, platform.FORCE_PORTABLE_ENV: "1"}
    gone = subprocess.run(
        [sys.executable, "-c", code, "999999999"], capture_output=True, text=True, env=env, timeout=30
    )
    assert gone.returncode == 3 and gone.stdout == ""
    mine = subprocess.run(
        [sys.executable, "-c", code, str(os.getpid())], capture_output=True, text=True, env=env, timeout=30
    )
    assert mine.returncode == 0 and mine.stdout.strip() == "alive"
    die_with_parent(os.getppid())  # this process's real parent: nothing happens


# --- atomic replace, hook stdin, locations ----------------------------------------------------


def _sharing_violation() -> PermissionError:
    exc = PermissionError(13, "The process cannot access the file because it is being used by another process")
    exc.winerror = 32  # type: ignore[attr-defined]  # what Windows sets; Linux has no such errors
    return exc


def test_rename_retry_outlasts_a_sharing_violation(
    tmp_path: Path, portable: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rename-retry: a target held for a moment (Windows' sharing violation) is replaced once free;
    any other refusal is raised at once. Windows' own errors cannot happen here: they are injected."""
    src, dst = tmp_path / "new", tmp_path / "target"
    src.write_text("new")
    dst.write_text("old")
    real, calls = os.replace, []

    def held_twice(a: str, b: str) -> None:
        calls.append(a)
        if len(calls) <= 2:
            raise _sharing_violation()
        real(a, b)

    monkeypatch.setattr(os, "replace", held_twice)
    files.replace(str(src), str(dst))
    assert dst.read_text() == "new" and len(calls) == 3
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(PermissionError(13, "denied")))
    with pytest.raises(PermissionError):
        files.replace(str(dst), str(src))


def test_rename_does_not_retry_natively(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(platform.FORCE_PORTABLE_ENV, raising=False)
    if platform.mechanism("atomic_replace") != "rename":
        pytest.skip("this platform retries natively")
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(_sharing_violation()))
    with pytest.raises(PermissionError):
        files.replace(str(tmp_path / "a"), str(tmp_path / "b"))


def test_a_utf16_payload_is_read_in_portable_mode_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload file saved as "Unicode" on Windows (UTF-16 with its BOM) is decoded there and in
    portable mode; natively on Linux it is refused as invalid UTF-8. No BOM: nothing is guessed."""
    payload = '{"hook_event_name": "Stop", "note": "caf\u00e9"}'
    for encoded in (payload.encode("utf-16"), b"\xfe\xff" + payload.encode("utf-16-be")):
        monkeypatch.delenv(platform.FORCE_PORTABLE_ENV, raising=False)
        if platform.mechanism("hook_stdin") == "utf-8":
            with pytest.raises(PayloadError, match="not valid UTF-8"):
                decode_object(encoded)
        monkeypatch.setenv(platform.FORCE_PORTABLE_ENV, "1")
        assert decode_object(encoded) == {"hook_event_name": "Stop", "note": "caf\u00e9"}
    assert decode_object(b"\xef\xbb\xbf" + payload.encode()) == json.loads(payload)
    with pytest.raises(PayloadError, match="empty payload"):
        decode_object("   ".encode("utf-16"))
    with pytest.raises(PayloadError, match="not valid UTF-16"):
        decode_object(b"\xff\xfe\x00\xd8")  # a lone surrogate


def test_each_platforms_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every rule is a function of the environment and the home folder: all three checked here."""
    from donebell.shared import paths as locations  # the rules, each named by the seam's choice

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "APPDATA", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    assert locations.default_config_file("xdg") == f"{tmp_path}/.config/donebell/config.json"
    assert locations.default_state_dir("xdg") == f"{tmp_path}/.local/state/donebell"
    assert locations.service_log("xdg") is None
    support = f"{tmp_path}/Library/Application Support/donebell"
    assert (locations.default_config_file("library"), locations.default_state_dir("library")) == (
        f"{support}/config.json",
        f"{support}/state",
    )
    assert locations.service_log("library") == f"{tmp_path}/Library/Logs/donebell.log"
    monkeypatch.setenv("APPDATA", "/roaming")
    monkeypatch.setenv("LOCALAPPDATA", "/local")
    assert locations.default_config_file("appdata") == os.path.join("/roaming", "donebell", "config.json")
    assert locations.service_log("appdata") == os.path.join("/local", "donebell", "state", "notify.log")
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert locations.default_state_dir("xdg") == f"{tmp_path}/.local/state/donebell"
