"""Hostile and broken Codex rollouts under the scanner (the safety net; no hook in these tests).

Each case pins its documented outcome (docs/reliability.md): broken lines *before* the turn's
task_complete are recorded as invalid evidence and the turn is still notified once; a broken or
partial record *after* it, or a first line that is not a parsable ``session_meta`` (a BOM), is
evidence the gate cannot verify: strict mode never notifies on it (``unverifiable``). Nothing
crashes, nothing is notified twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence

HUGE = 100 << 20
PEAK_RSS = Path(__file__).resolve().parents[1] / "support" / "peak_rss.py"


def _append(turn: Turn, data: bytes) -> None:
    with open(turn.rollout, "ab") as f:
        f.write(data)


def _huge_line() -> bytes:
    return b'{"type":"response_item","payload":{"type":"message","pad":"' + b"a" * HUGE + b'"}}\n'


BEFORE = {
    "invalid-utf8": b'{"type":"response_item","payload":{"text":"\xff\xfe\xc0"}}\n',
    "malformed-json": b'{"type":"response_item","payload":\n',
    "unknown-record-types": b'{"type":"future_kind","payload":{}}\n{"type":"event_msg","payload":{"type":"new"}}\n'
    b'[1,2]\n"text"\nnull\n{}\n',
    "deep-nesting": b'{"type":"response_item","payload":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "nul-bytes": b"\x00" * 4096 + b"\n",
    "crlf-line": b'{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}\r\n',
}
AFTER = {
    "invalid-utf8-after": b'{"type":"event_msg","payload":{"text":"\xff"}}\n',
    "partial-after": b'{"type":"event_msg","payl',
}


def _peak_rss_scan(rig: Rig) -> int:
    """One real ``worker local-scanner --once`` process, launched through ``peak_rss.py``; its peak RSS in KiB."""
    out = rig.root / "peak.json"
    argv = [
        sys.executable,
        str(PEAK_RSS),
        str(out),
        sys.executable,
        "-m",
        "donebell.supervisor.cli",
        "worker",
        "local-scanner",
        "--once",
    ]
    run = subprocess.run(argv, env=rig.env(), capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    peak: int = json.loads(out.read_text())["maxrss_kb"]
    return peak


def _scan_and_settle(rig: Rig, turn: Turn) -> None:
    os.utime(turn.rollout, (time.time() - 1, time.time() - 1))
    scan = rig.scan_once()
    assert scan.rc == 0, scan.output
    rig.settle([turn.key], drain=True, timeout=10)


@pytest.mark.parametrize("case", BEFORE)
def test_broken_lines_before_the_completion_do_not_cost_the_notification(
    make_rig: Callable[..., Rig], standin: NtfyStandin, case: str
) -> None:
    """Invalid UTF-8, malformed JSON, unknown record types, deep nesting, NUL bytes or CRLF before
    task_complete: the scanner goes on and the turn is notified exactly once."""
    rig = make_rig(idle_probe_grace_seconds=1.0)
    turn = rig.new_turn()
    _append(turn, BEFORE[case])
    rig.complete(turn)

    _scan_and_settle(rig, turn)

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    record(f"rollout_{case}", outcome="sent once")


def test_a_100_mb_line_before_the_completion_costs_bounded_memory_and_not_the_notification(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """A 100 MB single-line record before task_complete: the scanner's peak memory grows by far less than
    the line (it is skipped, not loaded) and the turn is notified exactly once."""
    baseline_rig = make_rig("baseline")
    small = baseline_rig.new_turn(complete=True)
    baseline = _peak_rss_scan(baseline_rig)
    rig = make_rig(idle_probe_grace_seconds=1.0)
    turn = rig.new_turn()
    _append(turn, _huge_line())
    rig.complete(turn)

    peak = _peak_rss_scan(rig)
    rig.settle([turn.key], drain=True, timeout=10)

    assert baseline_rig.state.exists("pending", small.key)  # the baseline scan did the same work
    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    assert peak - baseline < (HUGE >> 10) // 4, (baseline, peak)  # under a quarter of the line
    record(
        "rollout_huge-line",
        outcome="sent once",
        scanner_peak_rss_kb=peak,
        baseline_peak_rss_kb=baseline,
        extra_kb=peak - baseline,
        line_kb=HUGE >> 10,
    )


@pytest.mark.parametrize("case", [*AFTER, "bom-first-line"])
def test_unverifiable_rollouts_are_never_notified_in_strict_mode(
    make_rig: Callable[..., Rig], standin: NtfyStandin, case: str
) -> None:
    """A broken or partial record after task_complete, or a BOM before session_meta, keeps the turn
    unverifiable: after the probe grace it is suppressed `unverifiable`, never notified."""
    rig = make_rig(idle_probe_grace_seconds=1.0)
    turn = rig.new_turn()
    if case == "bom-first-line":
        turn.rollout.write_bytes(b"\xef\xbb\xbf" + turn.rollout.read_bytes())
    rig.complete(turn)
    if case in AFTER:
        _append(turn, AFTER[case])

    _scan_and_settle(rig, turn)

    assert rig.where(turn.key) == ["suppressed"]
    receipt = rig.state.read("suppressed", turn.key)
    assert receipt is not None and receipt["reason"] == "unverifiable"
    assert standin.messages(rig.topic) == []
    record(f"rollout_{case}", outcome="suppressed unverifiable")


def test_a_completion_written_byte_by_byte_is_read_once_and_only_when_whole(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """task_complete appended a few bytes at a time, with a scanner pass after each piece: no candidate
    until its newline arrives, then exactly one notification."""
    rig = make_rig()
    turn = rig.new_turn()
    line = turn.completion
    cuts = sorted({1, 2, len(line) // 3, len(line) // 2, len(line) - 2, len(line) - 1})
    start = 0
    for cut in cuts:
        _append(turn, line[start:cut])
        start = cut
        assert rig.scan_once().rc == 0
        assert rig.counts()["pending"] == 0, f"a partial line was consumed at byte {cut}"
    _append(turn, line[start:])
    rig.settle([turn.key])

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    record("rollout_byte_by_byte", pieces=len(cuts) + 1, scans=len(cuts) + 1, notified=1)


@pytest.mark.parametrize("how", ["truncated", "replaced"])
def test_a_rollout_truncated_or_replaced_under_the_scanner_restarts_without_a_repeat(
    make_rig: Callable[..., Rig], standin: NtfyStandin, how: str
) -> None:
    """After a turn was notified, its rollout is truncated (same inode) or replaced (new inode) with a
    rewritten history plus a new turn: the scanner restarts the file, the old turn is not notified
    again and the new one is."""
    rig = make_rig()
    first = rig.new_turn(complete=True)
    rig.settle([first.key])
    history = first.rollout.read_bytes()
    second = rig.next_turn(first)
    rewritten = history + first.rollout.read_bytes()[len(history) :] + second.completion
    if how == "truncated":
        with open(first.rollout, "r+b") as f:
            f.truncate(len(history) // 2)
        assert rig.scan_once().rc == 0  # sees the shrink
        first.rollout.write_bytes(rewritten)
    else:
        tmp = first.rollout.with_suffix(".new")
        tmp.write_bytes(rewritten)
        os.replace(tmp, first.rollout)
    os.utime(first.rollout, (time.time() - 1, time.time() - 1))

    rig.settle([second.key])

    assert rig.where(first.key) == rig.where(second.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {first.sequence_id: 1, second.sequence_id: 1}
    restarts = [line for line in rig.log() if "restarting" in str(line.get("msg"))]
    assert restarts, "the scanner did not notice the file was truncated or replaced"
    record(f"rollout_{how}", restarts=len(restarts), repeats=0, new_turn_notified=1)
