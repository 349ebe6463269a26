"""The promotion protocol: revision checks, the second snapshot, recovery, crashes and corrupt records."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest
from donebell.shared import ingest, keys, records, statedir
from donebell.shared.statedir import StateDir
from donebell.workers.gate import run_gate_pass
from donebell.workers.gate.commit import HISTORY_LIMIT, apply
from donebell.workers.kit.verdict import Verdict
from fixtures.gate.kit import SIMPLE_THREAD, SIMPLE_TURN, CodexWorld, fast_settings, gate, lines_of, where

if TYPE_CHECKING:
    from donebell.shared.record_types import ReceiptStatus


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


def _pending(state: StateDir, turn: str = "t1") -> dict[str, Any]:
    key = keys.event_key("codex", "thread-x", turn)
    ingest.submit_candidate(
        state, records.new_candidate(key=key, provider="codex", source="codex-stop", thread_id="thread-x", turn_id=turn)
    )
    rec = state.read("pending", key)
    assert rec is not None
    return rec


def test_new_evidence_during_the_decision_blocks_promotion(state: StateDir) -> None:
    """A hook merging evidence after the snapshot (revision bump) makes the commit drop its decision."""
    snapshot = _pending(state)
    ingest.submit_candidate(
        state,
        records.new_candidate(
            key=snapshot["key"], provider="codex", source="codex-notify", thread_id="thread-x", turn_id="t1"
        ),
    )
    applied, _ = apply(
        state, snapshot, Verdict.promote("idle"), time.time(), retry_max=60, recheck=lambda r: Verdict.promote("idle")
    )
    assert applied == "raced" and where(state, snapshot["key"]) == "pending" and state.count("outbox") == 0


def test_second_snapshot_must_agree(state: StateDir) -> None:
    """Promotion re-evaluates inside the lock; changed evidence (fingerprint) or a non-promote keeps it pending."""
    snapshot: dict[str, Any] | None  # re-read below, where the record may be gone
    snapshot = _pending(state)
    first = Verdict.promote("idle", fingerprint=("rollout", 100))
    applied, final = apply(
        state,
        snapshot,
        first,
        time.time(),
        retry_max=60,
        recheck=lambda r: Verdict.promote("idle", fingerprint=("rollout", 101)),
    )
    assert applied == "waiting" and final.reason == "changed"
    snapshot = state.read("pending", snapshot["key"])
    assert snapshot is not None
    applied, final = apply(
        state, snapshot, first, time.time(), retry_max=60, recheck=lambda r: Verdict.wait("goal-active")
    )
    assert applied == "waiting" and final.reason == "goal-active"
    snapshot = state.read("pending", snapshot["key"])
    assert snapshot is not None
    applied, _ = apply(
        state,
        snapshot,
        first,
        time.time(),
        retry_max=60,
        recheck=lambda r: Verdict.promote("idle", fingerprint=("rollout", 100)),
    )
    assert applied == "promoted" and where(state, snapshot["key"]) == "outbox"


@pytest.mark.parametrize("later_folder", ["outbox", "sent", "suppressed", "dead"])
def test_pending_copy_of_a_finished_key_is_removed(state: StateDir, later_folder: str) -> None:
    """A crash between 'create next state' and 'remove pending' leaves both; the next pass removes pending only."""
    rec = _pending(state)
    finished = (
        records.to_outbox(rec, verdict="idle")
        if later_folder == "outbox"
        else records.new_receipt(rec, status=cast("ReceiptStatus", later_folder), reason="sent")
    )
    state.create(later_folder, finished)
    result = gate(state, fast_settings(idle_detection_mode="off"))
    assert (
        result.removed == 1
        and where(state, rec["key"]) == later_folder
        and state.count("outbox") == (later_folder == "outbox")
    )


def test_corrupt_and_stray_pending_files_are_dead_lettered_and_the_pass_goes_on(state: StateDir) -> None:
    """An unparsable pending record or a stray file goes to dead/ (bytes kept); good candidates still promote."""
    good = _pending(state)
    bad_key = keys.event_key("codex", "thread-x", "broken")
    (state.root / "pending" / f"{bad_key}.json").write_bytes(b'{"schema":1,"key":"\xff')
    (state.root / "pending" / "notes.txt").write_bytes(b"hello")
    result = gate(state, fast_settings(idle_detection_mode="off"))
    assert result.promoted == 1 and result.invalid == 2 and where(state, good["key"]) == "outbox"
    raws = sorted(p.read_bytes() for p in (state.root / "dead").glob("*.raw"))
    assert raws == [b"hello", b'{"schema":1,"key":"\xff']


def test_probe_history_is_bounded_and_repeats_fold(state: StateDir) -> None:
    """Identical waits fold into one history entry with a count; distinct ones are capped at HISTORY_LIMIT."""
    rec = _pending(state)
    now = time.time()
    for i in range(3):
        rec = state.read("pending", rec["key"]) or rec
        apply(state, rec, Verdict.wait("goal-active", "goal status active"), now + i, retry_max=60, recheck=lambda r: r)  # type: ignore[arg-type,return-value]
    rec = state.read("pending", rec["key"]) or rec
    assert rec["probe"]["history"][-1]["count"] == 3 and len(rec["probe"]["history"]) == 1
    for i in range(HISTORY_LIMIT + 10):
        rec = state.read("pending", rec["key"]) or rec
        apply(state, rec, Verdict.wait("quiet-window", f"changed {i}"), now, retry_max=60, recheck=lambda r: r)  # type: ignore[arg-type,return-value]
    rec = state.read("pending", rec["key"]) or rec
    assert len(rec["probe"]["history"]) == HISTORY_LIMIT and rec["probe"]["attempts"] == HISTORY_LIMIT + 13


def test_outbox_record_is_never_demoted_or_coalesced(world: CodexWorld, state: StateDir) -> None:
    """An outbox record of a root stays untouched when a later turn of the same root arrives."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    first = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    gate(state, fast_settings())
    before = (state.root / "outbox" / f"{first}.json").read_bytes()
    from fixtures.gate.kit import turn_records

    world.append(SIMPLE_THREAD, turn_records("t-second"))
    second = world.submit(SIMPLE_THREAD, "t-second")
    gate(state, fast_settings())
    assert (state.root / "outbox" / f"{first}.json").read_bytes() == before
    assert where(state, second) == "outbox"


