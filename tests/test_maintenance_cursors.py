"""Maintenance forgets rollout cursors no scanner needs: local ones whose rollout is gone or that
were not updated for 30 days, remote ones only by age (never by looking at the remote path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir, now
from donebell.workers.kit.jsonl_tail import cursor_key
from donebell.workers.maintenance.cursor_retention import CursorRetention
from donebell.workers.scanners.remote_root_summary import SUMMARY_KEY
from donebell.workers.scanners.remote_scan_child import root_hash
from support.hung_mount import HungMount
from support.scanner_kit import IDS, fixture_lines, records, rollout_path, set_age

DAY = 86400.0
LOCAL = "watch/local"


def _config(isolated_env: dict[str, Path], **values: Any) -> None:
    isolated_env["config"].parent.mkdir(parents=True, exist_ok=True)
    isolated_env["config"].write_text(json.dumps({"topic": "donebell-test", **values}))


def _worker(role: str, *args: str, offset_days: float = 0.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DONEBELL_CLOCK_OFFSET": str(offset_days * DAY)}
    res = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "worker", role, "--once", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    return res


def _cleanup(state: StateDir) -> dict[str, int]:
    return (state.read_health("maintenance") or {})["last_cleanup"]  # type: ignore[no-any-return]


def _history(home: Path, name: str) -> Path:
    """A finished rollout in today's hot folder whose turn ended long ago (nothing to replay)."""
    path = rollout_path(home, name)
    path.write_bytes(b"".join(fixture_lines(name, shift_to_now=False)))
    set_age(path, 3600)
    return path


def _new_turn(path: Path, name: str, turn_id: str) -> None:
    """Append a second turn (the fixture's turn under a new id, ending now) to a rollout."""
    old = IDS[name][1].encode()
    lines = [line.replace(old, turn_id.encode()) for line in fixture_lines(name)[1:]]
    with open(path, "ab") as f:
        f.write(b"".join(lines))


def test_local_cursor_of_a_deleted_rollout_goes_and_the_others_stay(
    state: StateDir, isolated_env: dict[str, Path]
) -> None:
    """A watch/local cursor whose rollout no longer exists is deleted; one whose rollout exists stays."""
    _config(isolated_env)
    home = isolated_env["codex_home"]
    kept, deleted = _history(home, "simple-exec"), _history(home, "tool-exec-command")
    _worker("local-scanner")
    assert sorted(state.keys(LOCAL)) == sorted([cursor_key(str(kept)), cursor_key(str(deleted))])
    deleted.unlink()
    _worker("maintenance")
    assert state.keys(LOCAL) == [cursor_key(str(kept))]
    assert _cleanup(state)["cursors_gone"] == 1 and _cleanup(state)["cursors_expired"] == 0


def test_local_cursor_idle_for_30_days_goes_and_the_rollout_is_then_new_without_a_flood(
    state: StateDir, isolated_env: dict[str, Path]
) -> None:
    """A local cursor not updated for 30 days is deleted (29 days: kept); when its rollout grows again
    it is treated as new: only the turn that just ended becomes a candidate, not its history."""
    _config(isolated_env)
    path = _history(isolated_env["codex_home"], "simple-exec")
    _worker("local-scanner")
    assert state.keys(LOCAL) == [cursor_key(str(path))] and records(state, "pending") == []
    _worker("maintenance", offset_days=29)
    assert state.keys(LOCAL) == [cursor_key(str(path))]
    _worker("maintenance", offset_days=31)
    assert state.keys(LOCAL) == [] and _cleanup(state)["cursors_expired"] == 1
    _new_turn(path, "simple-exec", "turn-after-retention")
    _worker("local-scanner")
    [rec] = records(state, "pending")
    assert rec["key"] == event_key("codex", IDS["simple-exec"][0], "turn-after-retention")
    assert state.keys(LOCAL) == [cursor_key(str(path))]


