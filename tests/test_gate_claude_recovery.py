"""The Claude gate on transcript-recovery candidates (SessionEnd hook, local scanner)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared import ingest, records
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from fixtures.gate.kit import fast_settings, gate, last_decision, where

SESSION, PROMPT = "5e55a0b1-0000-4000-8000-00000000000f", "p1"


def submit(state: StateDir, source: str, **fields: Any) -> str:
    key = event_key("claude", SESSION, PROMPT)
    cand = records.new_candidate(
        key=key, provider="claude", source=source, session_id=SESSION, prompt_id=PROMPT, claude_epoch=0, **fields
    )
    ingest.submit_candidate(state, cand)
    return key


@pytest.mark.usefixtures("isolated_env")
def test_session_end_failure_waits_for_a_racing_stop_failure_then_promotes(state: StateDir) -> None:
    key = submit(state, "claude-sessionend", outcome="failed", error="server_error")
    gate(state, fast_settings(), time.time())
    assert where(state, key) == "pending" and last_decision(state, key)["last"]["reason"] == "stopfailure-race"
    gate(state, fast_settings(), time.time() + 1)
    assert where(state, key) == "outbox"
    assert last_decision(state, key)["record"]["outcome"] == "failed"


@pytest.mark.usefixtures("isolated_env")
def test_scanner_failure_is_terminal_at_once(state: StateDir, tmp_path: Path) -> None:
    """The scanner submits only after the quiet window: no transcript read, no settle."""
    key = submit(state, "claude-transcript", outcome="failed", error="rate_limit", transcript_path=str(tmp_path / "x"))
    gate(state, fast_settings(), time.time())
    assert where(state, key) == "outbox"