def _gate_in_child_crashing_at(state: StateDir, step: int) -> int:
    """Fork; the child runs one gate pass and dies (``os._exit(86)``) at filesystem operation ``step``."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            statedir._base._crash_at, statedir._base._op_count = step, 0
            run_gate_pass(state, fast_settings(), time.time())
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="crash points are exercised with fork")
def test_crash_at_every_step_of_a_promotion_recovers_to_one_outbox_record(world: CodexWorld, state: StateDir) -> None:
    """Killing the gate at each filesystem operation of a promotion never loses or duplicates the event."""
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    crashed_at = []
    for step in range(1, 80):
        for folder in ("pending", "outbox", "suppressed"):
            for path in (state.root / folder).glob("*.json"):
                path.unlink()
        key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
        code = _gate_in_child_crashing_at(state, step)
        if code == 0:
            break
        assert code == 86
        crashed_at.append(step)
        gate(state, fast_settings())  # the next pass after a restart
        assert where(state, key) == "outbox" and state.count("pending") == 0 and state.count("outbox") == 1
    assert len(crashed_at) >= 4  # the create/link/unlink/fsync steps of the promotion were all hit


def test_merged_evidence_makes_a_waiting_candidate_due_at_once(world: CodexWorld, state: StateDir) -> None:
    """A candidate scheduled far ahead is re-probed in the next pass when a new signal merges into it."""
    from donebell.workers.gate import run_gate_pass

    recs = lines_of("simple-exec.jsonl")
    world.write_rollout(SIMPLE_THREAD, recs[:-1])
    key = world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    now = time.time()
    run_gate_pass(state, fast_settings(), now)
    rec = state.read("pending", key)
    assert rec is not None
    rec["probe"]["next_probe_at"] = now + 3600  # as if it had backed off a long way
    state.replace("pending", rec)
    assert run_gate_pass(state, fast_settings(), now + 1).waiting == 1  # not due, untouched
    world.append(SIMPLE_THREAD, recs[-1:])
    world.submit(SIMPLE_THREAD, SIMPLE_TURN, source="codex-notify")
    assert run_gate_pass(state, fast_settings(), now + 2).promoted == 1


def test_a_wait_is_never_scheduled_before_its_moment(state: StateDir) -> None:
    """The time of the next probe is rounded up: a probe woken before a quiet window ends finds it
    not over yet, and the pass after it waits out the delivery role's pass gap."""
    snapshot = _pending(state)
    now = 1_800_000_000.0001
    wait = Verdict.wait("quiet-window", "rollout changed 0.9996s ago", kind="busy", retry_in=0.0004)
    applied, _ = apply(state, snapshot, wait, now, retry_max=60, recheck=lambda r: wait)
    saved = state.read("pending", snapshot["key"])
    assert applied == "waiting" and saved is not None
    assert saved["probe"]["next_probe_at"] >= now + 0.0004
