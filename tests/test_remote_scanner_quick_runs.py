"""Quick runs of the remote-scanner child: an idle root costs a stat pass, not a scan. Any change,
a locked index or a corrupt summary means a full scan; the quick run stays light on imports, and its
summary helpers mirror the engine's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from donebell.shared.statedir import StateDir
from donebell.workers.scanners.remote_root_summary import SUMMARY_KEY
from donebell.workers.scanners.remote_scan_child import root_hash
from support.remote_scanner_kit import WORKER, _config, _good_root
from support.scanner_kit import IDS, fixture_lines, make_index, records, rollout_path, today_folder


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
    heavy = (
        "donebell.workers.agents.codex.scan_engine",
        "orjson",
        "sqlite3",
        "argparse",
        "hashlib",
        "pathlib",
        "typing",
    )

    def loaded(stderr: str) -> set[str]:
        return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}

    full, full_imports = _child(state, root, python_flags=("-X", "importtime"))
    quick, quick_imports = _child(state, root, python_flags=("-X", "importtime"))
    assert (full["mode"], quick["mode"]) == ("full", "quick")
    assert {"donebell.workers.agents.codex.scan_engine", "orjson", "sqlite3"} <= loaded(full_imports)
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
    from donebell.workers.agents.codex.discovery import ThreadIndex, is_rollout_name
    from donebell.workers.scanners import remote_root_summary as quick

    make_index(tmp_path / "db", [])
    sig = ThreadIndex(tmp_path / "db").signature()
    assert quick.index_signature(str(tmp_path / "db")) == [None if s is None else list(s) for s in sig]
    names = ["rollout-a.jsonl", "rollout-.jsonl", "rollout-a.jsonl.tmp", "xrollout-a.jsonl", "rollout-a\n.jsonl"]
    assert all(quick.maybe_rollout(n) for n in names + ["rollout-a.jsonl\n"] if is_rollout_name(n))


def test_file_signature_is_that_of_regular_files_only(tmp_path: Path) -> None:
    """A regular file has a [dev, ino, size, mtime_ns] signature; a FIFO, a folder or a missing
    path has none (both scanners use this one definition)."""
    from donebell.shared.bounded_read import file_sig

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
    from donebell.workers.agents.codex.rollout_files import hot_day_folders

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
