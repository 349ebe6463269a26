"""The kill storm (``storm.py``, default small size) with every notification policy switched on.

Desk grace, a minimum duration every storm task exceeds, quiet hours that are configured but not
now, and burst digests (3 within 60 s, which the storm's pace triggers). Afterwards: every task has
a ``sent/`` receipt, alone or naming its digest; every message the server got is a task's own
``sequence_id`` or a digest's whose members are exactly the tasks receipted with it; no task
reached the server both alone and in a digest; a repeat only ever repeats one ``sequence_id``.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig
from support.runner import size
from support.storm import run_storm, storm_seed

TASKS = size(60, 500)
KILLS = size(25, 200)
KILL_EVERY = size(0.3, 0.4)


def _rig_with_every_policy(make_rig: Callable[..., Rig]) -> Rig:
    """A rig with desk grace, a minimum task time, digests and quiet hours (three hours from now, so
    they are configured but never hold this storm) all on."""
    later = datetime.now(UTC) + timedelta(hours=3)
    quiet = f"{later:%H}:00-{(later + timedelta(hours=1)):%H}:00"
    return make_rig(
        idle_probe_grace_seconds=10.0,
        desk_grace_seconds=0.3,
        min_task_seconds=0.1,
        quiet_hours=quiet,
        quiet_hours_tz="UTC",
        burst_digest_threshold=3,
        burst_window_seconds=60,
    )


def test_kill_storm_with_every_policy_on(make_rig: Callable[..., Rig], standin: NtfyStandin, tmp_path: Path) -> None:
    seed = storm_seed()
    rig = _rig_with_every_policy(make_rig)
    out = run_storm(
        rig,
        tmp_path / "service.log",
        tasks=TASKS,
        kills=KILLS,
        every=KILL_EVERY,
        seed=seed,
        settle_timeout=size(90, 300),
    )
    assert out.stop_rc == 0, out.service_output[-3000:]
    assert out.leftovers == [], f"processes left behind: {out.leftovers}"
    counts = rig.counts()
    assert (counts["pending"], counts["outbox"], counts["suppressed"], counts["dead"]) == (0, 0, 0, 0), counts
    receipts = {t.sequence_id: rig.state.read("sent", t.key) for t in out.turns}
    assert all(r is not None for r in receipts.values()), "a task without a sent/ receipt"
    digests: dict[str, set[str]] = collections.defaultdict(set)
    alone: set[str] = set()
    for sid, r in receipts.items():
        assert r is not None
        if r["reason"] == "digest":
            digests[r["digest_sequence_id"]].add(sid)
        else:
            assert r["reason"] == "sent"
            alone.add(sid)
    assert counts["sent"] == TASKS + len(digests)  # one receipt per task, one per digest
    sent = collections.Counter(str(m.get("sequence_id")) for m in standin.messages(rig.topic))
    assert set(sent) == alone | set(digests), "a task never reached the server, or a foreign message"
    for digest_sid in digests:
        key = next(r["digest"] for r in receipts.values() if r and r.get("digest_sequence_id") == digest_sid)
        own = rig.state.read("sent", key)
        assert own is not None and {f"codex-{m[:32]}" for m in own["members"]} == digests[digest_sid]
    duplicates = sorted(sid for sid, n in sent.items() if n > 1)
    assert rig.partial_records() == []
    print(
        f"policy storm: seed {seed}, kills {dict(out.kills)}, digests {len(digests)} "
        f"({sum(len(v) for v in digests.values())} tasks), alone {len(alone)}, duplicates {len(duplicates)}"
    )
    record(
        "kill_storm_policies",
        seed=seed,
        tasks=TASKS,
        kills=sum(out.kills.values()),
        digests=len(digests),
        tasks_in_digests=sum(len(v) for v in digests.values()),
        tasks_alone=len(alone),
        duplicates=sum(sent[s] - 1 for s in duplicates),
        lost=0,
    )