def test_remote_cursors_go_by_age_only_never_by_their_path(state: StateDir, isolated_env: dict[str, Path]) -> None:
    """A remote root's cursors and scan summary stay while young even when the root is unreachable, and
    go once not updated for max(30 days, sent_retention_days)."""
    root = isolated_env["codex_home"].parent / "wsl-root"
    rollout_path(root, "simple-exec").write_bytes(b"".join(fixture_lines("simple-exec")))
    _config(isolated_env, watch_roots=[str(root)], sent_retention_days=60)
    _worker("remote-scanner")
    folder = f"watch/remote/{root_hash(str(root))}"
    before = sorted(state.keys(folder))
    assert SUMMARY_KEY in before and len(before) == 2
    root.rename(root.with_name("unplugged"))  # the share went away: its paths no longer exist
    _worker("maintenance")
    _worker("maintenance", offset_days=59)
    assert sorted(state.keys(folder)) == before
    _worker("maintenance", offset_days=61)
    assert state.keys(folder) == [] and _cleanup(state)["cursors_expired"] == 2


def test_a_remote_cursor_on_a_hung_mount_never_stalls_maintenance(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """Maintenance never stats a remote cursor's path: with the path on a hung mount it finishes at once."""
    _config(isolated_env)
    with HungMount(tmp_path / "hung", take_requests=False) as hung:
        folder = f"watch/remote/{root_hash(str(hung.path))}"
        state.ensure_folder(folder)
        path = str(hung.path / "sessions" / "2025" / "01" / "15" / "rollout-x.jsonl")
        state.replace(folder, _cursor_record(path, updated_at=now()))
        started = time.monotonic()
        _worker("maintenance")
        assert time.monotonic() - started < 30
        assert state.keys(folder) == [cursor_key(path)]


def _cursor_record(path: str, *, updated_at: float, **fields: Any) -> dict[str, Any]:
    rec = {
        "schema": 1,
        "kind": "cursor",
        "key": cursor_key(path),
        "provider": "codex",
        "created_at": updated_at,
        "updated_at": updated_at,
        "path": path,
        "dev": 1,
        "ino": 2,
        "offset": 0,
        "size": 0,
        "mtime_ns": 0,
    }
    rec.update(fields)
    return rec


def test_corrupt_cursors_are_dead_lettered_and_the_rest_untouched(
    state: StateDir, isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """A cursor that is not JSON, or whose fields have the wrong types, goes to dead/ with its bytes;
    a good cursor beside it is kept."""
    _config(isolated_env)
    rollout = tmp_path / "rollout-a.jsonl"
    rollout.write_bytes(b"")
    state.ensure_folder(LOCAL)
    state.replace(LOCAL, _cursor_record(str(rollout), updated_at=now()))
    garbage = state.record_path(LOCAL, cursor_key("/nowhere/garbage.jsonl"))
    garbage.write_bytes(b"\xff{not json")
    remote = f"watch/remote/{root_hash('/mnt/share')}"
    state.ensure_folder(remote)
    state.replace(remote, _cursor_record("/mnt/share/x.jsonl", updated_at=now(), offset="far"))
    _worker("maintenance")
    assert state.keys(LOCAL) == [cursor_key(str(rollout))] and state.keys(remote) == []
    letters = records(state, "dead")
    assert sorted(r["from_folder"] for r in letters) == [LOCAL, remote]
    assert {r["reason"] for r in letters} == {"invalid-record"} and _cleanup(state)["cursors_invalid"] == 2
    raws = [(state.root / "dead" / f"{r['key']}.raw").read_bytes() for r in letters]
    assert b"\xff{not json" in raws


class RewritingState(StateDir):
    """A state dir where a scanner rewrites the cursor right after maintenance first read it."""

    def __init__(self, root: Path, path: str) -> None:
        super().__init__(root)
        self.cursor_path, self.reads = path, 0

    def read(self, folder: str, key: str) -> dict[str, Any] | None:
        rec = super().read(folder, key)
        self.reads += 1
        if self.reads == 1 and rec is not None:
            StateDir(self.root).replace(folder, {**rec, "updated_at": now(), "offset": 10})
        return rec


def test_a_cursor_rewritten_while_judged_is_kept(state: StateDir, tmp_path: Path) -> None:
    """A cursor judged expired but rewritten by a scanner before the removal is not deleted."""
    path = str(tmp_path / "rollout-b.jsonl")
    state.ensure_folder(LOCAL)
    state.replace(LOCAL, _cursor_record(path, updated_at=now() - 40 * DAY))
    racing = RewritingState(state.root, path)
    assert CursorRetention(racing, now(), 14).run()["cursors_expired"] == 0
    assert (state.read(LOCAL, cursor_key(path)) or {})["offset"] == 10
    assert CursorRetention(state, now(), 14).run()["cursors_gone"] == 1  # the rollout never existed
