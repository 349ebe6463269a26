"""``donebell hook claude`` SessionEnd: the fallback when Stop/StopFailure never reported.

Claude Code 2.1.332 kills the print-mode StopFailure hook within ~25 ms; SessionEnd still runs and
the transcript then ends with the ``isApiErrorMessage`` record. These runs use the real recorded
2.1.332 payloads and transcripts (tests/fixtures/claude-2.1.332).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key
from donebell.workers.agents.claude.outcome import KILLED_NOTE
from support.claude_fixtures import cut_after, payloads_for, place, transcript_lines
from support.hooks_harness import HookEnv


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    env = HookEnv(tmp_path)
    env.write_config(include_message=True)
    return env


def _run(hooks: HookEnv, payloads: list[dict[str, Any]], *events: str) -> None:
    for payload in payloads:
        if payload["hook_event_name"] in events:
            hooks.claude(payload)


def _end(payloads: list[dict[str, Any]]) -> dict[str, Any]:
    return [p for p in payloads if p["hook_event_name"] == "SessionEnd"][-1]


def test_killed_stop_failure_is_recovered_as_failed(hooks: HookEnv) -> None:
    """2.1.332 -p 529 run: UserPromptSubmit, (killed StopFailure), SessionEnd -> one failed candidate
    under the key StopFailure would have used, with the error kind of the transcript's error record."""
    payloads = payloads_for("apierror529", place(hooks.claude_dir, "apierror529"))
    _run(hooks, payloads, "UserPromptSubmit", "SessionEnd")
    end = _end(payloads)
    rec = hooks.only("pending")
    assert rec["key"] == event_key("claude", end["session_id"], end["prompt_id"])
    assert (rec["sources"], rec["outcome"], rec["error"]) == (["claude-sessionend"], "failed", "server_error")
    assert (rec["claude_epoch"], rec["claude_session_state"]) == (1, "current")
    assert rec["last_message"].startswith("API Error: 529")


def test_late_stop_failure_merges_into_the_session_end_candidate(hooks: HookEnv) -> None:
    """A StopFailure that does finish after SessionEnd (2.1.197 races them) is the same key: one record."""
    payloads = payloads_for("apierror529", place(hooks.claude_dir, "apierror529"))
    _run(hooks, payloads, "UserPromptSubmit", "SessionEnd")
    end = _end(payloads)
    hooks.claude({**end, "hook_event_name": "StopFailure", "error": "server_error", "last_assistant_message": "x"})
    rec = hooks.only("pending")
    assert rec["sources"] == ["claude-sessionend", "claude-stopfailure"]
    assert hooks.counts()["pending"] == 1


def test_mid_stream_partial_end_turn_is_not_done(hooks: HookEnv) -> None:
    """The partial replies a mid-stream retry followed carry ``end_turn``; the final error record decides."""
    payloads = payloads_for("midstream_error", place(hooks.claude_dir, "midstream_error"))
    _run(hooks, payloads, "UserPromptSubmit", "SessionEnd")
    rec = hooks.only("pending")
    assert (rec["outcome"], rec["error"]) == ("failed", "server_error")


def test_session_end_after_a_stop_adds_nothing(hooks: HookEnv) -> None:
    """The normal path (Stop ran) keeps its one candidate; SessionEnd does not touch it."""
    payloads = payloads_for("simple", place(hooks.claude_dir, "simple"))
    _run(hooks, payloads, "UserPromptSubmit", "Stop", "SessionEnd")
    rec = hooks.only("pending")
    assert rec["sources"] == ["claude-stop"]
    assert "already has a record" in "\n".join(str(r.get("msg")) for r in hooks.log())


def test_late_stop_after_session_end_is_one_candidate(hooks: HookEnv) -> None:
    """SessionEnd first (the Stop hook was slow), then the Stop: the same key, merged, one record."""
    payloads = payloads_for("simple", place(hooks.claude_dir, "simple"))
    _run(hooks, payloads, "UserPromptSubmit", "SessionEnd")
    first = hooks.only("pending")
    assert (first["sources"], first["outcome"]) == (["claude-sessionend"], "done")
    assert first["last_message"] and first["note"] is None
    _run(hooks, payloads, "Stop")
    rec = hooks.only("pending")
    assert rec["key"] == first["key"] and rec["sources"] == ["claude-sessionend", "claude-stop"]


