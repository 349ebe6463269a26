"""Helpers for the scanner tests: a temp Codex home fed with the real 0.171 rollouts.

Rollouts come from ``tests/fixtures/codex/rollouts`` (recorded from the real CLI) and are written
into today's hot folder (``sessions/YYYY/MM/DD``, UTC) line by line or byte by byte; the thread
index is a real ``state_5.sqlite`` built from the recorded schema.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from donebell.shared.statedir import BIRTH_NAME, StateDir
from donebell.workers.agents.codex.scan_engine import ScanEngine, ScanOptions
from donebell.workers.kit.jsonl_tail import CursorStore

from support.codex_sqlite import create_schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
ROLLOUTS = FIXTURES / "rollouts"

#: fixture -> (thread id, turn id) as recorded
IDS = {
    "simple-exec": ("01a22be2-8ff4-7060-90c7-45d2cf0697b5", "01a22be2-9063-7c32-bfff-4b6d573f20c6"),
    "tool-exec-command": ("01a22be2-acdf-70b2-a78f-57049f1b5bda", "01a22be2-acf6-7101-89eb-74e83f1f0fa6"),
    "error-http500-task_complete-with-error": (
        "01a22be3-da31-7a32-9153-b701f79d9122",
        "01a22be3-da45-79f2-95ae-72f10ebdec5c",
    ),
    "abort-sigint-turn_aborted": ("01a22be3-153e-78d1-86af-69e5aeae10ce", "01a22be3-155c-7520-8e34-bb4d2c783015"),
    "subagent-parent": ("01a22be3-06d2-7621-bea7-5b13dfa14a99", "01a22be3-06ec-7e93-b5b9-ce9929a82f4f"),
    "subagent-child": ("01a22be3-099d-72b3-b400-cbf3b3fc981c", "01a22be3-09a5-7663-9250-da7e95b36313"),
}


RECORDED_AT = 1796032682  # the newest completed_at in the recorded fixtures (2026-11-30T09:58:02Z)
_EPOCH_FIELD = re.compile(rb'"(started_at|completed_at)":(\d{10})\b')
_ISO_FIELD = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"')


def fixture_lines(name: str, *, shift_to_now: bool = True, own_end: bool = False) -> list[bytes]:
    """The fixture's records, each with its trailing newline.

    By default every recorded time (``timestamp``, ``started_at``, ``completed_at``) is shifted so
    the recording ends a few seconds ago, as a rollout written today would; other bytes are kept.
    The newest recording is the clock: an older one then ended a minute or two earlier, unless
    ``own_end``, which shifts this fixture's own last ``completed_at`` to a few seconds ago.
    """
    data = (ROLLOUTS / f"{name}.jsonl").read_bytes()
    if shift_to_now:
        ends = [int(m.group(2)) for m in _EPOCH_FIELD.finditer(data) if m.group(1) == b"completed_at"]
        delta = int(time.time()) - 5 - (max(ends) if own_end and ends else RECORDED_AT)

        def epoch(m: re.Match[bytes]) -> bytes:
            return b'"%s":%d' % (m.group(1), int(m.group(2)) + delta)

        def iso(m: re.Match[bytes]) -> bytes:
            moment = datetime.fromisoformat(m.group(1).decode()).replace(tzinfo=UTC) + timedelta(seconds=delta)
            return b'"timestamp":"%sZ"' % moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode()

        data = _ISO_FIELD.sub(iso, _EPOCH_FIELD.sub(epoch, data))
    return data.splitlines(keepends=True)


def today_folder(home: Path) -> Path:
    folder = home / "sessions" / datetime.now(UTC).strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def rollout_path(home: Path, name: str, folder: Path | None = None) -> Path:
    """Where Codex would put the fixture's rollout today: ``rollout-<UTC time>-<thread id>.jsonl``."""
    thread_id = IDS[name][0]
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S")
    return (folder or today_folder(home)) / f"rollout-{stamp}-{thread_id}.jsonl"


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def set_age(path: Path, seconds: float) -> None:
    """Make ``path`` look last modified ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def born_ago(state: StateDir, seconds: float) -> StateDir:
    """Make ``state`` a state directory created ``seconds`` ago (its birth file, shared/statedir)."""
    birth = {"schema": 1, "created_at": time.time() - seconds}
    state.write_file(state.path(BIRTH_NAME), json.dumps(birth).encode())
    return state


def make_index(sqlite_home: Path, rows: list[dict[str, Any]]) -> Path:
    """A real ``state_5.sqlite`` from the recorded schema, with ``threads`` rows."""
    sqlite_home.mkdir(parents=True, exist_ok=True)
    db_path = sqlite_home / "state_5.sqlite"
    db = sqlite3.connect(db_path)
    try:
        create_schema(db)
        for row in rows:
            now = int(row.get("updated_at", time.time()))
            db.execute(
                "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd,"
                " title, sandbox_policy, approval_mode) VALUES (?, ?, ?, ?, ?, 'fake', '/w', 't', '{}', 'never')",
                (row["id"], str(row["rollout_path"]), now, now, row.get("source", "exec")),
            )
        db.commit()
    finally:
        db.close()
    return db_path


def engine(state: StateDir, home: Path, **overrides: Any) -> ScanEngine:
    """A local-scanner engine over ``home`` (a fresh one models a restarted worker)."""
    opts: dict[str, Any] = {
        "source": "scanner",
        "cursor_folder": "watch/local",
        "codex_home": home,
        "sqlite_home": home,
        "origin": None,
        "replay_seconds": 300.0,
        "include_message": False,
    }
    opts.update(overrides)
    return ScanEngine(state, ScanOptions(**opts))


def records(state: StateDir, folder: str) -> list[dict[str, Any]]:
    out = []
    for key in state.keys(folder):
        rec = state.read(folder, key)
        assert rec is not None
        out.append(rec)
    return out


def cursor_of(state: StateDir, path: Path, folder: str = "watch/local") -> Any:
    return CursorStore(state, folder, "codex").load(str(path))
