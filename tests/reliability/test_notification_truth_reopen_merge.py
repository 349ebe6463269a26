"""Notification truth (issue 14, items 4 and 5), reopening and merging: a root Stop after a
technical-turn receipt reopens the turn, a balanced Stop without `turn_id` merges into the scanner's
key, and a crash at any step of either never duplicates or loses the notification. Through the real
commands, like test_notification_truth.py; each test pins the outcome docs/reliability.md lists.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence


def _without_final_message(turn: Turn) -> None:
    """Make ``turn`` a done turn without a final assistant message (a `technical-turn` to the scanner)."""
    kept = [
        line
        for line in turn.rollout.read_bytes().splitlines(keepends=True)
        if b'"role":"assistant"' not in line and b"AgentMessage" not in line
    ]
    turn.rollout.write_bytes(b"".join(kept))
    turn.completion = turn.completion.replace(
        b'"last_agent_message":"Hello from the fake model. Task done."', b'"last_agent_message":null'
    )


def test_a_root_stop_after_a_technical_turn_receipt_reopens_it_and_notifies_once(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 5: the scanner's candidate for a turn without a final message was suppressed `technical-turn`
    (nothing sent); the root's own Stop for that turn arrives later: it reopens the key and the task is
    notified exactly once (a Stop bypasses the technical-turn heuristic); a repeated Stop adds nothing."""
    rig = make_rig()
    turn = rig.new_turn()
    _without_final_message(turn)
    rig.complete(turn)
    assert rig.scan_once().rc == 0
    assert rig.deliver_once().rc == 0
    receipt = rig.state.read("suppressed", turn.key)
    assert receipt is not None and receipt["reason"] == "technical-turn"

    assert rig.hook_stop(turn).rc == 0
    assert rig.where(turn.key) == ["pending"], "the Stop was dropped as a duplicate of the receipt"
    rig.settle([turn.key])
    assert rig.hook_stop(turn).rc == 0
    rig.settle([turn.key])

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}


@pytest.mark.parametrize("stop_late", [False, True], ids=["stop-before-completion", "stop-after-completion"])
def test_a_balanced_stop_without_turn_id_is_merged_with_the_scanner_key(
    make_rig: Callable[..., Rig], standin: NtfyStandin, stop_late: bool
) -> None:
    """Item 4: a Stop without `turn_id` gets a weak random key; the scanner reports the same turn under its
    real key. The gate matches the weak candidate to its rollout turn (thread + nearest completion) and
    merges it into the real key: one notification, one sequence id, also after the probe grace."""
    rig = make_rig(idle_detection_mode="balanced", idle_probe_grace_seconds=1.0)
    earlier = rig.new_turn(complete=True)  # an older turn of the thread that must not be matched
    rig.settle([earlier.key])
    turn = rig.next_turn(earlier)
    payload = rig.stop_payload(turn)
    del payload["turn_id"]
    if stop_late:
        rig.complete(turn)
        time.sleep(0.3)
    assert rig.run("hook", "codex-stop", stdin=json.dumps(payload).encode()).rc == 0
    weak = [r for r in rig.read_all("pending") if r.get("weak_identity")]
    assert len(weak) == 1
    if not stop_late:
        rig.complete(turn)

    rig.settle([turn.key, weak[0]["key"]], drain=True)
    time.sleep(1.2)  # past the probe grace: balanced would assume the weak candidate's checks passed
    rig.settle([turn.key, weak[0]["key"]], drain=True)

    assert messages_by_sequence(standin.messages(rig.topic)) == {earlier.sequence_id: 1, turn.sequence_id: 1}
    assert rig.where(turn.key) == ["sent"]
    receipt = rig.state.read("suppressed", weak[0]["key"])
    assert receipt is not None and receipt["reason"] == "merged"
    sent = rig.state.read("sent", turn.key)
    assert sent is not None and "codex-stop" in sent.get("sources", [])


def test_a_crash_at_any_step_of_reopening_a_technical_turn_never_duplicates_or_loses_it(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 5, crash walk: the reopening Stop hook killed at each of its counted state-dir operations in
    turn, then the pipeline settles. Before the new candidate exists the old receipt stands (nothing
    sent, nothing twice); once it exists, also beside the not yet removed receipt, the turn is
    notified exactly once (the gate finishes the interrupted reopening instead of dropping it)."""
    interrupted = 0
    for n in range(1, 60):
        rig = make_rig(f"crash-{n}")
        turn = rig.new_turn()
        _without_final_message(turn)
        rig.complete(turn)
        assert rig.scan_once().rc == 0 and rig.deliver_once().rc == 0
        rc = rig.hook_stop(turn, crash_at=n).rc
        created = rig.state.exists("pending", turn.key)
        interrupted += created and rig.state.exists("suppressed", turn.key)
        rig.settle([turn.key])
        sent = messages_by_sequence(standin.messages(rig.topic)).get(turn.sequence_id, 0)
        assert sent == (1 if created else 0), (n, created, rig.where(turn.key))
        assert rig.where(turn.key) == (["sent"] if created else ["suppressed"]), n
        if rc != 86:  # the hook finished before its n-th operation: every point was walked
            assert created
            break
    assert interrupted, "no crash point fell between the new candidate and the receipt's removal"


def test_a_crash_at_any_step_of_merging_a_weak_stop_never_duplicates_or_loses_the_turn(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Item 4, crash walk: the delivery pass that merges a Stop without `turn_id` into its turn's real key
    is killed at each of its counted state-dir operations in turn; the pipeline then settles: the turn is
    notified exactly once with its real `sequence_id`, and the weak key ends `merged` (never sent)."""
    for n in range(1, 80):
        rig = make_rig(f"crash-{n}", idle_detection_mode="balanced", idle_probe_grace_seconds=1.0)
        turn = rig.new_turn(complete=True)
        payload = rig.stop_payload(turn)
        del payload["turn_id"]
        assert rig.run("hook", "codex-stop", stdin=json.dumps(payload).encode()).rc == 0
        (weak,) = [r["key"] for r in rig.read_all("pending")]
        rc = rig.deliver_once(crash_at=n).rc
        rig.settle([turn.key, weak], drain=True)

        assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}, n
        receipt = rig.state.read("suppressed", weak)
        assert receipt is not None and receipt["reason"] == "merged", n
        if rc != 86:  # the pass finished before its n-th operation: every point was walked
            break
    else:
        raise AssertionError("the delivery pass never finished")
