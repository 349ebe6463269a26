"""A FIFO planted where a rollout should be never blocks a hook or the gate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from donebell.shared.bounded_read import read_tail, reverse_lines
from donebell.workers.agents.codex.identity import classify_rollout, read_first_line
from donebell.workers.agents.codex.rollout import TailCache


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "rollout-2026-11-30T00-00-00-01a22be2-8ff4-7060-90c7-45d2cf0697b5.jsonl"
    os.mkfifo(path)
    return path


def test_first_line_of_a_fifo_is_unknown_at_once(tmp_path: Path) -> None:
    """Classifying a FIFO 'rollout' returns unknown instead of waiting for a writer."""
    fifo = _fifo(tmp_path)
    started = time.monotonic()
    assert read_first_line(fifo) is None
    assert classify_rollout(fifo).classification == "unknown"
    assert time.monotonic() - started < 1.0


def test_gate_tail_of_a_fifo_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """The gate's tail reader reports a FIFO as unreadable evidence immediately."""
    fifo = _fifo(tmp_path)
    started = time.monotonic()
    tail = TailCache().get(str(fifo))
    assert tail is not None and tail.error == "not a regular file"
    assert time.monotonic() - started < 1.0


def test_codex_stop_hook_with_a_fifo_transcript_returns_fast(tmp_path: Path, isolated_env: dict[str, Path]) -> None:
    """The Stop hook answers {} and exits 0 quickly when transcript_path names a FIFO."""
    fifo = _fifo(tmp_path)
    payload = {
        "session_id": "01a22be2-8ff4-7060-90c7-45d2cf0697b5",
        "turn_id": "turn-1",
        "transcript_path": str(fifo),
        "cwd": str(tmp_path),
        "hook_event_name": "Stop",
    }
    env = {**os.environ, "DONEBELL_KICK_COMMAND": "off"}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "hook", "codex-stop"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        timeout=20,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip() == b"{}"
    assert time.monotonic() - started < 5.0
    assert len(os.listdir(isolated_env["state"] / "pending")) == 1


def test_turn_status_readers_refuse_a_fifo_at_once(tmp_path: Path) -> None:
    """The Claude transcript readers raise OSError for a FIFO instead of blocking."""
    fifo = _fifo(tmp_path)
    with pytest.raises(OSError):
        read_tail(fifo, 1 << 20)
    with pytest.raises(OSError):
        list(reverse_lines(fifo, 1 << 20))