def test_background_work_killed_on_exit_is_done_and_says_so(hooks: HookEnv) -> None:
    """The transcript ends with the reply while an async agent is still listed as launched: the
    CLI exited (SessionEnd), so the work was stopped with it: done, with the note."""
    lines = cut_after(transcript_lines("bgagent"), lambda r: r.get("type") == "system", 0)  # first stop_hook_summary
    payloads = payloads_for("bgagent", place(hooks.claude_dir, "bgagent", lines))
    first_prompt = payloads[1]["prompt_id"]
    _run(hooks, payloads[:2], "UserPromptSubmit")
    hooks.claude({**_end(payloads), "prompt_id": first_prompt})
    rec = hooks.only("pending")
    assert (rec["prompt_id"], rec["outcome"], rec["note"]) == (first_prompt, "done", KILLED_NOTE)


def test_whole_background_agent_run_gives_one_candidate(hooks: HookEnv) -> None:
    """The async-agent run with all its hooks: only the task-notification prompt's Stop candidate."""
    payloads = payloads_for("bgagent", place(hooks.claude_dir, "bgagent"))
    for payload in payloads:
        hooks.claude(payload)
    rec = hooks.only("pending")
    assert rec["prompt_id"] == _end(payloads)["prompt_id"] and rec["sources"] == ["claude-stop"]


def test_interrupted_turn_writes_nothing(hooks: HookEnv) -> None:
    """A transcript whose last prompt never got a reply (Ctrl-C, a kill): no candidate, a log line."""
    lines = cut_after(transcript_lines("simple"), lambda r: r.get("type") == "user", 0)
    payloads = payloads_for("simple", place(hooks.claude_dir, "simple", lines))
    _run(hooks, payloads, "UserPromptSubmit", "SessionEnd")
    assert hooks.counts()["pending"] == 0
    assert "did not finish in the transcript" in hooks.log_messages()


def test_interactive_exit_after_a_stop_failure_adds_nothing(hooks: HookEnv) -> None:
    """TUI: StopFailure ran; /exit's SessionEnd names a new prompt id. Still the one failed candidate."""
    payloads = payloads_for("i-apierror529", place(hooks.claude_dir, "i-apierror529"))
    for payload in payloads:
        hooks.claude(payload)
    rec = hooks.only("pending")
    assert rec["sources"] == ["claude-stopfailure", "claude-notification"]  # idle_prompt marks it


@pytest.mark.parametrize("kind", ["missing", "fifo", "garbage"])
def test_unreadable_transcript_writes_nothing(hooks: HookEnv, tmp_path: Path, kind: str) -> None:
    """No transcript, a FIFO in its place (never blocks), or lines that are not JSON: no candidate."""
    path = hooks.claude_dir / "projects" / "-p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        import os

        os.mkfifo(path)
    elif kind == "garbage":
        path.write_bytes(b'not json\n\xff\xfe\n{"type":\n')
    payload = {"hook_event_name": "SessionEnd", "session_id": "s", "prompt_id": "p", "transcript_path": str(path)}
    hooks.claude(payload)
    assert hooks.counts()["pending"] == 0


def test_session_end_of_a_clear_keeps_background_work_running(hooks: HookEnv) -> None:
    """`/clear` ends the session but not the CLI: background work still listed is not "stopped"."""
    lines = cut_after(transcript_lines("bgagent"), lambda r: r.get("type") == "system", 0)
    payloads = payloads_for("bgagent", place(hooks.claude_dir, "bgagent", lines))
    hooks.claude(payloads[1])
    hooks.claude({**_end(payloads), "prompt_id": payloads[1]["prompt_id"], "reason": "clear"})
    assert hooks.counts()["pending"] == 0
