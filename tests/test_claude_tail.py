"""Claude transcript recovery in the local scanner (workers/agents/claude/tail.py), on real transcripts.

The engine runs over a real state dir and real files in a Claude config dir; "quiet" is made by
setting a transcript's mtime into the past, as time would. Transcripts are the recorded 2.1.332
runs (tests/fixtures/claude-2.1.332) and the 2.1.197 background run (tests/fixtures/gate/claude).
Bad input (not JSON, a FIFO, a huge line, a deleted file) is in test_claude_tail_bad_input.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import WATCH_CLAUDE, StateDir
from donebell.workers.agents.claude.outcome import KILLED_NOTE
from support.claude_fixtures import cut_after, events_332, place, session_of, transcript_lines
from support.claude_tail_kit import age, engine, pending, prompts, watching
from support.hooks_harness import HookEnv

GATE_FIXTURES = Path(__file__).parent / "fixtures" / "gate" / "claude"


@pytest.fixture()
def claude_dir(tmp_path: Path) -> Path:
    path = tmp_path / "claude"
    (path / "projects").mkdir(parents=True)
    return path


@pytest.mark.parametrize(
    ("scenario", "outcome", "error"),
    [
        ("simple", "done", None),
        ("apierror529", "failed", "server_error"),
        ("midstream_error", "failed", "server_error"),
    ],
)
def test_finished_prompt_without_hooks_becomes_one_candidate(
    state: StateDir, claude_dir: Path, scenario: str, outcome: str, error: str | None
) -> None:
    """A 2.1.332 run seen from its start: after the quiet window, one candidate under the Stop key."""
    tail = watching(state, claude_dir)
    path = place(claude_dir, scenario)
    tail.scan(full=False)
    assert pending(state) == []  # not quiet yet
    age(path, 5)
    tail.scan(full=False)
    tail.scan(full=False)
    [rec] = pending(state)
    assert rec["key"] == event_key("claude", session_of(scenario), prompts(scenario)[-1])
    assert (rec["sources"], rec["outcome"], rec["error"]) == (["claude-transcript"], outcome, error)
    assert rec["cwd"] == f"/home/dev/runs/{scenario}/project"
    assert rec["last_message"]


def test_partial_end_turn_that_a_retry_followed_is_not_done(state: StateDir, claude_dir: Path) -> None:
    """Mid-stream error: the partial reply carries end_turn, the retry's isMeta record follows it;
    even quiet, that is not done. The final error record makes it failed."""
    lines = transcript_lines("midstream_error")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "midstream_error", cut_after(lines, lambda r: r.get("isMeta") is True))
    age(path, 60)
    tail.scan(full=False)
    assert pending(state) == []
    path.write_bytes(b"".join(lines))
    age(path, 60)
    tail.scan(full=False)
    [rec] = pending(state)
    assert rec["outcome"] == "failed"


def test_session_finished_before_first_sight_never_notifies(state: StateDir, claude_dir: Path) -> None:
    """Over before donebell first saw it (scanner started later): history. Its next prompt counts."""
    lines = transcript_lines("background_long")
    path = place(claude_dir, "background_long", cut_after(lines, lambda r: r.get("type") == "cost-state"))
    age(path, 60)
    tail = engine(state, claude_dir)
    tail.scan(full=True)
    tail.scan(full=False)
    assert pending(state) == []
    # a new human prompt in the same session, seen working, then finished
    extra = [
        json.dumps({"type": "user", "isSidechain": False, "promptId": "p-new", "message": {"content": "again"}}),
        json.dumps({"type": "assistant", "isSidechain": False, "message": {"stop_reason": "end_turn", "content": []}}),
    ]
    with path.open("ab") as f:
        f.write(extra[0].encode() + b"\n")
    tail.scan(full=False)
    with path.open("ab") as f:
        f.write(extra[1].encode() + b"\n")
    age(path, 5)
    tail.scan(full=False)
    [rec] = pending(state)
    assert rec["prompt_id"] == "p-new"


def test_session_working_at_first_sight_notifies_when_done(state: StateDir, claude_dir: Path) -> None:
    lines = transcript_lines("simple")
    path = place(claude_dir, "simple", cut_after(lines, lambda r: r.get("type") == "user"))
    age(path, 60)
    tail = engine(state, claude_dir)
    tail.scan(full=True)
    path.write_bytes(b"".join(lines))
    age(path, 5)
    tail.scan(full=False)
    assert [r["prompt_id"] for r in pending(state)] == prompts("simple")


def test_hook_candidate_of_the_same_prompt_is_one_record(state: StateDir, claude_dir: Path) -> None:
    """The Stop hook reported first: the recovery leaves its candidate as it is (one notification)."""
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    key = event_key("claude", session_of("simple"), prompts("simple")[0])
    submit_candidate(state, new_candidate(key=key, provider="claude", source="claude-stop", outcome="done"))
    age(path, 5)
    assert tail.scan(full=False).counters["claude_known"] == 1
    [rec] = pending(state)
    assert rec["sources"] == ["claude-stop"]


def test_a_late_hook_merges_into_the_recovered_candidate(state: StateDir, claude_dir: Path) -> None:
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    age(path, 5)
    tail.scan(full=False)
    key = event_key("claude", session_of("simple"), prompts("simple")[0])
    assert submit_candidate(state, new_candidate(key=key, provider="claude", source="claude-stop")) == "merged"
    [rec] = pending(state)
    assert rec["sources"] == ["claude-transcript", "claude-stop"]


def test_a_prompt_already_sent_is_a_duplicate(state: StateDir, claude_dir: Path) -> None:
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    key = event_key("claude", session_of("simple"), prompts("simple")[0])
    cand = new_candidate(key=key, provider="claude", source="claude-stop", outcome="done")
    submit_candidate(state, cand)
    state.finish("pending", "sent", {**cand, "kind": "receipt", "status": "sent"})
    age(path, 5)
    tail.scan(full=False)
    assert pending(state) == []


def test_background_agent_holds_and_subagent_transcripts_never_notify(state: StateDir, claude_dir: Path) -> None:
    """An async agent launched in the turn holds it (its task-notification prompt will come); the
    subagent's own transcript is never read; the whole run gives one candidate, for prompt 2."""
    lines = transcript_lines("bgagent")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "bgagent", cut_after(lines, lambda r: r.get("type") == "system"))
    sub = path.parent / path.stem / "subagents" / "agent-afaad05aed400fc3a.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes((Path(__file__).parent / "fixtures" / "claude-2.1.332" / "bgagent" / "subagent.jsonl").read_bytes())
    age(path, 60)
    age(sub, 5)
    tail.scan(full=True)
    assert pending(state) == []
    path.write_bytes(b"".join(lines))
    age(path, 5)
    tail.scan(full=True)
    [rec] = pending(state)
    assert rec["prompt_id"] == prompts("bgagent")[-1]
    assert str(sub) not in tail.files


