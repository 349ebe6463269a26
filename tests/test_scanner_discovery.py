"""Discovery without walking history: the thread index, hot folders, and their failure modes."""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.discovery import hot_day_folders, remap_to_root
from support.scanner_kit import (
    IDS,
    append,
    born_ago,
    engine,
    fixture_lines,
    make_index,
    records,
    rollout_path,
    set_age,
    today_folder,
)


def _old_folder_rollout(home: Path, name: str) -> Path:
    """A thread created long ago (old date folder) that has just been resumed (fresh mtime)."""
    folder = home / "sessions" / "2025" / "01" / "15"
    folder.mkdir(parents=True)
    path = rollout_path(home, name, folder)
    path.write_bytes(b"".join(fixture_lines(name)))
    return path


def test_index_finds_a_resumed_rollout_outside_the_hot_folders(state: StateDir, tmp_path: Path) -> None:
    """A recently updated thread whose rollout sits in an old date folder is found through state_5."""
    home = tmp_path / "codex"
    path = _old_folder_rollout(home, "simple-exec")
    assert engine(state, home).scan(full=True).counters["terminal_created"] == 0  # no index: not found
    make_index(home, [{"id": IDS["simple-exec"][0], "rollout_path": path}])
    scanner = engine(state, home)
    report = scanner.scan(full=True)
    assert scanner.index_result.status == "ok" and report.counters["terminal_created"] == 1
    assert Path(path).parent in scanner.watch_paths()  # its folder wakes the worker from now on


def test_index_path_through_a_symlinked_home_is_the_same_file(state: StateDir, tmp_path: Path) -> None:
    """An index row spelled via a symlink to the Codex home maps onto the hot-folder file: one cursor, one submit."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    (tmp_path / "link").symlink_to(home)
    spelled = tmp_path / "link" / path.relative_to(home)
    make_index(home, [{"id": IDS["simple-exec"][0], "rollout_path": spelled}])
    scanner = engine(state, home)
    report = scanner.scan(full=True)
    assert len(scanner.watched) == 1 and report.counters["terminal_created"] == 1
    assert not report.counters["terminal_merged"] and len(list((state.root / "watch" / "local").iterdir())) == 1


def test_sqlite_home_separate_from_codex_home(state: StateDir, tmp_path: Path) -> None:
    """With CODEX_SQLITE_HOME elsewhere, the index is read from there."""
    home, sqlite_home = tmp_path / "codex", tmp_path / "sqlite"
    path = _old_folder_rollout(home, "tool-exec-command")
    make_index(sqlite_home, [{"id": IDS["tool-exec-command"][0], "rollout_path": path}])
    report = engine(state, home, sqlite_home=sqlite_home).scan(full=True)
    assert report.counters["terminal_created"] == 1
    assert records(state, "pending")[0]["sqlite_home"] == str(sqlite_home)


def test_old_rollouts_are_not_replayed(state: StateDir, tmp_path: Path) -> None:
    """A rollout last written before the replay window starts at its end; only later turns count."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    path.write_bytes(b"".join(lines))
    set_age(path, 3600)
    scanner = engine(state, home, replay_seconds=300)
    scanner.scan(full=True)
    assert records(state, "pending") == []
    resumed = [line.replace(b"9063-7c32", b"7777-7c32") for line in lines[1:]]
    append(path, b"".join(resumed))
    scanner.scan(full=False)
    [rec] = records(state, "pending")
    assert rec["turn_id"] == "01a22be2-7777-7c32-bfff-4b6d573f20c6" and rec["classification"] == "root"
    assert rec["has_user_message"] is True  # the resumed turn was read from its task_started


def test_recent_rollout_is_replayed_from_its_start(state: StateDir, tmp_path: Path) -> None:
    """A rollout modified within watch_initial_replay_seconds is read from line 0 when first found."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    set_age(path, 60)
    born_ago(state, 120)  # the state directory existed then: the task ended while donebell was down
    engine(state, home, replay_seconds=300).scan(full=True)
    assert len(records(state, "pending")) == 1


def test_a_rollout_last_written_before_the_state_directory_existed_is_history(state: StateDir, tmp_path: Path) -> None:
    """Within the replay window but older than the state directory (a first run, or after a purge):
    nothing in it ended after the state directory was created, so nothing is news."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    set_age(path, 60)
    born_ago(state, 30)
    report = engine(state, home, replay_seconds=300).scan(full=True)
    assert records(state, "pending") == [] and report.counters["cursors_advanced"] == 1
    append(path, b"".join(fixture_lines("simple-exec")[1:]).replace(b"9063-7c32", b"5555-7c32"))
    engine(state, home, replay_seconds=300).scan(full=False)  # a turn written since: news
    assert [r["turn_id"] for r in records(state, "pending")] == ["01a22be2-5555-7c32-bfff-4b6d573f20c6"]


