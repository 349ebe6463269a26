"""Deterministic crash points (SQLite's writecrash.test): crash at the N-th state-dir operation, N = 1, 2, ...

One Codex root turn goes through the whole pipeline: ``donebell hook codex-stop`` (before
task_complete, as Codex runs it), task_complete appended to the rollout, ``donebell worker
local-scanner --once``, ``donebell worker delivery --once`` (gate + send). For each stage and each
N the stage runs with ``DONEBELL_CRASH_AT=N`` (``os._exit(86)`` at its N-th counted filesystem
operation, ``shared/statedir/``) until a run finishes without reaching N. After each crash the
pipeline is restarted without the seam and the invariants are checked.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence
from support.runner import CRASH_EXIT

STAGES = ("hook", "scanner", "delivery")
MAX_POINTS = 400  # a stage with more counted operations than this is a bug in itself
PARALLEL = 4
BATCH = 8


def _prepare(rig: Rig, stage: str) -> Turn:
    """Run the stages before ``stage`` without crashing."""
    turn = rig.new_turn()
    if stage == "hook":
        return turn
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn)
    if stage == "delivery":
        assert rig.scan_once().rc == 0
    return turn


def _crash(rig: Rig, stage: str, turn: Turn, n: int) -> int:
    if stage == "hook":
        rc = rig.hook_stop(turn, crash_at=n).rc
        rig.complete(turn)  # Codex writes task_complete after its Stop hook, whatever the hook did
        return rc
    if stage == "scanner":
        return rig.scan_once(crash_at=n).rc
    return rig.deliver_once(crash_at=n).rc


@dataclass
class Point:
    """What one crash point did."""

    stage: str
    n: int
    finished: bool  # the stage completed before reaching its N-th operation: the walk ends here
    duplicate: bool
    debris: int  # temp files left in tmp/ (swept by maintenance after hours)


def _walk_one(make_rig: Callable[..., Rig], standin: NtfyStandin, stage: str, n: int) -> Point:
    rig = make_rig(f"{stage}-{n}")
    turn = _prepare(rig, stage)
    rc = _crash(rig, stage, turn, n)
    assert rc in (CRASH_EXIT, 0), f"{stage} N={n}: exit {rc}"
    # Mid-crash: the key may be half-way through a transition, but no record file is partial.
    assert rig.partial_records() == [], f"{stage} N={n}"
    before = len(standin.messages(rig.topic))

    rig.settle([turn.key])

    where = rig.where(turn.key)
    assert where == ["sent"], f"{stage} N={n}: key in {where}; log: {rig.log()[-3:]}"
    assert rig.counts() == {"pending": 0, "outbox": 0, "sent": 1, "suppressed": 0, "dead": 0}, (stage, n)
    assert rig.partial_records() == [], f"{stage} N={n}"
    sent = messages_by_sequence(standin.messages(rig.topic))
    assert set(sent) == {turn.sequence_id}, f"{stage} N={n}: {sent}"
    if sent[turn.sequence_id] > 1:
        # Only a crash after the server stored the message and before the receipt.
        assert (stage, before, sent[turn.sequence_id]) == ("delivery", 1, 2), f"N={n}"
    debris = sum(1 for _ in (rig.state_dir / "tmp").iterdir())
    return Point(stage, n, rc == 0, sent[turn.sequence_id] > 1, debris)


def test_crash_at_every_operation_of_the_pipeline_loses_nothing(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """A crash at any state-dir operation of hook, scanner or delivery ends, after a restart, in exactly
    one sent receipt and one notification (two only when the crash followed the POST, same sequence_id)."""
    points: dict[str, int] = {}
    walked: list[Point] = []
    # The points are independent (one installation each) and mostly wait on fsync: walk a few at once.
    with ThreadPoolExecutor(PARALLEL) as pool:
        for stage in STAGES:
            for first in range(1, MAX_POINTS + 1, BATCH):
                batch = list(
                    pool.map(lambda n, s=stage: _walk_one(make_rig, standin, s, n), range(first, first + BATCH))
                )
                walked.extend(batch)
                ends = [p.n for p in batch if p.finished]
                if ends:
                    points[stage] = min(ends) - 1  # that run finished before its N-th operation
                    break
            else:
                raise AssertionError(f"{stage}: still crashing after {MAX_POINTS} operations")
    crashed = [p for p in walked if p.n <= points[p.stage]]
    assert all(points[s] > 0 for s in STAGES), points
    assert not any(p.finished for p in crashed)
    duplicates = [f"{p.stage} N={p.n}" for p in crashed if p.duplicate]
    debris = max(p.debris for p in walked)
    total = sum(points.values())
    record(
        "crash_points",
        crash_points=points,
        total=total,
        restarts=total,
        lost=0,
        duplicates=len(duplicates),
        duplicate_points=duplicates,
        max_tmp_debris=debris,
    )
    print(f"crash points {points}; duplicates at {duplicates}; tmp debris up to {debris} file(s)")