def test_background_shell_killed_by_a_2_1_197_print_exit_is_done(state: StateDir, claude_dir: Path) -> None:
    """2.1.197 -p kills a background shell 5 s after the turn and sends no hook: done, saying so."""
    lines = (GATE_FIXTURES / "print-background.jsonl").read_bytes().splitlines(keepends=True)
    tail = watching(state, claude_dir)
    path = claude_dir / "projects" / "-p" / "24849645-57ba-4266-96e1-e64ebcd119f0.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(cut_after(lines, lambda r: r.get("type") == "assistant", 1)))
    age(path, 2)
    assert tail.scan(full=True).next_in is not None  # the wind-down is awaited
    assert pending(state) == []
    age(path, 7)
    tail.scan(full=False)
    [rec] = pending(state)
    assert (rec["outcome"], rec["note"]) == ("done", KILLED_NOTE)


def test_background_shell_on_2_1_332_waits_for_its_notification(state: StateDir, claude_dir: Path) -> None:
    lines = transcript_lines("background_long")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "background_long", cut_after(lines, lambda r: r.get("type") == "system"))
    age(path, 60)
    tail.scan(full=True)
    assert pending(state) == []
    path.write_bytes(b"".join(lines))
    age(path, 5)
    tail.scan(full=False)
    assert [r["prompt_id"] for r in pending(state)] == [prompts("background_long")[-1]]