def test_in_a_rollout_written_since_a_turn_that_ended_before_the_state_directory_is_history(
    state: StateDir, tmp_path: Path
) -> None:
    """A thread open across the first run: its file is written after the state directory was
    created, but its first turn ended before that (well within the window): only the turn that
    ended afterwards is news."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    old = fixture_lines("simple-exec", own_end=True)  # ended ~5 s ago
    born_ago(state, 2)  # the state directory came 2 s ago: after that turn ended
    ended_now = b'"completed_at":%d' % int(time.time())  # the second turn ends now: after it
    fresh = [
        re.sub(rb'"completed_at":\d+', ended_now, line.replace(b"9063-7c32", b"5555-7c32"))
        for line in fixture_lines("simple-exec")[1:]
    ]
    path.write_bytes(b"".join(old + fresh))
    report = engine(state, home, replay_seconds=300).scan(full=True)
    assert report.counters["terminal_historical"] == 1
    assert [r["turn_id"] for r in records(state, "pending")] == ["01a22be2-5555-7c32-bfff-4b6d573f20c6"]


def test_a_turn_stamped_in_the_second_the_state_directory_was_born_is_news(state: StateDir, tmp_path: Path) -> None:
    """Codex stamps ``completed_at`` in whole seconds (truncated). A task that fails right after the
    first run starts (a model error ends it within a second) is stamped with the second the state
    directory was born in, a fraction before its birth: it ended after the birth all the same, and
    is pushed (seen in CI: the real Codex's HTTP 500 scenario was dropped as history)."""
    home = tmp_path / "codex"
    second = int(time.time()) - 1
    born_ago(state, time.time() - (second + 0.9))  # born 0.9 s into that second
    ended = b'"completed_at":%d' % second  # ...and the turn stamped with the same second
    lines = [
        re.sub(rb'"completed_at":\d+', ended, line) for line in fixture_lines("error-http500-task_complete-with-error")
    ]
    rollout_path(home, "error-http500-task_complete-with-error").write_bytes(b"".join(lines))
    report = engine(state, home, replay_seconds=300).scan(full=True)
    assert report.counters["terminal_historical"] == 0, report.counters
    assert [r["outcome"] for r in records(state, "pending")] == ["failed"]


def test_replay_skips_turns_that_ended_before_the_window(state: StateDir, tmp_path: Path) -> None:
    """Replaying a just-found rollout submits only turns that ended within the window, not its history."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec", shift_to_now=False)  # a turn from the recording day, long ago
    path.write_bytes(b"".join(lines))  # ...in a file modified just now (a resumed thread)
    scanner = engine(state, home, replay_seconds=300)
    assert scanner.scan(full=True).counters["terminal_historical"] == 1
    assert records(state, "pending") == []
    fresh = fixture_lines("simple-exec")
    append(path, b"".join(line.replace(b"9063-7c32", b"5555-7c32") for line in fresh[1:]))
    scanner.scan(full=False)
    assert [r["turn_id"] for r in records(state, "pending")] == ["01a22be2-5555-7c32-bfff-4b6d573f20c6"]


def _hot_rollout(home: Path) -> Path:
    path = rollout_path(home, "abort-sigint-turn_aborted")
    path.write_bytes(b"".join(fixture_lines("abort-sigint-turn_aborted")))
    return path


def test_locked_index_degrades_to_hot_folders(state: StateDir, tmp_path: Path) -> None:
    """An index held under an EXCLUSIVE transaction reports "locked"; hot-folder rollouts still yield candidates."""
    home = tmp_path / "codex"
    make_index(home, [])
    _hot_rollout(home)
    holder = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        scanner = engine(state, home)
        started = time.monotonic()
        report = scanner.scan(full=True)
        assert time.monotonic() - started < 2  # a short busy timeout, never a stall
        assert scanner.index_result.status == "locked" and report.counters["terminal_created"] == 1
        assert scanner.scan(full=False).counters["index_queries"] == 0  # light passes do not retry it
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert scanner.scan(full=True).counters["index_queries"] == 1 and scanner.index_result.status == "ok"


@pytest.mark.parametrize(
    ("make", "status"),
    [
        ("missing", "missing"),
        ("corrupt", "corrupt"),
        ("unknown-schema", "unknown-schema"),
    ],
)
def test_unusable_index_degrades_to_hot_folders(state: StateDir, tmp_path: Path, make: str, status: str) -> None:
    """Missing, corrupt and unknown-schema databases each get a status word and never stop the scan."""
    home = tmp_path / "codex"
    home.mkdir(exist_ok=True)
    if make == "corrupt":
        (home / "state_5.sqlite").write_bytes(b"this is not an SQLite database" * 100)
    elif make == "unknown-schema":
        db = sqlite3.connect(home / "state_5.sqlite")
        db.execute("CREATE TABLE threads (id TEXT, path TEXT)")
        db.commit()
        db.close()
    _hot_rollout(home)
    scanner = engine(state, home)
    report = scanner.scan(full=True)
    assert scanner.index_result.status == status and scanner.health()["index_status"] == status
    assert report.counters["terminal_created"] == 1 and not report.counters["file_errors"]


def test_an_index_read_while_codex_created_it_is_read_again_once_it_changed(state: StateDir, tmp_path: Path) -> None:
    """Codex's first TUI run: the scanner read ``state_5.sqlite`` before its ``threads`` table
    existed (unknown-schema, the role degraded); the light pass after Codex wrote it reads it again
    instead of waiting for the next full pass (an e2e run stayed degraded that long)."""
    home = tmp_path / "codex"
    home.mkdir(exist_ok=True)
    db = sqlite3.connect(home / "state_5.sqlite")
    db.execute("CREATE TABLE migrating (version INTEGER)")
    db.commit()
    scanner = engine(state, home)
    scanner.scan(full=True)
    assert scanner.index_result.status == "unknown-schema"
    assert scanner.scan(full=False).counters["index_queries"] == 0  # unchanged: not asked again
    db.close()
    make_index(home, [])  # Codex's migrations ran
    scanner._index_query_mono -= 10  # past the throttle interval (2 s) without sleeping
    assert scanner.scan(full=False).counters["index_queries"] == 1
    assert scanner.index_result.status == "ok"


def test_unchanged_index_is_not_queried_again(state: StateDir, tmp_path: Path) -> None:
    """An index whose file and WAL did not change is not re-queried on the next full pass."""
    home = tmp_path / "codex"
    make_index(home, [])
    scanner = engine(state, home)
    assert scanner.scan(full=True).counters["index_queries"] == 1
    assert scanner.scan(full=True).counters["index_queries"] == 0
    assert scanner.scan(full=False).counters["index_queries"] == 0


def test_scan_scope_all_walks_the_archive_once(state: StateDir, tmp_path: Path) -> None:
    """--scan-scope all finds a recent rollout the index and hot folders miss; hot scope does not."""
    home = tmp_path / "codex"
    archived = home / "archived_sessions" / "2025" / "02" / "01"
    archived.mkdir(parents=True)
    rollout_path(home, "simple-exec", archived).write_bytes(b"".join(fixture_lines("simple-exec")))
    old = rollout_path(home, "tool-exec-command", archived)
    old.write_bytes(b"".join(fixture_lines("tool-exec-command")))
    set_age(old, 10 * 86400)
    assert engine(state, home).scan(full=True).counters["terminal_created"] == 0
    scanner = engine(state, home, scope="all")
    report = scanner.scan(full=True)
    assert report.counters["terminal_created"] == 1  # the old one starts at its end
    assert report.counters["cursors_advanced"] == 1  # no cursor written for the untouched old file
    assert scanner.watched == {}  # walked files are not kept in the hot set
    assert scanner.scan(full=True).counters["cursors_advanced"] == 0  # walked once per run


def test_hot_folders_are_today_and_yesterday_in_utc(tmp_path: Path) -> None:
    """The hot set is sessions/YYYY/MM/DD for the UTC day and the day before (plus local days)."""
    at = datetime(2026, 3, 1, 0, 30, tzinfo=UTC).timestamp()
    folders = hot_day_folders(tmp_path, at)
    assert folders[:2] == [tmp_path / "sessions/2026/03/01", tmp_path / "sessions/2026/02/28"]


def test_new_hot_folder_is_watched_through_its_existing_parent(state: StateDir, tmp_path: Path) -> None:
    """Before today's folder exists, its nearest existing ancestor is watched so its creation wakes the worker."""
    home = tmp_path / "codex"
    (home / "sessions").mkdir(parents=True)
    scanner = engine(state, home)
    scanner.scan(full=True)
    assert home / "sessions" in scanner.watch_paths()
    today = today_folder(home)
    scanner.scan(full=False)
    assert today in scanner.watch_paths()


def test_index_paths_of_another_system_are_mapped_onto_the_root() -> None:
    """A WSL index path is re-rooted from its sessions/ component onward; other paths are refused."""
    root = Path("/mnt/wsl-root")
    mapped = remap_to_root("/home/u/.codex/sessions/2026/11/30/rollout-x.jsonl", root)
    assert mapped == root / "sessions/2026/11/30/rollout-x.jsonl"
    assert remap_to_root(r"C:\Users\u\.codex\archived_sessions\a.jsonl", root) == root / "archived_sessions/a.jsonl"
    assert remap_to_root("/elsewhere/file.jsonl", root) is None
