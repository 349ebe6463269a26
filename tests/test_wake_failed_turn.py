"""Continue on a failed turn's push (issue 34 item 8): the failed turn is the newest ended one.

Claude Code in ``-p`` writes no ``turn_duration`` after an API error: its transcript ends with the
``isApiErrorMessage`` record, which the turn-status scan skips, so the wake role read the failed
prompt as still running and refused its Continue ``superseded``. The recorded transcripts and
rollouts of the real CLIs' failed turns must read as ended, with that turn the newest ended one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from donebell.workers.agents.claude import wake as claude_wake
from donebell.workers.agents.codex import wake as codex_wake

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("agent", "recorded"),
    [
        ("claude", "claude-2.1.332/apierror529/transcript.jsonl"),  # -p: no turn_duration
        ("claude", "claude-2.1.332/i-apierror529/transcript.jsonl"),  # the TUI
        ("codex", "codex/rollouts/error-http500-task_complete-with-error.jsonl"),
    ],
)
def test_a_failed_turn_is_the_newest_ended_one(agent: str, recorded: str) -> None:
    read = claude_wake.read_thread if agent == "claude" else codex_wake.read_thread
    view = read(str(FIXTURES / recorded))
    assert view.active is False, view
    assert view.latest_done == view.latest_turn is not None, view


def test_a_prompt_after_the_failure_is_running_again(tmp_path: Path) -> None:
    """The failure ends only its own turn: a retry typed after it is a running turn again."""
    lines = (FIXTURES / "claude-2.1.332/apierror529/transcript.jsonl").read_bytes()
    failed = claude_wake.read_thread(str(FIXTURES / "claude-2.1.332/apierror529/transcript.jsonl"))
    retry = (
        b'{"type":"user","isSidechain":false,"promptId":"retry-prompt-0001","uuid":"u-retry",'
        b'"message":{"role":"user","content":"try again"}}\n'
    )
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(lines + retry)
    view = claude_wake.read_thread(str(path))
    assert (view.active, view.latest_turn, view.latest_done) == (True, "retry-prompt-0001", failed.latest_done)
