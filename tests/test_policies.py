"""Notification policies (issue 19) through the real gate and delivery role and the ntfy stand-in.

The pass clock (``pass_at``) is injected only where wall time is the subject: quiet hours.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from donebell.shared.statedir import now
from donebell.workers.delivery.payload import MESSAGE_MAX_BYTES
from donebell.workers.delivery.policies.digest import digest_key
from donebell.workers.delivery.policies.quiet_hours import window_end
from support.ntfy_standin import NtfyStandin
from support.policy_kit import pending, policy_env, receipt, wire_bodies

BERLIN = ZoneInfo("Europe/Berlin")


def at_berlin(year: int, month: int, day: int, hour: int, minute: int) -> float:
    return datetime(year, month, day, hour, minute, tzinfo=BERLIN).timestamp()


def test_min_duration_drops_a_short_done_task_never_a_failure(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, min_task_seconds=10)
    short = pending(env, duration_ms=2_000)
    failed = pending(env, duration_ms=2_000, outcome="failed", error="boom")
    long = pending(env, duration_ms=25_000)
    unknown = pending(env)  # no timestamps: never silenced on missing evidence
    role = env.role()
    role.pass_at(now())
    folder, rec = receipt(env, short["key"])
    assert (folder, rec and rec["reason"]) == ("suppressed", "too-short")
    assert rec is not None and rec["task_seconds"] == 2.0
    for kept in (failed, long, unknown):
        assert receipt(env, kept["key"])[0] == "sent"
    assert len(wire_bodies(srv)) == 3
    role.teardown()


def test_min_duration_of_a_claude_prompt_from_its_transcript(srv: NtfyStandin, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "promptId": "p1", "timestamp": "2026-12-01T20:38:18.195Z"},
        {"type": "assistant", "timestamp": "2026-12-01T20:38:21.359Z"},
        {"type": "user", "promptId": "p2", "timestamp": "2026-12-01T20:40:00.000Z"},
        {"type": "assistant", "timestamp": "2026-12-01T20:45:00.000Z"},
    ]
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines))
    env = policy_env(tmp_path, srv.url, min_task_seconds=60)
    quick = pending(env, provider="claude", turn_id="p1", transcript_path=str(transcript))
    slow = pending(env, provider="claude", turn_id="p2", transcript_path=str(transcript))
    role = env.role()
    role.pass_at(now())
    assert receipt(env, quick["key"])[1]["reason"] == "too-short"  # type: ignore[index]
    assert receipt(env, slow["key"])[0] == "sent"
    role.teardown()


def test_desk_grace_drops_when_the_user_starts_a_new_turn(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, desk_grace_seconds=0.6)
    returned = pending(env, thread_id="019a22be-06d2-7621-bea7-5b13dfa14a01")
    away = pending(env, thread_id="019a22be-06d2-7621-bea7-5b13dfa14a02")
    failed = pending(env, thread_id="019a22be-06d2-7621-bea7-5b13dfa14a03", outcome="failed")
    role = env.role()
    role.pass_at(now())
    assert [b["tags"] for b in wire_bodies(srv)] == [["x"]]  # a failure goes at once
    assert env.state.locate(returned["key"]) == env.state.locate(away["key"]) == "outbox"
    time.sleep(0.1)  # the next turn must start after the held notification's turn ended
    pending(env, thread_id="019a22be-06d2-7621-bea7-5b13dfa14a01")  # the user's next turn in that thread
    time.sleep(0.6)  # lets desk_grace_seconds (0.6) run out for the turn nobody returned to
    role.pass_at(now())
    folder, rec = receipt(env, returned["key"])
    assert (folder, rec and rec["reason"]) == ("suppressed", "user-returned")
    assert receipt(env, away["key"])[0] == "sent"
    assert receipt(env, failed["key"])[0] == "sent"
    role.teardown()


def test_quiet_hours_hold_overnight_then_one_digest_newest_first(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, quiet_hours="22:00-07:30", quiet_hours_tz="Europe/Berlin")
    keys = [pending(env, cwd=f"/home/dev/proj{i}", completed_at=1000.0 + i)["key"] for i in range(4)]
    role = env.role()
    role.pass_at(at_berlin(2026, 12, 1, 23, 15))
    role.pass_at(at_berlin(2026, 12, 2, 7, 29))
    assert wire_bodies(srv) == []
    assert all(env.state.locate(k) == "outbox" for k in keys)
    role.pass_at(at_berlin(2026, 12, 2, 7, 31))
    role.pass_at(at_berlin(2026, 12, 2, 7, 32))
    [body] = wire_bodies(srv)
    assert body["title"] == "4 tasks finished overnight"
    assert [line.split(":")[0] for line in body["message"].splitlines()] == ["proj3", "proj2", "proj1", "proj0"]
    digest = digest_key(keys)
    assert body["sequence_id"] == f"digest-{digest[:32]}"
    for key in keys:
        folder, rec = receipt(env, key)
        assert folder == "sent" and rec is not None
        assert (rec["reason"], rec["digest"], rec["digest_of"]) == ("digest", digest, "quiet-hours")
    assert receipt(env, digest)[1]["members"] == sorted(keys)  # type: ignore[index]
    role.teardown()


def test_quiet_hours_silent_mode_sends_at_once_with_priority_1(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(
        tmp_path, srv.url, quiet_hours="09:00-17:00", quiet_hours_tz="Europe/Berlin", quiet_hours_mode="silent"
    )
    inside = pending(env)
    role = env.role()
    role.pass_at(at_berlin(2026, 12, 1, 12, 0))
    [body] = wire_bodies(srv)
    assert body["priority"] == 1
    assert receipt(env, inside["key"])[1]["policy"]["silent"] is True  # type: ignore[index]
    outside = pending(env)
    role.pass_at(at_berlin(2026, 12, 1, 18, 0))
    assert "priority" not in wire_bodies(srv)[1]
    assert receipt(env, outside["key"])[0] == "sent"
    role.teardown()


def test_quiet_window_across_dst_changes_keeps_wall_clock_times() -> None:
    class S:
        quiet_hours, quiet_hours_tz = "22:00-07:30", "Europe/Berlin"

    # Spring forward (29 March 2026, 02:00 CET -> 03:00 CEST): the night is an hour shorter.
    end = window_end(at_berlin(2026, 3, 28, 23, 0), S)  # type: ignore[arg-type]
    assert end == at_berlin(2026, 3, 29, 7, 30) == datetime(2026, 3, 29, 5, 30, tzinfo=ZoneInfo("UTC")).timestamp()
    # Fall back (25 October 2026, 03:00 CEST -> 02:00 CET): an hour longer.
    end = window_end(at_berlin(2026, 10, 24, 23, 0), S)  # type: ignore[arg-type]
    assert end == datetime(2026, 10, 25, 6, 30, tzinfo=ZoneInfo("UTC")).timestamp()
    assert window_end(at_berlin(2026, 10, 25, 7, 31), S) is None  # type: ignore[arg-type]
    # Crossing midnight: just after midnight is inside, and ends the same morning.
    assert window_end(at_berlin(2026, 12, 2, 0, 10), S) == at_berlin(2026, 12, 2, 7, 30)  # type: ignore[arg-type]
    assert window_end(at_berlin(2026, 12, 2, 21, 59), S) is None  # type: ignore[arg-type]

    class Gap:
        quiet_hours, quiet_hours_tz = "23:00-02:30", "Europe/Berlin"  # 02:30 does not exist on 29 March

    # docs/delivery.md: an end inside a DST gap means the first instant after it, 03:00 CEST
    # (the clock jumps 02:00 -> 03:00), not 03:30 (02:30 read with the winter offset).
    end = window_end(at_berlin(2026, 3, 28, 23, 30), Gap)  # type: ignore[arg-type]
    assert end == datetime(2026, 3, 29, 1, 0, tzinfo=ZoneInfo("UTC")).timestamp()  # 03:00 CEST
    assert window_end(at_berlin(2026, 3, 29, 1, 59), Gap) == end  # type: ignore[arg-type]
    assert window_end(end, Gap) is None  # type: ignore[arg-type]


def test_burst_digest_one_message_per_task_receipts(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, burst_digest_threshold=3)
    keys = [pending(env, cwd=f"/w/p{i}", outcome="failed" if i == 0 else "done")["key"] for i in range(5)]
    role = env.role()
    role.pass_at(now())
    role.pass_at(now())
    [body] = wire_bodies(srv)
    assert body["title"] == "5 tasks finished" and body["tags"][0] == "x"
    assert len(body["message"].splitlines()) == 5
    assert {receipt(env, k)[1]["digest"] for k in keys} == {digest_key(keys)}  # type: ignore[index]
    # Below the threshold, notifications go one by one.
    single = [pending(env)["key"] for _ in range(2)]
    role.pass_at(now())
    assert len(wire_bodies(srv)) == 3 and all(receipt(env, k)[1]["reason"] == "sent" for k in single)  # type: ignore[index]
    role.teardown()


def test_a_digest_never_exceeds_the_message_budget(srv: NtfyStandin, tmp_path: Path) -> None:
    """No message of 4,096 bytes or more is ever sent (ntfy would make it a refused attachment)."""
    env = policy_env(tmp_path, srv.url, burst_digest_threshold=2, include_message=True, max_message_chars=4000)
    keys = [pending(env, last_message="é" * 3000, cwd=f"/w/{i}")["key"] for i in range(40)]
    role = env.role()
    role.pass_at(now())
    role.pass_at(now())
    [body] = wire_bodies(srv)
    assert len(body["message"].encode()) <= MESSAGE_MAX_BYTES < 4096
    assert body["message"].splitlines()[-1].startswith("… and ")
    assert all(receipt(env, k)[0] == "sent" for k in keys)
    single = pending(env, last_message="x" * 10_000)
    env.update_config(burst_digest_threshold=0)
    role.refresh_settings()
    role.pass_at(now())
    assert len(wire_bodies(srv)[-1]["message"].encode()) < 4096 and receipt(env, single["key"])[0] == "sent"
    role.teardown()


def test_claude_session_title_and_host_tag(srv: NtfyStandin, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "summary", "summary": "Old summary"})
        + "\n"
        + json.dumps({"type": "user", "promptId": "p", "timestamp": "2026-12-01T20:00:00Z"})
        + "\n"
        + json.dumps({"type": "ai-title", "aiTitle": "Fix the flaky test"})
        + "\n"
    )
    env = policy_env(tmp_path, srv.url, include_thread_title=True, host_tag=True, origin="Lab Box 2")
    pending(env, provider="claude", transcript_path=str(transcript))
    role = env.role()
    role.pass_at(now())
    [body] = wire_bodies(srv)
    assert body["title"] == "Fix the flaky test"
    assert body["tags"] == ["white_check_mark", "lab-box-2"]
    with transcript.open("a") as f:
        f.write(json.dumps({"type": "custom-title", "customTitle": "My name for it"}) + "\n")
    pending(env, provider="claude", transcript_path=str(transcript))
    role.pass_at(now())
    assert wire_bodies(srv)[-1]["title"] == "My name for it"
    role.teardown()


def test_explain_names_each_policy_decision(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, min_task_seconds=10, burst_digest_threshold=2)
    short = pending(env, duration_ms=1_000)
    keys = [pending(env, duration_ms=60_000)["key"] for _ in range(2)]
    role = env.role()
    role.pass_at(now())
    role.pass_at(now())
    role.teardown()
    dropped = env.run_cli("explain", short["key"])
    assert "reason too-short" in dropped.stdout and "policy: too-short: task took 1.0s" in dropped.stdout
    member = env.run_cli("explain", keys[0])
    assert "reason digest" in member.stdout and f"sent in burst digest {digest_key(keys)[:12]}" in member.stdout
    digest = env.run_cli("explain", digest_key(keys))
    assert "digest of 2 task(s) (burst)" in digest.stdout, digest.stdout


def test_quiet_hours_on_the_spring_forward_night_end_at_the_wall_clock_time(srv: NtfyStandin, tmp_path: Path) -> None:
    """The night of 29 March 2026 (Berlin) is an hour short: the hold still ends at 07:30 local."""
    env = policy_env(tmp_path, srv.url, quiet_hours="22:00-07:30", quiet_hours_tz="Europe/Berlin")
    keys = [pending(env)["key"] for _ in range(2)]
    role = env.role()
    role.pass_at(at_berlin(2026, 3, 28, 23, 0))
    role.pass_at(at_berlin(2026, 3, 29, 6, 45))  # 06:45 CEST: the window has not ended on the wall clock
    assert wire_bodies(srv) == []
    role.pass_at(at_berlin(2026, 3, 29, 7, 30))
    [body] = wire_bodies(srv)
    assert body["title"] == "2 tasks finished overnight"
    assert all(receipt(env, k)[1]["digest_of"] == "quiet-hours" for k in keys)  # type: ignore[index]
    role.teardown()


def test_a_digest_whose_reply_was_lost_keeps_its_sequence_id_after_the_burst_is_turned_off(
    srv: NtfyStandin, tmp_path: Path
) -> None:
    """Issue 26 item 9: the server stored the digest but the reply was lost; then the user sets
    ``burst_digest_threshold 0``. The members were sent again one by one with their own
    sequence_ids (every task on the phone twice); the digest alone is retried, same sequence_id."""
    env = policy_env(tmp_path, srv.url, burst_digest_threshold=3, retry_max_seconds=1, timeout_seconds=2)
    keys = [pending(env, cwd=f"/w/p{i}")["key"] for i in range(3)]
    srv.faults.accept_then_drop()  # stored, then the connection closes with no answer
    role = env.role()
    role.pass_at(now())
    role.pass_at(now())
    digest = digest_key(keys)
    assert env.state.exists("outbox", digest) and len(srv.messages()) == 1  # on the server, no receipt
    env.update_config(burst_digest_threshold=0, retry_max_seconds=1, timeout_seconds=2)
    role.refresh_settings()
    for _ in range(4):
        role.pass_at(now() + 5)  # the digest's retry is due
    bodies = wire_bodies(srv)
    assert {b["sequence_id"] for b in bodies} == {f"digest-{digest[:32]}"}, [b["sequence_id"] for b in bodies]
    assert len(bodies) == 2  # the lost one and its retry: ntfy shows one notification
    for key in keys:
        folder, rec = receipt(env, key)
        assert folder == "sent" and rec is not None and rec["digest"] == digest
    assert env.state.count("outbox") == 0
    role.teardown()