def test_cursor_survives_a_restart(state: StateDir, claude_dir: Path) -> None:
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    age(path, 5)
    tail.scan(full=False)
    assert len(pending(state)) == 1 and state.keys(WATCH_CLAUDE)
    again = engine(state, claude_dir)
    counters = again.scan(full=True).counters
    assert counters.get("claude_first_sight") is None and counters.get("claude_created") is None
    assert len(pending(state)) == 1


def test_a_scheduled_cron_holds_the_session_like_the_stop_hook(state: StateDir, claude_dir: Path) -> None:
    """CronCreate in the turn: the Stop hook would see it in session_crons and write nothing; so
    does the recovery (and for the session's later prompts, as the registry would still list it)."""
    lines = transcript_lines("simple")
    cron = {
        "type": "assistant",
        "isSidechain": False,
        "message": {"stop_reason": "tool_use", "content": [{"type": "tool_use", "name": "CronCreate", "input": {}}]},
    }
    reply = [i for i, line in enumerate(lines) if json.loads(line).get("type") == "assistant"][-1]
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple", [*lines[:reply], json.dumps(cron).encode() + b"\n", *lines[reply:]])
    age(path, 60)
    tail.scan(full=False)
    assert pending(state) == []


def test_a_prompt_the_stop_hook_held_is_not_recovered(state: StateDir, claude_dir: Path, tmp_path: Path) -> None:
    """Stop listed a running monitor (work a transcript does not show): the hook notes the prompt
    as held in the session record and the recovery defers to it."""
    hooks = HookEnv(tmp_path / "hooks")
    hooks.state_dir, hooks.claude_dir = state.root, claude_dir
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    events = [{**p, "transcript_path": str(path)} for p in events_332("simple")]
    stop = next(p for p in events if p["hook_event_name"] == "Stop")
    hooks.claude(next(p for p in events if p["hook_event_name"] == "UserPromptSubmit"))
    hooks.claude({**stop, "background_tasks": [{"id": "m1", "type": "monitor", "status": "running"}]})
    age(path, 5)
    tail.scan(full=True)
    assert pending(state) == []
    hooks.claude(next(p for p in events if p["hook_event_name"] == "SessionEnd"))
    [rec] = pending(state)
    assert (rec["sources"], rec["note"]) == (["claude-sessionend"], KILLED_NOTE)


def test_a_prompt_that_ended_while_the_scanner_was_down_is_history(state: StateDir, claude_dir: Path) -> None:
    """The cursor saw the prompt working; it finished an hour ago while donebell was stopped: no
    late notification (the replay window, as for Codex rollouts)."""
    lines = transcript_lines("simple")
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple", cut_after(lines, lambda r: r.get("type") == "user"))
    tail.scan(full=False)
    path.write_bytes(b"".join(lines))
    age(path, 3600)
    report = engine(state, claude_dir).scan(full=True)  # the restarted scanner
    assert pending(state) == [] and report.counters["claude_historical"] == 1


def test_recovery_of_an_announced_prompt_takes_the_hooks_epoch_and_baseline(
    state: StateDir, claude_dir: Path, tmp_path: Path
) -> None:
    """UserPromptSubmit ran (2.1.332 -p API error: StopFailure killed, SessionEnd not wired): the
    recovered candidate carries the session's epoch and goal baseline, so the gate checks epochs."""
    hooks = HookEnv(tmp_path / "hooks")
    hooks.state_dir, hooks.claude_dir = state.root, claude_dir
    tail = watching(state, claude_dir)
    path = place(claude_dir, "apierror529")
    hooks.claude({**events_332("apierror529")[1], "transcript_path": str(path)})
    age(path, 5)
    tail.scan(full=False)
    [rec] = pending(state)
    assert (rec["claude_epoch"], rec["claude_session_state"]) == (1, "current")
