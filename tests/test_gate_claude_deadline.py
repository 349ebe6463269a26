"""A Claude wait that ends at a known moment (the quiet window, the settle) is not floored.

The Claude evaluation floors its polls at ``min_wait`` (50 ms) so a transcript that is still
being written is not re-read in a spin. A quiet window that ends in 10 ms is no poll: the floor
used to push the promotion up to 40 ms past the window (Claude writes its transcript a few ms
after the Stop hook, so the window nearly always ended just after the settle time).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from fixtures.gate.claude_kit import ClaudeWorld, claude_lines
from fixtures.gate.kit import fast_settings, gate, last_decision

SESSION = "bcd90786-c5dc-4556-ab76-41b75d464f9d"
PROMPT = "b522e1c8-ef06-4602-a43c-969646624918"


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> ClaudeWorld:
    return ClaudeWorld(isolated_env["claude_dir"] / "projects" / "-w", state)


def _stopped(world: ClaudeWorld, state: StateDir) -> tuple[str, Path, float]:
    transcript = world.transcript(SESSION, claude_lines("print-tool.jsonl"))
    world.session_record(SESSION, 1, PROMPT)
    key = world.submit(SESSION, PROMPT, epoch=1)
    record = state.read("pending", key)
    assert record is not None
    return key, transcript, float(record["updated_at"])


def test_the_quiet_window_is_waited_to_its_end_not_to_the_poll_floor(world: ClaudeWorld, state: StateDir) -> None:
    key, transcript, stopped = _stopped(world, state)
    written = stopped + 1.0  # the transcript's last write, after the settle time has passed
    os.utime(transcript, (written, written))
    at = written + 0.49  # 10 ms before the 0.5 s window ends
    gate(state, fast_settings(idle_grace_seconds=0.5), at)
    decision = last_decision(state, key)
    assert decision["last"]["reason"] == "quiet-window", decision
    due = decision["record"]["probe"]["next_probe_at"]
    assert due == pytest.approx(written + 0.5, abs=0.002)  # not at + 0.05


def test_the_settle_time_is_waited_to_its_end(world: ClaudeWorld, state: StateDir) -> None:
    key, transcript, stopped = _stopped(world, state)
    os.utime(transcript, (stopped - 5, stopped - 5))  # quiet long before the Stop
    gate(state, fast_settings(idle_grace_seconds=0.5), stopped + 0.49)
    decision = last_decision(state, key)
    assert decision["last"]["reason"] == "transcript-settling", decision
    assert decision["record"]["probe"]["next_probe_at"] == pytest.approx(stopped + 0.5, abs=0.002)


def _signalled(world: ClaudeWorld, state: StateDir, lag: float) -> tuple[str, Path, float]:
    """A Stop candidate whose hook started ``lag`` seconds before it wrote its record."""
    transcript = world.transcript(SESSION, claude_lines("print-tool.jsonl"))
    world.session_record(SESSION, 1, PROMPT)
    key = world.submit(SESSION, PROMPT, epoch=1, signal_at=time.time())  # replaced below, once written
    record = state.read("pending", key)
    assert record is not None
    signal_at = float(record["updated_at"]) - lag
    state.replace("pending", {**record, "signal_at": signal_at})
    return key, transcript, signal_at


def test_the_settle_counts_from_when_claude_ran_the_hook(world: ClaudeWorld, state: StateDir) -> None:
    """The hook writes ~20 ms after Claude ran it; the transcript's last write lies in between.
    Counting the settle from the write put the hook's whole start-up after the quiet window."""
    key, transcript, signal_at = _signalled(world, state, lag=0.02)
    written = signal_at + 0.005  # Claude's last transcript write, before the hook's record
    os.utime(transcript, (written, written))
    gate(state, fast_settings(idle_grace_seconds=0.5), written + 0.501)
    assert state.read("pending", key) is None  # promoted at the quiet window's end, not 15 ms later
    assert state.read("outbox", key) is not None


def test_a_signal_time_from_an_earlier_update_is_not_used(world: ClaudeWorld, state: StateDir) -> None:
    """``signal_at`` counts only when the record's last update was that hook's own write."""
    key, transcript, signal_at = _signalled(world, state, lag=5.0)
    os.utime(transcript, (signal_at - 10, signal_at - 10))
    stopped = signal_at + 5.0
    gate(state, fast_settings(idle_grace_seconds=0.5), stopped + 0.49)
    decision = last_decision(state, key)
    assert decision["last"]["reason"] == "transcript-settling", decision
    assert decision["record"]["probe"]["next_probe_at"] == pytest.approx(stopped + 0.5, abs=0.002)
