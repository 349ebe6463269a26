"""Rollout records to candidates: outcomes, user/final-message facts, children, invalid lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from donebell.shared.ingest import submit_candidate
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir
from support.scanner_kit import IDS, append, cursor_of, engine, fixture_lines, records, rollout_path


@pytest.mark.parametrize(
    ("name", "outcome", "error", "final"),
    [
        ("simple-exec", "done", None, True),
        ("tool-exec-command", "done", None, True),
        ("subagent-parent", "done", None, True),
        ("error-http500-task_complete-with-error", "failed", "We’re currently experiencing high demand", False),
        ("abort-sigint-turn_aborted", "stopped", None, False),
    ],
)
def test_terminal_record_of_a_real_root_rollout_becomes_a_candidate(
    state: StateDir, tmp_path: Path, name: str, outcome: str, error: str | None, final: bool
) -> None:
    """Each recorded root rollout yields one candidate with the hook's key and the design's Codex fields."""
    home = tmp_path / "codex"
    path = rollout_path(home, name)
    path.write_bytes(b"".join(fixture_lines(name)))
    engine(state, home, origin="laptop").scan(full=True)
    [rec] = records(state, "pending")
    thread_id, turn_id = IDS[name]
    assert rec["key"] == event_key("codex", thread_id, turn_id) and rec["weak_identity"] is False
    assert (rec["source"], rec["sources"], rec["provider"]) == ("scanner", ["scanner"], "codex")
    assert (rec["thread_id"], rec["turn_id"], rec["root_thread_id"]) == (thread_id, turn_id, thread_id)
    assert rec["outcome"] == outcome and rec["classification"] == "root"
    assert (rec["error"] or "").startswith(error or "") and (rec["error"] is None) == (error is None)
    assert rec["has_user_message"] is True and rec["has_final_message"] is final
    assert rec["transcript_path"] == str(path) and rec["codex_home"] == str(home) and rec["sqlite_home"] == str(home)
    assert rec["origin"] == "laptop" and rec["cwd"].startswith("/home/dev/runs/")
    assert isinstance(rec["completed_at"], float) and isinstance(rec["duration_ms"], int)
    assert "last_message" not in rec  # include_message is off


def test_child_rollout_yields_a_subagent_receipt_and_no_candidate(state: StateDir, tmp_path: Path) -> None:
    """A subagent's task_complete is finished into suppressed/ (reason subagent), never pending/."""
    home = tmp_path / "codex"
    rollout_path(home, "subagent-child").write_bytes(b"".join(fixture_lines("subagent-child")))
    engine(state, home).scan(full=True)
    assert records(state, "pending") == []
    [receipt] = records(state, "suppressed")
    assert receipt["reason"] == "subagent" and receipt["key"] == event_key("codex", *IDS["subagent-child"])
    assert receipt["root_thread_id"] == IDS["subagent-parent"][0]


def test_line_by_line_append_makes_one_candidate_per_terminal_record(state: StateDir, tmp_path: Path) -> None:
    """Appending a real rollout line by line, with a scan after each, creates the candidate once, at its record."""
    home = tmp_path / "codex"
    path = rollout_path(home, "abort-sigint-turn_aborted")
    path.touch()
    scanner = engine(state, home)
    lines = fixture_lines("abort-sigint-turn_aborted")
    for i, line in enumerate(lines):
        append(path, line)
        report = scanner.scan(full=i % 4 == 0)
        assert len(records(state, "pending")) == (1 if i == len(lines) - 1 else 0)
        assert report.counters["terminal_created"] == (1 if i == len(lines) - 1 else 0)


