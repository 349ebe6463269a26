"""The Claude hook records when Claude ran it (``signal_at``), not when its record was written.

A real ``donebell hook claude`` process: its ``signal_at`` is its own start time (to a clock
tick), which lies before the record's ``updated_at`` by the hook's start-up, and after the moment
the test spawned it (less one tick of rounding).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir

TICK = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the start time is read from /proc")


def test_own_start_time_is_a_fresh_process_start() -> None:
    """A process a moment old knows its start; one over a minute old (a hook never is) says None."""
    before = time.time()
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; from donebell.shared.process.liveness import own_start_time as s; print(s(), time.time())",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    child_start, child_now = map(float, probe.stdout.split())
    assert before - TICK <= child_start <= child_now


def test_the_claude_stop_hook_records_when_it_was_run(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    payload = {
        "hook_event_name": "Stop",
        "session_id": "5e551011-0000-4000-8000-000000000001",
        "prompt_id": "9e551011-0000-4000-8000-000000000002",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "background_tasks": [],
        "session_crons": [],
    }
    env = {**os.environ, "DONEBELL_STATE_DIR": str(state_dir), "DONEBELL_CONFIG": str(tmp_path / "none.json")}
    env["DONEBELL_KICK_COMMAND"] = "off"  # no delivery worker: the record is all this test reads
    spawned = time.time()
    subprocess.run(
        [sys.executable, "-P", "-m", "donebell", "hook", "claude"],
        input=json.dumps(payload).encode(),
        env=env,
        cwd="/",
        check=True,
        timeout=60,
        capture_output=True,
    )
    state = StateDir(str(state_dir))
    records = [r for r in (state.read("pending", k) for k in state.keys("pending")) if r is not None]
    assert len(records) == 1, records
    record = records[0]
    assert spawned - TICK <= record["signal_at"] < record["updated_at"]
    assert record["updated_at"] - record["signal_at"] < 2.0