def test_codex_injected_user_messages_are_not_the_users(state: StateDir, tmp_path: Path) -> None:
    """A turn whose only user-role messages Codex injected reports has_user_message False."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    user = json.loads(lines[7])
    del user["payload"]["internal_chat_message_metadata_passthrough"]  # no provenance: text decides
    user["payload"]["content"][0]["text"] = '<hook_prompt hook_run_id="x">keep going</hook_prompt>'
    injected = json.dumps(user).encode() + b"\n"
    # drop the real user message (line 7) and its item_completed (line 8); keep <environment_context>
    path.write_bytes(b"".join(lines[:7]) + injected + b"".join(lines[9:]))
    engine(state, home).scan(full=True)
    [rec] = records(state, "pending")
    assert rec["has_user_message"] is False and rec["has_final_message"] is True


def test_user_message_shown_only_as_item_completed_counts(state: StateDir, tmp_path: Path) -> None:
    """Codex 0.171's item_completed{UserMessage} alone is enough evidence of the user's turn."""
    home = tmp_path / "codex"
    path = rollout_path(home, "tool-exec-command")
    lines = fixture_lines("tool-exec-command")
    path.write_bytes(b"".join(lines[:7] + lines[8:]))  # the response_item user message removed
    engine(state, home).scan(full=True)
    assert records(state, "pending")[0]["has_user_message"] is True


def test_restart_mid_turn_remembers_the_user_message(state: StateDir, tmp_path: Path) -> None:
    """Per-turn facts live in the cursor, so a worker restarted mid-turn still knows the user spoke."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    path.write_bytes(b"".join(lines[:9]))  # up to the user message
    engine(state, home).scan(full=True)
    turn = cursor_of(state, path).turns[IDS["simple-exec"][1]]
    assert turn["user"] is True
    append(path, b"".join(lines[9:]))
    engine(state, home).scan(full=True)  # a new process
    [rec] = records(state, "pending")
    assert rec["has_user_message"] is True and rec["has_final_message"] is True


def test_invalid_lines_are_recorded_as_evidence_and_never_fatal(state: StateDir, tmp_path: Path) -> None:
    """Non-UTF-8 and malformed lines are counted in the cursor, the log and the candidate; scanning goes on."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    bad = [b'{"type":"event_msg","payload":{"type":"x","t":"\xff\xfe"}}\n', b'{"type": "event_msg", "payl\n']
    path.write_bytes(b"".join(lines[:9] + bad + lines[9:]))
    report = engine(state, home).scan(full=True)
    assert report.counters["invalid_lines"] == 2 and not report.counters["file_errors"]
    [rec] = records(state, "pending")
    assert rec["invalid_lines"] == 2 and rec["outcome"] == "done"
    invalid = cursor_of(state, path).invalid
    assert invalid["count"] == 2 and invalid["last_reason"] == "malformed JSON"
    log = [json.loads(line) for line in (state.root / "notify.log").read_text().splitlines()]
    reasons = [e["reason"] for e in log if e["msg"].startswith("invalid rollout line")]
    assert reasons == ["invalid UTF-8", "malformed JSON"]


def test_hook_and_scanner_converge_on_one_record(state: StateDir, tmp_path: Path) -> None:
    """A Stop-hook candidate and the scanner's for the same turn merge into one pending record."""
    home = tmp_path / "codex"
    thread_id, turn_id = IDS["simple-exec"]
    key = event_key("codex", thread_id, turn_id)
    submit_candidate(
        state,
        new_candidate(
            key=key, provider="codex", source="codex-stop", thread_id=thread_id, turn_id=turn_id, outcome=None
        ),
    )
    rollout_path(home, "simple-exec").write_bytes(b"".join(fixture_lines("simple-exec")))
    report = engine(state, home).scan(full=True)
    assert report.counters["terminal_merged"] == 1
    [rec] = records(state, "pending")
    assert rec["sources"] == ["codex-stop", "scanner"] and rec["outcome"] == "done" and rec["revision"] == 2


def test_final_message_text_only_with_include_message(state: StateDir, tmp_path: Path) -> None:
    """last_message is captured only when include_message is on; cursors never hold message text."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    path.write_bytes(b"".join(fixture_lines("simple-exec")))
    engine(state, home, include_message=True).scan(full=True)
    [rec] = records(state, "pending")
    assert rec["last_message"] == "Hello from the fake model. Task done."
    cursor_bytes = state.record_path("watch/local", cursor_of(state, path).to_record("codex")["key"]).read_bytes()
    assert b"Hello from the fake model" not in cursor_bytes and b"SCENARIO" not in cursor_bytes


def test_terminal_record_without_turn_id_gets_a_weak_key(state: StateDir, tmp_path: Path) -> None:
    """A terminal record missing its turn id still becomes a candidate, marked weak_identity."""
    home = tmp_path / "codex"
    path = rollout_path(home, "simple-exec")
    lines = fixture_lines("simple-exec")
    last = json.loads(lines[-1])
    del last["payload"]["turn_id"]
    path.write_bytes(b"".join(lines[:-1]) + json.dumps(last).encode() + b"\n")
    engine(state, home).scan(full=True)
    [rec] = records(state, "pending")
    assert rec["weak_identity"] is True and rec["turn_id"] is None and rec["has_user_message"] is True
